"""The `paper` probe: the probing release's own estimator per task (probings4code), checked against a transcription of
the release's code on the same data, and the Table 1 protocol (`paper_layers: selected`) against the full sweep."""

from __future__ import annotations

import json
import random
from collections import defaultdict

import numpy as np
import pyarrow.parquet as pq
import pytest

from pipeline.fit.probe import (
    FoldScore, LayerSweep, ProbeConfig, assign_folds, fit_score_items, probe_layers, release_order,
)
from tests.test_fit import synthetic, write_inputs


def release_fit_predict(kind: str, samples: list[tuple[str, list[np.ndarray], list]], x_test: np.ndarray, seed: int,
                        sgd_seed: int | None = None):
    """The release's path, transcribed: `random.seed(0); random.shuffle(train_dataset)` over snippets (here the seed
    is `seed`), each snippet's samples flattened in order (`_make_dataset`), `np.array(X_train)`, then
    `train_linear_model` of the task's probing model (token_classification.py, edge.py, sentence_classification.py,
    sentence_regression.py) and `predict_linear_model`. Changes: `loss="log"` is sklearn 1.0's `log_loss`; SGD's
    seed, left free by the release, is `sgd_seed` (default `seed`); scoring / l1_ratios written out where today's
    sklearn would warn."""
    from sklearn.linear_model import LogisticRegressionCV, RidgeCV, SGDClassifier
    from sklearn.model_selection import GridSearchCV

    train_dataset = list(samples)
    random.seed(seed)
    random.shuffle(train_dataset)
    sgd_seed = seed if sgd_seed is None else sgd_seed
    x_train = np.array([x for _, xs, _ in train_dataset for x in xs])
    y_train = np.array([y for _, _, ys in train_dataset for y in ys])
    if kind in ("token", "edge"):
        params = {"alpha": [0.0001, 0.001, 0.01, 0.1] + ([1] if kind == "edge" else [])}
        model = SGDClassifier(loss="log_loss", verbose=0, tol=0.0001, random_state=sgd_seed)
        model = GridSearchCV(model, param_grid=params)
    elif kind == "sentence":
        model = LogisticRegressionCV(Cs=(0.0001, 0.001, 0.01, 0.1, 1, 10, 100), random_state=777, max_iter=10000,
                                     scoring="accuracy", l1_ratios=(0.0,), use_legacy_attributes=False)
    else:
        model = RidgeCV(alphas=(0.0001, 0.001, 0.01, 0.1, 1, 10, 100))
    model.fit(np.array(x_train, dtype=np.float64), np.array(y_train))
    return model.predict(np.array(x_test, dtype=np.float64))


RELEASE = {"token": ("sgd", (0.0001, 0.001, 0.01, 0.1)), "edge": ("sgd", (0.0001, 0.001, 0.01, 0.1, 1.0)),
           "sentence": ("logistic_cv", (0.0001, 0.001, 0.01, 0.1, 1.0, 10.0, 100.0)),
           "regression": ("ridge_cv", (0.0001, 0.001, 0.01, 0.1, 1.0, 10.0, 100.0))}


@pytest.mark.parametrize("kind", ["token", "edge", "sentence", "regression"])
def test_paper_probe_predicts_what_the_releases_code_predicts(kind):
    """On the same train split (snippets in the release's order, raw float32 features at a raw scale) and the same
    seed, ours and the release's transcribed code give the same test predictions, bit for bit."""
    feats, y, groups = synthetic(n_groups=48, per_group=5, dim=12)
    x = feats[1] * 7.0 + 2.0  # raw features: any standardising would change SGD's path
    if kind == "sentence":  # overlapping classes: lbfgs converges well before the release's 10,000 iterations
        x = (feats[0] + 0.15 * feats[1]) * 7.0 + 2.0
    if kind == "edge":
        x = np.hstack([x, feats[0]])  # a pair's two means, concatenated
    if kind == "regression":
        y = (x[:, 0] * 0.5 + np.random.default_rng(3).normal(size=len(x))).astype(np.float64)
    order = np.argsort(groups, kind="stable")  # the rows in a scrambled order: ours must order them as the release
    x, y, groups = x[order[::-1]], y[order[::-1]], groups[order[::-1]]
    test = np.array([int(g[1:]) % 4 == 0 for g in groups])
    seed = 11
    by_group: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
    for i in np.flatnonzero(~test):
        by_group[groups[i]][0].append(x[i])
        by_group[groups[i]][1].append(y[i])
    samples = [(g, *by_group[g]) for g in sorted(by_group)]  # the release's dataset order: ours sorts snippet names
    ref = release_fit_predict(kind, samples, x[test], seed)
    estimator, alphas = RELEASE[kind]
    config = ProbeConfig(task_type="regression" if kind == "regression" else "classification", probe="paper",
                         paper_estimator=estimator, alphas=alphas, seed=seed)
    err, alpha, item_errors = fit_score_items(x[~test], y[~test], x[test], y[test], groups[~test], config)
    if kind == "regression":
        assert np.allclose(item_errors, np.abs(ref - y[test]), rtol=0, atol=1e-9)
    else:
        assert np.array_equal(item_errors, (ref != y[test]).astype(float))
        assert err == pytest.approx(1.0 - np.mean(ref == y[test]))
    assert alpha > 0


