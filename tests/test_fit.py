"""pipeline.fit: the probing protocol on synthetic features (fast)."""

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
    ProbeConfig, RunInfo, assign_folds, control_labels, cross_validate, fold_splits, inner_alpha_scores,
    majority_baseline, probe_layers, regression_baseline, results_table, selectivity, summarise,
)
from pipeline.io import write_parquet
from tests.conftest import REPO

CLASSES = ["a", "b", "c"]


def synthetic(n_groups=40, per_group=5, dim=8, layers=3, good=1, seed=0):
    """Labels depend on the group's class; layer `good` carries a clean class signal, the others noise."""
    rng = np.random.default_rng(seed)
    groups = np.repeat([f"g{i:03d}" for i in range(n_groups)], per_group).astype(object)
    y = rng.choice(CLASSES, size=len(groups)).astype(object)
    feats = {}
    for layer in range(layers):
        x = rng.normal(size=(len(y), dim)).astype(np.float32)
        if layer == good:
            x[:, :3] += 6.0 * np.eye(3, dtype=np.float32)[[CLASSES.index(c) for c in y]]
        feats[layer] = x
    return feats, y, groups


@pytest.mark.parametrize("probe", ["ridge", "lbfgs", "sgd", "paper"])
def test_separable_layer_is_chosen_and_noise_is_near_chance(probe):
    feats, y, groups = synthetic()
    config = ProbeConfig(probe=probe, seed=3)
    folds = assign_folds(groups, 4, 3)
    result = probe_layers(feats.items(), y, groups, folds, config)
    assert result.selected_layer == 1
    assert result.headline.mean < 0.02 and result.headline.n_folds == 3
    assert result.headline.ci_low <= result.headline.mean <= result.headline.ci_high
    curve = result.curve()
    assert curve[0] > 0.45 and curve[2] > 0.45  # chance is 2/3
    assert len(result.scores) == 3 * 4


def test_grouped_folds_never_split_a_group_and_are_deterministic():
    groups = np.array([f"s{i % 37}" for i in range(500)], dtype=object)
    folds = assign_folds(groups, 4, 11)
    for g in np.unique(groups):
        assert len(set(folds[groups == g])) == 1
    assert set(folds) == {0, 1, 2, 3}
    sizes = np.bincount(folds)
    assert sizes.max() - sizes.min() <= 14  # balanced to within one group
    perm = np.random.default_rng(0).permutation(len(groups))  # row order does not matter
    assert (assign_folds(groups[perm], 4, 11) == folds[perm]).all()
    assert not (assign_folds(groups, 4, 12) == folds).all()
    with pytest.raises(ValueError, match="groups"):
        assign_folds(["a", "b"], 4, 0)


def test_majority_and_regression_baselines_match_hand_computation():
    folds = np.array([0, 0, 1, 1])
    labels = np.array(["x", "y", "x", "x"], dtype=object)
    res = majority_baseline(labels, folds)
    # fold 0: train on fold 1 (x, x) -> predicts x; test (x, y) -> error 0.5. fold 1: train (x, y) tie -> x; error 0
    assert [s.error for s in res.scores] == [0.5, 0.0]
    assert res.headline.mean == 0.0 and res.selected_layer is None
    feature = np.array([1.0, 2.0, 3.0, 5.0])
    target = np.array([2.0, 4.0, 5.0, 9.0])
    res = regression_baseline(feature, target, folds)
    # fold 0: fit on (3,5),(5,9): t = 2x - 1 -> preds 1, 3 vs 2, 4: MAE 1. fold 1: fit on (1,2),(2,4): t = 2x -> 6, 10 vs 5, 9: MAE 1
    assert np.allclose([s.error for s in res.scores], [1.0, 1.0])


