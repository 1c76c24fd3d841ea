"""`python -m pipeline.fit`: cross-validated linear probes over pooled features, one layer in memory at a time."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from pipeline import schemas
from pipeline.fit.probe import (
    ALPHA_SEARCHES, ALPHAS, BOOTSTRAP_REPLICATES, PAPER_ESTIMATORS, PROBES, LayerSweep, ProbeConfig, RunInfo,
    assign_folds, cell_rng, headline_columns, majority_baseline, regression_baseline, results_table,
)
from pipeline.io import write_json, write_parquet

log = logging.getLogger("pipeline.fit")


class FitError(RuntimeError):
    """The inputs cannot be probed as asked; the message says why."""


class TooFewItems(FitError):
    """A task has fewer usable items than folds (e.g. a language without samples): the task is skipped,
    with this reason in the metrics, and the other tasks are fitted."""


def read_labels(path: Path, task_type: str, extra: list[str]) -> pa.Table:
    """item_id, y (label or target), group (+ extra columns), non-null y only, sorted by item_id."""
    y_col = "label" if task_type == "classification" else "target"
    names = pq.read_schema(path).names
    missing = [c for c in ("item_id", y_col, "group", *extra) if c not in names]
    if missing:
        raise FitError(f"{path}: missing column(s) {missing} (see pipeline.schemas.PROBE_LABELS)")
    t = pq.read_table(path, columns=["item_id", y_col, "group", *extra])
    if pc.count_distinct(t["item_id"]).as_py() != t.num_rows:
        raise FitError(f"{path}: item_id is not unique")
    return t.rename_columns(["item_id", "y", "group", *extra])


def feature_index(dataset: ds.Dataset) -> dict[tuple[str, str], dict[int, set[str]]]:
    """(model, pooling) -> layer -> item ids, from the id columns only."""
    t = dataset.to_table(columns=["model", "pooling", "layer", "item_id"])
    index: dict[tuple[str, str], dict[int, set[str]]] = {}
    for key in t.group_by(["model", "pooling", "layer"]).aggregate([]).to_pylist():
        sel = t.filter((pc.field("model") == key["model"]) & (pc.field("pooling") == key["pooling"])
                       & (pc.field("layer") == key["layer"]))
        ids = sel["item_id"].to_pylist()
        if len(set(ids)) != len(ids):
            raise FitError(f"features: duplicate item_id for model {key['model']} pooling {key['pooling']} "
                           f"layer {key['layer']}")
        index.setdefault((key["model"], key["pooling"]), {})[key["layer"]] = set(ids)
    return index


def read_layer(dataset: ds.Dataset, model: str, pooling: str, layer: int) -> tuple[np.ndarray, np.ndarray]:
    """Every vector of one (model, pooling, layer): (item ids sorted, float32 matrix), read once per
    layer and shared by every task whose items it holds."""
    flt = (pc.field("model") == model) & (pc.field("pooling") == pooling) & (pc.field("layer") == layer)
    t = dataset.to_table(columns=["item_id", "vector"], filter=flt).sort_by("item_id")
    lengths = pc.list_value_length(t["vector"]).to_numpy()
    if len(set(lengths.tolist())) > 1:
        raise FitError(f"features: vectors of different lengths for model {model} layer {layer}")
    flat = pc.list_flatten(t["vector"]).to_numpy(zero_copy_only=False).astype(np.float32)
    return (np.array(t["item_id"].to_pylist(), dtype=object),
            flat.reshape(t.num_rows, int(lengths[0]) if len(lengths) else 0))


@dataclass(frozen=True)
class TaskSpec:
    """One task of a fit (what a probe predicts): its labels file and type."""

    task: str
    labels: Path
    task_type: str
    # the `paper` probe on this task: {"estimator": sgd | logistic_cv | ridge_cv, "alphas": [...]} (the release's
    # estimator and grid, as the family declares them), None: the release fits none here (the paper probe skips the
    # task), {}: the default (sgd, or ridge_cv for regression, on --alphas)
    paper: dict | None = None


@dataclass
class TaskLabels:
    """A task's labelled items (every one with a label or target, sorted by item id) and their folds, assigned
    on this full set: a model's items are a subset and keep each item's fold, so two models' test folds agree
    on the items both read, and a capped model never moves another model's folds."""

    spec: TaskSpec
    config: ProbeConfig
    items: np.ndarray
    y: np.ndarray
    groups: np.ndarray
    folds: np.ndarray
    in_file: set[str]
    scalar: np.ndarray | None = None  # the linreg baseline's feature
    configs: tuple[ProbeConfig, ...] = ()  # every probe fitted (`config` first, then --also-probe's)
    snippets: np.ndarray | None = None  # the `group` column when the folds group by another (--fold-group)


