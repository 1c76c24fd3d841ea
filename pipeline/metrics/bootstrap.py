"""Bootstrap confidence intervals of a mean and paired tests of a difference of means.

Two schemes, same result types:

- `bootstrap_mean` / `paired_bootstrap`: the plain (multinomial) percentile bootstrap with
  numpy, seeded: the reference.
- `poisson_bootstrap_mean` / `poisson_paired_bootstrap`: the twins of the SQL table macros of the
  same names (macros.sql), a Poisson bootstrap computed from per-value histograms. In the Poisson
  bootstrap each item gets a weight w ~ Poisson(1) per replicate; a replicate's mean
  sum(w * v) / sum(w) depends on the weights only through W_x = the sum of the weights of the n_x
  items whose value is x, and a sum of n_x independent Poisson(1) is Poisson(n_x). So replicate b
  draws one W_x ~ Poisson(n_x) per distinct value x: the inverse CDF of Poisson(n_x) at
  u = bootstrap_hash52(seed, b, f"{float(x)}/{n_x}") / 2**52 (SQL: an ASOF join on a table of the
  Poisson CDF; Python: scipy.stats.poisson.ppf), and the replicate mean is sum(W_x * x) / sum(W_x)
  (replicates with sum(W) = 0 are skipped). Paired, the histogram is over the pairs (a, b) (key
  "<a>:<b>"), and a replicate's difference is sum(W (a - b)) / sum(W). Sums add their terms in
  ascending order, so the bits do not depend on threads. Same distribution as the item-level Poisson bootstrap
  (`poisson_weight`, one md5 per item and replicate), at a cost that does not grow with the number
  of items: 2 draws per group and replicate for 0/1 hits.

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


def _paired(a: Iterable, b: Iterable) -> tuple[np.ndarray, np.ndarray]:
    """The values of the items both sides have (an item missing, NaN, on either side is dropped)."""
    a, b = _values(a), _values(b)
    if a.shape != b.shape:
        raise ValueError("a and b differ in length")
    keep = ~(np.isnan(a) | np.isnan(b))
    return a[keep], b[keep]


def paired_bootstrap(a: Iterable, b: Iterable, replicates: int = 1000, seed: int = 0,
                     alpha: float = 0.05) -> PairedBootstrap:
    """Paired bootstrap of mean(a) - mean(b) over the same items (items missing on either side
    dropped): the difference, its percentile CI and a two-sided p-value."""
    a, b = _paired(a, b)
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


def _histogram(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values (as floats) and how many items have each."""
    values, counts = np.unique(v.astype(np.float64), return_counts=True)
    return values, counts.astype(np.int64)


def poisson_histogram_weights(keys: Sequence, counts: np.ndarray, replicates: int, seed: int) -> np.ndarray:
    """The (replicates x histogram entries) matrix of W ~ Poisson(count), as the SQL macros draw them:
    scipy.stats.poisson.ppf at u = bootstrap_hash52(seed, b, f"{key}/{count}") / 2**52. A key is a
    value's text (`repr(float(x))`, as DuckDB writes a DOUBLE) or, paired, "<a>:<b>"."""
    counts = np.asarray(counts, dtype=np.int64)
    if len(counts) == 0:
        return np.zeros((replicates, 0), dtype=np.int64)
    from scipy.stats import poisson

    keys = [f"{k}/{int(c)}" for k, c in zip(keys, counts, strict=True)]
    u = np.array([[bootstrap_hash52(seed, b, k) for k in keys] for b in range(replicates)], dtype=np.float64) / 2.0**52
    return np.maximum(poisson.ppf(u, counts[None, :]), 0).astype(np.int64)


def _ordered_sum(x: np.ndarray) -> np.ndarray:
    """Row sums of the terms in ascending order, left to right, as the SQL macros'
    list_sum(list_sort(list(...))): the same bits whatever the order the terms came in."""
    return np.cumsum(np.sort(x, axis=-1), axis=-1)[..., -1] if x.shape[-1] else np.zeros(x.shape[:-1])


def _histogram_means(values: np.ndarray, w: np.ndarray) -> np.ndarray:
    tot = w.sum(axis=1)
    ok = tot > 0
    return _ordered_sum(w[ok] * values) / tot[ok]


def _merge_histogram(keys: np.ndarray, counts: Iterable) -> tuple[np.ndarray, np.ndarray]:
    """Histogram rows (keys: 1-D values or 2-D pairs) with NULL/NaN keys or counts <= 0 dropped and
    repeated keys added up, sorted by key."""
    keys = np.asarray(keys, dtype=np.float64)
    counts = np.asarray(list(counts), dtype=np.int64)
    if len(keys) != len(counts):
        raise ValueError("values and counts differ in length")
    nan = np.isnan(keys) if keys.ndim == 1 else np.isnan(keys).any(axis=1)
    keep = ~nan & (counts > 0)
    keys, counts = keys[keep], counts[keep]
    if len(keys) == 0:
        return keys, counts
    distinct, inverse = np.unique(keys, axis=0 if keys.ndim > 1 else None, return_inverse=True)
    return distinct, np.bincount(inverse.reshape(-1), weights=counts, minlength=len(distinct)).astype(np.int64)