def test_control_labels_are_consistent_per_word_type_and_seeded():
    words = np.array(["i", "j", "i", "x", "y", "j", "i"] * 10, dtype=object)
    labels = np.array(["VAR", "VAR", "FN", "VAR", "CLS", "FN", "VAR"] * 10, dtype=object)
    a = control_labels(words, labels, 5)
    for w in set(words):
        assert len(set(a[words == w])) == 1
    assert set(a) <= set(labels)
    assert (control_labels(words, labels, 5) == a).all()
    perm = np.random.default_rng(1).permutation(len(words))
    assert (control_labels(words[perm], labels[perm], 5) == a[perm]).all()
    many = {tuple(control_labels(words, labels, s)) for s in range(20)}
    assert len(many) > 1


def test_selectivity_is_control_minus_task_error():
    feats, y, groups = synthetic(layers=2, good=1)
    folds = assign_folds(groups, 4, 0)
    task = probe_layers(feats.items(), y, groups, folds, ProbeConfig())
    control = probe_layers(feats.items(), control_labels(groups, y, 1), groups, folds, ProbeConfig())
    sel = selectivity(task, control)
    assert set(sel) == {0, 1} and sel[1] == pytest.approx(control.curve()[1] - task.curve()[1])


def test_ridge_and_lbfgs_agree_on_the_easy_task():
    feats, y, groups = synthetic(good=0, layers=1)
    folds = assign_folds(groups, 4, 0)
    r = probe_layers(feats.items(), y, groups, folds, ProbeConfig(probe="ridge"))
    l = probe_layers(feats.items(), y, groups, folds, ProbeConfig(probe="lbfgs"))
    assert abs(r.headline.mean - l.headline.mean) < 0.02


def test_regression_task_uses_ridge_mae():
    rng = np.random.default_rng(0)
    groups = np.repeat([f"g{i}" for i in range(30)], 4).astype(object)
    x = rng.normal(size=(120, 5))
    t = 3 * x[:, 0] + 1.0
    res = probe_layers([(0, x), (1, rng.normal(size=(120, 5)))], t, groups, assign_folds(groups, 4, 0),
                       ProbeConfig(task_type="regression"))
    assert res.selected_layer == 0 and res.headline.mean < 0.05
    with pytest.raises(ValueError, match="ridge"):
        ProbeConfig(task_type="regression", probe="sgd")
    # the paper's probe on a regression task is the release's RidgeCV on the raw features
    res = probe_layers([(0, x), (1, rng.normal(size=(120, 5)))], t, groups, assign_folds(groups, 4, 0),
                       ProbeConfig(task_type="regression", probe="paper"))
    assert res.selected_layer == 0 and res.headline.mean < 0.05


def test_paper_probe_is_the_releases_sgd_grid_search_on_raw_features():
    """probings4code's TokenClassificationLinearModel: GridSearchCV(SGDClassifier(loss=log, tol=1e-4),
    {alpha: grid}) with sklearn's default split, no scaling; ours seeded, so it is that exact model."""
    from sklearn.linear_model import SGDClassifier
    from sklearn.model_selection import GridSearchCV

    from pipeline.fit.probe import fit_and_score
    feats, y, groups = synthetic()
    x = feats[1] * 50.0 + 3.0  # raw scale matters to SGD: no standardisation may happen
    tr, te = np.arange(len(y)) % 4 != 0, np.arange(len(y)) % 4 == 0
    alphas = (1e-4, 1e-3, 1e-2, 1e-1)
    err, alpha = fit_and_score(x[tr], y[tr], x[te], y[te], groups[tr], ProbeConfig(probe="paper", alphas=alphas, seed=5))
    ref = GridSearchCV(SGDClassifier(loss="log_loss", tol=1e-4, random_state=5), {"alpha": list(alphas)})
    ref.fit(x[tr].astype(np.float64), y[tr])
    assert alpha == ref.best_params_["alpha"]
    assert err == pytest.approx(1.0 - np.mean(ref.predict(x[te].astype(np.float64)) == y[te]))