@dataclass
class TaskData:
    """One task as one model's fit sees it: the labelled items that model has features for in every layer."""

    spec: TaskSpec
    config: ProbeConfig
    items: np.ndarray  # the item ids used, sorted
    y: np.ndarray
    groups: np.ndarray
    folds: np.ndarray
    dropped: dict
    n_dropped: int
    scalar: np.ndarray | None = None
    configs: tuple[ProbeConfig, ...] = ()
    snippets: np.ndarray | None = None


def task_probes(spec: TaskSpec, args: argparse.Namespace) -> list[str]:
    """The probes fitted on a task: --probe, then each --also-probe, a regression task's classifier-only probe
    (lbfgs, sgd) read as ridge; each once."""
    out = []
    for probe in [args.probe, *(getattr(args, "also_probe", None) or [])]:
        if spec.task_type == "regression" and args.tasks and probe not in ("ridge", "paper"):
            probe = "ridge"
        if probe == "paper" and spec.paper is None:  # no release probe on this task (a control, our variant)
            continue
        if probe not in out:
            out.append(probe)
    return out or ["ridge"]


def probe_config(spec: TaskSpec, probe: str, args: argparse.Namespace) -> ProbeConfig:
    """One probe's config on a task: the `paper` probe takes the task's release estimator and grid (--alphas when
    the task names none) and, with --paper-layers selected, fits folds 1..K-1 at the layer chosen on fold 0 only."""
    alphas, extra = tuple(args.alphas), {}
    if probe == "paper":
        paper = spec.paper or {}
        alphas = tuple(float(a) for a in paper.get("alphas") or alphas)
        extra = {"paper_estimator": paper.get("estimator", ""),
                 "selected_only": getattr(args, "paper_layers", "all") == "selected"}
    return ProbeConfig(task_type=spec.task_type, probe=probe, folds=args.folds, alphas=alphas, seed=args.seed,
                       alpha_search=args.alpha_search, **extra)


def read_task(spec: TaskSpec, args: argparse.Namespace) -> TaskLabels:
    configs = tuple(probe_config(spec, probe, args) for probe in task_probes(spec, args))
    config = configs[0]
    extra = [args.linreg_feature] if args.linreg_feature and spec.task_type == "regression" else []
    fold_group = getattr(args, "fold_group", "group") or "group"
    by = [fold_group] if fold_group != "group" and fold_group not in extra else []
    labels = read_labels(spec.labels, spec.task_type, extra + by)
    in_file = set(labels["item_id"].to_pylist())
    labels = labels.filter(pc.is_valid(labels["y"])).sort_by("item_id")
    if labels.num_rows and labels[fold_group].null_count:
        raise FitError(f"{spec.labels}: --fold-group {fold_group}: {labels[fold_group].null_count} labelled items "
                       "have no value there")
    snippets = np.array(labels["group"].to_pylist(), dtype=object)
    groups = np.array(labels[fold_group].to_pylist(), dtype=object).astype(str).astype(object)
    if len(set(groups.tolist())) < config.folds:
        raise TooFewItems(f"{spec.task}: only {labels.num_rows} items have a label, in {len(set(groups.tolist()))} "
                          f"groups (fewer than {config.folds} folds): not fitted")
    y = np.array(labels["y"].to_pylist(), dtype=object if spec.task_type == "classification" else np.float64)
    scalar = np.asarray(labels[extra[0]].to_pylist(), float) if extra else None
    return TaskLabels(spec, config, np.array(labels["item_id"].to_pylist(), dtype=object), y, groups,
                      assign_folds(groups, config.folds, config.seed), in_file, scalar, configs,
                      snippets if fold_group != "group" else None)


