"""Bootstrap confidence intervals of a mean and paired tests of a difference of means.

Two schemes, same result types:

- `bootstrap_mean` / `paired_bootstrap`: the plain (multinomial) percentile bootstrap with
  numpy, seeded: the reference.
- `poisson_bootstrap_mean` / `poisson_paired_bootstrap`: the exact Python twins of the SQL
  table macros of the same names (macros.sql). In replicate b (0-based) item i gets the weight
  w ~ Poisson(1) drawn from a portable hash: u = int(md5(f"{seed}:{b}:{item_id}").hexdigest()[:13], 16)
  (52 bits), w = #{k : POISSON_THRESHOLDS[k] <= u} with POISSON_THRESHOLDS[k] =
  ceil(P(Poisson(1) <= k) * 2**52) (inverse CDF, integer comparisons only). A replicate's mean
  is sum(w * v) / sum(w); replicates with sum(w) = 0 are skipped.

CIs are percentile intervals: the alpha/2 and 1 - alpha/2 quantiles of the replicate means,
linearly interpolated (type 7, numpy's default) as lo + (hi - lo) * frac at index q * (n - 1),
exactly as the SQL macro quantile_linear computes it (DuckDB's own quantile_cont is not used:
some builds compile its interpolation to a fused multiply-add, which Python cannot reproduce).
The paired p-value is two-sided: twice the share of replicates whose difference
does not have the observed difference's sign (<= 0 when it is positive, >= 0 when negative),
capped at 1; 1 when the observed difference is 0.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

POISSON_THRESHOLDS: tuple[int, ...] = (
    1656781714176974, 3313563428353948, 4141954285442435, 4418084571138598, 4487117142562638,
    4500923656847446, 4503224742561581, 4503553469092172, 4503594559908496, 4503599125554754,
    4503599582119380, 4503599623625255, 4503599627084078, 4503599627350141, 4503599627369145,
    4503599627370412, 4503599627370492,
)


@dataclass(frozen=True)
class BootstrapCI:
    n: int
    mean: float
    lo: float
    hi: float
    replicates: int


@dataclass(frozen=True)
class PairedBootstrap:
    n: int
    mean_a: float
    mean_b: float
    diff: float  # mean(a) - mean(b)
    lo: float
    hi: float
    replicates: int
    p_value: float


def quantile_linear(values: np.ndarray, q: float) -> float:
    """Linear interpolation at index q * (n - 1) of the sorted values (the SQL quantile_linear)."""
    s = np.sort(np.asarray(values, dtype=np.float64))
    if len(s) == 0:
        return math.nan
    rn = (len(s) - 1) * q
    f, c = math.floor(rn), math.ceil(rn)
    lo, hi = float(s[f]), float(s[c])
    return lo if f == c else lo + (hi - lo) * (rn - f)


def _interval(reps: np.ndarray, alpha: float) -> tuple[float, float]:
    return quantile_linear(reps, alpha / 2), quantile_linear(reps, 1 - alpha / 2)


def _p_value(diff: float, reps: np.ndarray) -> float:
    if len(reps) == 0:
        return math.nan
    if diff == 0:
        return 1.0
    other = int(np.count_nonzero(reps <= 0 if diff > 0 else reps >= 0))
    return min(1.0, (2 * other) / len(reps))


def _values(v: Iterable) -> np.ndarray:
    return np.array([np.nan if a is None else a for a in v], dtype=np.float64)


# ---------------------------------------------------------------------------------------------
# The reference: multinomial resampling with numpy


def _multinomial_means(d: np.ndarray, replicates: int, seed: int, chunk_cells: int = 2_000_000) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = len(d)
    out = np.empty(replicates, dtype=np.float64)
    step = max(1, chunk_cells // max(n, 1))
    for start in range(0, replicates, step):
        stop = min(replicates, start + step)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = d[idx].mean(axis=1)
    return out


def bootstrap_mean(values: Iterable, replicates: int = 1000, seed: int = 0, alpha: float = 0.05) -> BootstrapCI:
    """Percentile bootstrap CI of the mean of per-item values (0/1 hits or floats; missing
    values dropped)."""
    v = _values(values)
    v = v[~np.isnan(v)]
    if len(v) == 0:
        return BootstrapCI(0, math.nan, math.nan, math.nan, 0)
    reps = _multinomial_means(v, replicates, seed)
    return BootstrapCI(len(v), float(v.mean()), *_interval(reps, alpha), replicates)


def paired_bootstrap(a: Iterable, b: Iterable, replicates: int = 1000, seed: int = 0,
                     alpha: float = 0.05) -> PairedBootstrap:
    """Paired bootstrap of mean(a) - mean(b) over the same items (items missing on either side
    dropped): the difference, its percentile CI and a two-sided p-value."""
    a, b = _values(a), _values(b)
    if a.shape != b.shape:
        raise ValueError("a and b differ in length")
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    if len(a) == 0:
        return PairedBootstrap(0, math.nan, math.nan, math.nan, math.nan, math.nan, 0, math.nan)
    d = a - b
    reps = _multinomial_means(d, replicates, seed)
    diff = float(d.mean())
    return PairedBootstrap(len(a), float(a.mean()), float(b.mean()), diff, *_interval(reps, alpha),
                           replicates, _p_value(diff, reps))


# ---------------------------------------------------------------------------------------------
# The twin of the SQL Poisson bootstrap


def bootstrap_hash52(seed: int, b: int, item_id) -> int:
    """The 52-bit integer of md5('<seed>:<b>:<item_id>'), as the SQL macro bootstrap_hash52."""
    return int(hashlib.md5(f"{seed}:{b}:{item_id}".encode()).hexdigest()[:13], 16)


def poisson_weight(seed: int, b: int, item_id) -> int:
    u = bootstrap_hash52(seed, b, item_id)
    w = 0
    for t in POISSON_THRESHOLDS:
        if t > u:
            break
        w += 1
    return w


def poisson_weights(item_ids: Sequence, replicates: int, seed: int) -> np.ndarray:
    """The (replicates x items) weight matrix."""
    return np.array([[poisson_weight(seed, b, i) for i in item_ids] for b in range(replicates)],
                    dtype=np.int64).reshape(replicates, len(item_ids))


def _poisson_means(d: np.ndarray, w: np.ndarray) -> np.ndarray:
    tot = w.sum(axis=1)
    ok = tot > 0
    # sum(w * v) per replicate, in the exact arithmetic of the SQL macro for integer-valued v
    return (w[ok] * d).sum(axis=1) / tot[ok]


def poisson_bootstrap_mean(item_ids: Sequence, values: Iterable, replicates: int = 1000, seed: int = 0,
                           alpha: float = 0.05) -> BootstrapCI:
    """Twin of the SQL `poisson_bootstrap_mean` for one group."""
    v = _values(values)
    ids = np.asarray(list(item_ids), dtype=object)
    if len(ids) != len(v):
        raise ValueError("item_ids and values differ in length")
    keep = ~np.isnan(v)
    v, ids = v[keep], ids[keep]
    if len(v) == 0:
        return BootstrapCI(0, math.nan, math.nan, math.nan, 0)
    reps = _poisson_means(v, poisson_weights(list(ids), replicates, seed))
    return BootstrapCI(len(v), float(v.sum() / len(v)), *_interval(reps, alpha), len(reps))


def poisson_paired_bootstrap(item_ids: Sequence, a: Iterable, b: Iterable, replicates: int = 1000,
                             seed: int = 0, alpha: float = 0.05) -> PairedBootstrap:
    """Twin of the SQL `poisson_paired_bootstrap` for one group."""
    a, b = _values(a), _values(b)
    ids = np.asarray(list(item_ids), dtype=object)
    if not (len(ids) == len(a) == len(b)):
        raise ValueError("item_ids, a and b differ in length")
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b, ids = a[keep], b[keep], ids[keep]
    if len(a) == 0:
        return PairedBootstrap(0, math.nan, math.nan, math.nan, math.nan, math.nan, 0, math.nan)
    d = a - b
    reps = _poisson_means(d, poisson_weights(list(ids), replicates, seed))
    diff = float(d.sum() / len(d))
    return PairedBootstrap(len(a), float(a.sum() / len(a)), float(b.sum() / len(b)), diff,
                           *_interval(reps, alpha), len(reps), _p_value(diff, reps))