def test_release_order_keeps_each_snippets_samples_together_in_a_seeded_snippet_order():
    groups = np.array(["b", "a", "b", "c", "a", "c", "b"], dtype=object)
    names = ["a", "b", "c"]
    random.Random(3).shuffle(names)  # the release: random.seed(0); random.shuffle(train_dataset)
    assert release_order(groups, 3).tolist() == [i for g in names for i in np.flatnonzero(groups == g)]


def test_paper_probe_caps_the_train_split_at_the_releases_10000_samples(monkeypatch):
    import pipeline.fit.probe as probe

    seen = []

    class Spy:
        def __init__(self, *a, **k):
            pass

        def fit(self, x, y):
            seen.append(len(x))
            self.best_params_ = {"alpha": 1.0}
            return self

        def predict(self, x):
            return np.array(["a"] * len(x), dtype=object)

    monkeypatch.setattr(probe, "PAPER_MAX_TRAIN", 30)
    monkeypatch.setattr(probe, "release_estimator", lambda config: Spy())
    feats, y, groups = synthetic(n_groups=10, per_group=5)
    fit_score_items(feats[0][:40], y[:40], feats[0][40:], y[40:], groups[:40], ProbeConfig(probe="paper"))
    fit_score_items(feats[0][:20], y[:20], feats[0][20:], y[20:], groups[:20], ProbeConfig(probe="paper"))
    assert seen == [30, 20]


@pytest.mark.parametrize("estimator", ["sgd", "logistic_cv"])
def test_table_1_protocol_gives_the_full_sweeps_rows_at_a_fraction_of_the_fits(estimator):
    """`selected_only`: fold 0 at every layer and folds 1..3 at the layer chosen there. Every row it writes equals the
    full sweep's row (same error, alpha and per-item errors), so the chosen layer and the headline are the same."""
    feats, y, groups = synthetic(n_groups=32, per_group=4, layers=4, good=2)
    folds = assign_folds(groups, 4, 5)
    base = dict(probe="paper", paper_estimator=estimator, alphas=(1e-4, 1e-2, 1.0), seed=5)
    full = probe_layers(feats.items(), y, groups, folds, ProbeConfig(**base))
    fast = probe_layers(feats.items(), y, groups, folds, ProbeConfig(**base, selected_only=True))
    assert len(full.scores) == 4 * 4 and len(fast.scores) == 4 + 3
    assert fast.selected_layer == full.selected_layer == 2
    assert fast.headline == full.headline

    def key(s: FoldScore):
        return (s.layer, s.fold, s.error, s.alpha, s.n_train, s.n_test, tuple(s.test_index), tuple(s.item_errors))

    assert {key(s) for s in fast.scores} <= {key(s) for s in full.scores}
    assert fast.curve(0) == full.curve(0)


def test_layer_sweep_ties_go_to_the_lowest_layer_and_keep_one_extra_layer():
    feats, y, groups = synthetic(n_groups=20, per_group=4, layers=3, good=1)
    folds = assign_folds(groups, 4, 1)
    sweep = LayerSweep(y, groups, folds, ProbeConfig(probe="paper", alphas=(1e-2,), selected_only=True))
    for layer in (2, 1, 0):  # the same features at every layer: equal fold-0 errors, layer 0 wins
        sweep.add(layer, feats[1])
    result = sweep.finish()
    assert result.selected_layer == 0 and sorted(s.fold for s in result.scores if s.layer == 0) == [0, 1, 2, 3]


