"""Spearman's rank correlation, the Python twin of the `spearman_rho` / `spearman` macros.

Average ranks for ties, computed on float64; pairs with a missing value (None or NaN) on either
side are dropped and counted. Equals scipy.stats.spearmanr on the complete pairs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np


class Spearman(NamedTuple):
    rho: float  # NaN when fewer than 2 complete pairs or a side is constant
    n: int  # complete pairs used
    excluded: int  # pairs dropped for a missing value


def avg_ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks, ties sharing the mean of their positions (scipy's rankdata 'average')."""
    x = np.asarray(x, dtype=np.float64)
    s = np.sort(x)
    # first and last positions (1-based) of each value's block in the sorted array
    first = np.searchsorted(s, x, side="left") + 1
    last = np.searchsorted(s, x, side="right")
    return (first + last) / 2.0


def _floats(v: Iterable) -> np.ndarray:
    return np.array([np.nan if a is None else a for a in v], dtype=np.float64)


def spearman(x: Iterable, y: Iterable) -> Spearman:
    x, y = _floats(x), _floats(y)
    if x.shape != y.shape:
        raise ValueError("x and y differ in length")
    keep = ~(np.isnan(x) | np.isnan(y))
    n = int(keep.sum())
    if n < 2:
        return Spearman(math.nan, n, len(x) - n)
    rx, ry = avg_ranks(x[keep]), avg_ranks(y[keep])
    dx, dy = rx - rx.mean(), ry - ry.mean()
    den = math.sqrt(float(np.dot(dx, dx)) * float(np.dot(dy, dy)))
    rho = float(np.dot(dx, dy)) / den if den > 0 else math.nan
    return Spearman(rho, n, len(x) - n)


def spearman_rho(x: Iterable, y: Iterable) -> float:
    return spearman(x, y).rho