def model_task(task: TaskLabels, model: str, featured: set[str]) -> TaskData:
    """The task on one model's items: every labelled item it has features for in every layer, with the folds of
    the full set. Raises TooFewItems when they leave a fold empty, a train split with fewer groups than the
    inner search's folds or, for a classification task, with one class only."""
    name = task.spec.task
    keep = np.array([i in featured for i in task.items], dtype=bool)
    items, y, groups, folds = task.items[keep], task.y[keep], task.groups[keep], task.folds[keep]
    labelled = len(task.items)
    dropped = {"labelled_without_features": int(labelled - keep.sum()),  # missing in some layer, or never read
               "featured_without_label": len((task.in_file - set(task.items.tolist())) & featured),  # a null label
               "null_label": len(task.in_file) - labelled}
    n_dropped = len(task.in_file) - len(items)
    log.info("%s %s: items: %d used; dropped %d (%s)", name, model, len(items), n_dropped,
             ", ".join(f"{k}={v}" for k, v in dropped.items()))
    k = task.config.folds
    empty = [f for f in range(k) if not np.any(folds == f)]
    if empty:
        raise TooFewItems(f"{name}: {model} has features for {len(items)} of the task's {labelled} labelled items, "
                          f"none in fold(s) {', '.join(map(str, empty))}: not fitted for {model}")
    for f in range(k):
        train = folds != f
        if len(set(groups[train].tolist())) < task.config.inner_folds:
            raise TooFewItems(f"{name}: {model}'s {len(items)} items leave fold {f}'s train split fewer than "
                              f"{task.config.inner_folds} groups: not fitted for {model}")
        if task.spec.task_type == "classification" and len(set(y[train].tolist())) < 2:
            raise TooFewItems(f"{name}: {model}'s {len(items)} items leave fold {f}'s train split one class: "
                              f"not fitted for {model}")
    scalar = task.scalar[keep] if task.scalar is not None else None
    snippets = task.snippets[keep] if task.snippets is not None else None
    return TaskData(task.spec, task.config, items, y, groups, folds, dropped, n_dropped, scalar, task.configs,
                    snippets)


def headline_n(data: TaskData) -> int:
    """The headline's n: the distinct test samples of folds 1..K-1 (each item is tested in one fold only)."""
    return int(np.sum(data.folds > 0))