def poisson_bootstrap_hist(values: Iterable, counts: Iterable, replicates: int = 1000, seed: int = 0,
                           alpha: float = 0.05) -> BootstrapCI:
    """Twin of the SQL `poisson_bootstrap_hist` for one group: the histogram itself (value, how many
    items have it) instead of the items."""
    xs, counts = _merge_histogram(_values(values), counts)
    if len(xs) == 0:
        return BootstrapCI(0, math.nan, math.nan, math.nan, 0)
    reps = _histogram_means(xs, poisson_histogram_weights([repr(float(x)) for x in xs], counts, replicates, seed))
    return BootstrapCI(int(counts.sum()), float(_ordered_sum(xs * counts) / counts.sum()), *_interval(reps, alpha),
                       len(reps))


def poisson_bootstrap_mean(item_ids: Sequence, values: Iterable, replicates: int = 1000, seed: int = 0,
                           alpha: float = 0.05) -> BootstrapCI:
    """Twin of the SQL `poisson_bootstrap_mean` for one group (item_ids are checked, not used:
    the histogram scheme needs no identity)."""
    v = _values(values)
    if len(list(item_ids)) != len(v):
        raise ValueError("item_ids and values differ in length")
    v = v[~np.isnan(v)]
    xs, counts = _histogram(v) if len(v) else (v, np.zeros(0, dtype=np.int64))
    return poisson_bootstrap_hist(xs, counts, replicates, seed, alpha)


def poisson_paired_bootstrap_hist(a: Iterable, b: Iterable, counts: Iterable, replicates: int = 1000,
                                  seed: int = 0, alpha: float = 0.05) -> PairedBootstrap:
    """Twin of the SQL `poisson_paired_bootstrap_hist` for one group: rows (a, b, how many items have
    this pair)."""
    a, b = _values(a), _values(b)
    if len(a) != len(b):
        raise ValueError("a and b differ in length")
    pairs, counts = _merge_histogram(np.stack([a, b], axis=1).reshape(len(a), 2), counts)  # sorted by (a, b)
    if len(pairs) == 0:
        return PairedBootstrap(0, math.nan, math.nan, math.nan, math.nan, math.nan, 0, math.nan)
    keys = [f"{float(x)!r}:{float(y)!r}" for x, y in pairs]
    w = poisson_histogram_weights(keys, counts, replicates, seed)
    d = pairs[:, 0] - pairs[:, 1]
    reps = _histogram_means(d, w)
    n = counts.sum()
    diff = float(_ordered_sum(counts * d) / n)
    return PairedBootstrap(int(n), float(_ordered_sum(counts * pairs[:, 0]) / n),
                           float(_ordered_sum(counts * pairs[:, 1]) / n), diff,
                           *_interval(reps, alpha), len(reps), _p_value(diff, reps))


def poisson_paired_bootstrap(item_ids: Sequence, a: Iterable, b: Iterable, replicates: int = 1000,
                             seed: int = 0, alpha: float = 0.05) -> PairedBootstrap:
    """Twin of the SQL `poisson_paired_bootstrap` for one group: the histogram of the pairs (a, b)."""
    a, b = _values(a), _values(b)
    if not (len(list(item_ids)) == len(a) == len(b)):
        raise ValueError("item_ids, a and b differ in length")
    return poisson_paired_bootstrap_hist(a, b, np.ones(len(a), dtype=np.int64), replicates, seed, alpha)


# ---------------------------------------------------------------------------------------------
# The report's headline tests: >= 10,000 seeded multinomial replicates per cell, vectorised

HEADLINE_REPLICATES = 10_000  # replicates of every headline CI and p (the report's summary table)
_CHUNK_CELLS = 4_000_000  # replicates x categories drawn at once (memory bound; fixed, so the draws never vary)


@dataclass(frozen=True)
class PairedTest:
    """A paired comparison of a statistic of `a` and of `b` over the same items: the observed values, their
    difference a - b, its percentile CI, the two-sided bootstrap p and that p's Monte Carlo standard error
    (sqrt(p (1 - p) / replicates)): a p within 2 of them of alpha cannot be told from it."""

    n: int
    a: float
    b: float
    diff: float
    lo: float
    hi: float
    p_value: float
    p_error: float
    replicates: int


