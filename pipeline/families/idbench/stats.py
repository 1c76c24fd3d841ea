"""Bootstrap confidence intervals of Spearman's rho and a paired bootstrap between two
techniques on the same pairs (seeded multinomial resampling of pairs, vectorised over
replicates). Point estimates are pipeline.metrics' Spearman (average ranks, on floats)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.stats import rankdata

from pipeline.core.ids import stable_id
from pipeline.metrics.correlation import spearman


@dataclass(frozen=True)
class RhoCI:
    n: int
    rho: float
    lo: float
    hi: float


@dataclass(frozen=True)
class PairedRho:
    n: int
    rho_a: float
    rho_b: float
    diff: float
    lo: float
    hi: float
    p_value: float

# A layer is chosen by its rho rounded to this many decimals, ties to the lowest layer: two layers whose rho differs
# only in float noise (a random twin's layers: 1e-16; DuckDB's parallel sums move the last bits between builds) are
# a tie, so the choice, here and in the SQL views (round(rho, 9)), is the same in every build.
RHO_TIE_DECIMALS = 9


def _rng(seed: int, *parts: object) -> np.random.Generator:
    return np.random.default_rng(int(stable_id("idbench-bootstrap", seed, *parts), 16))


def _rows_rho(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman per row of [B, n] matrices (average ranks; NaN where a row is constant)."""
    rx, ry = rankdata(x, axis=1), rankdata(y, axis=1)
    rx -= rx.mean(axis=1, keepdims=True)
    ry -= ry.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (rx * ry).sum(axis=1) / np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1))


def _complete(*cols) -> list[np.ndarray]:
    arrs = [np.asarray([np.nan if v is None else v for v in c], dtype=float) for c in cols]
    keep = ~np.any([np.isnan(a) for a in arrs], axis=0)
    return [a[keep] for a in arrs]


def spearman_ci(x, y, replicates: int = 1000, seed: int = 0, alpha: float = 0.05, key: str = "") -> RhoCI:
    x, y = _complete(x, y)
    rho = spearman(x, y).rho
    if len(x) < 3 or not replicates:
        return RhoCI(len(x), rho, float("nan"), float("nan"))
    idx = _rng(seed, key).integers(0, len(x), size=(replicates, len(x)))
    reps = _rows_rho(x[idx], y[idx])
    reps = reps[np.isfinite(reps)]
    if not len(reps):  # a constant side: no rho on any resample
        return RhoCI(len(x), rho, float("nan"), float("nan"))
    lo, hi = np.quantile(reps, [alpha / 2, 1 - alpha / 2])
    return RhoCI(len(x), rho, float(lo), float(hi))


def paired_spearman(a, b, y, replicates: int = 1000, seed: int = 0, alpha: float = 0.05, key: str = "") -> PairedRho:
    """rho(a, y) - rho(b, y) on the pairs both techniques scored, resampled together."""
    a, b, y = _complete(a, b, y)
    ra, rb = spearman(a, y).rho, spearman(b, y).rho
    diff = ra - rb
    if len(y) < 3 or not replicates:
        return PairedRho(len(y), ra, rb, diff, float("nan"), float("nan"), float("nan"))
    idx = _rng(seed, key).integers(0, len(y), size=(replicates, len(y)))
    d = _rows_rho(a[idx], y[idx]) - _rows_rho(b[idx], y[idx])
    # a constant side (e.g. a first-token cosine of 1 for every pair) gives no finite difference
    return PairedRho(len(y), ra, rb, diff, *_paired_interval(diff, d, alpha))


def _paired_interval(diff: float, d: np.ndarray, alpha: float) -> tuple[float, float, float]:
    """(lo, hi, p) of a paired bootstrap: the percentile interval of the replicates' differences `d` (the finite
    ones) and the two-sided p (twice the share on the other side of zero from `diff`, capped at 1); NaNs when
    no replicate or the observed difference is not finite."""
    d = d[np.isfinite(d)]
    if not len(d) or not np.isfinite(diff):
        return float("nan"), float("nan"), float("nan")
    lo, hi = np.quantile(d, [alpha / 2, 1 - alpha / 2])
    wrong = (d <= 0).mean() if diff > 0 else (d >= 0).mean() if diff < 0 else 0.5
    return float(lo), float(hi), float(min(1.0, 2 * wrong))