def run(args: argparse.Namespace) -> dict:
    if args.tasks:
        specs = [TaskSpec(t["task"], Path(t["labels"]), t["task_type"], t.get("paper", {}))
                 for t in json.loads(args.tasks)]
    elif args.task and args.labels and args.task_type:
        specs = [TaskSpec(args.task, args.labels, args.task_type, {})]
    else:
        raise FitError("give --tasks, or --task with --labels and --task-type")
    if len({s.task for s in specs}) != len(specs):
        raise FitError("two tasks have the same name")
    for s in specs:
        if s.paper is not None and (not isinstance(s.paper, dict) or set(s.paper) - {"estimator", "alphas"}
                                    or s.paper.get("estimator", "sgd") not in PAPER_ESTIMATORS):
            raise FitError(f"{s.task}: `paper` must be null or {{\"estimator\": one of {list(PAPER_ESTIMATORS)}, "
                           f"\"alphas\": [...]}}, got {s.paper!r}")
    dataset = ds.dataset([str(p) for p in args.features], format="parquet")
    want = {f.name: f.type for f in schemas.FEATURES}
    got = {f.name: f.type for f in dataset.schema}
    if any(got.get(n) != t for n, t in want.items()):
        raise FitError(f"features: schema differs from pipeline.schemas.FEATURES: {dataset.schema}")
    index = feature_index(dataset)  # empty when the family's subsets had no items: every task is skipped
    # each model's items: those it has in every one of its layers (under whichever pooling); a model is fitted
    # on its own items only, so another model in the same features never changes its numbers
    per_model: dict[str, dict[int, set[str]]] = {}
    for (model, _), layers in index.items():
        for layer, ids in layers.items():
            per_model.setdefault(model, {}).setdefault(layer, set()).update(ids)
    featured = {m: set.intersection(*layers.values()) for m, layers in per_model.items()}
    labelled, skipped = [], {}
    for spec in specs:
        try:
            labelled.append(read_task(spec, args))
        except TooFewItems as exc:
            log.warning("%s", exc)
            skipped[spec.task] = str(exc)
    if not per_model:
        for t in labelled:
            skipped[t.spec.task] = f"{t.spec.task}: only 0 items have both a label and features in every layer: not fitted"
        labelled = []

    tables: dict[str, list[pa.Table]] = {t.spec.task: [] for t in labelled}
    headlines: dict[str, list[dict]] = {t.spec.task: [] for t in labelled}
    models: dict[str, dict[str, dict]] = {t.spec.task: {} for t in labelled}
    data: dict[tuple[str, str], TaskData] = {}
    for model in sorted(per_model):
        for t in labelled:
            try:
                data[(t.spec.task, model)] = d = model_task(t, model, featured[model])
                models[t.spec.task][model] = {"items": len(d.items), "n": headline_n(d),
                                              "dropped": {**d.dropped, "total": d.n_dropped}}
            except TooFewItems as exc:
                log.warning("%s", exc)
                models[t.spec.task][model] = {"items": int(sum(i in featured[model] for i in t.items)),
                                              "skipped": str(exc)}
    # the baselines on each model's own items and folds (model = that model, probe = the baseline): what its probe
    # must beat on the same samples (the family's baselines job scores them on the full item set); the first is the
    # one each probe is paired against (majority; linreg for a regression task)
    own_baselines: dict[tuple[str, str], list[tuple[str, object]]] = {}
    for (task_name, model), d in sorted(data.items()):
        found = []
        if args.majority and d.spec.task_type == "classification":
            found.append(("majority", majority_baseline(d.y, d.folds)))
        if d.scalar is not None:
            found.append(("linreg", regression_baseline(d.scalar, np.asarray(d.y, float), d.folds)))
        own_baselines[(task_name, model)] = found
    replicates = getattr(args, "replicates", BOOTSTRAP_REPLICATES)
    for (model, pooling), layers in sorted(index.items()):
        mine = []
        for t in labelled:
            d = data.get((t.spec.task, model))
            if d is None:
                continue
            present = set.intersection(*layers.values()) & set(d.items)
            if not present:
                continue
            if len(present) != len(d.items):
                raise FitError(f"{t.spec.task}: {len(d.items) - len(present)} of its items are not pooled "
                               f"as {pooling} by {model}; one task takes one pooling")
            mine.append(d)
        if not mine:
            continue
        sweeps = {(d.spec.task, c.probe): LayerSweep(d.y, d.groups, d.folds, c, d.snippets)
                  for d in mine for c in d.configs}
        for layer in sorted(layers):
            start = time.perf_counter()
            ids, x_all = read_layer(dataset, model, pooling, layer)
            for d in mine:
                x = x_all[np.searchsorted(ids, d.items)]
                for c in d.configs:  # every probe on the same folds and layer
                    sweeps[(d.spec.task, c.probe)].add(layer, x)
            log.info("%s/%s layer %d: %d x %d, %d task(s), %.1f s", model, pooling, layer, *x_all.shape, len(mine),
                     time.perf_counter() - start)
        for d in mine:
            for c in d.configs:
                result = sweeps[(d.spec.task, c.probe)].finish()
                paired = own_baselines.get((d.spec.task, model)) or [None]
                cols = headline_columns(result, len(d.items), cell_rng(args.seed, d.spec.task, model, pooling, c.probe),
                                        replicates, paired[0])
                tables[d.spec.task].append(results_table(result, RunInfo(d.spec.task, d.spec.task_type, model,
                                                                         pooling, c.probe, d.n_dropped), d.items,
                                                         cols))
                headlines[d.spec.task].append({"model": model, "pooling": pooling, "probe": c.probe,
                                               "n": headline_n(d), "fold0_n": int(np.sum(d.folds == 0)),
                                               **{k: v for k, v in cols.items()},
                                               # fold 0's errors where only the chosen layer has folds 1..K-1
                                               "curve": {str(k): v for k, v in
                                                         result.curve(0 if c.selected_only else None).items()},
                                               **asdict(result.headline)})
                log.info("%s %s/%s %s: layer %s, %s %.4f [%.4f, %.4f], n = %d", d.spec.task, model, pooling, c.probe,
                         result.selected_layer, c.metric, result.headline.mean, result.headline.ci_low,
                         result.headline.ci_high, headline_n(d))
    summaries = {}
    for t in labelled:
        # the baselines on each model's own items (model = that model, probe = the baseline): what its probe
        # must beat on the same samples; the family's baselines job scores them on the full item set
        for model in sorted(per_model):
            d = data.get((t.spec.task, model))
            if d is None:
                continue
            for name, result in own_baselines[(t.spec.task, model)]:
                cols = headline_columns(result, len(d.items), cell_rng(args.seed, t.spec.task, model, "-", name),
                                        replicates)
                tables[t.spec.task].append(results_table(result, RunInfo(t.spec.task, t.spec.task_type, model, "-",
                                                                         name, d.n_dropped), None, cols))
                headlines[t.spec.task].append({"model": model, "pooling": "-", "probe": name, "n": headline_n(d),
                                               **cols, **asdict(result.headline)})
        summaries[t.spec.task] = {"task": t.spec.task, "task_type": t.spec.task_type, "probe": t.config.probe,
                                  **({"also_probes": [c.probe for c in t.configs[1:]]} if len(t.configs) > 1 else {}),
                                  "metric": t.config.metric, "items": len(t.items),
                                  "models": models[t.spec.task], "headlines": headlines[t.spec.task]}
    for task, reason in skipped.items():
        spec = next(s for s in specs if s.task == task)
        summaries[task] = {"task": task, "task_type": spec.task_type, "items": 0, "skipped": reason, "headlines": []}
    out = [tb for t in labelled for tb in tables[t.spec.task]]
    write_parquet(pa.concat_tables(out) if out else schemas.FIT_RESULTS.empty_table(), args.out, schemas.FIT_RESULTS)
    common = {"folds": args.folds, "fold_group": getattr(args, "fold_group", "group"), "alphas": list(args.alphas),
              "seed": args.seed, "alpha_search": args.alpha_search,
              "paper_layers": getattr(args, "paper_layers", "all")}
    metrics = ({**summaries[specs[0].task], **common} if not args.tasks
               else {**common, "probe": args.probe, "tasks": {s.task: summaries[s.task] for s in specs}})
    if args.metrics:
        write_json(metrics, args.metrics)
    return metrics


