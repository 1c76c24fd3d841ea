"""The probing release's probe in the default run: its cost against ridge, before and after, and its agreement with the
release's own code, on a built run's features (one model) and labels.

Per task (the fit's own item set for that model, the fit's folds): CPU seconds (process time: the machine may be
shared) of
- `ridge`: ours, every layer and fold;
- `paper before`: the `paper` probe as it was, SGD grid search over the fit's 7-value grid on every classification
  task (RidgeCV on depth), every layer and fold;
- `paper after`: the release's estimator and grid per task (pipeline/families/probing/paper.py RELEASE_PROBES), fold 0
  at every layer and folds 1..K-1 at the layer chosen there (`paper_layers: selected`).
Agreement (`--agree`): at the layer `paper after` chose, on folds 1..K-1, our probe's test predictions against the
release's code transcribed (tests/test_fit_paper.py `release_fit_predict`: the release's order of the train split,
`np.array`, its estimator), whose SGD seed the release leaves free: run with `--agree` seeds; reported: the share of
test samples whose prediction equals ours with the same seed (bit for bit expected), and the spread of the release's
test error across its free seeds beside ours.

Usage: python -m bench.fidelity.paper_probe_cost --features data/predictions/probing/java/<model>/*.parquet
           --labels-dir data/families/probing/java --model code-mlm --seed 20261122 [--tasks ...] [--agree 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.dataset as ds
from threadpoolctl import threadpool_limits

from pipeline.families.probing.paper import RELEASE_PROBES
from pipeline.fit.cli import read_layer
from pipeline.fit.probe import (
    ALPHAS, LayerSweep, ProbeConfig, assign_folds, fold_splits, fit_score_items, release_order,
)

REGRESSION = ("depth",)


def task_data(labels: Path, ids: np.ndarray, seed: int, regression: bool):
    import pyarrow.parquet as pq

    t = pq.read_table(labels).to_pylist()
    col = "target" if regression else "label"
    rows = sorted((r for r in t if r[col] is not None), key=lambda r: r["item_id"])
    items = np.array([r["item_id"] for r in rows], dtype=object)
    groups = np.array([r["group"] for r in rows], dtype=object)
    y = np.array([r[col] for r in rows], dtype=np.float64 if regression else object)
    folds = assign_folds(groups, 4, seed)  # on the full labelled set, as the fit assigns them
    keep = np.isin(items, ids)
    return items[keep], y[keep], groups[keep], folds[keep]


def sweep(layers, y, groups, folds, config) -> tuple[float, object, int]:
    start = time.process_time()
    s = LayerSweep(y, groups, folds, config)
    for layer, x in layers:
        s.add(layer, x)
    result = s.finish()
    return time.process_time() - start, result, len(result.scores)


def release_predict(x_train, y_train, groups_train, x_test, paper: dict, seed: int,
                    sgd_seed: int | None = None):
    """The release's code path (transcribed, tests/test_fit_paper.py): snippets shuffled with Python's random, flattened,
    `np.array`, the task's estimator with SGD seeded `seed`."""
    from tests.test_fit_paper import release_fit_predict

    kind = {"ridge_cv": "regression", "logistic_cv": "sentence"}.get(paper["estimator"],
                                                                      "edge" if len(paper["alphas"]) == 5 else "token")
    by: dict[str, tuple[list, list]] = {}
    for x, y, g in zip(x_train, y_train, groups_train):
        by.setdefault(g, ([], []))[0].append(x)
        by[g][1].append(y)
    samples = [(g, *by[g]) for g in sorted(by)]
    return release_fit_predict(kind, samples, x_test, seed, sgd_seed)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--features", type=Path, nargs="+", required=True)
    ap.add_argument("--labels-dir", type=Path, required=True, help="data/families/probing/<language>")
    ap.add_argument("--model", required=True)
    ap.add_argument("--tasks", nargs="+", default=["path_type", "depth", "declared", "dataflow", "variable_name",
                                                    "misuse", "path_type_release_parser", "depth_release_parser",
                                                    "declared_release_parser", "dataflow_release_parser"])
    ap.add_argument("--seed", type=int, default=20261122)
    ap.add_argument("--before", action="store_true", help="also time the paper probe as it was (slow)")
    ap.add_argument("--agree", type=int, default=0, help="seeds of the release's free SGD seed to compare with")
    ap.add_argument("--out", type=Path, help="JSON of every figure")
    args = ap.parse_args(argv)
    dataset = ds.dataset([str(p) for p in args.features], format="parquet")
    index = dataset.to_table(columns=["model", "pooling", "layer"]).to_pylist()
    out = {}
    with threadpool_limits(1):
        for task in args.tasks:
            base = task.removesuffix("_release_parser")
            regression = base in REGRESSION
            paper = RELEASE_PROBES[base]
            poolings = sorted({r["pooling"] for r in index if r["model"] == args.model})
            layers_all = sorted({r["layer"] for r in index if r["model"] == args.model})
            labels = args.labels_dir / task / "labels.parquet"
            if not labels.exists():
                continue
            read = None
            for pooling in poolings:
                ids, _ = read_layer(dataset, args.model, pooling, layers_all[0])
                items, y, groups, folds = task_data(labels, ids, args.seed, regression)
                if len(items):
                    read = pooling
                    break
            if read is None:
                continue
            layers = []
            for layer in layers_all:
                ids, x = read_layer(dataset, args.model, read, layer)
                layers.append((layer, x[np.searchsorted(ids, items)]))
            kind = "regression" if regression else "classification"
            row = {"items": len(items), "dims": int(layers[0][1].shape[1]), "layers": len(layers), "pooling": read,
                   "estimator": paper["estimator"], "grid": paper["alphas"]}
            secs, res, fits = sweep(layers, y, groups, folds, ProbeConfig(task_type=kind, probe="ridge",
                                                                           seed=args.seed))
            row["ridge"] = {"cpu_s": round(secs, 2), "fits": fits, "layer": res.selected_layer,
                            "error": round(res.headline.mean, 4)}
            after = ProbeConfig(task_type=kind, probe="paper", paper_estimator=paper["estimator"],
                                alphas=tuple(paper["alphas"]), seed=args.seed, selected_only=True)
            secs, res, fits = sweep(layers, y, groups, folds, after)
            row["paper_after"] = {"cpu_s": round(secs, 2), "fits": fits, "layer": res.selected_layer,
                                  "error": round(res.headline.mean, 4),
                                  "fold_errors": [round(s.error, 4) for s in res.scores
                                                  if s.layer == res.selected_layer]}
            if args.before:
                before = ProbeConfig(task_type=kind, probe="paper", alphas=ALPHAS, seed=args.seed)
                secs_b, res_b, fits_b = sweep(layers, y, groups, folds, before)
                row["paper_before"] = {"cpu_s": round(secs_b, 2), "fits": fits_b, "layer": res_b.selected_layer,
                                       "error": round(res_b.headline.mean, 4)}
            if args.agree:
                x = dict(layers)[res.selected_layer]
                same, ours_err, rel_err = [], [], {s: [] for s in range(args.agree)}
                for f, (tr, te) in enumerate(fold_splits(folds)):
                    if f == 0:
                        continue
                    _, _, mine = fit_score_items(x[tr], y[tr], x[te], y[te], groups[tr], after)
                    ours_err.append(float(np.mean(mine)))
                    ref = release_predict(x[tr], y[tr], groups[tr], x[te], paper, args.seed)
                    errs = (np.abs(ref - y[te]) if regression else (ref != y[te]).astype(float))
                    same.append(bool(np.allclose(errs, mine, rtol=0, atol=1e-9)) if regression
                                else float(np.mean(errs == mine)))
                    for s in range(args.agree):  # the release's free SGD seed: its own spread
                        pred = release_predict(x[tr], y[tr], groups[tr], x[te], paper, args.seed, s)
                        rel_err[s].append(float(np.mean(np.abs(pred - y[te]) if regression else pred != y[te])))
                means = [float(np.mean(v)) for v in rel_err.values()]
                row["agreement"] = {"same_seed_equal": same, "ours_error": round(float(np.mean(ours_err)), 4),
                                    "release_errors_by_seed": [round(m, 4) for m in means],
                                    "release_range": [round(min(means), 4), round(max(means), 4)]}
            out[task] = row
            print(task, json.dumps(row), flush=True)
    if args.out:
        args.out.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
