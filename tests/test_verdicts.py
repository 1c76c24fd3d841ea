"""The headline verdicts (#49): one verdict vocabulary, the summary table, seeded 10,000-replicate paired tests
on identical items, and index.md's line length."""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pytest

from pipeline.metrics.bootstrap import (HEADLINE_REPLICATES, PairedTest, cell_seed, paired_mean_test,
                                        paired_spearman_test, paired_spearman_tests, p_error)
from pipeline.families.apiquiz import headline as apiquiz_headline
from pipeline.families.probing import headline as probing_headline
from pipeline.report.build import MAX_LINE, unwrapped, wrap_long_lines
from pipeline.report.verdicts import (SUMMARY_COLUMNS, Comparison, Row, row_verdict, summary_table, verdict)


def t(diff, lo, hi, p, n=200, b=0.5, replicates=HEADLINE_REPLICATES):
    return PairedTest(n, b + diff, b, diff, lo, hi, p, p_error(p, replicates), replicates)


def test_verdict_every_wording():
    floor = 100
    assert verdict("jedi", t(0.2, 0.1, 0.3, 0.0), floor) == "above jedi"
    assert verdict("jedi", t(-0.35, -0.45, -0.26, 0.0), floor) == "below jedi"
    assert verdict("the majority class", t(0.0, -0.046, 0.046, 1.0), floor) == "no better than the majority class"
    assert verdict("the n-gram", t(-0.02, -0.1, 0.06, 0.6), floor) == "no better than the n-gram"
    assert verdict("its twin", t(0.08, -0.01, 0.17, 0.089), floor) == "not shown above its twin (p = 0.089)"  # a gain, CI holds 0
    assert verdict("its twin", t(0.15, 0.0, 0.33, 0.050), floor) == \
        "undecided vs its twin (p = 0.050, at 0.05 within its Monte Carlo error)"  # p at alpha, MC error
    assert verdict("its twin", t(0.15, 0.01, 0.33, 0.047), floor) == \
        "undecided vs its twin (p = 0.047, at 0.05 within its Monte Carlo error)"  # within 2 MC errors
    assert verdict("its twin", t(0.15, 0.01, 0.33, 0.040), floor) == "above its twin"  # 4.6 MC errors from 0.05
    assert verdict("its twin", t(0.3, 0.2, 0.4, 0.0, n=40), floor) == "undecided (n = 40)"  # under report.min_n
    assert verdict("its twin", None, floor) == "no comparison"
    assert verdict("its twin", PairedTest(0, *(math.nan,) * 7, 0), floor) == "no comparison"
    # an error: lower is better, so a negative difference is the model's gain
    assert verdict("the majority class", t(-0.2, -0.3, -0.1, 0.0), floor, lower_is_better=True) == \
        "above the majority class"
    assert verdict("the offset baseline", t(0.2, 0.1, 0.3, 0.0), floor, lower_is_better=True) == \
        "below the offset baseline"
    assert verdict("the majority class", t(0.01, -0.05, 0.07, 0.7), floor, lower_is_better=True) == \
        "no better than the majority class"


def test_a_row_reads_the_strongest_baseline_first_then_its_twin():
    weak, strong = Comparison("the n-gram", t(0.08, -0.01, 0.17, 0.089, b=0.4, n=100)), \
        Comparison("jedi", t(-0.35, -0.45, -0.26, 0.0, b=0.83, n=100))
    row = Row("apirec", "smollm2", "SR@10", 0.48, 100, Comparison("its twin", t(0.19, 0.12, 0.27, 0.0, n=100)),
              (weak, strong))
    assert row.to_beat() is strong
    assert row_verdict(row, 100) == "below jedi; above its twin"
    assert row_verdict(Row("apirec", "m", "SR@10", 0.5, 12, None, (weak,)), 100) == "undecided (n = 12)"
    table = summary_table([row], 100).split("\n")
    assert table[0] == "| " + " | ".join(SUMMARY_COLUMNS) + " |"
    cells = [c.strip() for c in table[2].strip("|").split("|")]
    assert cells[:5] == ["apirec", "smollm2", "SR@10", "0.480", "100"]
    assert cells[5] == "+0.190 [+0.120, +0.270], p < 0.0001"
    assert cells[6] == "jedi: -0.350 [-0.450, -0.260], p < 0.0001"
    assert cells[7] == "below jedi; above its twin"
    # a reference scored on fewer of the row's items (jedi: the Python points of a row over both languages) names its n
    mixed = Row("apirec", "m", "SR@10", 0.2, 250, None, (Comparison("jedi", t(-0.5, -0.6, -0.4, 0.0, n=118)),))
    assert "jedi (n = 118): -0.500" in summary_table([mixed], 100)
    floored = summary_table([Row("apirec", "m", "SR@10", 0.5, 12, None, (weak,))], 100)
    assert "| too few items | 12 |" in floored and "0.500" not in floored and "undecided (n = 12)" in floored


