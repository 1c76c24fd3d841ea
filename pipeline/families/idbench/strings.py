"""String similarity of two identifiers, exactly as the IdBench release computed them.

- LV = round(1 - lev(a, b) / max(|a|, |b|), 2): rapidfuzz's normalized Levenshtein similarity.
- NW = round((S + L) / (2 L), 2): S the Needleman-Wunsch global alignment score with match +1,
  mismatch 0, gap -1, L the longer length. S comes from a weighted Levenshtein distance: an
  alignment with m matches, x mismatches and g gaps scores S = m - g, and |a| + |b| = 2m + 2x + g,
  so S = (|a| + |b| - D) / 2 with D the minimum of 2x + 3g (weights: insert 3, delete 3, substitute 2).

Rounding is half to even on the exact fraction (the release's values show it: 21/40 = 0.525 is
0.52, which float rounding gives as 0.53). Both scores are 1.0 for two empty strings.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction

import numpy as np
from rapidfuzz.distance import Levenshtein
from rapidfuzz.process import cpdist

DECIMALS = 2


def round_half_even(value: Fraction, decimals: int = DECIMALS) -> float:
    exact = Decimal(value.numerator) / Decimal(value.denominator)
    return float(exact.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_EVEN))


def nw_score(a: str, b: str) -> int:
    """Needleman-Wunsch score (match +1, mismatch 0, gap -1) via rapidfuzz's weighted Levenshtein."""
    d = Levenshtein.distance(a, b, weights=(3, 3, 2))
    return (len(a) + len(b) - d) // 2


def nw_score_reference(a: str, b: str) -> int:
    """The textbook dynamic programme, for tests."""
    prev = [-j for j in range(len(b) + 1)]
    for i in range(1, len(a) + 1):
        cur = [-i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cur[j] = max(prev[j - 1] + (1 if a[i - 1] == b[j - 1] else 0), prev[j] - 1, cur[j - 1] - 1)
        prev = cur
    return prev[-1]


def lv_exact(a: str, b: str) -> Fraction:
    longest = max(len(a), len(b))
    return Fraction(1) if longest == 0 else 1 - Fraction(Levenshtein.distance(a, b), longest)


def nw_exact(a: str, b: str) -> Fraction:
    longest = max(len(a), len(b))
    return Fraction(1) if longest == 0 else Fraction(nw_score(a, b) + longest, 2 * longest)


def lv(a: str, b: str) -> float:
    return round_half_even(lv_exact(a, b))


def nw(a: str, b: str) -> float:
    return round_half_even(nw_exact(a, b))


TECHNIQUES = {"LV": lv, "NW": nw}


# Vectorised over aligned lists of pairs (rapidfuzz's cpdist, one C++ call per technique), with the
# same exact half-to-even rounding done in integers: value = num / den, scaled by 10^DECIMALS.
def _round_ratio(num: np.ndarray, den: np.ndarray, decimals: int = DECIMALS) -> np.ndarray:
    scale = 10**decimals
    safe = np.where(den == 0, 1, den)
    q, r = np.divmod(num * scale, safe)
    up = (2 * r > safe) | ((2 * r == safe) & (q % 2 == 1))
    return np.where(den == 0, 1.0, (q + up) / scale)


def _lengths(a: list[str], b: list[str]) -> tuple[np.ndarray, np.ndarray]:
    return np.fromiter(map(len, a), np.int64, len(a)), np.fromiter(map(len, b), np.int64, len(b))


def lv_many(a: list[str], b: list[str]) -> np.ndarray:
    """lv(a[k], b[k]) for every k."""
    la, lb = _lengths(a, b)
    d = cpdist(a, b, scorer=Levenshtein.distance, workers=1).astype(np.int64)
    longest = np.maximum(la, lb)
    return _round_ratio(longest - d, longest)


def nw_many(a: list[str], b: list[str]) -> np.ndarray:
    """nw(a[k], b[k]) for every k."""
    la, lb = _lengths(a, b)
    d = cpdist(a, b, scorer=Levenshtein.distance, scorer_kwargs={"weights": (3, 3, 2)}, workers=1).astype(np.int64)
    longest = np.maximum(la, lb)
    return _round_ratio((la + lb - d) // 2 + longest, 2 * longest)


BATCHED = {"LV": lv_many, "NW": nw_many}
