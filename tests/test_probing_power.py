"""Issue 34 (probing): fits that do not collapse. Through the fit library, FIT_RESULTS rows and the family's real
SQL views: a model's twin with fewer items is compared on the items both read (and says n), the headline prints
`too few items` under report.min_n, the headline's model is chosen on fold 0 (never the lowest test error), every
task the params enable has a row (or says why not), and the CIs of the views stay within the metric's range."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa

from pipeline import metrics, schemas
from pipeline.families.probing import FOLDER
from pipeline.fit.probe import ProbeConfig, RunInfo, assign_folds, probe_layers, results_table

CONFIG = {"report": {"min_n": 100},
          "probing": {"languages": ["java"], "tasks": ["path_type", "depth", "declared", "misuse"], "control": False,
                      "fit": {"folds": 4}}}


def synthetic(n_groups=60, per_group=4, seed=0):
    rng = np.random.default_rng(seed)
    groups = np.repeat([f"s{i:03d}" for i in range(n_groups)], per_group).astype(object)
    labels = np.array([f"c{k}" for k in rng.integers(0, 3, len(groups))], dtype=object)
    items = np.array([f"i{k:04d}" for k in range(len(groups))], dtype=object)
    signal = np.eye(3)[[int(c[1]) for c in labels]] * 3.0
    x = {0: rng.normal(size=(len(groups), 5)), 1: np.hstack([signal + rng.normal(scale=0.5, size=signal.shape),
                                                              rng.normal(size=(len(groups), 3))])}
    return groups, labels, items, x


def warehouse(runs, labels_rows, twins, baselines=(), items=None) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    metrics.install(con)
    con.register("probing_fits", pa.concat_tables(runs))
    con.register("probing_baselines", pa.concat_tables(list(baselines)) if baselines
                 else schemas.FIT_RESULTS.empty_table())
    con.register("_twins", pa.Table.from_pylist([{"model": m, "twin": t} for m, t in twins.items()],
                                                pa.schema([("model", pa.string()), ("twin", pa.string())])))
    con.execute("CREATE VIEW model_twins AS SELECT * FROM _twins")
    con.execute("CREATE TABLE run_params AS SELECT 'seed' AS key, '3' AS value")
    con.execute('CREATE TABLE probing_labels (language VARCHAR, task VARCHAR, item_id VARCHAR, label VARCHAR, '
                'target DOUBLE, "group" VARCHAR)')
    if labels_rows:
        con.executemany("INSERT INTO probing_labels VALUES (?, ?, ?, ?, ?, ?)", labels_rows)
    con.register("probing_fit_items", pa.Table.from_pylist(items or [], schema=schemas.FIT_ITEMS))
    for path in sorted((FOLDER / "sql").glob("*.sql")):
        con.execute(path.read_text())
    return con


def fitted(task="java-path_type"):
    """m: every item; m-random (its twin): the items of two thirds of the snippets (a capped twin); capped: the 32
    items of 2 snippets per fold. Folds assigned on the full set and kept on each model's subset (as pipeline.fit does)."""
    groups, labels, items, x = synthetic()
    folds = assign_folds(groups, 4, 0)
    config = ProbeConfig(alphas=(0.01, 1.0, 100.0))
    runs, subsets = [], {}
    few = {g for f in range(4) for g in sorted({g for g, k in zip(groups, folds) if k == f})[:2]}  # 2 snippets a fold
    for model, keep in (("m", np.ones(len(items), bool)),
                        ("m-random", np.array([int(g[1:]) % 3 != 0 for g in groups])),
                        ("capped", np.array([g in few for g in groups]))):
        layers = {k: (v if model != "m-random" else np.random.default_rng(1).normal(size=v.shape))[keep]
                  for k, v in x.items()}
        result = probe_layers(layers.items(), labels[keep], groups[keep], folds[keep], config)
        runs.append(results_table(result, RunInfo(task, "classification", model, "mean", "ridge"), items[keep]))
        subsets[model] = (set(items[keep]), {i for i, f in zip(items[keep], folds[keep]) if f > 0})
    return runs, subsets, (groups, labels, items)