def cell_seed(seed, *key) -> int:
    """The seed of one cell's replicates: from the run seed (params.yaml `seed`) and the cell's key (family,
    model, metric, baseline, ...), so every cell draws its own resamples and a rebuild draws the same."""
    text = "\x00".join(str(k) for k in ("cell", int(seed or 0), *key))
    return int(hashlib.sha256(text.encode()).hexdigest()[:15], 16)


def p_error(p: float, replicates: int) -> float:
    """The Monte Carlo standard error of a bootstrap p estimated from `replicates` replicates."""
    if not replicates or p != p:
        return math.nan
    p = min(1.0, max(0.0, float(p)))
    return math.sqrt(p * (1 - p) / replicates)


def _empty_test() -> PairedTest:
    return PairedTest(0, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, 0)


def _multinomial_counts(rng, n: int, probs: np.ndarray, replicates: int):
    """Chunks of (replicates x categories) multinomial counts of n draws (a resample's item counts)."""
    step = max(1, _CHUNK_CELLS // max(len(probs), 1))
    for start in range(0, replicates, step):
        yield rng.multinomial(n, probs, size=min(step, replicates - start))


def _test(diff: float, a: float, b: float, reps: np.ndarray, n: int, alpha: float) -> PairedTest:
    reps = reps[~np.isnan(reps)]
    p = _p_value(diff, reps)
    return PairedTest(n, a, b, diff, *_interval(reps, alpha), p, p_error(p, len(reps)), len(reps))


def paired_mean_test(a: Iterable, b: Iterable, seed: int, replicates: int = HEADLINE_REPLICATES,
                     alpha: float = 0.05) -> PairedTest:
    """Paired multinomial bootstrap of mean(a) - mean(b) over the same items (an item missing on either side is
    dropped). The resample draws counts over the distinct differences (Multinomial(n, their frequencies): the
    same law as drawing n items with replacement), so 0/1 hits cost 3 categories a replicate whatever n; sums
    are numpy's pairwise sums, so the same seed gives the same bits."""
    a, b = _paired(a, b)
    if len(a) == 0:
        return _empty_test()
    d = a - b
    values, counts = np.unique(d, return_counts=True)
    n = len(d)
    rng = np.random.default_rng(seed)
    reps = np.concatenate([(c * values).sum(axis=1) / n
                           for c in _multinomial_counts(rng, n, counts / n, replicates)])
    return _test(float((values * counts).sum() / n), float(a.mean()), float(b.mean()), reps, n, alpha)


def _resample_counts(rng, n: int, replicates: int):
    """Chunks of (replicates x n) item counts of resamples of n items drawn with replacement (n uniform indices
    per replicate, counted): the multinomial law, drawn faster than rng.multinomial at n categories."""
    step = max(1, _CHUNK_CELLS // max(n, 1))
    for start in range(0, replicates, step):
        rows = min(step, replicates - start)
        idx = rng.integers(0, n, size=(rows, n)) + (np.arange(rows) * n)[:, None]
        yield np.bincount(idx.ravel(), minlength=rows * n).reshape(rows, n).astype(np.int32)


def _weighted_avg_ranks(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Average ranks of the items x within each resample (row of w: each item's count in it), ties averaged:
    an item's rank is the count of resampled items below its value plus (its tie group's count + 1) / 2."""
    order = np.argsort(x, kind="stable")
    xs = x[order]
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    group = np.empty(len(x), dtype=np.int64)
    group[order] = np.cumsum(np.r_[True, xs[1:] != xs[:-1]]) - 1
    g = np.add.reduceat(w[:, order], starts, axis=1)
    below = np.cumsum(g, axis=1) - g
    return (below + (g + 1) / 2.0)[:, group]


def _weighted_corr(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    tot = w.sum(axis=1, keepdims=True)
    mx, my = (w * x).sum(axis=1, keepdims=True) / tot, (w * y).sum(axis=1, keepdims=True) / tot
    dx, dy = x - mx, y - my
    sxy, sxx, syy = (w * dx * dy).sum(axis=1), (w * dx * dx).sum(axis=1), (w * dy * dy).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((sxx > 0) & (syy > 0), sxy / np.sqrt(sxx * syy), np.nan)


def paired_spearman_tests(x: Iterable, others: dict, gold: Iterable, seed: int,
                          replicates: int = HEADLINE_REPLICATES, alpha: float = 0.05) -> dict:
    """Paired bootstrap of Spearman rho(x, gold) - rho(y, gold) for each y of `others` ({name: values}), over the
    items every one of them scored (a pair missing on any side is dropped from all), the items resampled together
    (multinomial counts per item, one draw shared by the comparisons); each resample's ranks are the average
    ranks within it, ties averaged (as pipeline.metrics.correlation). A resample where a side is constant is
    skipped. {name: PairedTest}."""
    x, g = _values(x), _values(gold)
    ys = {name: _values(v) for name, v in others.items()}
    if any(v.shape != x.shape for v in (g, *ys.values())):
        raise ValueError("x, the others and gold differ in length")
    keep = ~(np.isnan(x) | np.isnan(g))
    for v in ys.values():
        keep &= ~np.isnan(v)
    x, g = x[keep], g[keep]
    ys = {name: v[keep] for name, v in ys.items()}
    n = len(x)
    if n < 3:
        return {name: _empty_test() for name in ys}
    ones = np.ones((1, n), dtype=np.int64)
    rg = _weighted_avg_ranks(g, ones)
    a = float(_weighted_corr(_weighted_avg_ranks(x, ones), rg, ones)[0])
    b = {name: float(_weighted_corr(_weighted_avg_ranks(v, ones), rg, ones)[0]) for name, v in ys.items()}
    rng = np.random.default_rng(seed)
    reps: dict = {name: [] for name in ys}
    for w in _resample_counts(rng, n, replicates):
        rg = _weighted_avg_ranks(g, w)
        ra = _weighted_corr(_weighted_avg_ranks(x, w), rg, w)
        for name, v in ys.items():
            reps[name].append(ra - _weighted_corr(_weighted_avg_ranks(v, w), rg, w))
    return {name: _test(a - b[name], a, b[name], np.concatenate(reps[name]), n, alpha) for name in ys}


def paired_spearman_test(x: Iterable, y: Iterable, gold: Iterable, seed: int,
                         replicates: int = HEADLINE_REPLICATES, alpha: float = 0.05) -> PairedTest:
    """paired_spearman_tests for one y."""
    return paired_spearman_tests(x, {"y": y}, gold, seed, replicates, alpha)["y"]


def _macro_ratio(hits: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Per row (a resample), the mean over columns (relations) of hits / edges, a column without edges left out."""
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(edges > 0, hits / np.where(edges > 0, edges, 1), np.nan)
    counted = (edges > 0).sum(axis=-1)
    return np.where(counted > 0, np.nansum(ratio, axis=-1) / np.maximum(counted, 1), np.nan)


def macro_ratio_tests(hits: np.ndarray, edges: np.ndarray, others: dict, seed: int,
                      replicates: int = HEADLINE_REPLICATES, alpha: float = 0.05) -> dict:
    """A macro-averaged rate over clustered items, paired: `hits` and `edges` are (items x groups) counts (say,
    test functions x relations, a function's edges of each relation and those the model finds); the statistic
    is the mean over groups of sum(hits) / sum(edges) (the paper's average over relations), and the resampling unit
    is the item (a function, with all its edges), not the group. `others`: {name: (hits, edges)} of the same shape
    for a paired reference on the same items (a twin), or {name: rates}, one fixed rate per group (a baseline scored
    on a population far larger than the items, held fixed: its own sampling noise is left out). Each resample leaves
    out a group none of its items has an edge of, on both sides. {name: PairedTest}, n = the items."""
    hits, edges = np.asarray(hits, dtype=np.float64), np.asarray(edges, dtype=np.float64)
    n = hits.shape[0]
    if n == 0 or edges.sum() == 0:
        return {name: _empty_test() for name in others}
    refs = {}
    for name, ref in others.items():
        if isinstance(ref, tuple):
            refs[name] = (np.asarray(ref[0], dtype=np.float64), np.asarray(ref[1], dtype=np.float64))
        else:
            refs[name] = np.asarray(ref, dtype=np.float64)

    def stat(h, e, ref, c=None):
        """(model, reference) statistics for resample counts c (None: the items once)."""
        w = (lambda m: m.sum(axis=0)) if c is None else (lambda m: c @ m)
        if isinstance(ref, tuple):
            return _macro_ratio(w(h), w(e)), _macro_ratio(w(ref[0]), w(ref[1]))
        ok = ~np.isnan(ref)  # the groups the fixed reference has a rate for, on both sides
        he, ee = w(h[:, ok]), w(e[:, ok])
        counted = ee > 0
        fixed = np.where(counted, ref[ok], 0.0).sum(axis=-1) / np.maximum(counted.sum(axis=-1), 1)
        return _macro_ratio(he, ee), np.where(counted.sum(axis=-1) > 0, fixed, np.nan)

    observed = {name: stat(hits, edges, ref) for name, ref in refs.items()}
    rng = np.random.default_rng(seed)
    reps: dict = {name: [] for name in refs}
    for c in _resample_counts(rng, n, replicates):
        c = c.astype(np.float64)
        for name, ref in refs.items():
            a, b = stat(hits, edges, ref, c)
            reps[name].append(a - b)
    out = {}
    for name, (a, b) in observed.items():
        a, b = float(a), float(b)
        out[name] = _test(a - b, a, b, np.concatenate(reps[name]), n, alpha)
    return out
