"""The fit stage's common item set (pipeline.fit.items) and the multi-task fit (`--tasks`, `--items`):
a sample missing in one model is dropped for all; tasks of one subset with different poolings are
fitted from the same files, each layer read once, with the same numbers as one task at a time."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline import schemas
from pipeline.fit.items import common_items
from pipeline.io import write_parquet
from tests.conftest import REPO


def build(tmp_path):
    """Subset `s`: 48 word items (task A, pooling mean) and 48 pair items (task B, concat), 12 groups.
    m2 lacks w000..w002 in layer 1 (a truncation there); w047 has a null label."""
    rng = np.random.default_rng(0)
    words = [f"w{i:03d}" for i in range(48)]
    pairs = [f"p{i:03d}" for i in range(48)]
    ya = rng.choice(["x", "y"], size=48)
    yb = rng.choice(["e", "f", "g"], size=48)
    files = {}
    for model in ("m1", "m2"):
        rows = {"item_id": [], "model": [], "layer": [], "pooling": [], "vector": []}
        for layer in (0, 1):
            for i, item in enumerate(words):
                if model == "m2" and layer == 1 and i < 3:
                    continue
                v = rng.normal(size=4) + (3.0 * (ya[i] == "x") if layer == 1 else 0.0)
                rows["item_id"].append(item), rows["model"].append(model), rows["layer"].append(layer)
                rows["pooling"].append("mean"), rows["vector"].append(v.tolist())
            for i, item in enumerate(pairs):
                v = rng.normal(size=8)
                if layer == 0:
                    v[["e", "f", "g"].index(yb[i])] += 4.0
                rows["item_id"].append(item), rows["model"].append(model), rows["layer"].append(layer)
                rows["pooling"].append("concat"), rows["vector"].append(v.tolist())
        path = tmp_path / f"{model}.parquet"
        write_parquet(pa.table(rows, schema=schemas.FEATURES), path, schemas.FEATURES)
        files[model] = path
    groups = [f"g{i % 12}" for i in range(48)]
    la = pa.table({"item_id": words, "label": [None if i == 47 else str(v) for i, v in enumerate(ya)],
                   "target": [None] * 48, "group": groups}, schema=schemas.PROBE_LABELS)
    lb = pa.table({"item_id": pairs, "label": [str(v) for v in yb], "target": [None] * 48, "group": groups},
                  schema=schemas.PROBE_LABELS)
    write_parquet(la, tmp_path / "a.parquet", schemas.PROBE_LABELS)
    write_parquet(lb, tmp_path / "b.parquet", schemas.PROBE_LABELS)
    return files, tmp_path / "a.parquet", tmp_path / "b.parquet"


def test_an_item_missing_in_one_model_is_dropped_for_all_with_the_reason(tmp_path):
    files, a, b = build(tmp_path)
    t = common_items({"s": {"m1": [files["m1"]], "m2": [files["m2"]]}}, {"s": [a, b]})
    rows = {r["item_id"]: r for r in t.to_pylist()}
    assert len(rows) == 96 and t.schema.equals(schemas.FIT_ITEMS)
    assert [i for i, r in sorted(rows.items()) if not r["kept"]] == ["w000", "w001", "w002", "w047"]
    assert rows["w001"]["reason"].startswith("no features from m2 (")
    assert rows["w047"]["reason"] == "no label"
    assert rows["p000"]["kept"] and rows["p000"]["reason"] is None


def fit(tmp_path, name, *args):
    out, metrics = tmp_path / f"{name}.parquet", tmp_path / f"{name}.json"
    res = subprocess.run([sys.executable, "-m", "pipeline.fit", *args, "--probe", "ridge", "--folds", "4",
                          "--alphas", "[0.01,1,100]", "--seed", "5", "--majority", "--out", str(out),
                          "--metrics", str(metrics)], cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return pq.read_table(out).to_pylist(), json.loads(metrics.read_text())


def test_multi_task_fit_on_the_common_items_matches_one_task_at_a_time(tmp_path):
    files, a, b = build(tmp_path)
    items = tmp_path / "items.parquet"
    write_parquet(common_items({"s": {"m1": [files["m1"]], "m2": [files["m2"]]}}, {"s": [a, b]}), items,
                  schemas.FIT_ITEMS)
    tasks = json.dumps([{"task": "A", "labels": str(a), "task_type": "classification"},
                        {"task": "B", "labels": str(b), "task_type": "classification"}])
    rows, metrics = fit(tmp_path, "multi", "--features", str(files["m1"]), "--tasks", tasks, "--items", str(items))
    assert {(r["task"], r["model"], r["pooling"]) for r in rows} == {("A", "m1", "mean"), ("B", "m1", "concat"),
                                                                       ("A", "majority", "-"), ("B", "majority", "-")}
    # m1 has w000..w002 in every layer, but m2 does not: the common item set leaves them out here too
    assert {r["n_train"] + r["n_test"] for r in rows if r["task"] == "A"} == {44}
    assert {r["n_train"] + r["n_test"] for r in rows if r["task"] == "B"} == {48}
    assert metrics["tasks"]["A"]["dropped"]["not_in_common_item_set"] == 3
    assert [h["layer"] for h in metrics["tasks"]["A"]["headlines"]][0] == 1  # the label sits in layer 1
    assert [h["layer"] for h in metrics["tasks"]["B"]["headlines"]][0] == 0  # and in layer 0 for the pairs
    # one task at a time over both models' features (dropping what any model lacks) gives the same numbers
    single, _ = fit(tmp_path, "single", "--features", str(files["m1"]), str(files["m2"]), "--labels", str(a),
                    "--task", "A", "--task-type", "classification")
    key = lambda r: (r["model"], r["layer"], r["fold"])  # noqa: E731
    got = {key(r): (r["error"], r["alpha"]) for r in rows if r["task"] == "A"}
    assert {k: v for k, v in ((key(r), (r["error"], r["alpha"])) for r in single) if k[0] in ("m1", "majority")} == got
