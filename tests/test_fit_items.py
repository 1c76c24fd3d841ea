"""The fit stage's item record (pipeline.fit.items) and the multi-task fit (`--tasks`): each model is fitted
on its own items (a sample missing in one model is left out for that model only, with the reason in the
record), a capped extra model changes no other model's fit (byte-identical), tasks of one subset with
different poolings are fitted from the same files, each layer read once, with the same numbers as one task
at a time."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline import schemas
from pipeline.fit.items import item_table
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


def test_an_item_missing_in_one_model_is_recorded_for_that_model_only_with_the_reason(tmp_path):
    files, a, b = build(tmp_path)
    t = item_table({"s": {"m1": [files["m1"]], "m2": [files["m2"]]}}, {"s": [a, b]}, {"m2": None})
    rows = {(r["model"], r["item_id"]): r for r in t.to_pylist()}
    assert len(rows) == 2 * 96 and t.schema.equals(schemas.FIT_ITEMS)
    assert [i for (m, i), r in sorted(rows.items()) if m == "m1" and not r["kept"]] == ["w047"]
    assert [i for (m, i), r in sorted(rows.items()) if m == "m2" and not r["kept"]] == ["w000", "w001", "w002", "w047"]
    assert rows[("m2", "w001")]["reason"] == "no features from m2 in layer(s) 1 (not finite in float16 there)"
    assert rows[("m1", "w001")]["kept"] and rows[("m1", "w047")]["reason"] == "no label"
    assert rows[("m2", "p000")]["kept"] and rows[("m2", "p000")]["reason"] is None
    # a capped model that never read an item says so
    capped = tmp_path / "m3.parquet"
    t1 = pq.read_table(files["m1"])
    write_parquet(t1.filter(pa.compute.is_in(t1["item_id"], pa.array(["w010", "w011"]))).set_column(
        1, "model", pa.array(["m3"] * 4)), capped, schemas.FEATURES)
    t3 = item_table({"s": {"m3": [capped]}}, {"s": [a, b]}, {"m3": 2}).to_pylist()
    assert sum(r["kept"] for r in t3) == 2
    assert next(r for r in t3 if r["item_id"] == "w000")["reason"].startswith(
        "not read by m3: outside its max_items subset (2 items)")


def fit(tmp_path, name, *args):
    out, metrics = tmp_path / f"{name}.parquet", tmp_path / f"{name}.json"
    res = subprocess.run([sys.executable, "-m", "pipeline.fit", *args, "--probe", "ridge", "--folds", "4",
                          "--alphas", "[0.01,1,100]", "--seed", "5", "--majority", "--out", str(out),
                          "--metrics", str(metrics)], cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return pq.read_table(out).to_pylist(), json.loads(metrics.read_text())


def test_multi_task_fit_on_each_models_own_items_matches_one_task_at_a_time(tmp_path):
    files, a, b = build(tmp_path)
    tasks = json.dumps([{"task": "A", "labels": str(a), "task_type": "classification"},
                        {"task": "B", "labels": str(b), "task_type": "classification"}])
    rows, metrics = fit(tmp_path, "multi", "--features", str(files["m1"]), str(files["m2"]), "--tasks", tasks)
    assert {(r["task"], r["model"], r["pooling"], r["probe"]) for r in rows} == {
        ("A", "m1", "mean", "ridge"), ("B", "m1", "concat", "ridge"), ("A", "m2", "mean", "ridge"),
        ("B", "m2", "concat", "ridge"), ("A", "m1", "-", "majority"), ("B", "m1", "-", "majority"),
        ("A", "m2", "-", "majority"), ("B", "m2", "-", "majority")}
    # m1 has w000..w002 in every layer and keeps them; m2 lacks them in layer 1 and leaves them out (47 labelled)
    assert {r["n_train"] + r["n_test"] for r in rows if r["task"] == "A" and r["model"] == "m1"} == {47}
    assert {r["n_train"] + r["n_test"] for r in rows if r["task"] == "A" and r["model"] == "m2"} == {44}
    assert {r["n_train"] + r["n_test"] for r in rows if r["task"] == "B"} == {48}
    task_a = metrics["tasks"]["A"]
    assert task_a["items"] == 47 and task_a["models"]["m2"]["dropped"]["labelled_without_features"] == 3
    # the headline's n: the distinct test samples of folds 1..3
    assert task_a["models"]["m1"]["n"] == sum(r["n_test"] for r in rows if r["task"] == "A" and r["model"] == "m1"
                                              and r["probe"] == "ridge" and r["selected"] and r["fold"] > 0)
    assert [h["layer"] for h in task_a["headlines"]][0] == 1  # the label sits in layer 1
    assert [h["layer"] for h in metrics["tasks"]["B"]["headlines"]][0] == 0  # and in layer 0 for the pairs
    # an item keeps its fold in every model: the folds are assigned on the full labelled set
    def fold_of(model):
        return {i: r["fold"] for r in rows if r["task"] == "A" and r["model"] == model and r["test_items"]
                for i in r["test_items"]}
    f1, f2 = fold_of("m1"), fold_of("m2")
    assert all(f1[i] == f for i, f in f2.items() if i in f1)
    # one task at a time gives the same numbers
    single, _ = fit(tmp_path, "single", "--features", str(files["m1"]), str(files["m2"]), "--labels", str(a),
                    "--task", "A", "--task-type", "classification")
    key = lambda r: (r["model"], r["probe"], r["layer"], r["fold"])  # noqa: E731
    got = {key(r): (r["error"], r["alpha"]) for r in rows if r["task"] == "A"}
    assert {key(r): (r["error"], r["alpha"]) for r in single} == got


def test_a_capped_extra_model_changes_no_other_models_fit(tmp_path):
    """Issue 34: a model capped to a few items (SmolLM2's max_items) used to shrink every model's test set to the
    items it read. Now m1's fit is byte-identical with and without a capped model beside it, in the same fit
    call as much as in its own job, and the capped model is skipped (with its reason) where its items cannot fill
    the folds."""
    files, a, b = build(tmp_path)
    capped = tmp_path / "capped.parquet"
    t1 = pq.read_table(files["m1"])
    few = t1.filter(pa.compute.is_in(t1["item_id"], pa.array([f"w{i:03d}" for i in range(6)] + ["p001"])))
    write_parquet(few.set_column(1, "model", pa.array(["capped"] * few.num_rows)), capped, schemas.FEATURES)
    tasks = json.dumps([{"task": "A", "labels": str(a), "task_type": "classification"},
                        {"task": "B", "labels": str(b), "task_type": "classification"}])
    alone, _ = fit(tmp_path, "alone", "--features", str(files["m1"]), "--tasks", tasks)
    both, metrics = fit(tmp_path, "both", "--features", str(files["m1"]), str(capped), "--tasks", tasks)
    assert [r for r in both if r["model"] == "m1"] == alone
    assert not any(r["model"] == "capped" for r in both if r["task"] == "B")
    assert "not fitted for capped" in metrics["tasks"]["B"]["models"]["capped"]["skipped"]
    assert metrics["tasks"]["A"]["models"]["m1"]["items"] == 47
    # the workflow's job for m1 reads m1's features only: the same bytes whatever else the zoo holds
    out1, out2 = tmp_path / "alone.parquet", tmp_path / "again.parquet"
    fit(tmp_path, "again", "--features", str(files["m1"]), "--tasks", tasks)
    assert out1.read_bytes() == out2.read_bytes()