def test_the_twin_comparison_is_paired_on_the_items_both_read_and_states_n():
    runs, subsets, _ = fitted()
    con = warehouse(runs, [], {"m": "m-random", "capped": "m-random"})
    rows = {m: (n, score) for m, n, score in con.sql("SELECT model, n, score FROM probing_twin_diff").fetchall()}
    both = subsets["m"][1] & subsets["m-random"][1]
    assert rows["m"][0] == len(both) == len(subsets["m-random"][1]) < len(subsets["m"][1])
    assert rows["capped"][0] == len(subsets["capped"][1] & subsets["m-random"][1])
    # each model's own headline is over its own items: m's n is its whole test set, not the twin's
    n = dict(con.sql("SELECT model, n_test FROM probing_headline").fetchall())
    assert n["m"] == len(subsets["m"][1]) and n["m-random"] == len(subsets["m-random"][1]) and n["capped"] == 24


def test_headline_floors_small_cells_chooses_on_fold_0_and_has_every_enabled_task():
    from pipeline.families.probing.report import headline, model_table

    runs, subsets, (groups, labels, items) = fitted()
    depth_rows = [r for r in runs[2].to_pylist()]  # the capped model's rows, as a regression task on few items
    for r in depth_rows:
        r.update(task="java-depth", task_type="regression", metric="mae")
    runs.append(pa.Table.from_pylist(depth_rows, schema=schemas.FIT_RESULTS))
    labels_rows = [("java", "path_type", i, lab, None, g) for i, lab, g in zip(items, labels, groups)]
    labels_rows += [("java", "depth", i, None, 3.0, g) for i, g in zip(items, groups)]
    labels_rows += [("java", "misuse", "x1", "correct", None, "s1")]  # one sample: no model fitted
    record = [{"subset": "java", "model": m, "item_id": i, "kept": i in subsets[m][0], "reason": None}
              for m in subsets for i in items]
    record += [{"subset": "java", "model": "tiny", "item_id": i, "kept": k < 2, "reason": None}
               for k, i in enumerate(items)]  # a model with 2 items: its fit skipped the task
    con = warehouse(runs, labels_rows, {"m": "m-random"}, items=record)
    # at report.min_n = 100 no model's fold 0 (m's: 60 of its 240 samples) is large enough to choose on (issue 49)
    strict = [line for line in headline(con, CONFIG).split("\n") if line.startswith("| path_type (java)")][0]
    assert "no model chosen: fold 0 (the held-out fold the choice reads) holds under 100 samples" in strict
    assert "(largest: 60)" in strict
    text = headline(con, {**CONFIG, "report": {"min_n": 50}})
    table = [line for line in text.split("\n") if line.startswith("| ")][1:]
    assert [line.split(" | ")[0] for line in table] == ["| path_type (java)", "| depth (java)", "| declared (java)",
                                                         "| misuse (java)", "| readability"]
    path_type, depth, declared, misuse = table[:4]
    # m has the most items and the only n over the floor: chosen (m-random is a control, never the headline's)
    assert "| m (ridge, layer 1; fold 0 n = 60) | 180 |" in path_type and "too few items" not in path_type.split(" | ")[5]
    n_pair = len(subsets["m"][1] & subsets["m-random"][1])
    assert f"m-random: " in path_type and f"(n = {n_pair})" in path_type
    assert "no model chosen" in depth  # every model's fold 0 under the floor: none chosen, no score printed
    assert "no samples" in declared and "no model was fitted: 1 labelled samples in 1 snippets" in misuse
    assert "never the lowest of the test scores" in text
    assert "**Power:** at these n the smallest difference in error rate a row can tell from zero runs from" in text
    # the details page: every zoo model's row, its n (floored), the twin's paired n and difference
    rows = {r[1]: r for r in model_table(con, 100) if r[0] == "path_type (java)"}
    assert set(rows) == {"m", "capped", "m-random (random control)", "tiny"}
    assert rows["tiny"][5].startswith("not fitted: features for 2 of the task's 240 labelled samples")
    assert rows["capped"][4] == 24 and rows["capped"][5] == "too few items (n = 24)"
    assert rows["m"][8:10] == ("m-random", n_pair) and rows["m"][10].startswith("-0.")