def test_cli_takes_each_tasks_release_probe_skips_it_where_there_is_none_and_is_deterministic(tmp_path):
    feats, y, groups = synthetic(n_groups=24, per_group=4)
    features, labels = write_inputs(tmp_path, feats, y, groups)
    tasks = json.dumps([
        {"task": "tok", "labels": str(labels), "task_type": "classification",
         "paper": {"estimator": "sgd", "alphas": [0.0001, 0.01]}},
        {"task": "snip", "labels": str(labels), "task_type": "classification",
         "paper": {"estimator": "logistic_cv", "alphas": [0.01, 1.0]}},
        {"task": "ctl", "labels": str(labels), "task_type": "classification", "paper": None}])
    from pipeline.fit.cli import main as fit_main
    args = ["--features", *map(str, features), "--tasks", tasks, "--probe", "paper", "--also-probe", "ridge",
            "--paper-layers", "selected", "--folds", "4", "--alphas", "[1e-2,1]", "--seed", "7"]
    for name in ("a", "b"):
        assert fit_main([*args, "--out", str(tmp_path / f"{name}.parquet"),
                         "--metrics", str(tmp_path / f"{name}.json")]) == 0
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    rows = pq.read_table(tmp_path / "a.parquet").to_pylist()
    probes = {t: {r["probe"] for r in rows if r["task"] == t} for t in ("tok", "snip", "ctl")}
    assert probes == {"tok": {"paper", "ridge"}, "snip": {"paper", "ridge"}, "ctl": {"ridge"}}
    paper = [r for r in rows if r["task"] == "tok" and r["probe"] == "paper" and r["model"] == "m1"]
    assert sorted((r["layer"], r["fold"]) for r in paper if r["fold"] > 0) == [(1, 1), (1, 2), (1, 3)]
    assert sorted(r["layer"] for r in paper if r["fold"] == 0) == [0, 1, 2]
    assert {r["alpha"] for r in paper} <= {0.0001, 0.01}  # the task's grid, not --alphas
    snip = {r["alpha"] for r in rows if r["task"] == "snip" and r["probe"] == "paper"}
    assert snip <= {1 / 0.01, 1.0}  # LogisticRegressionCV's C, reported as alpha = 1/C
    ridge = [r for r in rows if r["task"] == "tok" and r["probe"] == "ridge" and r["model"] == "m1"]
    assert len(ridge) == 3 * 4  # ridge: every layer and fold
    metrics = json.loads((tmp_path / "a.json").read_text())
    assert metrics["paper_layers"] == "selected"
    bad = json.dumps([{"task": "x", "labels": str(labels), "task_type": "classification",
                       "paper": {"estimator": "svm"}}])
    assert fit_main(["--features", *map(str, features), "--tasks", bad, "--probe", "paper",
                     "--out", str(tmp_path / "c.parquet")]) == 2


def test_probing_declares_the_releases_probe_per_table_1_task():
    from pipeline.families.probing import FAMILY, paper_probe

    config = {"probing": {"languages": ["java"], "control": True,
                          "tasks": ["path_type", "depth", "declared", "dataflow", "variable_name", "misuse",
                                    "path_type_ours", "path_type_release_parser", "depth_release_parser"]}}
    est = {t: (paper_probe(config, t) or {}).get("estimator") for t in
           ("java-path_type", "java-depth", "java-declared", "java-dataflow", "java-variable_name", "java-misuse",
            "python-algorithm", "java-path_type_ours", "java-path_type-control", "java-path_type_release_parser",
            "java-depth_release_parser")}
    assert est == {"java-path_type": "sgd", "java-depth": "ridge_cv", "java-declared": "sgd", "java-dataflow": "sgd",
                   "java-variable_name": "sgd", "java-misuse": "logistic_cv", "python-algorithm": "logistic_cv",
                   "java-path_type_ours": None, "java-path_type-control": None,
                   "java-path_type_release_parser": "sgd", "java-depth_release_parser": "ridge_cv"}
    assert paper_probe(config, "java-dataflow")["alphas"] == [0.0001, 0.001, 0.01, 0.1, 1.0]
    assert paper_probe(config, "java-path_type")["alphas"] == [0.0001, 0.001, 0.01, 0.1]
    spec = {t["task"]: t for t in FAMILY.fit.spec(config)}
    assert spec["java-path_type-control"]["paper"] is None
    assert spec["java-misuse"]["paper"]["estimator"] == "logistic_cv"