def parse_alphas(text: str) -> list[float]:
    try:
        values = json.loads(text)
    except json.JSONDecodeError:
        values = [float(v) for v in text.strip("[]").split(",") if v.strip()]
    if not isinstance(values, list) or not values:
        raise argparse.ArgumentTypeError("alphas: a JSON list such as [1e-4,1e-3,0.01,0.1,1,10,100]")
    return [float(v) for v in values]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m pipeline.fit",
        description=(
            "Fit cross-validated linear probes on pooled features, with the protocol of Troshin & Chirkova "
            "(2022, BlackboxNLP, sec. 4.2): "
            "K folds grouped by the labels' `group` (a seeded, size-balanced assignment of groups to folds), "
            "for every (model, pooling, layer) in the features a probe fitted on the train folds (features "
            "standardised on them) and scored on the test fold; the best layer chosen on fold 0, the headline "
            "the mean over the other folds (95%% t-interval; min/max also in --metrics). Features are read one "
            "layer at a time. Each model is fitted on its own items: every labelled item it has features for in "
            "every layer (another model in the features never changes its numbers); the folds are assigned on "
            "the full labelled set, so an item keeps its fold in every model. Items without a label, or missing "
            "from one of the model's layers, are left out and counted (log line, the n_dropped column, "
            "--metrics); a model whose items leave a fold empty (or a train split one class) is not fitted for "
            "that task, with the reason in --metrics. Output: pipeline.schemas.FIT_RESULTS."),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    ap.add_argument("--features", required=True, nargs="+", type=Path,
                    help="FEATURES Parquet file(s) (shards of one table; several models/poolings allowed)")
    ap.add_argument("--tasks", help='several tasks over the same features, as JSON [{"task": name, "labels": '
                    'PROBE_LABELS file, "task_type": classification|regression, "paper": optional, {"estimator": '
                    'sgd|logistic_cv|ridge_cv, "alphas": [...]} or null (no paper probe on the task)}, ...]: each '
                    'layer is read once for all of them (regression tasks use ridge); instead of --task/--labels/'
                    '--task-type')
    ap.add_argument("--labels", type=Path, help="PROBE_LABELS Parquet (item_id, label|target, group)")
    ap.add_argument("--task", help="task name written to every row")
    ap.add_argument("--task-type", choices=["classification", "regression"],
                    help="classification: `label`, error = 1 - accuracy; regression: `target`, MAE")
    ap.add_argument("--probe", default="ridge", choices=PROBES,
                    help="ridge: ridge classifier/regression, alpha by --alpha-search (fast); lbfgs: logistic regression, "
                         "C = 1/alpha; sgd: SGDClassifier(log_loss) on standardised features, grouped inner grid search "
                         "(slow); paper: Troshin & Chirkova's released probe as it runs, on raw features: per task the "
                         "release's estimator and grid when --tasks names them (`paper`: SGDClassifier(log_loss, tol "
                         "1e-4) in GridSearchCV's default 5-fold split, LogisticRegressionCV, or RidgeCV), else "
                         "SGDClassifier (RidgeCV for regression) on --alphas")
    ap.add_argument("--also-probe", action="append", choices=PROBES, default=[], metavar="PROBE",
                    help="another probe fitted beside --probe on the same folds, layers and items (repeatable; rows "
                         "carry their probe's name), e.g. --probe paper --also-probe ridge: the paper's probe for the "
                         "paper-comparable table and ours beside it")
    ap.add_argument("--paper-layers", default="all", choices=["all", "selected"],
                    help="the paper probe's (layer, fold) fits. all: every layer on every fold (per-layer curves over "
                         "all folds, the release's Figure 3); selected: fold 0 at every layer, folds 1..K-1 at the "
                         "layer chosen on fold 0 only (the paper's Table 1 protocol: the same headline and rows there, "
                         "a curve of fold 0 only)")
    ap.add_argument("--alpha-search", default="inner", choices=ALPHA_SEARCHES,
                    help="ridge: how alpha is chosen on the train folds. inner: a 3-fold CV grouped by `group` "
                         "(scaler inside each inner fit, the task's metric, ties to the larger alpha); loo: "
                         "sklearn's efficient leave-one-out (ignores groups; unstable when the train folds have "
                         "about as many rows as features)")
    ap.add_argument("--fold-group", default="group", metavar="COLUMN",
                    help="the labels' column the folds (and the inner alpha search's splits) are grouped by: every "
                         "sample with one value sits in one fold, e.g. file (the source file, so the methods of one "
                         "file never straddle a split); `group` (the snippet) still orders the paper probe's train "
                         "split as the release shuffles it")
    ap.add_argument("--folds", type=int, default=4, help="cross-validation folds K")
    ap.add_argument("--alphas", type=parse_alphas, default=list(ALPHAS), help="regularisation grid (JSON list)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the fold assignment and of sgd")
    ap.add_argument("--majority", action="store_true", help="also score the majority-class baseline (classification) "
                    "on each model's items (rows: model = that model, probe = majority, no layer)")
    ap.add_argument("--linreg-feature", metavar="COLUMN",
                    help="also score a linear regression of the target on this numeric column of --labels")
    ap.add_argument("--replicates", type=int, default=BOOTSTRAP_REPLICATES,
                    help="bootstrap replicates of every headline interval and paired difference (over the test "
                         "samples of folds 1..K-1, seeded per task, model and probe)")
    ap.add_argument("--threads", type=int, default=1,
                    help="BLAS threads (the probes' eigendecompositions are small: more threads than the job's "
                         "cores slow them down by an order of magnitude on a busy machine)")
    ap.add_argument("--out", required=True, type=Path, help="FIT_RESULTS Parquet to write (atomically)")
    ap.add_argument("--metrics", type=Path, help="JSON summary: headlines, curves, item and drop counts")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    from threadpoolctl import threadpool_limits

    try:
        with threadpool_limits(args.threads):
            run(args)
    except (FitError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