@pytest.mark.parametrize("kind", ["regression", "binary", "multiclass"])
def test_inner_alpha_scores_equal_sklearn_grid_search_over_a_scaled_ridge(kind):
    """The SVD shortcut scores every alpha exactly as GridSearchCV(StandardScaler + Ridge / RidgeClassifier)."""
    from sklearn.linear_model import Ridge, RidgeClassifier
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(5)
    n, p = 90, 40
    x = rng.normal(size=(n, p)) * rng.uniform(0.1, 5, size=p) + rng.normal(size=p)
    x[:, 7] = 2.0  # a constant column: scale 1, as StandardScaler
    signal = x[:, :3] @ np.array([1.0, -2.0, 0.5]) + rng.normal(size=n)
    if kind == "regression":
        y = signal
    elif kind == "binary":
        y = np.where(signal > 0, "yes", "no").astype(object)
    else:
        y = np.array(["a", "b", "c", "d"], dtype=object)[np.digitize(signal, np.quantile(signal, [0.25, 0.5, 0.75]))]
    groups = np.repeat([f"g{i}" for i in range(30)], 3)
    splits = fold_splits(assign_folds(groups, 3, 1))
    alphas = [100.0, 10.0, 1.0, 0.1, 0.01, 1e-4]
    ours = inner_alpha_scores(x, y, splits, alphas, kind == "regression")
    est = Ridge() if kind == "regression" else RidgeClassifier()
    search = GridSearchCV(Pipeline([("scale", StandardScaler()), ("probe", est)]), {"probe__alpha": alphas}, cv=splits,
                          scoring="neg_mean_absolute_error" if kind == "regression" else "accuracy").fit(x, y)
    np.testing.assert_allclose(ours, search.cv_results_["mean_test_score"], rtol=1e-9, atol=1e-9)
    assert len(set(np.round(ours, 9))) > 1  # the grid matters on this data


def depth_blow_up_fixture():
    """The failure mode of code-t5's AST-depth probe in the 2026-11-22 default run (fold 1: MAE 12.2, alpha
    1e-4; the other folds ~1.5): 176 snippets, 128 features (code-t5's hidden size), integer depths 2..13.
    A train split of 132 rows for 128 features + intercept leaves the ridge at the interpolation threshold,
    where a near-zero alpha fits the train rows almost exactly and the efficient leave-one-out estimate of its
    error is a ratio of two near-zero numbers: on some draws it comes out small by chance and picks alpha
    1e-3/1e-4, whose weights then blow up on the test fold. Here: Gaussian noise features, a weak linear signal;
    seed 15 is such a draw (2 of 60 seeds are)."""
    rng = np.random.default_rng(15)
    x = rng.normal(size=(176, 128)).astype(np.float32)
    y = np.clip(np.round(6.7 + x @ (rng.normal(size=128) * 0.05) + rng.normal(size=176) * 2), 2, 13)
    groups = np.array([f"s{i}" for i in range(176)], dtype=object)
    return x, y, groups, assign_folds(groups, 4, 15)


def test_depth_probe_does_not_blow_up_near_the_interpolation_threshold():
    x, y, groups, folds = depth_blow_up_fixture()
    constant = [float(np.mean(np.abs(y[te] - y[tr].mean()))) for tr, te in fold_splits(folds)]  # predict the mean
    loo = cross_validate(x, y, groups, folds, ProbeConfig(task_type="regression", alpha_search="loo"), 0)
    # the fixture reproduces the failure with the old selection: one fold picks a tiny alpha and explodes
    worst = max(loo, key=lambda s: s.error)
    assert worst.alpha <= 1e-3 and worst.error > 5 * constant[worst.fold]
    inner = cross_validate(x, y, groups, folds, ProbeConfig(task_type="regression"), 0)
    for s in inner:
        assert s.error <= 1.1 * constant[s.fold], (s, constant)  # noise features: no better than the mean, no worse
    head = summarise(inner).headline
    assert head.ci_high - head.ci_low < 1.0 and head.ci_low > 0


