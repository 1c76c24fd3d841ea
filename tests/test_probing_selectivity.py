"""Control tasks and selectivity (Hewitt & Liang 2019) on synthetic features where the answer is
known, through the fit library, the FIT_RESULTS table and the family's SQL views (real DuckDB)."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from pipeline import schemas
from pipeline.families.probing import FOLDER
from pipeline.families.probing.generate import word_determines_label
from pipeline.fit.probe import (ProbeConfig, RunInfo, assign_folds, control_labels, probe_layers, results_table,
                                selectivity)

N_TYPES, N_CLASSES = 30, 5


def tokens(n_groups=80, per_group=10, seed=0):
    """Snippets of `per_group` tokens; word types drawn at random, the real label a function of the
    token's position (context), not of its word type: every type carries several real labels."""
    rng = np.random.default_rng(seed)
    groups = np.repeat([f"s{i:03d}" for i in range(n_groups)], per_group).astype(object)
    words = np.array([f"w{k}" for k in rng.integers(0, N_TYPES, len(groups))], dtype=object)
    labels = np.array([f"p{i % per_group % N_CLASSES}" for i in range(len(groups))], dtype=object)
    return groups, words, labels


def one_hot(keys, values, scale=3.0, dim_noise=8, seed=1):
    rng = np.random.default_rng(seed)
    index = {k: i for i, k in enumerate(sorted(set(values)))}
    x = np.zeros((len(keys), len(index)), dtype=np.float32)
    x[np.arange(len(keys)), [index[k] for k in keys]] = scale
    return np.hstack([x + rng.normal(scale=0.3, size=x.shape), rng.normal(size=(len(keys), dim_noise))]).astype(np.float32)


@pytest.fixture(scope="module")
def fitted():
    groups, words, labels = tokens()
    control = control_labels(words, labels, seed=7)
    # layer 0 encodes only the real label; layer 1 only the word type
    layers = {0: one_hot(labels, labels), 1: one_hot(words, words)}
    folds = assign_folds(groups, 4, 3)
    config = ProbeConfig(alphas=(0.01, 1.0, 100.0))
    task = probe_layers(layers.items(), labels, groups, folds, config)
    ctrl = probe_layers(layers.items(), control, groups, folds, config)
    return words, labels, control, task, ctrl


def test_control_labels_differ_from_the_real_ones_and_follow_the_word_type(fitted):
    words, labels, control, _, _ = fitted
    assert np.mean(control == labels) < 0.4  # chance agreement is about 1/5
    for w in set(words):
        assert len(set(control[words == w])) == 1 and len(set(labels[words == w])) > 1
    assert word_determines_label(words, labels) == 0.0
    assert word_determines_label(words, control) == 1.0


def test_selectivity_is_large_where_features_encode_the_label_and_not_the_word(fitted):
    _, _, _, task, ctrl = fitted
    t, c = task.curve(), ctrl.curve()
    # label features: the real task is solved, the control task is near chance (about 1 - 1/5)
    assert t[0] < 0.02 and c[0] > 0.5
    # word-type features: the control task is solved (every type is seen in training), the real task is not
    assert c[1] < 0.05 and t[1] > 0.6
    sel = selectivity(task, ctrl)
    assert sel[0] > 0.5 and sel[1] < -0.5


def selectivity_view(runs, twins: dict[str, str] | None = None, items=None, seed: int = 0,
                     drop: tuple[str, ...] = ()) -> duckdb.DuckDBPyConnection:
    """The family's SQL views on an in-memory DuckDB whose `probing_fits` holds FIT_RESULTS rows as
    the fit stage writes them, one (probe result, task, model) per run; no baselines, no labels.
    `twins`: model -> twin (the warehouse's model_twins); `items`: the task's item ids (per-sample errors)."""
    from pipeline import metrics

    con = duckdb.connect()
    metrics.install(con)
    con.register("probing_fits", pa.concat_tables(
        [results_table(result, RunInfo(task, "regression" if "depth" in task else "classification", model, "mean",
                                       "ridge"), items)
         for result, task, model in runs]).drop_columns(list(drop)))
    con.register("probing_baselines", schemas.FIT_RESULTS.empty_table())
    con.register("_twins", pa.Table.from_pylist([{"model": m, "twin": t} for m, t in (twins or {}).items()],
                                                pa.schema([("model", pa.string()), ("twin", pa.string())])))
    con.execute("CREATE VIEW model_twins AS SELECT * FROM _twins")
    con.execute(f"CREATE TABLE run_params AS SELECT 'seed' AS key, '{seed}' AS value")
    con.execute("CREATE VIEW probing_labels AS SELECT NULL::VARCHAR AS item_id WHERE false")
    for path in sorted((FOLDER / "sql").glob("*.sql")):
        con.execute(path.read_text())
    return con


