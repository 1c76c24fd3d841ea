"""Issue 49 item 3: the fit's headline over test samples (a seeded bootstrap, never clipped), each probe paired
against the baseline on its own items, and folds grouped by another labels column (probing: the source file)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline import schemas
from pipeline.fit.probe import (
    BOOTSTRAP_REPLICATES, assign_folds, bootstrap_interval, bootstrap_means, cell_rng, headline_columns,
    majority_baseline, paired_bootstrap, regression_baseline,
)
from pipeline.io import write_parquet
from tests.conftest import REPO


def test_bootstrap_means_resample_rows_like_index_resampling():
    """Multinomial counts over distinct rows: the same distribution as drawing row indices with replacement
    (mean and spread of the replicate means agree with the index bootstrap's and with theory)."""
    rng = np.random.default_rng(0)
    v = (rng.random(400) < 0.3).astype(float)
    means = bootstrap_means(v, 20_000, cell_rng(1, "a"))[:, 0]
    idx = rng.integers(0, len(v), size=(20_000, len(v)))
    ref = v[idx].mean(axis=1)
    assert means.mean() == pytest.approx(v.mean(), abs=2e-3)
    assert means.std() == pytest.approx(ref.std(), rel=0.05)
    assert means.std() == pytest.approx(np.sqrt(v.mean() * (1 - v.mean()) / len(v)), rel=0.05)


def test_interval_stays_in_the_metric_range_where_a_t_interval_is_clipped():
    """Three folds' t interval of a rare error reaches below 0; the bootstrap over samples never does."""
    errors = np.zeros(120)
    errors[[3, 50]] = 1.0  # 2 of 120 wrong, both in one fold: fold errors 0.05, 0, 0
    mean, lo, hi = bootstrap_interval(errors, BOOTSTRAP_REPLICATES, cell_rng(0, "t"))
    assert mean == pytest.approx(2 / 120) and 0.0 <= lo <= mean <= hi <= 1.0
    folds = np.array([0.05, 0.0, 0.0])
    t_low = folds.mean() - 4.303 * folds.std(ddof=1) / np.sqrt(3)
    assert t_low < 0  # what the view used to clip
    assert bootstrap_interval(np.zeros(50), 1000, cell_rng(0, "z")) == (0.0, 0.0, 0.0)


def test_seeded_per_cell_and_paired_p():
    a = (np.arange(200) % 5 == 0).astype(float)  # 0.2
    b = (np.arange(200) % 2 == 0).astype(float)  # 0.5
    one = paired_bootstrap(a, b, 10_000, cell_rng(3, "task", "m", "ridge"))
    two = paired_bootstrap(a, b, 10_000, cell_rng(3, "task", "m", "ridge"))
    assert one == two  # same cell, same bits
    assert one != paired_bootstrap(a, b, 10_000, cell_rng(3, "task", "other", "ridge"))
    diff, lo, hi, p = one
    assert diff == pytest.approx(-0.3) and lo < diff < hi < 0 and p < 1e-3
    assert paired_bootstrap(a, a, 1000, cell_rng(0, "x"))[3] == 1.0


def test_headline_columns_pair_a_probe_with_its_baseline_on_the_same_test_samples():
    rng = np.random.default_rng(0)
    groups = np.array([f"g{i // 3}" for i in range(240)])
    folds = assign_folds(groups, 4, 0)
    y = np.where(rng.random(240) < 0.8, "a", "b").astype(object)
    base = majority_baseline(y, folds)
    cols = headline_columns(base, 240, cell_rng(0, "b"), 2000, ("majority", base))
    assert cols["headline_error"] == pytest.approx(np.mean((y != "a")[folds > 0]))
    assert cols["vs_baseline"] == 0.0 and cols["vs_baseline_p"] == 1.0 and cols["baseline_name"] == "majority"
    assert cols["headline_lo"] <= cols["headline_error"] <= cols["headline_hi"]
    t = rng.normal(5, 2, 240)
    lin = regression_baseline(t + rng.normal(0, 1, 240), t, folds)
    c = headline_columns(lin, 240, cell_rng(0, "l"), 2000)
    assert c["headline_lo"] >= 0 and "vs_baseline" not in c


def _inputs(tmp_path, n_files=12, per_file=6):
    """Two models' features over items whose label is a property of their file (a file's methods share it):
    grouped by method, a probe that reads the file's signal sees each test file's siblings in training."""
    rng = np.random.default_rng(5)
    n = n_files * per_file
    items = [f"i{k:03d}" for k in range(n)]
    files = [f"f{k // per_file}" for k in range(n)]
    groups = [f"s{k}" for k in range(n)]  # one method each
    file_sig = rng.normal(size=(n_files, 8))
    y = np.array(["a" if file_sig[k // per_file, 0] > 0 else "b" for k in range(n)], dtype=object)
    rows = {"item_id": [], "model": [], "layer": [], "pooling": [], "vector": []}
    for layer in (0, 1):
        for k, item in enumerate(items):
            v = rng.normal(size=8) + (2.0 * file_sig[k // per_file] if layer == 1 else 0)
            rows["item_id"].append(item), rows["model"].append("m"), rows["layer"].append(layer)
            rows["pooling"].append("mean"), rows["vector"].append(v.tolist())
    fp = tmp_path / "f.parquet"
    write_parquet(pa.table(rows, schema=schemas.FEATURES), fp, schemas.FEATURES)
    labels = pa.table({"item_id": items, "label": list(y), "target": [None] * n, "group": groups, "file": files})
    lp = tmp_path / "labels.parquet"
    pq.write_table(labels, lp)
    return fp, lp, dict(zip(items, files))


@pytest.mark.parametrize("fold_group", ["file", "group"])
def test_cli_groups_folds_by_the_named_column_and_writes_the_headline_columns(tmp_path, fold_group):
    fp, lp, file_of = _inputs(tmp_path)
    outs = []
    for run in ("a", "b"):
        out = tmp_path / f"{fold_group}-{run}.parquet"
        res = subprocess.run([sys.executable, "-m", "pipeline.fit", "--features", str(fp), "--labels", str(lp),
                              "--task", "toy", "--task-type", "classification", "--folds", "4", "--alphas", "[1,100]",
                              "--majority", "--fold-group", fold_group, "--replicates", "2000", "--out", str(out),
                              "--metrics", str(tmp_path / f"{fold_group}-{run}.json")],
                             cwd=REPO, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]  # byte-identical for the same params
    rows = pq.read_table(out).to_pylist()
    fold_of_file: dict[str, set] = {}
    for r in rows:
        if r["selected"] and r["layer"] is not None:
            for i in r["test_items"]:
                fold_of_file.setdefault(file_of[i], set()).add(r["fold"])
    split = sum(len(f) > 1 for f in fold_of_file.values())
    if fold_group == "file":
        assert split == 0  # every method of one file in one fold
    probe = [r for r in rows if r["selected"] and r["layer"] is not None]
    assert {r["baseline_name"] for r in probe} == {"majority"}
    p = probe[0]
    tested = [e for r in probe if r["fold"] > 0 for e in r["test_errors"]]
    assert p["headline_error"] == pytest.approx(np.mean(tested))
    assert 0 <= p["headline_lo"] <= p["headline_error"] <= p["headline_hi"] <= 1
    assert p["vs_baseline_lo"] <= p["vs_baseline"] <= p["vs_baseline_hi"]
    assert p["vs_baseline"] == pytest.approx(p["headline_error"] - p["baseline_score"])
    base = [r for r in rows if r["probe"] == "majority"]
    assert base[0]["headline_error"] == pytest.approx(p["baseline_score"])
    others = [r for r in rows if r["layer"] is not None and not r["selected"]]
    assert all(r["headline_error"] is None and r["vs_baseline"] is None for r in others)
    metrics = json.loads((tmp_path / f"{fold_group}-a.json").read_text())
    assert metrics["fold_group"] == fold_group and metrics["headlines"][0]["fold0_n"] > 0


def test_cli_fold_group_missing_column_is_a_one_line_error(tmp_path):
    fp, lp, _ = _inputs(tmp_path)
    res = subprocess.run([sys.executable, "-m", "pipeline.fit", "--features", str(fp), "--labels", str(lp),
                          "--task", "toy", "--task-type", "classification", "--fold-group", "repo",
                          "--out", str(tmp_path / "o.parquet")], cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 2 and "missing column(s) ['repo']" in res.stderr


def test_a_difference_within_float_rounding_is_no_difference():
    a = np.full(40, 1e-16)
    b = np.full(40, 2e-16)
    assert paired_bootstrap(a, b, 1000, cell_rng(0, "r"))[0::3] == (0.0, 1.0)