@dataclass(frozen=True)
class HeldOutLayerRho:
    """A model's rho with its layer chosen on held-out pairs (cv_layer_spearman)."""

    n: int
    rho: float
    lo: float
    hi: float
    layers: tuple[int, ...]  # the layer chosen for each fold (on the other folds' pairs)
    # the bootstrap replicates' rhos in draw order (NaN kept) and the pairs they resample: two systems drawn with
    # the same key on the same pairs differ replicate by replicate, a paired comparison (held_out_difference)
    replicates: np.ndarray | None = field(default=None, compare=False, repr=False)
    pair_ids: tuple[str, ...] = field(default=(), compare=False, repr=False)


def _held_out_rho(scores: np.ndarray, y: np.ndarray, fold_of: np.ndarray, folds: int) -> tuple[float, list[int]]:
    """Each fold's pairs scored at the layer with the highest rho on the other folds' pairs; a pair's score
    is its rank among all pairs at that layer (no gold used), so scores of different layers compare."""
    n_layers, n = scores.shape
    ranks = rankdata(scores, axis=1) / n
    crossed, chosen = np.empty(n), []
    for k in range(folds):
        test = fold_of == k
        if not test.any():
            chosen.append(-1)
            continue
        train = ~test
        rhos = _rows_rho(scores[:, train], np.broadcast_to(y[train], (n_layers, int(train.sum()))))
        best = int(np.argmax(np.where(np.isfinite(rhos), np.round(rhos, RHO_TIE_DECIMALS), -np.inf)))  # ties: lowest layer
        chosen.append(best)
        crossed[test] = ranks[best, test]
    return float(_rows_rho(crossed[None], y[None])[0]), chosen


def _train_ranks(s: np.ndarray, order: np.ndarray, train: np.ndarray, m: int) -> np.ndarray:
    """`rankdata(x, axis=2)` (average ranks) of x = the `train` columns of `s` ([g, layers, n], finite), in
    column order, from `order` (each row's argsort): the training columns in sorted order, ties averaged
    as (first + last) / 2 + 1 of their positions (exact half-integers, equal to rankdata's)."""
    g, n_layers, n = s.shape
    keep = np.take_along_axis(np.broadcast_to(train[:, None, :], s.shape), order, axis=2)
    sel = order[keep].reshape(g, n_layers, m)  # training columns, by value
    vals = np.take_along_axis(s, sel, axis=2)
    pos = np.arange(m)
    new = np.ones(vals.shape, dtype=bool)
    new[..., 1:] = vals[..., 1:] != vals[..., :-1]
    first = np.maximum.accumulate(np.where(new, pos, 0), axis=2)
    last_of = np.ones(vals.shape, dtype=bool)
    last_of[..., :-1] = new[..., 1:]
    last = (m - 1) - np.maximum.accumulate(np.where(last_of, (m - 1) - pos, 0)[..., ::-1], axis=2)[..., ::-1]
    avg = (first + last) / 2 + 1
    by_column = np.zeros(s.shape)
    np.put_along_axis(by_column, sel, avg, axis=2)
    pick = np.nonzero(train)[1].reshape(g, m)
    return np.take_along_axis(by_column, np.broadcast_to(pick[:, None, :], (g, n_layers, m)), axis=2)


