"""Linear probes on frozen features, with the protocol of Troshin & Chirkova (2022,
"Probing Pretrained Models of Source Codes", BlackboxNLP, sec. 4.2).

K-fold cross-validation (K = 4) with folds grouped by `group` (the samples of one snippet never
straddle folds; groups are assigned to folds by a seeded, size-balanced draw). For every layer a
linear probe is fitted on the train folds (features standardised on the train folds only) and
scored on the test fold: error = 1 - accuracy for classification, MAE for regression. The best
layer is chosen on fold 0 only; the headline is the mean over folds 1..K-1 at that layer, with a
95% t-interval (and min/max) across those folds. Per-layer curves over all folds are kept.

Probes: `ridge` (default, fast: ridge classifier / regression, alpha chosen by an inner grouped CV
on the train folds, one SVD per inner fold for the whole grid; `alpha_search="loo"` keeps sklearn's
RidgeClassifierCV / RidgeCV efficient leave-one-out for comparison), `lbfgs` (logistic regression, C = 1/alpha, alpha chosen by an inner grouped CV) and
`sgd` (SGDClassifier with log loss, tol 1e-4, alpha grid-searched on an inner grouped split, on
standardised features; slow) and `paper`: the release's probe as it runs (probings4code), on the raw
features, the estimator the release fits on the task (`paper_estimator`): `sgd` (token and edge tasks:
`TokenClassificationLinearModel` / `EdgeClassificationLinearModel`, `SGDClassifier(loss="log", tol=1e-4)`
in sklearn's `GridSearchCV` with its default 5-fold stratified split), `logistic_cv` (snippet tasks:
`SentenceClassificationLinearModel`, `LogisticRegressionCV(Cs=grid, random_state=777, max_iter=10000)`)
or `ridge_cv` (regression: `RidgeCV`); the train split ordered as the release orders it (its snippets
shuffled, seeded, each snippet's samples together) and capped at the release's 10,000 samples; the grid
`alphas` (the release's per task, given by the family), seeded (the release leaves SGD's seed free).
`selected_only` (the paper's Table 1 protocol, no more): fold 0 at every layer, folds 1..K-1 at the
layer chosen on fold 0 only; the headline is the same, the per-layer curve is fold 0's.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np
import pyarrow as pa

ALPHAS: tuple[float, ...] = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)  # the paper's grid
PROBES = ("ridge", "lbfgs", "sgd", "paper")
# the estimators the probing release (probings4code) fits: SGD (token and edge tasks), logistic regression with
# its own CV (snippet tasks), RidgeCV (regression)
PAPER_ESTIMATORS = ("sgd", "logistic_cv", "ridge_cv")
PAPER_MAX_TRAIN = 10_000  # the release's ProbingTask._probe(max_samples=10000): a larger train split is subsampled
ALPHA_SEARCHES = ("inner", "loo")
TASK_TYPES = ("classification", "regression")


@dataclass(frozen=True)
class ProbeConfig:
    task_type: str = "classification"
    probe: str = "ridge"
    folds: int = 4
    alphas: tuple[float, ...] = ALPHAS
    seed: int = 0
    inner_folds: int = 3  # grouped inner split of the train folds for the alpha search
    max_iter: int = 1000
    alpha_search: str = "inner"  # ridge: "inner" grouped CV on the train split, or "loo" (efficient leave-one-out)
    # probe "paper": the release's estimator ("" : sgd for classification, ridge_cv for regression)
    paper_estimator: str = ""
    # fit folds 1..K-1 at the layer chosen on fold 0 only (every layer's fold 0 still fitted): Table 1's rows
    selected_only: bool = False

    def __post_init__(self):
        if self.task_type not in TASK_TYPES:
            raise ValueError(f"task_type must be one of {TASK_TYPES}, got {self.task_type!r}")
        if self.probe not in PROBES:
            raise ValueError(f"probe must be one of {PROBES}, got {self.probe!r}")
        if self.task_type == "regression" and self.probe not in ("ridge", "paper"):
            raise ValueError("regression tasks are fitted with ridge (RidgeCV); use --probe ridge (or paper)")
        if self.paper_estimator and self.paper_estimator not in PAPER_ESTIMATORS:
            raise ValueError(f"paper_estimator must be one of {PAPER_ESTIMATORS}, got {self.paper_estimator!r}")
        if (self.probe == "paper" and self.paper_estimator
                and (self.paper_estimator == "ridge_cv") != (self.task_type == "regression")):
            raise ValueError(f"paper_estimator {self.paper_estimator!r} does not fit a {self.task_type} task")
        if self.alpha_search not in ALPHA_SEARCHES:
            raise ValueError(f"alpha_search must be one of {ALPHA_SEARCHES}, got {self.alpha_search!r}")
        if self.folds < 2 or self.inner_folds < 2:
            raise ValueError("folds and inner_folds must be at least 2")
        if not self.alphas or any(a <= 0 for a in self.alphas):
            raise ValueError("alphas must be a non-empty list of positive numbers")

    @property
    def metric(self) -> str:
        return "error" if self.task_type == "classification" else "mae"

    @property
    def estimator(self) -> str:
        """The paper probe's estimator on this task."""
        return self.paper_estimator or ("ridge_cv" if self.task_type == "regression" else "sgd")


