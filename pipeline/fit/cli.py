"""`python -m pipeline.fit`: cross-validated linear probes over pooled features, one layer in memory at a time."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from pipeline import schemas
from pipeline.fit.probe import (
    ALPHAS, PROBES, ProbeConfig, RunInfo, assign_folds, majority_baseline, probe_layers, regression_baseline,
    results_table,
)
from pipeline.io import write_json, write_parquet

log = logging.getLogger("pipeline.fit")


class FitError(RuntimeError):
    """The inputs cannot be probed as asked; the message says why."""


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


def read_layer(dataset: ds.Dataset, model: str, pooling: str, layer: int, items: np.ndarray) -> np.ndarray:
    """The layer's vectors for `items` (sorted ids), as a float32 matrix."""
    flt = (pc.field("model") == model) & (pc.field("pooling") == pooling) & (pc.field("layer") == layer)
    t = dataset.to_table(columns=["item_id", "vector"], filter=flt)
    t = t.filter(pc.is_in(t["item_id"], value_set=pa.array(items))).sort_by("item_id")
    lengths = pc.list_value_length(t["vector"]).to_numpy()
    if len(set(lengths.tolist())) > 1:
        raise FitError(f"features: vectors of different lengths for model {model} layer {layer}")
    flat = pc.list_flatten(t["vector"]).to_numpy(zero_copy_only=False).astype(np.float32)
    return flat.reshape(t.num_rows, int(lengths[0]) if len(lengths) else 0)


def run(args: argparse.Namespace) -> dict:
    config = ProbeConfig(task_type=args.task_type, probe=args.probe, folds=args.folds,
                         alphas=tuple(args.alphas), seed=args.seed)
    dataset = ds.dataset([str(p) for p in args.features], format="parquet")
    want = {f.name: f.type for f in schemas.FEATURES}
    got = {f.name: f.type for f in dataset.schema}
    if any(got.get(n) != t for n, t in want.items()):
        raise FitError(f"features: schema differs from pipeline.schemas.FEATURES: {dataset.schema}")
    extra = [args.linreg_feature] if args.linreg_feature else []
    labels = read_labels(args.labels, args.task_type, extra)
    labelled_all = set(labels["item_id"].to_pylist())
    labels = labels.filter(pc.is_valid(labels["y"]))
    index = feature_index(dataset)
    if not index:
        raise FitError("features: no rows")
    featured = set.intersection(*(ids for layers in index.values() for ids in layers.values()))
    anywhere = set.union(*(ids for layers in index.values() for ids in layers.values()))
    labelled = set(labels["item_id"].to_pylist())
    used = sorted(labelled & featured)
    dropped = {
        "labelled_without_features": len(labelled - featured),  # missing in some model/pooling/layer
        "featured_without_label": len(anywhere - labelled),  # no row, or a null label/target
        "null_label": len(labelled_all - labelled),
    }
    n_dropped = len((labelled | anywhere) - set(used))
    log.info("items: %d used; dropped %d (%s)", len(used), n_dropped, ", ".join(f"{k}={v}" for k, v in dropped.items()))
    if len(used) < config.folds:
        raise FitError(f"only {len(used)} items have both a label and features in every layer")
    labels = labels.filter(pc.is_in(labels["item_id"], value_set=pa.array(used))).sort_by("item_id")
    y = np.array(labels["y"].to_pylist(), dtype=object if args.task_type == "classification" else np.float64)
    groups = np.array(labels["group"].to_pylist(), dtype=object)
    folds = assign_folds(groups, config.folds, config.seed)
    items = np.array(used, dtype=object)

    tables, headlines = [], []
    for (model, pooling), layers in sorted(index.items()):
        def layer_iter(model=model, pooling=pooling, layers=layers):
            for layer in sorted(layers):
                start = time.perf_counter()
                x = read_layer(dataset, model, pooling, layer, items)
                yield layer, x
                log.info("%s/%s layer %d: %d x %d, %.1f s", model, pooling, layer, *x.shape, time.perf_counter() - start)

        result = probe_layers(layer_iter(), y, groups, folds, config)
        tables.append(results_table(result, RunInfo(args.task, args.task_type, model, pooling, args.probe, n_dropped)))
        headlines.append({"model": model, "pooling": pooling, "curve": {str(k): v for k, v in result.curve().items()},
                          **asdict(result.headline)})
        log.info("%s/%s: layer %s, %s %.4f [%.4f, %.4f]", model, pooling, result.selected_layer, config.metric,
                 result.headline.mean, result.headline.ci_low, result.headline.ci_high)
    baselines = []
    if args.majority and args.task_type == "classification":
        baselines.append(("majority", majority_baseline(y, folds)))
    if args.linreg_feature:
        baselines.append(("linreg", regression_baseline(np.asarray(labels[args.linreg_feature].to_pylist(), float),
                                                        np.asarray(y, float), folds)))
    for name, result in baselines:
        tables.append(results_table(result, RunInfo(args.task, args.task_type, name, "-", name, n_dropped)))
        headlines.append({"model": name, "pooling": "-", **asdict(result.headline)})
    write_parquet(pa.concat_tables(tables), args.out, schemas.FIT_RESULTS)
    metrics = {"task": args.task, "task_type": args.task_type, "probe": args.probe, "folds": args.folds,
               "alphas": list(config.alphas), "seed": args.seed, "metric": config.metric, "items": len(used),
               "dropped": {**dropped, "total": n_dropped}, "headlines": headlines}
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
            "Fit cross-validated linear probes on pooled features, with the probing paper's protocol: "
            "K folds grouped by the labels' `group` (a seeded, size-balanced assignment of groups to folds), "
            "for every (model, pooling, layer) in the features a probe fitted on the train folds (features "
            "standardised on them) and scored on the test fold; the best layer chosen on fold 0, the headline "
            "the mean over the other folds (95%% t-interval; min/max also in --metrics). Features are read one "
            "layer at a time. Items without a label, or missing from any layer's features, are dropped and "
            "counted (log line, the n_dropped column, --metrics). Output: pipeline.schemas.FIT_RESULTS."),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    ap.add_argument("--features", required=True, nargs="+", type=Path,
                    help="FEATURES Parquet file(s) (shards of one table; several models/poolings allowed)")
    ap.add_argument("--labels", required=True, type=Path, help="PROBE_LABELS Parquet (item_id, label|target, group)")
    ap.add_argument("--task", required=True, help="task name written to every row")
    ap.add_argument("--task-type", required=True, choices=["classification", "regression"],
                    help="classification: `label`, error = 1 - accuracy; regression: `target`, MAE")
    ap.add_argument("--probe", default="ridge", choices=PROBES,
                    help="ridge: RidgeClassifierCV/RidgeCV, leave-one-out alpha (fast); lbfgs: logistic regression, "
                         "C = 1/alpha; sgd: the paper's SGDClassifier(log_loss), grid search (slow)")
    ap.add_argument("--folds", type=int, default=4, help="cross-validation folds K")
    ap.add_argument("--alphas", type=parse_alphas, default=list(ALPHAS), help="regularisation grid (JSON list)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the fold assignment and of sgd")
    ap.add_argument("--majority", action="store_true", help="also score the majority-class baseline (classification)")
    ap.add_argument("--linreg-feature", metavar="COLUMN",
                    help="also score a linear regression of the target on this numeric column of --labels")
    ap.add_argument("--out", required=True, type=Path, help="FIT_RESULTS Parquet to write (atomically)")
    ap.add_argument("--metrics", type=Path, help="JSON summary: headlines, curves, item and drop counts")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        run(args)
    except (FitError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