def write_inputs(tmp_path, feats, y, groups, drop_label=2, drop_feature=3):
    items = [f"it{i:04d}" for i in range(len(y))]
    rows = {"item_id": [], "model": [], "layer": [], "pooling": [], "vector": []}
    for model in ("m1", "m2"):
        for layer, x in feats.items():
            for i, item in enumerate(items):
                if model == "m2" and i < drop_feature:  # m2 lacks these items: left out of m2's fit only
                    continue
                rows["item_id"].append(item)
                rows["model"].append(model)
                rows["layer"].append(layer)
                rows["pooling"].append("mean")
                rows["vector"].append(x[i].tolist())
    half = len(rows["item_id"]) // 2
    f1, f2 = tmp_path / "f1.parquet", tmp_path / "f2.parquet"
    table = pa.table(rows, schema=schemas.FEATURES)
    write_parquet(table.slice(0, half), f1, schemas.FEATURES)
    write_parquet(table.slice(half), f2, schemas.FEATURES)
    labels = pa.table({"item_id": items, "label": [None if i >= len(y) - drop_label else v for i, v in enumerate(y)],
                       "target": [None] * len(y), "group": list(groups)}, schema=schemas.PROBE_LABELS)
    lp = tmp_path / "labels.parquet"
    write_parquet(labels, lp, schemas.PROBE_LABELS)
    return [f1, f2], lp