@dataclass(frozen=True)
class FoldScore:
    """One probe (or baseline) fitted on the other folds and scored on `fold`."""

    layer: int | None  # None for baselines
    fold: int
    error: float  # 1 - accuracy, or MAE
    n_train: int
    n_test: int
    alpha: float | None = None
    # the test fold's items (indices into the task's items) and each one's error (0/1 misclassification, or
    # |prediction - target|): what a paired bootstrap over test samples resamples (results_table keeps them on
    # the selected layer's rows); their mean is `error` up to float rounding
    test_index: np.ndarray | None = field(default=None, compare=False, repr=False)
    item_errors: np.ndarray | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Headline:
    """The protocol's summary: layer chosen on fold 0, statistics over folds 1..K-1 at that layer."""

    layer: int | None
    mean: float
    ci_low: float  # 95% Student-t interval of the mean across the headline folds
    ci_high: float
    min: float
    max: float
    n_folds: int
    interval: str = "t95 over folds 1..K-1"


@dataclass(frozen=True)
class ProbeResult:
    scores: tuple[FoldScore, ...]
    selected_layer: int | None
    headline: Headline

    def curve(self, fold: int | None = None) -> dict[int | None, float]:
        """Mean error per layer over all folds (the per-layer curve), or one fold's error per layer."""
        by: dict[int | None, list[float]] = {}
        for s in self.scores:
            if fold is None or s.fold == fold:
                by.setdefault(s.layer, []).append(s.error)
        return {layer: float(np.mean(v)) for layer, v in sorted(by.items(), key=lambda kv: (kv[0] is None, kv[0]))}


# ---------------------------------------------------------------- folds


def assign_folds(groups: Sequence[str], k: int, seed: int) -> np.ndarray:
    """Fold index (0..k-1) per sample; every group lands in exactly one fold.

    Deterministic and independent of row order: the distinct groups are sorted, shuffled with
    `seed`, then (largest first, shuffled order among equal sizes) given to the fold with the
    fewest samples so far, ties to the lowest fold.
    """
    groups = np.asarray(groups, dtype=object).astype(str)
    names, inverse, counts = np.unique(groups, return_inverse=True, return_counts=True)
    if len(names) < k:
        raise ValueError(f"{len(names)} groups cannot fill {k} folds; need at least {k} distinct groups")
    order = np.random.default_rng(seed).permutation(len(names))
    order = order[np.argsort(-counts[order], kind="stable")]
    load = np.zeros(k, dtype=np.int64)
    fold_of_group = np.empty(len(names), dtype=np.int64)
    for g in order:
        f = int(np.argmin(load))
        fold_of_group[g] = f
        load[f] += counts[g]
    return fold_of_group[inverse]