def test_the_selectivity_view_joins_task_and_control_per_model_and_layer(fitted):
    """The family's SQL over FIT_RESULTS rows: control error - task error."""
    _, _, _, task, ctrl = fitted
    con = selectivity_view([(task, "java-path_type", "m"), (ctrl, "java-path_type-control", "m"),
                            # another model with the roles swapped: the join must not mix models
                            (ctrl, "java-path_type", "m2"), (task, "java-path_type-control", "m2")])
    got = {(m, layer): s for m, layer, s in con.sql(
        "SELECT model, layer, selectivity FROM probing_selectivity WHERE task = 'java-path_type'").fetchall()}
    sel = selectivity(task, ctrl)
    assert got[("m", 0)] == pytest.approx(sel[0]) and got[("m", 1)] == pytest.approx(sel[1])
    assert got[("m2", 0)] == pytest.approx(-sel[0])
    assert len(got) == 4


@pytest.mark.parametrize("layer", [pytest.param(0, id="label_layer"), pytest.param(1, id="word_type_layer")])
def test_the_selectivity_view_gives_samples_and_a_paired_t_interval(fitted, layer):
    """samples = the task's items (each tested once over the folds); the interval is the 95% Student-t
    interval of the per-fold differences control - task, checked against scipy."""
    from scipy import stats

    _, _, _, task, ctrl = fitted
    con = selectivity_view([(task, "java-path_type", "m"), (ctrl, "java-path_type-control", "m")])
    t = {s.fold: s for s in task.scores if s.layer == layer}
    c = {s.fold: s for s in ctrl.scores if s.layer == layer}
    diffs = np.array([c[f].error - t[f].error for f in sorted(t)])
    half = stats.t.ppf(0.975, len(diffs) - 1) * diffs.std(ddof=1) / np.sqrt(len(diffs))
    (row,) = con.sql(f"SELECT selectivity, ci_low, ci_high, samples, folds FROM probing_selectivity "
                     f"WHERE layer = {layer}").fetchall()
    assert row[0] == pytest.approx(diffs.mean())
    assert row[1] == pytest.approx(diffs.mean() - half, abs=1e-3) and row[2] == pytest.approx(diffs.mean() + half,
                                                                                               abs=1e-3)
    assert row[3] == sum(s.n_test for s in t.values()) and row[4] == len(diffs) == 4


MODEL_COLUMNS = ("task VARCHAR, model VARCHAR, probe VARCHAR, pooling VARCHAR, layer INTEGER, metric VARCHAR, "
                 "mean DOUBLE, ci_low DOUBLE, ci_high DOUBLE, n_test BIGINT, fold0_error DOUBLE, fold0_n BIGINT, "
                 "baseline_name VARCHAR, baseline_score DOUBLE, baseline_ci_low DOUBLE, baseline_ci_high DOUBLE, "
                 "baseline_n BIGINT, vs_baseline DOUBLE, vs_baseline_lo DOUBLE, vs_baseline_hi DOUBLE, "
                 "vs_baseline_p DOUBLE, control BOOLEAN")