def test_replicates_are_seeded_per_cell_and_reproducible():
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 2, 150), rng.integers(0, 2, 150)
    one = paired_mean_test(a, b, cell_seed(7, "apiquiz", "m", "P@1", "twin"))
    assert one == paired_mean_test(a, b, cell_seed(7, "apiquiz", "m", "P@1", "twin"))
    assert one.replicates == HEADLINE_REPLICATES >= 10_000
    other = paired_mean_test(a, b, cell_seed(7, "apiquiz", "m", "P@1", "chance"))
    assert (one.lo, one.hi, one.p_value) != (other.lo, other.hi, other.p_value)  # another cell, other draws
    assert cell_seed(7, "x") != cell_seed(8, "x")
    assert one.diff == pytest.approx(a.mean() - b.mean())
    x, y, g = rng.normal(size=80), rng.normal(size=80), rng.normal(size=80)
    assert paired_spearman_test(x, y, g, 3) == paired_spearman_test(x, y, g, 3)


def test_pairing_drops_an_item_missing_on_either_side():
    a = np.array([1, 0, 1, 1, np.nan, 1], dtype=float)
    b = np.array([0, 0, np.nan, 1, 1, 0], dtype=float)
    r = paired_mean_test(a, b, 1)
    assert r.n == 4 and r.a == pytest.approx(0.5 + 0.25) and r.b == pytest.approx(0.25)
    # Spearman: every comparison of one row on the items all of them scored
    x = np.arange(10.0)
    ys = {"u": np.r_[np.nan, np.arange(1.0, 10.0)], "v": np.r_[np.arange(9.0), np.nan]}
    out = paired_spearman_tests(x, ys, x, 2, replicates=200)
    assert {r.n for r in out.values()} == {8}


def test_spearman_of_the_whole_sample_is_scipys():
    from scipy.stats import spearmanr

    rng = np.random.default_rng(4)
    x, y = rng.integers(0, 4, 60).astype(float), rng.normal(size=60)  # ties in x
    g = x + rng.normal(size=60)
    r = paired_spearman_test(x, y, g, 0, replicates=500)
    assert r.a == pytest.approx(spearmanr(x, g)[0]) and r.b == pytest.approx(spearmanr(y, g)[0])


def test_apiquiz_rows_pair_model_twin_chance_and_frequency_on_the_same_quizzes():
    con = duckdb.connect()
    con.sql("CREATE TABLE models AS SELECT * FROM (VALUES ('m', false), ('m-random', true)) t(name, random)")
    con.sql("CREATE TABLE model_twins AS SELECT 'm' AS model, 'm-random' AS twin")
    con.sql("CREATE TABLE apiquiz_quizzes AS SELECT 'q' || i AS quiz_id, CASE WHEN i % 2 = 0 THEN 'call' "
            "ELSE 'import' END AS setting, false AS context_leak FROM range(120) r(i)")
    con.sql("CREATE TABLE apiquiz_predictions AS "
            "SELECT 'q' || i AS quiz_id, 'm' AS model, 'rank' AS protocol, 'ok' AS status, "
            "       CASE WHEN i % 3 = 0 THEN 1 ELSE 2 END AS gold_rank, 4 AS n_ranked FROM range(120) r(i) "
            "UNION ALL SELECT 'q' || i, 'm-random', 'rank', 'ok', CASE WHEN i % 5 = 0 THEN 1 ELSE 3 END, 4 "
            "FROM range(100) r(i)")  # the twin scored 100 of the 120
    con.sql("CREATE TABLE apiquiz_frequency_baseline AS SELECT 'q' || i AS quiz_id, "
            "CASE WHEN i % 2 = 0 THEN 1.0 ELSE 0.0 END AS p_at_1 FROM range(120) r(i)")
    (row,) = apiquiz_headline.rows(con, {"seed": 1})
    assert row.model == "m" and row.n == 120 and row.score == pytest.approx(40 / 120)
    assert row.twin.test.n == 100  # only the quizzes both scored
    chance, frequency = row.baselines
    assert chance.name == "chance" and chance.test.n == 120 and chance.test.b == pytest.approx(0.25)
    assert frequency.name == "frequency" and frequency.test.n == 120 and frequency.test.b == pytest.approx(0.5)
    assert row.to_beat() is frequency  # the stronger baseline is the one the verdict reads
    assert row.items == tuple(sorted(f"q{i}" for i in range(120)))  # each quiz's id, for the pairs of real models


