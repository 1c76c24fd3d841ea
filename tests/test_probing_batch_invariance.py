"""Probe results do not depend on the features' batch size (issue 12).

Real code (Python standard-library files, read as text), the family's own generators (token path
type, AST depth, data-flow edge), a real tiny transformers model (a randomly initialised RoBERTa
with the MiniLM tokenizer, built here), the real features runtime through the probing inference
task (`run_shard`) once with batch size 1 and once with batch size 32, and the real fit stage
(`python -m pipeline.fit`, as the fit rule runs it) on top of each.

Stated tolerance: the float32 vectors of the two runs differ by a few float32 ulps (padding changes
how the CPU matmuls block; tests/test_features.py bounds it at 2e-6 relative), so on disk (float16)
a component is equal or one float16 ulp apart. On top of that the probes must agree: the same
selected layer and alpha in every (task, layer, fold), classification errors bit-identical (a
prediction would have to sit on a decision boundary to flip), and regression MAE within 1e-6 absolute.
Measured (2026-11-22): 1 of 38,880 float16 components differ, 4 of 44 MAE rows by at most 1.3e-8.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline import schemas
from pipeline.families.probing import FAMILY
from pipeline.families.probing import tasks as T
from pipeline.families.probing.generate import capped, write_samples, write_task
from pipeline.io import write_parquet
from pipeline.models.zoo import load_model
from pipeline.runtime.predict import run_shard
from tests.conftest import REPO
from tests.test_features import entry, tiny_model_folder

STDLIB_FILES = ("textwrap.py", "shlex.py", "string.py", "fnmatch.py", "colorsys.py")
TASKS = {"path_type": "classification", "depth": "regression", "dataflow": "classification"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Samples and labels of three tasks cut from real stdlib functions (text only, never imported)."""
    out = tmp_path_factory.mktemp("probing")
    prs = T.parser("python")
    snippets = []
    for name in STDLIB_FILES:
        text = (Path(sysconfig.get_paths()["stdlib"]) / name).read_text(encoding="utf-8")
        snippets += [s for s in T.snippets_of_file(text, "python", name, prs) if len(s.text) <= 600 and len(s.tokens) >= 3]
    snippets.sort(key=lambda s: s.snippet_id)
    assert len(snippets) >= 30
    made = {"path_type": T.path_type(snippets, 8), "depth": T.ast_depth(snippets), "dataflow": T.dataflow(snippets, 0)}
    rows = []
    for task, made_rows in made.items():
        kept = [{**r, "task": task, "source": "stdlib"} for r in capped(made_rows, 160, 0, task)]
        write_task(kept, out, task, 0, control=False)
        rows += kept
    write_samples(rows, out / "samples.parquet")
    return out


@pytest.fixture(scope="module")
def tiny_mlm(tmp_path_factory):
    from tests.test_features import entry as feature_entry

    minilm = load_model(feature_entry(), device="cpu")
    folder = tiny_model_folder(tmp_path_factory.mktemp("tiny"), minilm, "masked-lm")
    return load_model(entry("tiny-mlm", f"path:{folder}", "masked-lm", max_length=128, batch_size=32), device="cpu")


def features_file(loaded, corpus: Path, batch_size: int, token_budget: int, path: Path) -> Path:
    loaded = dataclasses.replace(loaded, entry=dataclasses.replace(loaded.entry, batch_size=batch_size))
    table = run_shard(FAMILY, "python", {"samples": corpus / "samples.parquet"}, {"inference": {"max_items": 0}},
                      loaded, 0, 1, 0, token_budget)
    write_parquet(table, path, schemas.FEATURES)
    return path


def fit(features: Path, corpus: Path, out: Path) -> tuple[pa.Table, dict]:
    tasks = [{"task": t, "labels": str(corpus / t / "labels.parquet"), "task_type": kind} for t, kind in TASKS.items()]
    cmd = [sys.executable, "-m", "pipeline.fit", "--features", str(features), "--tasks", json.dumps(tasks),
           "--probe", "ridge", "--folds", "4", "--seed", "7", "--majority", "--out", str(out),
           "--metrics", str(out.with_suffix(".json"))]
    res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return pq.read_table(out), json.loads(out.with_suffix(".json").read_text())


def test_probe_results_are_the_same_for_batch_size_1_and_32(corpus, tiny_mlm, tmp_path, monkeypatch):
    one = features_file(tiny_mlm, corpus, 1, 4096, tmp_path / "b1.parquet")
    # the worst case for padding: short texts batched with long ones (the runtime's FEATURES_MIN_FILL keeps
    # rows >= 0.8 of their batch's longest, where batch 32 and batch 1 came out bit-identical here)
    monkeypatch.setattr("pipeline.runtime.features.FEATURES_MIN_FILL", 0.0)
    many = features_file(tiny_mlm, corpus, 32, 100_000, tmp_path / "b32.parquet")

    # the features: same rows, float16 components equal or one ulp apart (or within float32 noise
    # where float16's own step is finer)
    f1 = pq.read_table(one).sort_by([("item_id", "ascending"), ("layer", "ascending")])
    f32 = pq.read_table(many).sort_by([("item_id", "ascending"), ("layer", "ascending")])
    assert f1.drop_columns("vector").equals(f32.drop_columns("vector"))
    a = np.concatenate([np.asarray(v, dtype=np.float16) for v in f1["vector"].to_pylist()])
    b = np.concatenate([np.asarray(v, dtype=np.float16) for v in f32["vector"].to_pylist()])
    assert np.isfinite(a).all()
    step = np.abs(np.spacing(np.maximum(np.abs(a), np.abs(b)).astype(np.float16))).astype(np.float32)
    gap = np.abs(a.astype(np.float32) - b.astype(np.float32))
    assert (gap <= step + 2e-6).all(), float((gap - step).max())
    assert (a != b).any()  # batch 1 and 32 really differ somewhere: the tolerance below is exercised

    r1, m1 = fit(one, corpus, tmp_path / "fit1.parquet")
    r32, m32 = fit(many, corpus, tmp_path / "fit32.parquet")
    for t in TASKS:
        assert m1["tasks"][t]["models"] == m32["tasks"][t]["models"] and m1["tasks"][t]["models"]["tiny-mlm"]["items"] >= 24
    key = ["task", "model", "pooling", "probe", "layer", "fold", "metric", "n_train", "n_test", "alpha", "selected"]
    assert r1.select(key).equals(r32.select(key))  # same layers chosen, same alphas, same splits
    e1, e32 = np.array(r1["error"].to_pylist()), np.array(r32["error"].to_pylist())
    classification = np.array([m == "error" for m in r1["metric"].to_pylist()])
    assert classification.any() and (~classification).any()
    np.testing.assert_array_equal(e1[classification], e32[classification])
    np.testing.assert_allclose(e1[~classification], e32[~classification], rtol=0, atol=1e-6)
    # and the probes are real probes: path type is learnt far below the majority baseline at some layer
    errors = r1.to_pandas()
    path = errors[(errors.task == "path_type") & (errors.probe == "ridge")].groupby("layer").error.mean()
    majority = errors[(errors.task == "path_type") & (errors.probe == "majority")].error.mean()
    assert path.min() < majority - 0.2