def test_choose_uses_fold_0_not_the_test_mean_and_prefers_rows_over_the_floor():
    from pipeline.families.probing.report import choose

    rows = [{"model": "a", "probe": "ridge", "control": False, "n_test": 500, "mean": 0.10, "fold0_error": 0.30,
             "fold0_n": 166},
            {"model": "b", "probe": "ridge", "control": False, "n_test": 500, "mean": 0.20, "fold0_error": 0.25,
             "fold0_n": 166},
            {"model": "c", "probe": "ridge", "control": False, "n_test": 12, "mean": 0.00, "fold0_error": 0.00,
             "fold0_n": 12},
            {"model": "b-random", "probe": "ridge", "control": True, "n_test": 500, "mean": 0.0, "fold0_error": 0.0,
             "fold0_n": 166},
            # n over the floor but a fold 0 of 33 (SmolLM2 on path type, issue 49): its fold-0 error is noise
            {"model": "s", "probe": "ridge", "control": False, "n_test": 117, "mean": 0.0, "fold0_error": 0.0,
             "fold0_n": 33}]
    assert choose(rows, 100)["model"] == "b"
    assert choose(rows, 10)["model"] == "c"
    assert choose([rows[3]], 100) is None
    assert choose([rows[4]], 100) is None and choose([rows[4]], 30)["model"] == "s"


def test_headline_view_clips_its_interval_to_the_metrics_range():
    rows = []
    for fold, err in enumerate([0.5, 0.0, 0.9, 0.05]):
        rows.append({"task": "java-x", "task_type": "classification", "model": "m", "pooling": "mean", "probe": "ridge",
                     "layer": 0, "fold": fold, "metric": "error", "error": err, "n_train": 9, "n_test": 3,
                     "alpha": 1.0, "selected": True, "n_dropped": 0, "test_items": None, "test_errors": None})
        rows.append({**rows[-1], "task": "java-depth", "task_type": "regression", "metric": "mae",
                     "error": [1.0, 0.1, 5.0, 0.2][fold]})
    con = warehouse([pa.Table.from_pylist(rows, schema=schemas.FIT_RESULTS)], [], {})
    got = dict((t, (lo, hi)) for t, lo, hi in con.sql("SELECT task, ci_low, ci_high FROM probing_headline").fetchall())
    assert got["java-x"][0] == 0 and got["java-x"][1] == 1
    assert got["java-depth"][0] == 0 and got["java-depth"][1] > 5


def test_headline_view_reads_the_fits_bootstrap_and_models_carry_the_paired_baseline():
    """Issue 49: where the fit wrote the headline columns, probing_headline is its mean over test samples with the
    bootstrap interval (no clipping), and probing_models carries the probe against its own-items baseline."""
    rows = []
    for fold, err in enumerate([0.5, 0.0, 0.9, 0.05]):
        probe = {"task": "java-x", "task_type": "classification", "model": "m", "pooling": "mean", "probe": "ridge",
                 "layer": 0, "fold": fold, "metric": "error", "error": err, "n_train": 9, "n_test": 3, "alpha": 1.0,
                 "selected": True, "n_dropped": 0, "test_items": None, "test_errors": None, "headline_error": 0.3,
                 "headline_lo": 0.1, "headline_hi": 0.6, "baseline_name": "majority", "baseline_score": 0.5,
                 "vs_baseline": -0.2, "vs_baseline_lo": -0.4, "vs_baseline_hi": 0.05, "vs_baseline_p": 0.08}
        rows.append(probe)
        rows.append({**probe, "probe": "majority", "layer": None, "pooling": "-", "error": 0.5, "alpha": None,
                     "headline_error": 0.5, "headline_lo": 0.2, "headline_hi": 0.8, "baseline_name": None,
                     "baseline_score": None, "vs_baseline": None, "vs_baseline_lo": None, "vs_baseline_hi": None,
                     "vs_baseline_p": None})
    con = warehouse([pa.Table.from_pylist(rows, schema=schemas.FIT_RESULTS)], [], {})
    got = {(m, p): r for m, p, *r in con.sql(
        "SELECT model, probe, mean, ci_low, ci_high, n_test, interval FROM probing_headline").fetchall()}
    assert got[("m", "ridge")] == [0.3, 0.1, 0.6, 9, "bootstrap over test samples"]
    assert got[("m", "majority")] == [0.5, 0.2, 0.8, 9, "bootstrap over test samples"]
    (row,) = con.sql("SELECT fold0_n, baseline_name, baseline_score, baseline_ci_low, baseline_ci_high, baseline_n, "
                     "vs_baseline, vs_baseline_lo, vs_baseline_hi, vs_baseline_p FROM probing_models").fetchall()
    assert row == (3, "majority", 0.5, 0.2, 0.8, 9, -0.2, -0.4, 0.05, 0.08)