def test_index_lines_are_wrapped_to_the_limit_but_table_rows_are_kept():
    text = "# T\n\n" + " ".join(["word"] * 200) + "\n\n- " + " ".join(["item"] * 150) + "\n\n| a | b |\n|---|---|\n"
    out = wrap_long_lines(text)
    assert max(len(line) for line in out.split("\n")) <= MAX_LINE
    assert out.split() == text.split()  # the same words: Markdown renders both alike
    assert any(line.startswith("  item") for line in out.split("\n"))  # a list item's continuation indented
    assert unwrapped(out) == text  # what the first read's line bounds count (tests/test_end_to_end.py)


def probing_warehouse(regression: bool = False) -> duckdb.DuckDBPyConnection:
    """Two models (m and its random twin) probed on one task, 4 folds of 40 items, each tested in one fold."""
    con = duckdb.connect()
    con.sql("CREATE TABLE models AS SELECT * FROM (VALUES ('m', false), ('m-random', true)) t(name, random)")
    con.sql("CREATE TABLE model_twins AS SELECT 'm' AS model, 'm-random' AS twin")
    metric = "mae" if regression else "error"
    con.sql(f"CREATE TABLE probing_models AS SELECT * FROM (VALUES ('python-t', 'm', 'linear', 'mean', '{metric}', "
            f"0.2, 120, false), ('python-t', 'm-random', 'linear', 'mean', '{metric}', 0.4, 120, true)) "
            "v(task, model, probe, pooling, metric, fold0_error, fold0_n, control)")
    # labels: 'a' on 3 of 4 items (the majority everywhere), n_tokens = i % 7, target = 2 * n_tokens
    con.sql("CREATE TABLE probing_labels AS SELECT 'python' AS language, 't' AS task, 'i' || lpad(i::VARCHAR, 3, '0') "
            "AS item_id, CASE WHEN i % 4 = 0 THEN 'b' ELSE 'a' END AS label, 2.0 * (i % 7) AS target, "
            "(i % 7)::DOUBLE AS n_tokens FROM range(160) r(i)")
    rows = []
    for model, wrong in (("m", 5), ("m-random", 3)):  # the model errs on every 5th item, the twin on every 3rd
        for fold in range(4):
            items = [f"i{i:03d}" for i in range(160) if i % 4 == fold]
            errors = [float(int(x[1:]) % wrong == 0) for x in items]
            rows.append((model, fold, items, errors))
    con.sql("CREATE TABLE probing_fits (task VARCHAR, model VARCHAR, probe VARCHAR, pooling VARCHAR, layer INTEGER, "
            "fold INTEGER, selected BOOLEAN, test_items VARCHAR[], test_errors DOUBLE[])")
    for model, fold, items, errors in rows:
        con.execute("INSERT INTO probing_fits VALUES ('python-t', ?, 'linear', 'mean', 1, ?, true, ?, ?)",
                    [model, fold, items, errors])
    return con