def fold_splits(folds: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train indices, test indices) for each fold, in fold order."""
    return [(np.flatnonzero(folds != f), np.flatnonzero(folds == f)) for f in range(int(folds.max()) + 1)]


# ---------------------------------------------------------------- one probe


def _standardise(x_train: np.ndarray, x_test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x_train = x_train.astype(np.float64, copy=False)
    x_test = x_test.astype(np.float64, copy=False)
    mean = x_train.mean(axis=0)
    std = x_train.std(axis=0)
    std[std == 0] = 1.0
    return (x_train - mean) / std, (x_test - mean) / std


def inner_alpha_scores(x: np.ndarray, y: np.ndarray, splits: Sequence[tuple[np.ndarray, np.ndarray]],
                       alphas: Sequence[float], regression: bool) -> np.ndarray:
    """Mean inner-validation score per alpha (higher is better: accuracy, or -MAE for regression).

    For each inner split the train part is standardised on itself (zero-variance columns left at
    scale 1, as sklearn's StandardScaler), the targets centred (the intercept) and one thin SVD
    X = U S V^T gives every alpha's ridge solution V diag(s / (s^2 + alpha)) U^T y at once. Targets
    of a classifier are sklearn's RidgeClassifier's: one column in {-1, 1} per class (one column for
    two classes), prediction = the arg max (the sign). Equal, to float rounding, to
    GridSearchCV(Pipeline([StandardScaler(), Ridge / RidgeClassifier()])) with the same splits
    (tests/test_fit.py checks it), at one SVD per split instead of one fit per (split, alpha).
    """
    x = np.asarray(x, dtype=np.float64)
    alphas = np.asarray(alphas, dtype=np.float64)
    if regression:
        targets = np.asarray(y, dtype=np.float64)[:, None]
    else:
        classes, codes = np.unique(np.asarray(y).astype(str), return_inverse=True)
        targets = -np.ones((len(codes), len(classes)))
        targets[np.arange(len(codes)), codes] = 1.0
        if len(classes) == 2:
            targets = targets[:, 1:]
    scores = np.zeros((len(splits), len(alphas)))
    for k, (tr, va) in enumerate(splits):
        mean, std = x[tr].mean(axis=0), x[tr].std(axis=0)
        std[std == 0] = 1.0
        xt, xv = (x[tr] - mean) / std, (x[va] - mean) / std
        centre = xt.mean(axis=0)  # ~0 after standardising; subtracted so the intercept is exact
        t_mean = targets[tr].mean(axis=0)
        u, sv, vt = np.linalg.svd(xt - centre, full_matrices=False)
        uty = u.T @ (targets[tr] - t_mean)  # [rank, columns]
        proj = (xv - centre) @ vt.T  # [validation, rank]
        for j, alpha in enumerate(alphas):
            pred = proj @ ((sv / (sv ** 2 + alpha))[:, None] * uty) + t_mean
            if regression:
                scores[k, j] = -np.mean(np.abs(pred[:, 0] - targets[va, 0]))
            else:
                got = (pred[:, 0] > 0).astype(int) if pred.shape[1] == 1 else pred.argmax(axis=1)
                scores[k, j] = np.mean(got == codes[va])
    return scores.mean(axis=0)


def _ridge_inner(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, y_test: np.ndarray,
                 groups_train: Sequence[str], config: ProbeConfig) -> tuple[float, float]:
    """Ridge with alpha chosen by a grouped inner CV on the train split only.

    The inner folds are grouped like the outer ones (a snippet's samples never straddle them), each
    inner fit is standardised on its own inner train part, alpha is scored with the task's own metric
    (accuracy, or MAE for regression) and a tie goes to the larger (more regularised) alpha. The chosen
    alpha is refitted (sklearn Ridge / RidgeClassifier) on the whole train split standardised on it
    and scored on the test split.
    """
    from sklearn.linear_model import Ridge, RidgeClassifier

    regression = config.task_type == "regression"
    inner = fold_splits(assign_folds(groups_train, config.inner_folds, config.seed + 1))
    grid = sorted(config.alphas, reverse=True)
    scores = inner_alpha_scores(x_train, y_train, inner, grid, regression)
    alpha = float(grid[int(np.argmax(scores))])  # first maximum: the largest alpha among ties
    x_train, x_test = _standardise(x_train, x_test)
    model = (Ridge if regression else RidgeClassifier)(alpha=alpha).fit(x_train, y_train)
    return _scored(model.predict(x_test), y_test, regression, alpha)


def release_order(groups_train: Sequence[str], seed: int) -> np.ndarray:
    """The train split's rows in the order the release fits them: its snippets shuffled (the release's
    `random.seed(0); random.shuffle(train_dataset)` over snippets; here Python's random seeded with `seed` over the
    sorted snippet names), each snippet's samples together in their order. The order is what sklearn's default
    (unshuffled, stratified) split of the grid search cuts, and where SGD's per-epoch shuffle starts."""
    import random

    groups = np.asarray(groups_train, dtype=object).astype(str)
    names = sorted(set(groups.tolist()))
    random.Random(seed).shuffle(names)
    rank = {g: i for i, g in enumerate(names)}
    return np.argsort(np.array([rank[g] for g in groups], dtype=np.int64), kind="stable")


def release_estimator(config: ProbeConfig):
    """The estimator the release fits (probings4code, `train_linear_model` of the task's probing model), unfitted:
    token and edge tasks `GridSearchCV(SGDClassifier(loss="log", tol=1e-4), {"alpha": grid})` (sklearn's default
    5-fold stratified split, accuracy; the release leaves SGD's seed free: ours is `seed`); snippet tasks
    `LogisticRegressionCV(Cs=grid, random_state=777, max_iter=10000)` (its default 5-fold stratified split,
    accuracy, L2, lbfgs); regression `RidgeCV(alphas=grid)` (efficient leave-one-out). `loss="log"` is sklearn
    1.0's name of `log_loss`; accuracy, L2 and the split are written out where today's sklearn warns of a change."""
    from sklearn.linear_model import LogisticRegressionCV, RidgeCV, SGDClassifier
    from sklearn.model_selection import GridSearchCV

    grid = list(config.alphas)
    if config.estimator == "ridge_cv":
        return RidgeCV(alphas=grid)
    if config.estimator == "logistic_cv":
        return LogisticRegressionCV(Cs=grid, random_state=777, max_iter=10000, scoring="accuracy", l1_ratios=(0.0,),
                                    use_legacy_attributes=False)
    sgd = SGDClassifier(loss="log_loss", tol=1e-4, max_iter=config.max_iter, random_state=config.seed)
    return GridSearchCV(sgd, {"alpha": grid})


def _paper_probe(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, y_test: np.ndarray,
                 groups_train: Sequence[str], config: ProbeConfig,
                 order_groups: Sequence[str] | None = None) -> tuple[float, float, np.ndarray]:
    """The release's probe on the raw features (float64, as sklearn 1.0 converted them): the train split in the
    release's order (`release_order`), subsampled (seeded, in the drawn order) to the release's 10,000 samples when
    larger, then `release_estimator`. The alpha reported: SGD's and RidgeCV's chosen alpha, 1/C for logistic."""
    from sklearn.exceptions import ConvergenceWarning

    order = release_order(groups_train if order_groups is None else order_groups, config.seed)
    x_train, y_train = x_train[order].astype(np.float64), np.asarray(y_train)[order]
    if len(order) > PAPER_MAX_TRAIN:  # the release: np.random.choice(np.arange(n), size=max_samples, replace=False)
        keep = np.random.RandomState(config.seed).choice(np.arange(len(order)), size=PAPER_MAX_TRAIN, replace=False)
        x_train, y_train = x_train[keep], y_train[keep]
    x_test = x_test.astype(np.float64)
    model = release_estimator(config)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.filterwarnings("ignore", message="The least populated class")
        model.fit(x_train, y_train)
    if config.estimator == "ridge_cv":
        return _scored(model.predict(x_test), y_test, True, float(model.alpha_))
    alpha = (1.0 / float(np.ravel(model.C_)[0]) if config.estimator == "logistic_cv"
             else float(model.best_params_["alpha"]))
    return _scored(model.predict(x_test), y_test, False, alpha)


def _scored(pred: np.ndarray, y_test: np.ndarray, regression: bool, alpha: float) -> tuple[float, float, np.ndarray]:
    """(error on the test part, alpha, each test item's error): MAE and |pred - y|, or 1 - accuracy and 0/1."""
    if regression:
        errors = np.abs(pred - y_test).astype(np.float64)
        return float(np.mean(errors)), alpha, errors
    return float(1.0 - np.mean(pred == y_test)), alpha, (pred != y_test).astype(np.float64)


def fit_and_score(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, y_test: np.ndarray,
                  groups_train: Sequence[str], config: ProbeConfig) -> tuple[float, float]:
    """Fit `config.probe` on the train part (alpha chosen on it only); return (error on test, alpha)."""
    err, alpha, _ = fit_score_items(x_train, y_train, x_test, y_test, groups_train, config)
    return err, alpha


def fit_score_items(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, y_test: np.ndarray,
                    groups_train: Sequence[str], config: ProbeConfig,
                    order_groups: Sequence[str] | None = None) -> tuple[float, float, np.ndarray]:
    """fit_and_score, with each test item's error (0/1, or |prediction - target|) as a third value. `groups_train`
    group the inner alpha search's splits; `order_groups` (the train rows' snippets; default `groups_train`) are what
    the `paper` probe shuffles, as the release shuffles its snippets."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegressionCV, RidgeClassifierCV, RidgeCV, SGDClassifier
    from sklearn.model_selection import GridSearchCV

    alphas = list(config.alphas)
    if config.probe == "paper":
        return _paper_probe(x_train, y_train, x_test, y_test, groups_train, config, order_groups)
    if config.probe == "ridge" and config.alpha_search == "inner":
        return _ridge_inner(x_train, y_train, x_test, y_test, groups_train, config)
    x_train, x_test = _standardise(x_train, x_test)
    if config.probe == "ridge":  # alpha_search "loo": sklearn's efficient leave-one-out over the grid
        if config.task_type == "regression":
            model = RidgeCV(alphas=alphas).fit(x_train, y_train)
            return _scored(model.predict(x_test), y_test, True, float(model.alpha_))
        model = RidgeClassifierCV(alphas=alphas).fit(x_train, y_train)
        alpha = float(model.alpha_)
    else:
        inner = fold_splits(assign_folds(groups_train, config.inner_folds, config.seed + 1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            if config.probe == "lbfgs":
                cs = [1.0 / a for a in alphas]
                model = LogisticRegressionCV(Cs=cs, cv=inner, max_iter=config.max_iter, scoring="accuracy",
                                             l1_ratios=(0.0,), use_legacy_attributes=False)
                model.fit(x_train, y_train)
                alpha = float(1.0 / np.ravel(model.C_)[0])
            else:
                sgd = SGDClassifier(loss="log_loss", tol=1e-4, max_iter=config.max_iter, random_state=config.seed)
                model = GridSearchCV(sgd, {"alpha": alphas}, cv=inner, scoring="accuracy", refit=True)
                model.fit(x_train, y_train)
                alpha = float(model.best_params_["alpha"])
    return _scored(model.predict(x_test), y_test, False, alpha)


def cross_validate(x: np.ndarray, y: np.ndarray, groups: Sequence[str], folds: np.ndarray, config: ProbeConfig,
                   layer: int | None = None, only: Iterable[int] | None = None,
                   order_groups: Sequence[str] | None = None) -> list[FoldScore]:
    """One layer: a probe per fold (or per fold in `only`), fitted on the other folds. `groups`: what the folds are
    grouped by (the inner alpha search's splits too); `order_groups`: the snippets the `paper` probe shuffles
    (default `groups`)."""
    groups = np.asarray(groups, dtype=object)
    order = None if order_groups is None else np.asarray(order_groups, dtype=object)
    wanted = None if only is None else set(only)
    out = []
    for f, (tr, te) in enumerate(fold_splits(folds)):
        if wanted is not None and f not in wanted:
            continue
        err, alpha, errors = fit_score_items(x[tr], y[tr], x[te], y[te], groups[tr], config,
                                             None if order is None else order[tr])
        out.append(FoldScore(layer, f, err, len(tr), len(te), alpha, te, errors))
    return out


# ---------------------------------------------------------------- protocol


def headline(scores: Iterable[FoldScore], layer: int | None) -> Headline:
    """Mean, 95% t-interval, min and max over folds 1..K-1 at `layer`."""
    from scipy import stats

    vals = np.array([s.error for s in scores if s.layer == layer and s.fold != 0], dtype=np.float64)
    if len(vals) == 0:
        raise ValueError(f"no fold other than 0 scored at layer {layer}")
    mean = float(vals.mean())
    if len(vals) > 1 and vals.std() > 0:
        half = float(stats.t.ppf(0.975, len(vals) - 1) * vals.std(ddof=1) / math.sqrt(len(vals)))
    else:
        half = 0.0
    return Headline(layer, mean, mean - half, mean + half, float(vals.min()), float(vals.max()), len(vals))


def select_layer(scores: Iterable[FoldScore]) -> int | None:
    """The layer with the lowest fold-0 error (ties: the lowest layer)."""
    first = sorted((s.error, s.layer) for s in scores if s.fold == 0)
    if not first:
        raise ValueError("no fold-0 score to choose a layer on")
    return first[0][1]


def summarise(scores: Sequence[FoldScore]) -> ProbeResult:
    layer = select_layer(scores)
    return ProbeResult(tuple(scores), layer, headline(scores, layer))


class LayerSweep:
    """One probe over a task's layers, fed one layer at a time (`add`), summarised by `finish`. Every fold at every
    layer; or, with `config.selected_only` (the paper's Table 1 protocol and nothing more), fold 0 at every layer
    and, at `finish`, folds 1..K-1 at the layer chosen on fold 0 (the lowest fold-0 error, ties to the lowest layer,
    as `select_layer`), whose features are kept while it is the best so far. Each (layer, fold) fit depends on its
    own data only, so those rows, the chosen layer and the headline are the ones the full sweep gives."""

    def __init__(self, y: np.ndarray, groups: Sequence[str], folds: np.ndarray, config: ProbeConfig,
                 order_groups: Sequence[str] | None = None):
        self.y, self.groups, self.folds, self.config = y, groups, folds, config
        self.order_groups = order_groups
        self.scores: list[FoldScore] = []
        self._best: tuple[float, int, np.ndarray] | None = None

    def add(self, layer: int, x: np.ndarray) -> None:
        if len(x) != len(self.y):
            raise ValueError(f"layer {layer}: {len(x)} feature rows for {len(self.y)} labels")
        if not self.config.selected_only:
            self.scores.extend(cross_validate(x, self.y, self.groups, self.folds, self.config, layer,
                                              order_groups=self.order_groups))
            return
        (first,) = cross_validate(x, self.y, self.groups, self.folds, self.config, layer, only=(0,),
                                  order_groups=self.order_groups)
        self.scores.append(first)
        if self._best is None or (first.error, layer) < self._best[:2]:
            self._best = (first.error, layer, x)

    def finish(self) -> ProbeResult:
        if self.config.selected_only and self._best is not None:
            _, layer, x = self._best
            self.scores.extend(cross_validate(x, self.y, self.groups, self.folds, self.config, layer,
                                              only=range(1, int(self.folds.max()) + 1),
                                              order_groups=self.order_groups))
            self._best = None
        return summarise(self.scores)


def probe_layers(layers: Iterable[tuple[int, np.ndarray]], y: np.ndarray, groups: Sequence[str],
                 folds: np.ndarray, config: ProbeConfig) -> ProbeResult:
    """The whole protocol over (layer, features) pairs, consumed one at a time (memory: one layer; two with
    `config.selected_only`: the best layer so far is kept)."""
    sweep = LayerSweep(y, groups, folds, config)
    for layer, x in layers:
        sweep.add(layer, x)
    return sweep.finish()


# ---------------------------------------------------------------- baselines and control tasks


def majority_baseline(labels: Sequence[str], folds: np.ndarray) -> ProbeResult:
    """Predict the train folds' most frequent label (ties: the smallest label) on the test fold."""
    labels = np.asarray(labels, dtype=object)
    scores = []
    for f, (tr, te) in enumerate(fold_splits(folds)):
        values, counts = np.unique(labels[tr].astype(str), return_counts=True)
        top = values[np.argmax(counts)]  # np.unique sorts, argmax takes the first maximum
        errors = (labels[te].astype(str) != top).astype(np.float64)
        scores.append(FoldScore(None, f, float(np.mean(errors)), len(tr), len(te), None, te, errors))
    return summarise(scores)


def regression_baseline(feature: Sequence[float], target: Sequence[float], folds: np.ndarray) -> ProbeResult:
    """Ordinary least squares of the target on one scalar feature (e.g. token count); MAE."""
    x = np.asarray(feature, dtype=np.float64)
    t = np.asarray(target, dtype=np.float64)
    scores = []
    for f, (tr, te) in enumerate(fold_splits(folds)):
        design = np.column_stack([np.ones(len(tr)), x[tr]])
        coef, *_ = np.linalg.lstsq(design, t[tr], rcond=None)
        pred = coef[0] + coef[1] * x[te]
        errors = np.abs(pred - t[te])
        scores.append(FoldScore(None, f, float(np.mean(errors)), len(tr), len(te), None, te, errors))
    return summarise(scores)


def control_labels(word_types: Sequence[str], labels: Sequence[str], seed: int) -> np.ndarray:
    """Hewitt & Liang (2019) control task: each word type gets one label drawn (seeded) from the
    task's empirical label distribution; every item of that type carries it. Independent of item order."""
    word_types = np.asarray(word_types, dtype=object).astype(str)
    values, counts = np.unique(np.asarray(labels, dtype=object).astype(str), return_counts=True)
    types, inverse = np.unique(word_types, return_inverse=True)
    drawn = np.random.default_rng(seed).choice(len(values), size=len(types), p=counts / counts.sum())
    return values[drawn][inverse].astype(object)


def selectivity(task: ProbeResult, control: ProbeResult) -> dict[int | None, float]:
    """Per layer: control error - task error (mean over all folds). High: the probe reads the representation."""
    t, c = task.curve(), control.curve()
    return {layer: c[layer] - t[layer] for layer in t if layer in c}


# ---------------------------------------------------------------- intervals over test samples

BOOTSTRAP_REPLICATES = 10_000  # every headline interval and p (a p near 0.05 needs >= 10,000)


def cell_rng(seed: int, *key: str) -> np.random.Generator:
    """The generator of one cell's bootstrap: seeded by the run's seed and the cell's names (task, model, probe),
    so a cell's interval depends on its own samples only, never on which other cells the run holds."""
    import zlib

    return np.random.default_rng([int(seed), *(zlib.crc32(k.encode("utf-8")) for k in key)])


def bootstrap_means(values: np.ndarray, replicates: int, rng: np.random.Generator) -> np.ndarray:
    """[replicates, columns] means of `replicates` resamples (with replacement) of the n rows of `values` ([n] or
    [n, columns], e.g. the pair (probe error, baseline error) of each test sample). Drawn as multinomial counts over
    the distinct rows (the same distribution as resampling row indices; two rows for 0/1 errors, four for pairs of
    them), one vectorised draw for all replicates; sums in a fixed order, so the same bits on every run."""
    v = np.asarray(values, dtype=np.float64)
    v = v[:, None] if v.ndim == 1 else v
    n = len(v)
    if n == 0:
        raise ValueError("no samples to resample")
    rows, counts = np.unique(v, axis=0, return_counts=True)
    weights = rng.multinomial(n, counts / n, size=replicates).astype(np.float64)  # [replicates, distinct rows]
    return (weights @ rows) / n


def bootstrap_interval(values, replicates: int, rng: np.random.Generator,
                       alpha: float = 0.05) -> tuple[float, float, float]:
    """(mean, lo, hi): the sample mean and its percentile bootstrap interval. Every resampled mean lies within the
    values' range, so an error's interval is inside [0, 1] and an MAE's >= 0 without clipping."""
    v = np.asarray(values, dtype=np.float64)
    means = bootstrap_means(v, replicates, rng)[:, 0]
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(v.mean()), float(lo), float(hi)


def paired_bootstrap(a, b, replicates: int, rng: np.random.Generator,
                     alpha: float = 0.05) -> tuple[float, float, float, float]:
    """(diff, lo, hi, p): mean(a) - mean(b) over the same samples, its percentile interval from resampling the
    samples' pairs, and a two-sided p: twice the share of replicates whose difference does not have the observed sign
    (<= 0 for a positive difference, >= 0 for a negative one; 1 when it is 0, or within float rounding of it: two
    MAEs of 1e-16), capped at 1 (the rule of the warehouse's `poisson_paired_bootstrap`)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError("a paired bootstrap needs one value of each side per sample")
    means = bootstrap_means(np.column_stack([a, b]), replicates, rng)
    d = means[:, 0] - means[:, 1]
    diff = float(a.mean() - b.mean())
    lo, hi = np.quantile(d, [alpha / 2, 1 - alpha / 2])
    if abs(diff) <= 1e-12 * max(1.0, float(np.abs(a).mean()), float(np.abs(b).mean())):  # equal to float rounding
        diff, p = 0.0, 1.0
    else:
        p = min(1.0, 2.0 * float(np.mean(d <= 0) if diff > 0 else np.mean(d >= 0)))
    return diff, float(lo), float(hi), p


def headline_errors(result: ProbeResult, n_items: int) -> np.ndarray:
    """The per-sample errors the headline is over: every test sample of folds 1..K-1 at the selected layer, as a
    [n_items] array indexed like the task's items (NaN for the samples of fold 0)."""
    out = np.full(n_items, np.nan)
    for s in result.scores:
        if s.layer == result.selected_layer and s.fold != 0:
            if s.item_errors is None:
                raise ValueError("a headline over test samples needs each fold's per-sample errors")
            out[s.test_index] = s.item_errors
    return out


def headline_columns(result: ProbeResult, n_items: int, rng: np.random.Generator,
                     replicates: int = BOOTSTRAP_REPLICATES, baseline: tuple[str, ProbeResult] | None = None) -> dict:
    """FIT_RESULTS' headline columns of one result: its mean error over the test samples of folds 1..K-1 at the
    selected layer and the bootstrap interval over those samples; with `baseline` (its name and its result on the same
    items and folds), the paired difference result - baseline on the same samples, its interval and p."""
    errors = headline_errors(result, n_items)
    tested = ~np.isnan(errors)
    mean, lo, hi = bootstrap_interval(errors[tested], replicates, rng)
    out = {"headline_error": mean, "headline_lo": lo, "headline_hi": hi}
    if baseline is not None:
        name, base = baseline
        b = headline_errors(base, n_items)
        if not np.array_equal(tested, ~np.isnan(b)):
            raise ValueError(f"the {name} baseline was not tested on the probe's samples")
        diff, dlo, dhi, p = paired_bootstrap(errors[tested], b[tested], replicates, rng)
        out.update({"baseline_name": name, "baseline_score": float(b[tested].mean()), "vs_baseline": diff,
                    "vs_baseline_lo": dlo, "vs_baseline_hi": dhi, "vs_baseline_p": p})
    return out


HEADLINE_COLUMNS = ("headline_error", "headline_lo", "headline_hi", "baseline_name", "baseline_score", "vs_baseline",
                    "vs_baseline_lo", "vs_baseline_hi", "vs_baseline_p")


# ---------------------------------------------------------------- results table


@dataclass(frozen=True)
class RunInfo:
    """What identifies a set of scores in FIT_RESULTS."""

    task: str
    task_type: str
    model: str
    pooling: str
    probe: str
    n_dropped: int = 0
    extra: dict = field(default_factory=dict)


def results_table(result: ProbeResult, info: RunInfo, items: Sequence[str] | None = None,
                  headline: dict | None = None) -> pa.Table:
    """FIT_RESULTS rows for one result, sorted by (layer, fold). With `items` (the task's item ids, in the order
    the folds index them), the selected layer's rows of a probe carry their test fold's item ids and per-item
    errors (`test_items`, `test_errors`, sorted by item id): the input of a paired bootstrap over test samples
    (probing_twin_diff); other rows, and baselines, have nulls. `headline` (headline_columns) fills the headline
    columns of the selected layer's rows (every row of a baseline); null elsewhere."""
    from pipeline import schemas

    metric = "error" if info.task_type == "classification" else "mae"
    rows = sorted(result.scores, key=lambda s: (-1 if s.layer is None else s.layer, s.fold))

    def per_item(s: FoldScore) -> tuple[list | None, list | None]:
        if items is None or s.layer is None or s.layer != result.selected_layer or s.item_errors is None:
            return None, None
        pairs = sorted(zip((str(items[i]) for i in s.test_index), (float(e) for e in s.item_errors)))
        return [p[0] for p in pairs], [p[1] for p in pairs]

    tested = [per_item(s) for s in rows]
    cols = {
        "task": [info.task] * len(rows),
        "task_type": [info.task_type] * len(rows),
        "model": [info.model] * len(rows),
        "pooling": [info.pooling] * len(rows),
        "probe": [info.probe] * len(rows),
        "layer": [s.layer for s in rows],
        "fold": [s.fold for s in rows],
        "metric": [metric] * len(rows),
        "error": [s.error for s in rows],
        "n_train": [s.n_train for s in rows],
        "n_test": [s.n_test for s in rows],
        "alpha": [s.alpha for s in rows],
        "selected": [s.layer == result.selected_layer for s in rows],
        "n_dropped": [info.n_dropped] * len(rows),
        "test_items": [t[0] for t in tested],
        "test_errors": [t[1] for t in tested],
    }
    for name in HEADLINE_COLUMNS:
        value = (headline or {}).get(name)
        cols[name] = [value if s.layer == result.selected_layer else None for s in rows]
    return pa.table(cols, schema=schemas.FIT_RESULTS)