def model_views(con, rows):
    """probing_models (the report's model rows) from (task, model, probe, layer[, metric], mean, lo, hi, n, fold-0
    error) (metric `error` when left out), and an empty probing_twin_diff."""
    con.execute(f"CREATE TABLE probing_models ({MODEL_COLUMNS})")
    rows = [r if len(r) == 10 else (*r[:4], "error", *r[4:]) for r in rows]
    con.executemany("INSERT INTO probing_models VALUES (?, ?, ?, 'mean', ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, "
                    "NULL, NULL, NULL, NULL, NULL, NULL, NULL, false)", [(*r[:9], r[9], r[8] // 3) for r in rows])
    con.execute("CREATE TABLE probing_twin_diff (model VARCHAR, twin VARCHAR, language VARCHAR, task VARCHAR, "
                "probe VARCHAR, pooling VARCHAR, n BIGINT, score DOUBLE, twin_score DOUBLE, diff DOUBLE, lo DOUBLE, "
                "hi DOUBLE, p_value DOUBLE)")


def test_report_class_balance_majority_baseline_beside_the_probe_and_one_class_flag():
    """Issue 22: every classification task's balance on all labelled items, its majority baseline beside the
    probe chosen on fold 0 (issue 34: not the lowest test error) with n, and one line for a task that is >= 90%
    one class."""
    from pipeline.families.probing.report import class_balance

    con = duckdb.connect()
    labels = [("java", "declared", f"d{i}", "declared" if i < 46 else "undeclared") for i in range(50)]
    labels += [("java", "misuse", f"m{i}", ("correct", "misused")[i % 2]) for i in range(40)]
    labels += [("java", "depth", "x0", None)]  # regression: no class balance
    con.execute("CREATE TABLE probing_labels (language VARCHAR, task VARCHAR, item_id VARCHAR, label VARCHAR)")
    con.executemany("INSERT INTO probing_labels VALUES (?, ?, ?, ?)", labels)
    con.execute("CREATE TABLE probing_headline (task VARCHAR, model VARCHAR, probe VARCHAR, layer INTEGER, "
                "metric VARCHAR, mean DOUBLE, ci_low DOUBLE, ci_high DOUBLE, folds INTEGER, n_test BIGINT)")
    con.executemany("INSERT INTO probing_headline VALUES (?, ?, ?, ?, 'error', ?, ?, ?, 3, ?)", [
        ("java-declared", "majority", "majority", None, 0.043, 0.0, 0.09, 36),
        ("java-declared", "m1", "majority", None, 0.3, 0.0, 0.9, 6),  # the majority on m1's items: not this table's
        ("java-misuse", "majority", "majority", None, 0.5, 0.5, 0.5, 30)])
    model_views(con, [
        ("java-declared", "m1", "ridge", 2, 0.04, 0.0, 0.12, 36, 0.10),
        ("java-declared", "m2", "ridge", 1, 0.05, 0.01, 0.09, 36, 0.02),  # higher test error, lower on fold 0
        ("java-misuse", "m1", "ridge", 3, 0.3, 0.2, 0.4, 30, 0.3)])
    table, lines = class_balance(con)
    assert table == [
        ("java-declared", 50, 2, "declared", "92.0%", "0.043 [0.0, 0.09]", 36, "m2 (ridge)", "0.05 [0.01, 0.09]", 36),
        ("java-misuse", 40, 2, "correct", "50.0%", "0.5 [0.5, 0.5]", 30, "m1 (ridge)", "0.3 [0.2, 0.4]", 30)]
    assert lines == ["- **java-declared is 92.0% one class** (`declared`, 50 samples): a probe must beat the majority "
                     "baseline's error 0.043 (n = 36), not chance."]


def test_report_names_a_task_the_class_rule_left_empty(tmp_path):
    import json

    from pipeline.families.probing.report import empty_tasks

    con = duckdb.connect()
    con.execute("CREATE TABLE probing_labels AS SELECT 'java' AS language, 'depth' AS task, 'x' AS item_id")
    (tmp_path / "java").mkdir()
    rule = {"labels_before": 40, "classes": 0, "merged_into_other": [], "dropped_samples": 101,
            "dropped_labels": [], "max_classes": 15, "min_class_samples": 30}
    (tmp_path / "java/summary.json").write_text(json.dumps({"tasks": {"variable_name": {"samples": 0,
                                                                                       "class_rule": rule}}}))
    config = {"probing": {"languages": ["java"], "tasks": ["depth", "variable_name", "misuse"], "control": False}}
    lines = empty_tasks(con, config, tmp_path)
    assert len(lines) == 2 and lines[0].startswith("- **java-variable_name has no samples**: the release's class rule")
    assert "40 labels" in lines[0] and "101 samples dropped" in lines[0] and "max_snippets" in lines[0]
    assert lines[1] == "- **java-misuse has no samples**: its generator made no sample from these snippets."
    # a language with no sample at all has its own note: no line per task
    con.execute("DELETE FROM probing_labels")
    assert empty_tasks(con, config, tmp_path) == []


def test_twin_diff_pairs_a_model_with_its_twin_on_the_same_test_samples(fitted):
    """probing_twin_diff: each model at its own fold-0 layer, the twin at its own, on the samples of folds 1..3
    both were tested on: mean errors, the difference, the paired Poisson bootstrap CI (equal to the metric
    library's Python twin, seeded by the run's seed) and p; a model without a twin gets no row."""
    from pipeline.metrics.bootstrap import poisson_paired_bootstrap

    words, labels, _, task, _ = fitted
    groups, _, _ = tokens()
    items = [f"i{k:04d}" for k in range(len(labels))]
    noise = {0: np.random.default_rng(5).normal(size=(len(labels), 6)).astype(np.float32),
             1: one_hot(words, words)}
    twin = probe_layers(noise.items(), labels, groups, assign_folds(groups, 4, 3), ProbeConfig(alphas=(0.01, 1.0, 100.0)))
    runs = [(task, "java-path_type", "m"), (twin, "java-path_type", "m-random"), (task, "java-path_type", "lone")]
    con = selectivity_view(runs, twins={"m": "m-random"}, items=items, seed=11)
    rows = con.sql("SELECT model, twin, language, task, layer, twin_layer, metric, n, score, twin_score, diff, lo, hi, "
                   "p_value, beats_twin FROM probing_twin_diff").fetchall()
    assert len(rows) == 1  # `lone` has no twin: no row, no error
    model, tw, language, name, layer, twin_layer, metric, n, score, twin_score, diff, lo, hi, p, beats = rows[0]
    assert (model, tw, language, name, metric) == ("m", "m-random", "java", "path_type", "error")
    assert layer == task.selected_layer == 0 and twin_layer == twin.selected_layer
    # by hand: the per-sample errors of folds 1..3 at each one's selected layer
    def errors(result):
        out = {}
        for s in result.scores:
            if s.layer == result.selected_layer and s.fold > 0:
                out.update({items[i]: e for i, e in zip(s.test_index, s.item_errors)})
        return out
    a, b = errors(task), errors(twin)
    ids = sorted(a)
    assert n == len(ids) == sum(s.n_test for s in task.scores if s.layer == 0 and s.fold > 0)
    ref = poisson_paired_bootstrap(ids, [a[i] for i in ids], [b[i] for i in ids], seed=11)
    assert (score, twin_score, diff) == (round(ref.mean_a, 4), round(ref.mean_b, 4), round(ref.diff, 4))
    assert (lo, hi, p) == (round(ref.lo, 4), round(ref.hi, 4), ref.p_value)
    assert lo <= diff <= hi and diff < 0 and beats and p < 0.01  # layer 0 encodes the label; the twin's noise does not
    # the sample mean equals the folds' errors weighted by their sizes (the headline's fold mean may differ)
    folds = [s for s in task.scores if s.layer == 0 and s.fold > 0]
    assert score == round(sum(s.error * s.n_test for s in folds) / n, 4)
    # the report's probing page shows it
    from pipeline.families.probing.report import twins

    md = "\n".join(twins(con))
    assert "model vs its random twin, paired" in md.lower() and "| m | m-random | java | path_type | ridge | error |" in md
    # deterministic, and seeded by the run's seed
    assert con.sql("SELECT * FROM probing_twin_diff").fetchall() == con.sql("SELECT * FROM probing_twin_diff").fetchall()
    other = selectivity_view(runs, twins={"m": "m-random"}, items=items, seed=12)
    assert other.sql("SELECT lo, hi FROM probing_twin_diff").fetchall() != [(lo, hi)]
    # fits written without per-sample errors (no items): no row
    assert selectivity_view(runs, twins={"m": "m-random"}).sql("SELECT count(*) FROM probing_twin_diff").fetchall() == [(0,)]
    # fit files from before the per-sample columns: the views still build, with no row, and the page says why
    old = selectivity_view(runs, twins={"m": "m-random"}, items=items, drop=("test_items", "test_errors"))
    assert old.sql("SELECT count(*) FROM probing_twin_diff").fetchall() == [(0,)]
    assert "rerun it" in "\n".join(twins(old))