def test_cli_end_to_end_and_deterministic(tmp_path):
    feats, y, groups = synthetic(n_groups=24, per_group=4)
    features, labels = write_inputs(tmp_path, feats, y, groups)
    outs = []
    for run in ("a", "b"):
        out, metrics = tmp_path / f"{run}.parquet", tmp_path / f"{run}.json"
        res = subprocess.run([sys.executable, "-m", "pipeline.fit", "--features", *map(str, features), "--labels",
                              str(labels), "--task", "toy", "--task-type", "classification", "--probe", "ridge",
                              "--folds", "4", "--alphas", "[1e-4,1e-2,1,100]", "--seed", "7", "--majority",
                              "--out", str(out), "--metrics", str(metrics)],
                             cwd=REPO, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    assert "dropped 5" in res.stderr
    table = pq.read_table(tmp_path / "a.parquet")
    assert table.schema.equals(schemas.FIT_RESULTS, check_metadata=False)
    assert table.num_rows == 2 * 3 * 4 + 2 * 4  # 2 models x 3 layers x 4 folds + the majority on each model's items
    rows = table.to_pylist()
    assert {r["n_dropped"] for r in rows if r["model"] == "m2"} == {5}  # 2 null labels, 3 without features
    assert {r["n_dropped"] for r in rows if r["model"] == "m1"} == {2}  # m1 keeps the 3 that m2 lacks
    assert {r["n_test"] + r["n_train"] for r in rows if r["model"] == "m2"} == {96 - 5}
    assert {r["n_test"] + r["n_train"] for r in rows if r["model"] == "m1"} == {96 - 2}
    chosen = {(r["model"], r["layer"]) for r in rows if r["selected"]}
    assert chosen == {("m1", 1), ("m2", 1), ("m1", None), ("m2", None)}
    assert set(r["alpha"] for r in rows if r["probe"] == "ridge") <= {1e-4, 1e-2, 1.0, 100.0}
    metrics = json.loads((tmp_path / "a.json").read_text())
    assert metrics["items"] == 94 and metrics["models"]["m2"]["items"] == 91
    assert metrics["models"]["m2"]["dropped"] == {"labelled_without_features": 3, "featured_without_label": 2,
                                                  "null_label": 2, "total": 5}
    assert [h["layer"] for h in metrics["headlines"]] == [1, 1, None, None]
    # the selected layer's rows carry each test item's 0/1 error (their mean is the fold's error); the others none
    for r in rows:
        if r["selected"] and r["layer"] is not None:
            assert len(r["test_items"]) == len(r["test_errors"]) == r["n_test"] and r["test_items"] == sorted(r["test_items"])
            assert set(r["test_errors"]) <= {0.0, 1.0} and np.mean(r["test_errors"]) == pytest.approx(r["error"], abs=1e-12)
        else:
            assert r["test_items"] is None and r["test_errors"] is None
    for model in ("m1", "m2"):  # every item tested once over the folds
        tested = [i for r in rows if r["model"] == model and r["selected"] and r["test_items"] for i in r["test_items"]]
        assert len(tested) == len(set(tested)) == {"m1": 94, "m2": 91}[model]


def test_cli_errors_are_one_line(tmp_path):
    feats, y, groups = synthetic(n_groups=8, per_group=2)
    features, labels = write_inputs(tmp_path, feats, y, groups)
    res = subprocess.run([sys.executable, "-m", "pipeline.fit", "--features", *map(str, features), "--labels",
                          str(labels), "--task", "t", "--task-type", "regression", "--probe", "sgd",
                          "--out", str(tmp_path / "o.parquet")], cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 2 and "ridge" in res.stderr and "Traceback" not in res.stderr


def test_results_table_marks_the_selected_layer():
    feats, y, groups = synthetic(layers=2)
    result = probe_layers(feats.items(), y, groups, assign_folds(groups, 4, 0), ProbeConfig())
    t = results_table(result, RunInfo("t", "classification", "m", "mean", "ridge"))
    assert [r["layer"] for r in t.to_pylist() if r["selected"]] == [1, 1, 1, 1]
    assert fold_splits(np.array([0, 1, 0]))[0][1].tolist() == [0, 2]


def test_per_item_errors_of_a_regression_probe_are_absolute_errors():
    x, y, groups, folds = depth_blow_up_fixture()
    scores = cross_validate(x[:, :8], y, groups, folds, ProbeConfig(task_type="regression"), 0)
    for s in scores:
        assert len(s.item_errors) == len(s.test_index) == s.n_test and (s.item_errors >= 0).all()
        assert s.error == float(np.mean(s.item_errors))  # the MAE is their mean, bit for bit
    assert sorted(i for s in scores for i in s.test_index) == list(range(len(y)))


def test_also_probe_fits_a_second_probe_on_the_same_folds_and_items(tmp_path):
    """--probe paper --also-probe ridge: both probes' rows, each named, on the same folds and items; the primary's
    rows are those of a run with --probe paper alone (the second probe changes nothing of the first)."""
    feats, y, groups = synthetic(n_groups=24, per_group=4)
    features, labels = write_inputs(tmp_path, feats, y, groups)
    common = ["--features", *map(str, features), "--labels", str(labels), "--task", "toy", "--task-type",
              "classification", "--folds", "4", "--alphas", "[1e-4,1e-2,1]", "--seed", "7"]
    from pipeline.fit.cli import main as fit_main
    assert fit_main([*common, "--probe", "paper", "--also-probe", "ridge", "--also-probe", "paper",
                     "--out", str(tmp_path / "both.parquet"), "--metrics", str(tmp_path / "both.json")]) == 0
    assert fit_main([*common, "--probe", "paper", "--out", str(tmp_path / "one.parquet")]) == 0
    both = pq.read_table(tmp_path / "both.parquet").to_pylist()
    one = pq.read_table(tmp_path / "one.parquet").to_pylist()
    assert {r["probe"] for r in both} == {"paper", "ridge"}  # a repeated probe is fitted once
    key = lambda r: (r["model"], r["layer"], r["fold"])  # noqa: E731
    assert sorted(([key(r), r["error"], r["n_test"]] for r in both if r["probe"] == "paper"), key=str) == \
        sorted(([key(r), r["error"], r["n_test"]] for r in one), key=str)
    ridge = {key(r): r["n_test"] for r in both if r["probe"] == "ridge"}
    assert ridge == {key(r): r["n_test"] for r in both if r["probe"] == "paper"}
    metrics = json.loads((tmp_path / "both.json").read_text())
    assert metrics["probe"] == "paper" and metrics["also_probes"] == ["ridge"]
    assert sorted({(h["model"], h["probe"]) for h in metrics["headlines"]}) == [
        ("m1", "paper"), ("m1", "ridge"), ("m2", "paper"), ("m2", "ridge")]