def test_probing_rows_pair_the_chosen_probe_its_twin_and_the_baseline_on_the_same_samples():
    config = {"seed": 0, "probing": {"languages": ["python"], "tasks": ["t"]}}
    (row,) = probing_headline.rows(probing_warehouse(), config)
    assert row.model == "m" and row.n == 120 and row.lower_is_better and row.summary  # folds 1..3, 40 each
    # the summary prints every real model on the first enabled task only (no model or task picked by a test score)
    (other,) = probing_headline.rows(probing_warehouse(), {"seed": 0, "probing": {"languages": ["python"],
                                                                                "tasks": ["u", "t"]}})
    assert not other.summary
    assert row.score == pytest.approx(sum(i % 5 == 0 for i in range(160) if i % 4) / 120)
    assert row.twin.test.n == 120 and row.twin.test.b == pytest.approx(sum(i % 3 == 0 for i in range(160) if i % 4) / 120)
    (base,) = row.baselines
    # the majority class ('a', trained on the other folds) errs exactly on the 'b' items: fold 0 holds them all
    assert base.name == "the majority class" and base.test.n == 120 and base.test.b == 0.0
    assert verdict(base.name, base.test, 100, True) == "below the majority class"
    assert row_verdict(row, 100).endswith("above its twin")


def test_probing_regression_baseline_is_linreg_on_length():
    (row,) = probing_headline.rows(probing_warehouse(regression=True), {"seed": 0})
    (base,) = row.baselines
    assert base.name == "linreg on length" and base.test.b == pytest.approx(0.0, abs=1e-9)  # target = 2 x length


def test_probing_figure_has_a_panel_per_task_with_model_twin_and_baseline(tmp_path):
    from pipeline.families.probing import report

    con = probing_warehouse()
    con.sql("CREATE TABLE probing_layers AS SELECT 'python-t' AS task, m AS model, 'linear' AS probe, 'mean' AS pooling, "
            "l AS layer, 0.1 * l + (m = 'm-random')::INT * 0.2 AS error FROM (VALUES ('m'), ('m-random')) a(m), "
            "range(3) r(l)")
    con.sql("CREATE TABLE probing_headline AS SELECT 'python-t' AS task, 'majority' AS model, 'majority' AS probe, "
            "NULL::INTEGER AS layer, 'error' AS metric, 0.25 AS mean")
    text = report.layers_by_task(con, tmp_path, "figures")
    assert "probing_layers_by_task.png" in text and (tmp_path / "probing_layers_by_task.png").stat().st_size > 0


def test_codesyntax_macro_ratio_resamples_functions_with_all_their_edges():
    """The codesyntax headline's test (macro_ratio_tests): the statistic is the mean over relations of hits / edges
    summed over functions; the resampling unit is the function; a fixed reference is averaged over the same relations."""
    from pipeline.metrics.bootstrap import macro_ratio_tests

    rng = np.random.default_rng(0)
    n, groups = 150, 4
    edges = rng.integers(0, 6, size=(n, groups)).astype(float)
    hits = np.minimum(edges, rng.integers(0, 4, size=(n, groups))).astype(float)
    twin_hits = np.floor(hits / 2)
    out = macro_ratio_tests(hits, edges, {"twin": (twin_hits, edges), "fixed": np.array([0.1, 0.2, np.nan, 0.4])},
                            seed=7, replicates=2000)
    twin, fixed = out["twin"], out["fixed"]
    expected = np.mean(hits.sum(0) / edges.sum(0))
    assert twin.n == n and twin.a == pytest.approx(expected)
    assert twin.b == pytest.approx(np.mean(twin_hits.sum(0) / edges.sum(0)))
    assert twin.lo < twin.diff < twin.hi and twin.lo > 0 and twin.p_value < 0.05
    # the fixed reference: the model's rate and the reference's over the three relations the reference has
    keep = [0, 1, 3]
    assert fixed.a == pytest.approx(np.mean(hits.sum(0)[keep] / edges.sum(0)[keep]))
    assert fixed.b == pytest.approx(np.mean([0.1, 0.2, 0.4]))
    assert fixed.lo <= fixed.diff <= fixed.hi
    again = macro_ratio_tests(hits, edges, {"twin": (twin_hits, edges)}, seed=7, replicates=2000)["twin"]
    assert again == twin  # seeded: the same bits
