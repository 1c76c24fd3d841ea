"""Issue 34 items 1-4 (apiquiz, apirec, idbench, codesyntax): the power floor in the headline tables, the
idbench model-vs-twin comparison at each model's own held-out layer (the layer choice redone inside every
resample), the apirec LM-vs-n-gram comparison paired on the same points with the pool's recall ceiling, and
the report's seeded bootstraps. apiquiz's chance column and floor: tests/test_twin_views.py."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.families.apirec.report import headline as apirec_headline
from pipeline.families.apirec.report import rerank_vs_ngram
from pipeline.families.idbench.stats import (_held_out_rho, _rng, cv_layer_spearman, held_out_difference,
                                             held_out_twin_diff, paired_spearman)
from pipeline.report.common import bootstrap_seed, detectable
from tests.test_apirec import point, ranking, views


def test_detectable_and_bootstrap_seed():
    """(score_cell, interval_cell, clip: tests/test_report_floor.py.)"""
    assert detectable(-0.1, 0.3) == pytest.approx(0.2) and detectable(None, 0.3) is None
    # seeded from the run seed and the cell's name: stable, and different per cell and per run seed
    assert bootstrap_seed(7, "a") == bootstrap_seed(7, "a")
    assert len({bootstrap_seed(7, "a"), bootstrap_seed(7, "b"), bootstrap_seed(8, "a")}) == 3


# --- idbench: each model at its own held-out layer, the choice redone inside every resample ---------------

def _synthetic(n: int = 120, seed: int = 3):
    """A model whose two layers are about equally good (so the held-out choice varies between resamples) and a
    twin whose layer 2 is the best of its three (never the model's best layer)."""
    rng = np.random.default_rng(seed)
    y = rng.normal(size=n)
    model = np.stack([y + rng.normal(scale=1.0, size=n), y + rng.normal(scale=1.0, size=n)])
    twin = np.stack([rng.normal(size=n), rng.normal(size=n), y + rng.normal(scale=2.5, size=n)])
    return model, twin, y, [f"p{i:03d}" for i in range(n)]


def test_idbench_twin_diff_rechooses_each_models_layer_inside_every_resample():
    model, twin, y, ids = _synthetic()
    folds, replicates, seed = 5, 200, 11
    got = held_out_twin_diff(model, twin, y, [0, 1], [0, 1, 2], ids, folds, replicates, seed, key="m/t/large/rel")
    # the point estimate: each side's own held-out rho (the same folds and choice as cv_layer_spearman)
    own_a = cv_layer_spearman(model, y, [0, 1], ids, folds, 0, seed)
    own_b = cv_layer_spearman(twin, y, [0, 1, 2], ids, folds, 0, seed)
    assert (got.rho_a, got.rho_b) == (own_a.rho, own_b.rho) and got.diff == own_a.rho - own_b.rho
    assert got.layers_a == own_a.layers and set(got.layers_b) == {2}  # the twin at its own layer, not the model's
    # the interval, by a plain loop: the same resamples, both layer choices rerun on each (folds kept per pair)
    from pipeline.core.ids import stable_id

    fold_of = np.array([int(stable_id("idbench-fold", seed, p), 16) % folds for p in ids])
    rng = _rng(seed, "held-out-layer", "m/t/large/rel")
    diffs, chosen = [], set()
    for _ in range(replicates):
        i = rng.integers(0, len(y), size=len(y))
        ra, layers = _held_out_rho(model[:, i], y[i], fold_of[i], folds)
        rb, _ = _held_out_rho(twin[:, i], y[i], fold_of[i], folds)
        diffs.append(ra - rb)
        chosen.add(tuple(layers))
    lo, hi = np.quantile(diffs, [0.025, 0.975])
    assert (got.lo, got.hi) == pytest.approx((lo, hi), abs=1e-12)
    assert len(chosen) > 1  # the model's layer choice does change between resamples: it is redone, not fixed
    assert got.lo < got.diff < got.hi and 0 <= got.p_value <= 1
    # not the same-layer comparison (both at the model's layer 0), which puts the twin at a layer it never chose
    same_layer = paired_spearman(model[0], twin[0], y, replicates, seed, key="x")
    assert same_layer.diff != pytest.approx(got.diff)


def test_idbench_twin_diff_from_the_two_held_out_rows_equals_the_direct_one():
    """The report reads the difference off the two held-out rows when both were drawn with the cell's key on the
    same pairs (each row's replicates already rerun its own layer choice): the same numbers, no second pass."""
    model, twin, y, ids = _synthetic()
    a = cv_layer_spearman(model, y, [0, 1], ids, 5, 200, 11, key="large/relatedness")
    b = cv_layer_spearman(twin, y, [0, 1, 2], ids, 5, 200, 11, key="large/relatedness")
    direct = held_out_twin_diff(model, twin, y, [0, 1], [0, 1, 2], ids, 5, 200, 11, key="large/relatedness")
    assert held_out_difference(a, b) == direct
    # drawn on other pairs (or with another key): no shortcut, the report recomputes
    c = cv_layer_spearman(twin[:, 1:], y[1:], [0, 1, 2], ids[1:], 5, 200, 11, key="large/relatedness")
    assert held_out_difference(a, c) is None


def test_idbench_twin_diff_is_seeded_by_the_cell():
    model, twin, y, ids = _synthetic()
    a = held_out_twin_diff(model, twin, y, [0, 1], [0, 1, 2], ids, 5, 50, 1, key="cell-a")
    assert a == held_out_twin_diff(model, twin, y, [0, 1], [0, 1, 2], ids, 5, 50, 1, key="cell-a")
    assert (a.lo, a.hi) != (held_out_twin_diff(model, twin, y, [0, 1], [0, 1, 2], ids, 5, 50, 1, key="cell-b").lo,
                            held_out_twin_diff(model, twin, y, [0, 1], [0, 1, 2], ids, 5, 50, 1, key="cell-b").hi)


# --- apirec: each LM paired with the n-gram it re-ranks, on the LM's own points ---------------------------

def _apirec(n_points: int = 8, lm_points: int = 4):
    """n_points Python points; the n-gram ranks every one (gold first on the even points); its stored top-2 pool
    holds the gold on all but the last point; the LM `m` re-ranks its first `lm_points` points (gold first on
    every pool that holds it), its twin ranks the gold second."""
    pts, rks, preds = [], [], []
    for i in range(n_points):
        gold, other = "os.path.join", f"json.f{i}"
        p = dict(point(f"p{i}", gold), path="pkg/a.py",
                 candidates=[other, gold] if i < n_points - 1 else [other, "x.y"])
        pts.append(p)
        rks.append(ranking(p["point_id"], [gold, other] if i % 2 == 0 else [other, gold], gold))
        if i < lm_points:
            in_pool = gold in p["candidates"]
            for model, top in (("m", [gold, other]), ("m-random", [other, gold])):
                preds.append(dict(ranking(p["point_id"], top if in_pool else [other], gold), model=model,
                                  ranker="rerank_ngram", n_candidates=2, gold_in_candidates=in_pool))
    return views(pts, rks, predictions=preds, twins={"m": "m-random"})


def test_apirec_lm_is_paired_with_the_ngram_on_its_own_points():
    con = _apirec()
    (m, twin) = sorted(rerank_vs_ngram(con, {"seed": 5}), key=lambda r: r["model"])
    assert (m["model"], m["n"]) == ("m", 4)  # the LM's 4 points, not the n-gram's 8
    # on those 4 points: the n-gram ranks the gold first on p0 and p2 (0.5), the LM on all 4 (1.0)
    assert (m["sr"], m["ngram_sr"], m["diff"]) == (1.0, 0.5, 0.5)
    assert m["pool_recall"] == 1.0 and twin["sr"] == 0.0 and twin["ngram_sr"] == 0.5
    assert m["lo"] <= m["diff"] <= m["hi"]
    # the same numbers from the pairs themselves: the n-gram's SR@1 over exactly the LM's points
    assert con.sql("SELECT avg(sr_method) FROM apirec_point_scores WHERE ranker = 'ngram' AND k = 1 AND point_id IN "
                   "(SELECT point_id FROM apirec_point_scores WHERE model = 'm' AND k = 1)").fetchall() == [(0.5,)]
    # every point's pool recall (the ceiling on all points): 7 of 8 golds in the stored top-2
    assert con.sql("SELECT points, pool_recall, pool_size, chance_at_1 FROM apirec_pool_recall "
                   "WHERE language = 'python'").fetchall() == [(8, 0.875, 2, 0.4375)]
    # seeded from the run seed and the row (bootstrap_seed): the same CI twice
    assert rerank_vs_ngram(con, {"seed": 5})[0] == m


def test_apirec_headline_states_each_rows_population_and_floors_small_rows():
    con = _apirec()
    text = apirec_headline(con, {"seed": 5, "report": {"min_n": 5}})
    rows = {line.split(" | ")[0]: line for line in text.splitlines() if line.startswith("| ")}
    assert rows["| ours: ngram/ngram"].startswith("| ours: ngram/ngram | all 8 Python points | 8 | 0.50 [")
    lm = rows["| ours: m/rerank_ngram"]
    assert lm.startswith("| ours: m/rerank_ngram | its 4 seeded points | 4 | too few items (n = 4) |")
    assert "1.00" not in lm
    assert rows["| ceiling: gold in the n-gram's top-2 pool (no re-ranker of it exceeds this)"].startswith(
        "| ceiling: gold in the n-gram's top-2 pool (no re-ranker of it exceeds this) | all 8 Python points | 8 | "
        "0.88 |")
    paired = rows["| m/rerank_ngram"]
    assert paired.startswith("| m/rerank_ngram | its 4 seeded points | 4 | too few items (n = 4) | "
                             "too few items (n = 4) |")
    assert "±" in paired  # the smallest difference these points detect, whatever the floor
    # with the floor under n, the paired row prints both SR@1 on the same points and the difference
    text = apirec_headline(con, {"seed": 5, "report": {"min_n": 4}})
    paired = next(line for line in text.splitlines() if line.startswith("| m/rerank_ngram |"))
    assert paired.startswith("| m/rerank_ngram | its 4 seeded points | 4 | 1.00 | 1.00 | 0.50 | +0.50 [")


def test_idbench_headline_floors_cells_under_min_n():
    """A technique's, a model's and a model-minus-twin cell over fewer pairs than report.min_n print their n."""
    import duckdb

    from pipeline.families.idbench.report import headline
    from pipeline.families.idbench.stats import HeldOutLayerRho, HeldOutTwinDiff

    con = duckdb.connect()
    con.execute("CREATE TABLE idbench_spearman AS SELECT * FROM (VALUES "
                "('LV', 'relatedness', 'large', 'comparable', 'string', 120, 0.48), "
                "('NW', 'relatedness', 'large', 'comparable', 'string', 80, 0.46)) "
                "t(system, gold, size, pair_set, kind, n, rho)")
    con.execute("CREATE TABLE idbench_embedding_models AS SELECT 1 AS files WHERE false")
    held = {("m", "large", "relatedness"): HeldOutLayerRho(90, 0.7, 0.6, 0.8, (1, 1, 1, 1, 1)),
            ("m-random", "large", "relatedness"): HeldOutLayerRho(90, 0.3, 0.2, 0.4, (0, 0, 0, 0, 0))}
    twins = {("m", "m-random", "large", "relatedness"): HeldOutTwinDiff(90, 0.7, 0.3, 0.4, 0.3, 0.5, 0.0, (1,) * 5,
                                                                          (0,) * 5)}
    text = headline(con, {}, held, 0, 0, twins, floor=100)
    rows = {line.split(" | ")[0]: line for line in text.splitlines() if line.startswith("| ")}
    assert "| 0.48 | 120 |" in rows["| LV"] and "too few items (n = 80)" in rows["| NW"]
    assert "too few items (n = 90)" in rows["| ours: m (held-out layer)"] and "0.70" not in rows[
        "| ours: m (held-out layer)"]
    assert "too few items (n = 90)" in rows["| ours: m - m-random (each at its own held-out layer)"]
    assert "+0.400" not in text
    text = headline(con, {}, held, 0, 0, twins, floor=90)  # at the floor: printed
    assert "+0.400" in text and "| 0.70 | 90 |" in text