def _held_out_rho_replicates(scores: np.ndarray, y: np.ndarray, fold_of: np.ndarray, folds: int,
                             idx: np.ndarray) -> np.ndarray:
    """`_held_out_rho(scores[:, i], y[i], fold_of[i], folds)[0]` for every row i of `idx` (bootstrap
    resamples), equal to the loop bit for bit: the ranks are exact (half-integers), and every Spearman is
    the same row-wise reduction over a row of the same length as the loop's, only many rows per call (the
    (replicate, fold) training sets grouped by their size). The report's 1000 replicates x 90 (model, size,
    gold) groups made ~0.5M small numpy calls; this makes a few per distinct training-set size."""
    reps, n = idx.shape
    n_layers = scores.shape[0]
    s = scores[:, idx].transpose(1, 0, 2)  # [reps, layers, n]
    ranks = rankdata(s, axis=2) / n
    ys, fs = y[idx], fold_of[idx]
    # each row sorted once; a training set's ranks come from that order (not a sort per fold)
    order = np.argsort(s, axis=2, kind="stable") if np.isfinite(scores).all() else None
    chosen = np.full((reps, folds), -1)
    sizes: dict[int, list[tuple[int, int]]] = {}
    for r in range(reps):
        counts = np.bincount(fs[r], minlength=folds)
        for k in range(folds):
            if counts[k]:
                sizes.setdefault(n - int(counts[k]), []).append((r, k))
    for m, members in sizes.items():
        rows = np.array([r for r, _ in members])
        train = fs[rows] != np.array([k for _, k in members])[:, None]  # [g, n], m True per row
        pick = np.nonzero(train)[1].reshape(len(members), m)
        # the gold's ranks once per training set, not once per layer (the same rows: the same reductions)
        rx = _train_ranks(s[rows], order[rows], train, m) if order is not None else rankdata(
            np.take_along_axis(s[rows], np.broadcast_to(pick[:, None, :], (len(members), n_layers, m)), axis=2), axis=2)
        ry = rankdata(np.take_along_axis(ys[rows], pick, axis=1), axis=1)[:, None, :]
        rx -= rx.mean(axis=2, keepdims=True)
        ry -= ry.mean(axis=2, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            rhos = (rx * ry).sum(axis=2) / np.sqrt((rx * rx).sum(axis=2) * (ry * ry).sum(axis=2))
        chosen[rows, [k for _, k in members]] = np.argmax(np.where(np.isfinite(rhos), np.round(rhos, RHO_TIE_DECIMALS), -np.inf),
                                                          axis=1)
    crossed = np.empty((reps, n))
    for k in range(folds):
        test = fs == k
        r_of, c_of = np.nonzero(test)
        crossed[r_of, c_of] = ranks[r_of, chosen[r_of, k], c_of]
    return _rows_rho(crossed, ys)


def cv_layer_spearman(scores, y, layers: list[int], pair_ids: list[str], folds: int = 5, replicates: int = 1000,
                      seed: int = 0, alpha: float = 0.05, key: str = "") -> HeldOutLayerRho:
    """Spearman's rho of a model whose layer is chosen on held-out pairs: the pairs split into `folds`
    seeded folds (by pair id); for each fold, the layer with the highest rho on the other folds; each
    pair scored at the layer chosen without it (_held_out_rho). The CI reruns the whole selection on
    every bootstrap resample (a resampled pair keeps its fold), so it includes the choice of layer.
    `scores`: [layers, pairs] (complete pairs only), `y`: the gold scores."""
    scores, y = np.asarray(scores, dtype=float), np.asarray(y, dtype=float)
    fold_of = np.array([int(stable_id("idbench-fold", seed, p), 16) % folds for p in pair_ids])
    rho, chosen = _held_out_rho(scores, y, fold_of, folds)
    names = tuple(layers[c] if c >= 0 else -1 for c in chosen)
    if len(y) < 3 * folds or not replicates:
        return HeldOutLayerRho(len(y), rho, float("nan"), float("nan"), names)
    all_reps = _held_out_rho_replicates(scores, y, fold_of, folds, _draws(seed, key, len(y), replicates))
    reps = all_reps[np.isfinite(all_reps)]
    lo, hi = np.quantile(reps, [alpha / 2, 1 - alpha / 2])
    return HeldOutLayerRho(len(y), rho, float(lo), float(hi), names, all_reps, tuple(pair_ids))


def _draws(seed: int, key: str, n: int, replicates: int) -> np.ndarray:
    """The bootstrap resamples of the held-out-layer statistics ([replicates, n] pair indices), seeded by the run
    seed and the cell's key: one draw per replicate, in order (one draw of [replicates, n] would not give the
    same numbers)."""
    rng = _rng(seed, "held-out-layer", key)
    return np.stack([rng.integers(0, n, size=n) for _ in range(replicates)])


@dataclass(frozen=True)
class TwinDiff:
    """A model against its random twin on the same pairs (one row of the report's paired table)."""

    model: str
    twin: str
    layer: int
    pooling: str
    size: str
    gold: str
    pair_set: str
    paired: PairedRho  # n pairs, rho_a = the model's, rho_b = the twin's, diff = a - b, lo, hi, p_value


TWIN_PAIRS_SQL = ("SELECT model, twin, layer, pooling, size, gold, pair_set, pair_id, score, twin_score, value "
                  "FROM idbench_twin_pairs WHERE pair_set = ? ORDER BY model, twin, pair_set, gold, size, pooling, "
                  "layer, pair_id")


def twin_diff(rows, replicates: int = 1000, seed: int = 0, alpha: float = 0.05) -> list[TwinDiff]:
    """Per (model, twin, layer, pooling, size, gold, pair set): the model's Spearman minus its twin's on the same
    pairs, with a paired bootstrap (paired_spearman: pair indices resampled once, both rhos computed on the
    resample, the difference's 95% percentile interval and two-sided p-value). `rows`: idbench_twin_pairs rows
    (model, twin, layer, pooling, size, gold, pair_set, pair_id, score, twin_score, value), any order. The draw is
    keyed by (model, twin, size, gold, pair set), not the layer: every layer of a model is read on the same
    resamples of its pairs."""
    groups: dict[tuple, list[tuple]] = {}
    for model, twin, layer, pooling, size, gold, pair_set, pair_id, a, b, y in rows:
        groups.setdefault((model, twin, layer, pooling, size, gold, pair_set), []).append((pair_id, a, b, y))
    out = []
    for key in sorted(groups, key=lambda k: (k[0], k[1], k[6], k[5], k[4], k[3], k[2])):
        model, twin, layer, pooling, size, gold, pair_set = key
        pairs = sorted(groups[key])
        p = paired_spearman([r[1] for r in pairs], [r[2] for r in pairs], [r[3] for r in pairs], replicates, seed,
                            alpha, key=f"twin/{model}/{twin}/{size}/{gold}/{pair_set}")
        out.append(TwinDiff(model, twin, layer, pooling, size, gold, pair_set, p))
    return out


@dataclass(frozen=True)
class HeldOutTwinDiff(PairedRho):
    """A model against its random twin, each at ITS OWN layer chosen on held-out pairs (cv_layer_spearman's
    selection), on the same pairs: both held-out rhos, the difference and its paired bootstrap CI and p, the
    layer choice of both redone inside every resample."""

    layers_a: tuple[int, ...]  # the model's layer per fold
    layers_b: tuple[int, ...]  # the twin's layer per fold


def held_out_twin_diff(scores_a, scores_b, y, layers_a: list[int], layers_b: list[int], pair_ids: list[str],
                       folds: int = 5, replicates: int = 1000, seed: int = 0, alpha: float = 0.05,
                       key: str = "") -> HeldOutTwinDiff:
    """rho_a - rho_b, where each side's rho is its held-out-layer rho (_held_out_rho: per fold, the layer with the
    highest rho on the other folds' pairs). `scores_a` [layers_a, pairs], `scores_b` [layers_b, pairs]: the same
    pairs, complete on both. The pairs' folds are the ones cv_layer_spearman draws (seeded by pair id); every
    bootstrap resample (one index draw per replicate, shared by both sides: cv_layer_spearman's draws for the
    same key) reruns BOTH layer choices on the resampled pairs (_held_out_rho_replicates), so the interval
    includes the choice of layer on each side."""
    a, b, y = np.asarray(scores_a, dtype=float), np.asarray(scores_b, dtype=float), np.asarray(y, dtype=float)
    fold_of = np.array([int(stable_id("idbench-fold", seed, p), 16) % folds for p in pair_ids])
    rho_a, chosen_a = _held_out_rho(a, y, fold_of, folds)
    rho_b, chosen_b = _held_out_rho(b, y, fold_of, folds)
    names_a = tuple(layers_a[c] if c >= 0 else -1 for c in chosen_a)
    names_b = tuple(layers_b[c] if c >= 0 else -1 for c in chosen_b)
    diff = rho_a - rho_b
    nan = float("nan")
    if len(y) < 3 * folds or not replicates or not np.isfinite(diff):
        return HeldOutTwinDiff(len(y), rho_a, rho_b, diff, nan, nan, nan, names_a, names_b)
    idx = _draws(seed, key, len(y), replicates)  # the draws cv_layer_spearman makes for the same key and n
    d = (_held_out_rho_replicates(a, y, fold_of, folds, idx) - _held_out_rho_replicates(b, y, fold_of, folds, idx))
    return HeldOutTwinDiff(len(y), rho_a, rho_b, diff, *_paired_interval(diff, d, alpha), names_a, names_b)


def held_out_difference(a: HeldOutLayerRho, b: HeldOutLayerRho, alpha: float = 0.05) -> HeldOutTwinDiff | None:
    """held_out_twin_diff from two cv_layer_spearman results drawn with the same key on the same pairs (same pair
    ids, in the same order): each side's replicates already rerun its own layer choice on the shared resamples,
    so their difference replicate by replicate is the paired bootstrap, at no further cost. None when the two
    were not drawn alike (other pairs, no replicates): compute held_out_twin_diff then."""
    if a.replicates is None or b.replicates is None or a.pair_ids != b.pair_ids or len(a.replicates) != len(
            b.replicates):
        return None
    diff = a.rho - b.rho
    return HeldOutTwinDiff(a.n, a.rho, b.rho, diff, *_paired_interval(diff, a.replicates - b.replicates, alpha),
                           a.layers, b.layers)
