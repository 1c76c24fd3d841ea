"""idbench: the release's LV and NW columns reproduced, NAN handling, the comparable pair counts,
the bootstrap helpers, and the family's views on a small warehouse."""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from scipy.stats import spearmanr

from pipeline.families.idbench import generate, schemas, strings
from pipeline.families.idbench.stats import paired_spearman, spearman_ci
from pipeline.io import read_parquet
from tests.conftest import REPO

DATA = (REPO / "../shared/data/idbench").resolve()
needs_data = pytest.mark.skipif(not (DATA / "large_pair_wise.csv").is_file(), reason="no ../shared/data/idbench")


@needs_data
@pytest.mark.parametrize("size", schemas.SIZES)
def test_lv_and_nw_reproduce_the_release_columns(size):
    with (DATA / f"{size}_pair_wise.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == {"small": 220, "medium": 270, "large": 296}[size]
    bad = [(r["id1"], r["id2"], r["LV"], strings.lv(r["id1"], r["id2"]), r["NW"], strings.nw(r["id1"], r["id2"]))
           for r in rows
           if (strings.lv(r["id1"], r["id2"]), strings.nw(r["id1"], r["id2"])) != (float(r["LV"]), float(r["NW"]))]
    assert bad == []


def test_nw_score_matches_the_textbook_dynamic_programme():
    words = ["", "a", "len", "length", "ilen", "ReactEmptyComponent", "renderToStaticMarkup", "minVal", "maxVal", "xx"]
    for a, b in itertools.product(words, repeat=2):
        assert strings.nw_score(a, b) == strings.nw_score_reference(a, b), (a, b)
    assert strings.nw_score("abc", "abc") == 3 and strings.nw_score("abc", "") == -3
    assert strings.nw_score("ab", "cb") == 1  # mismatch 0 + match 1


def test_half_to_even_on_the_exact_fraction():
    # ReactEmptyComponent / renderToStaticMarkup: S = 1, L = 20, (1 + 20) / 40 = 0.525 -> 0.52 (float round: 0.53)
    assert strings.nw("ReactEmptyComponent", "renderToStaticMarkup") == 0.52
    assert strings.lv("abcd", "abce") == 0.75 and strings.lv("", "") == 1.0
    assert strings.lv("ln", "ilen") == 0.5


def test_nan_is_missing_and_bad_numbers_are_errors():
    assert generate.number("NAN", "x") is None and generate.number("0.25", "x") == 0.25
    with pytest.raises(ValueError, match="not a finite number"):
        generate.number("inf", "here")


@needs_data
def test_tables_and_comparable_counts(tmp_path):
    out = {k: tmp_path / f"{k}.parquet" for k in ("pairs", "identifiers", "scores", "interesting")}
    assert generate.main(["--dataset", str(DATA), *[f"--{k}={v}" for k, v in out.items()],
                          "--metrics", str(tmp_path / "m.json")]) == 0
    pairs = read_parquet(out["pairs"], schemas.PAIRS).to_pylist()
    counts = {(s, g): sum(p["size"] == s and p["comparable"] and p[g] is not None for p in pairs)
              for s in schemas.SIZES for g in schemas.GOLDS}
    for g, expected in {"relatedness": (154, 228, 266), "similarity": (154, 228, 266),
                        "contextual_similarity": (100, 130, 160)}.items():
        assert tuple(counts[(s, g)] for s in schemas.SIZES) == expected, g
    small = [p for p in pairs if p["size"] == "small"]
    assert sum(p["similarity"] is None for p in small) == 54  # NAN cells are NULL, not numbers
    ids = read_parquet(out["identifiers"], schemas.IDENTIFIERS)
    assert ids.num_rows == 482
    scores = read_parquet(out["scores"], schemas.SCORES).to_pylist()
    release = {(p["pair_id"], "LV"): p["lv"] for p in pairs} | {(p["pair_id"], "NW"): p["nw"] for p in pairs}
    assert all(release[(s["pair_id"], s["technique"])] == s["score"] for s in scores)
    # deterministic bytes
    again = tmp_path / "again.parquet"
    generate.main(["--dataset", str(DATA), f"--pairs={again}", *[f"--{k}={v}" for k, v in out.items() if k != "pairs"],
                   "--metrics", str(tmp_path / "m.json")])
    assert again.read_bytes() == out["pairs"].read_bytes()


def test_spearman_bootstrap_against_scipy_and_hand_cases():
    rng = np.random.default_rng(0)
    x = rng.normal(size=60)
    y = x + rng.normal(size=60)
    ci = spearman_ci(list(x) + [None], list(y) + [0.3], replicates=300, seed=1)
    assert ci.n == 60 and ci.rho == pytest.approx(spearmanr(x, y).statistic)
    assert ci.lo < ci.rho < ci.hi
    # ties share average ranks: [1, 2, 2, 3] vs [1, 2, 3, 4]
    assert spearman_ci([1, 2, 2, 3], [1, 2, 3, 4], 0).rho == pytest.approx(spearmanr([1, 2, 2, 3], [1, 2, 3, 4]).statistic)
    p = paired_spearman(y, -y, x, replicates=300, seed=1)
    assert p.diff == pytest.approx(2 * spearmanr(x, y).statistic) and p.p_value < 0.01
    assert spearman_ci(x, y, 300, 5, key="k") == spearman_ci(x, y, 300, 5, key="k")


def small_warehouse(tmp_path, models=("toy",), twins=None):
    """The family's views over the release's pairs and random 4-dim vectors per model and layer (0, 1);
    `twins`: model -> twin (the warehouse's model_twins view)."""
    import duckdb

    from pipeline import metrics

    out = {k: tmp_path / f"{k}.parquet" for k in ("pairs", "identifiers", "scores", "interesting")}
    generate.main(["--dataset", str(DATA), *[f"--{k}={v}" for k, v in out.items()], "--metrics", str(tmp_path / "m.json")])
    ids = read_parquet(out["identifiers"], schemas.IDENTIFIERS).to_pylist()
    rng = np.random.default_rng(3)
    preds = [{"item_id": r["identifier_id"], "model": model, "layer": layer, "pooling": "mean",
              "vector": rng.normal(size=4).astype(np.float32).tolist()}
             for model in models for r in ids for layer in (0, 1)]
    con = duckdb.connect()
    con.register("_twins", pa.Table.from_pylist([{"model": m, "twin": t} for m, t in (twins or {}).items()],
                                                pa.schema([("model", pa.string()), ("twin", pa.string())])))
    con.execute("CREATE VIEW model_twins AS SELECT * FROM _twins")
    metrics.install(con)
    for name in ("pairs", "identifiers", "scores", "interesting"):
        con.execute(f"CREATE VIEW idbench_{name} AS SELECT * FROM read_parquet('{out[name]}')")
    con.register("_preds", pa.Table.from_pylist(preds, schemas.PREDICTIONS))
    con.execute("CREATE VIEW idbench_predictions AS SELECT * FROM _preds")
    con.register("_ens", schemas.ENSEMBLE.empty_table())
    con.execute("CREATE VIEW idbench_ensemble AS SELECT * FROM _ens")
    for name, schema in (("embedding_scores", schemas.SCORES), ("embedding_vocab", schemas.EMBEDDING_VOCAB)):
        con.register(f"_{name}", schema.empty_table())
        con.execute(f"CREATE VIEW idbench_{name} AS SELECT * FROM _{name}")
    con.execute("CREATE TABLE run_params AS SELECT 'seed' AS key, '4' AS value")  # the warehouse's params by leaf
    con.execute((REPO / "pipeline/families/idbench/sql/10_views.sql").read_text())
    return con, out


@needs_data
def test_views_on_a_small_warehouse(tmp_path):
    """LV on the comparable small similarity set equals scipy's rho; model cosine and best layer work."""
    con, out = small_warehouse(tmp_path)
    rho, n = con.execute("SELECT rho, n FROM idbench_spearman WHERE system = 'LV' AND size = 'small' "
                     "AND gold = 'similarity' AND pair_set = 'comparable'").fetchone()
    pairs = [p for p in read_parquet(out["pairs"], schemas.PAIRS).to_pylist()
             if p["size"] == "small" and p["comparable"] and p["similarity"] is not None]
    assert n == 154
    assert rho == pytest.approx(spearmanr([p["lv"] for p in pairs], [p["similarity"] for p in pairs]).statistic)
    # the window-function view equals the metric library's list macro on every group
    diff = con.execute("SELECT max(abs(s.rho - m.rho)), count(*), count(m.rho) FROM idbench_spearman s JOIN ("
                       "SELECT system, layer, pooling, size, gold, pair_set, spearman_rho(list(score ORDER BY pair_id), "
                       "list(value ORDER BY pair_id)) AS rho FROM idbench_judged GROUP BY ALL) m "
                       "ON m.system = s.system AND m.layer IS NOT DISTINCT FROM s.layer AND m.pooling IS NOT DISTINCT "
                       "FROM s.pooling AND m.size = s.size AND m.gold = s.gold AND m.pair_set = s.pair_set").fetchone()
    assert diff[0] < 1e-12 and diff[1] == con.execute("SELECT count(*) FROM idbench_spearman").fetchone()[0] > 100
    assert con.execute("SELECT count(DISTINCT layer) FROM idbench_spearman WHERE kind = 'model'").fetchone() == (2,)
    assert con.execute("SELECT count(*) FROM idbench_headline WHERE kind = 'model'").fetchone() == (9,)
    # the layer chosen on held-out pairs (scores.json's model rows) equals stats.cv_layer_spearman (the report's)
    from pipeline.families.idbench.report import _held_out_layers

    class Rows:  # the report's `con.sql(q).fetchall()`, through execute (the fetchone() above left a result open)
        def __init__(self, q):
            self.rows = con.execute(q).fetchall()

        def fetchall(self):
            return self.rows

    class Con:
        sql = staticmethod(Rows)

    py = _held_out_layers(Con(), 0, 4, 5)
    sql = {(m, s, g): (n, rho, tuple(layers)) for m, s, g, n, rho, layers in con.execute(
        "SELECT model, size, gold, n, rho, layers FROM idbench_held_out_layer").fetchall()}
    assert len(sql) == len(py) == 9
    for key, h in py.items():
        assert sql[key][0] == h.n and sql[key][1] == pytest.approx(h.rho, abs=1e-12) and sql[key][2] == h.layers
    # release Path-based misses pairs: coverage below 1 on every rated pair, never silently dropped
    cov = con.execute("SELECT coverage FROM idbench_spearman WHERE system = 'release:Path-based' AND size = 'small' "
                  "AND gold = 'similarity' AND pair_set = 'all_rated'").fetchone()[0]
    assert 0 < cov < 1


def test_subtokens_and_leave_one_out_against_sklearn():
    from sklearn.model_selection import LeaveOneOut, cross_val_predict
    from sklearn.svm import SVR

    from pipeline.families.idbench.ensemble import leave_one_out, subtokens

    assert subtokens("getHTTPResponse_code2") == ["get", "HTTP", "Response", "code", "2"]
    assert subtokens("min_val") == ["min", "val"] and subtokens("i") == ["i"]
    rng = np.random.default_rng(0)
    x = rng.normal(size=(25, 3))
    y = x[:, 0] + 0.1 * rng.normal(size=25)
    ours = leave_one_out(x, y)
    assert np.allclose(ours, cross_val_predict(SVR(), x, y, cv=LeaveOneOut()))
    # by hand: the first prediction comes from a model that never saw the first pair
    assert ours[0] == pytest.approx(SVR().fit(x[1:], y[1:]).predict(x[:1])[0])


def test_layer_chosen_on_held_out_pairs():
    """Issue 23 item 8: the layer is chosen per fold on the other folds' pairs, and the CI reruns the choice."""
    import numpy as np

    from pipeline.families.idbench.stats import cv_layer_spearman

    rng = np.random.default_rng(0)
    y = rng.random(60)
    ids = [f"p{i}" for i in range(60)]
    good = cv_layer_spearman([rng.random(60), y * 2 + 1, rng.random(60)], y, [0, 1, 2], ids, 5, 200, seed=3)
    assert good.layers == (1, 1, 1, 1, 1) and abs(good.rho - 1) < 1e-12 and good.hi <= 1 + 1e-12
    noise = rng.random((20, 60))  # 20 layers of noise: the best on all pairs is optimistic, held-out is not
    oracle = max(spearmanr(layer, y).statistic for layer in noise)
    held = cv_layer_spearman(noise, y, list(range(20)), ids, 5, 200, seed=3)
    assert held.rho < oracle - 0.1 and held.lo < 0 < held.hi
    assert held == cv_layer_spearman(noise, y, list(range(20)), ids, 5, 200, seed=3)  # seeded


@needs_data
def test_twin_diff_pairs_a_model_with_its_twin(tmp_path):
    """idbench_twin_diff: the model's rho minus its twin's on the same pairs (scipy's rho on each), the report's
    paired bootstrap CI brackets the difference and is seeded; a model without a twin gets no row."""
    from pipeline.families.idbench.stats import TWIN_PAIRS_SQL, twin_diff

    con, out = small_warehouse(tmp_path, models=("toy", "toy-random", "lone"), twins={"toy": "toy-random"})
    rows = con.execute("SELECT model, twin, layer, pooling, size, gold, pair_set, n, rho, twin_rho, diff "
                       "FROM idbench_twin_diff").fetchall()
    assert {r[0] for r in rows} == {"toy"} and {r[1] for r in rows} == {"toy-random"}  # `lone` has no twin: no row
    assert len(rows) == 2 * 3 * 3 * 2  # layers x sizes x golds x pair sets
    view = {r[2:7]: r[7:] for r in rows}
    # one group by hand: the cosines and gold of the small similarity comparable pairs, scipy's rho of each
    cos = {(m, layer, p): c for m, layer, p, c in con.execute(
        "SELECT model, layer, pair_id, score FROM idbench_model_cosine").fetchall()}
    pairs = [p for p in read_parquet(out["pairs"], schemas.PAIRS).to_pylist()
             if p["size"] == "small" and p["comparable"] and p["similarity"] is not None]
    a = [cos[("toy", 1, p["pair_id"])] for p in pairs]
    b = [cos[("toy-random", 1, p["pair_id"])] for p in pairs]
    y = [p["similarity"] for p in pairs]
    n, rho, twin_rho, diff = view[(1, "mean", "small", "similarity", "comparable")]
    assert n == 154 and rho == pytest.approx(spearmanr(a, y).statistic, abs=1e-12)
    assert twin_rho == pytest.approx(spearmanr(b, y).statistic, abs=1e-12) and diff == pytest.approx(rho - twin_rho)
    # the report's bootstrap over the view's pairs: same points, CI around the difference, seeded
    got = twin_diff(con.execute(TWIN_PAIRS_SQL, ["comparable"]).fetchall(), replicates=200, seed=7)
    assert len(got) == 2 * 3 * 3
    for t in got:
        vn, vrho, vtwin, vdiff = view[(t.layer, t.pooling, t.size, t.gold, t.pair_set)]
        assert t.model == "toy" and t.paired.n == vn
        assert t.paired.diff == pytest.approx(vdiff, abs=1e-12) and t.paired.rho_a == pytest.approx(vrho, abs=1e-12)
        assert t.paired.lo <= t.paired.diff <= t.paired.hi and 0 <= t.paired.p_value <= 1
    assert got == twin_diff(con.execute(TWIN_PAIRS_SQL, ["comparable"]).fetchall(), replicates=200, seed=7)
    assert got != twin_diff(con.execute(TWIN_PAIRS_SQL, ["comparable"]).fetchall(), replicates=200, seed=8)
    # the report's idbench page: one row per layer, size and gold on the comparable pairs
    from pipeline.families.idbench.report import _twins

    md = "\n".join(_twins(con, 50, 7))
    assert "model vs its random twin, paired" in md.lower() and md.count("| toy | toy-random |") == 2 * 3 * 3
    # a twin that is the model itself differs by exactly 0 (p = 1); a twin that reverses it by 2 rho
    assert twin_diff([("m", "t", 0, "mean", "small", "similarity", "comparable", f"p{i}", v, v, w)
                      for i, (v, w) in enumerate(zip(a, y))], 100, 0)[0].paired.p_value == 1.0
    # a constant side (a first-token cosine of 1 for every pair): no rho, no CI, no crash
    const = twin_diff([("m", "t", 0, "first", "small", "similarity", "comparable", f"p{i}", 1.0, v, w)
                       for i, (v, w) in enumerate(zip(a, y))], 100, 0)[0].paired
    assert const.n == 154 and all(v != v for v in (const.rho_a, const.diff, const.lo, const.hi, const.p_value))
    rev = twin_diff([("m", "t", 0, "mean", "small", "similarity", "comparable", f"p{i}", v, -v, w)
                     for i, (v, w) in enumerate(zip(a, y))], 100, 0)[0].paired
    assert rev.diff == pytest.approx(2 * spearmanr(a, y).statistic)


@needs_data
def test_identifiers_carry_their_language_and_inference_passes_it(tmp_path, monkeypatch):
    """IdBench's identifiers are JavaScript's (the paper, Sec. III.c): the identifier table says so, and the
    inference task hands it to the runtime (a model with language codes reads `</s> __javascript__` after them,
    PLBART base `</s>` alone: tests/test_architectures.py)."""
    from types import SimpleNamespace

    from pipeline.families.idbench import infer

    out = {k: tmp_path / f"{k}.parquet" for k in ("pairs", "identifiers", "scores", "interesting")}
    generate.main(["--dataset", str(DATA), *[f"--{k}={v}" for k, v in out.items()], "--metrics", str(tmp_path / "m.json")])
    ids = read_parquet(out["identifiers"], schemas.IDENTIFIERS)
    assert ids.num_rows == 482 and set(ids.column("language").to_pylist()) == {"javascript"}
    seen = []

    def fake_pooled(loaded, requests, budget, side=None):
        seen.extend(requests)
        return SimpleNamespace(failed={}, table=schemas.PREDICTIONS.empty_table())

    monkeypatch.setattr(infer, "pooled_features", fake_pooled)
    ctx = SimpleNamespace(params={"inference": {"max_items": 0, "poolings": ["mean"]}},
                          inputs={"identifiers": out["identifiers"]}, select=lambda items, n: pa.array([True] * len(items)),
                          loaded=SimpleNamespace(entry=SimpleNamespace(model_family="masked-lm")), token_budget=1024,
                          description="toy")
    infer.predict(ctx)
    assert len(seen) == 482 and {r.language for r in seen} == {"javascript"}


def test_batched_held_out_replicates_equal_the_loop_bit_for_bit():
    """cv_layer_spearman's replicates computed together (training sets grouped by size, ranks from one sort per
    row) equal the per-replicate loop exactly: ties, a constant layer (NaN rho) and uneven folds included."""
    import numpy as np

    from pipeline.families.idbench import stats

    rng = np.random.default_rng(7)
    for trial in range(12):
        layers, n, folds = int(rng.integers(1, 12)), int(rng.integers(15, 90)), int(rng.integers(2, 7))
        scores = rng.random((layers, n)) if trial % 2 else np.round(rng.random((layers, n)), 1)
        if trial % 3 == 0:
            scores[0] = 1.0
        y = np.round(rng.random(n) * 5) / 5
        fold_of = rng.integers(0, folds, n)
        idx = rng.integers(0, n, (50, n))
        loop = [stats._held_out_rho(scores[:, i], y[i], fold_of[i], folds)[0] for i in idx]
        assert np.array_equal(np.asarray(loop), stats._held_out_rho_replicates(scores, y, fold_of, folds, idx),
                              equal_nan=True)


@needs_data
def test_model_cosine_is_float64(tmp_path):
    """idbench_model_cosine is computed at float64 from the stored vectors (a float32 cosine moved SmolLM2's rho by
    up to 0.004 in its deep layers, bench/fidelity/idbench_float64.py): equal to numpy's float64 cosine to 1e-12."""
    import numpy as np

    con, _ = small_warehouse(tmp_path)
    vec = {(m, layer, i): np.asarray(v, dtype=np.float64) for m, layer, i, v in con.execute(
        "SELECT model, layer, item_id, vector FROM idbench_predictions WHERE pooling = 'mean'").fetchall()}
    rows = con.execute("SELECT c.model, c.layer, p.id1_id, p.id2_id, c.score FROM idbench_model_cosine c "
                       "JOIN (SELECT DISTINCT pair_id, id1_id, id2_id FROM idbench_pairs) p USING (pair_id) "
                       "WHERE c.pooling = 'mean' AND c.score IS NOT NULL LIMIT 200").fetchall()
    assert rows
    for m, layer, a, b, score in rows:
        x, y = vec[(m, layer, a)], vec[(m, layer, b)]
        assert score == pytest.approx(float(x @ y / np.linalg.norm(x) / np.linalg.norm(y)), abs=1e-12)
