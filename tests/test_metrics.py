"""The shared metric library: hand-computed cases, SQL macro == Python twin == reference
(pytrec_eval, scipy), and the bootstrap (determinism, SQL Poisson == Python Poisson exactly, the
histogram Poisson bootstrap == the item-level one and scipy's resampling within Monte-Carlo error)."""

from __future__ import annotations

import dataclasses
import math
import random
from decimal import Decimal, getcontext

import duckdb
import numpy as np
import pytest
import pytrec_eval
import scipy.stats

from pipeline import metrics as M

KS = (1, 3, 5, 10)


@pytest.fixture(scope="module")
def con():
    c = duckdb.connect()
    M.install(c)
    M.install(c)  # idempotent
    yield c
    c.close()


def one(con, sql, params=None):
    return con.execute(sql, params or []).fetchone()


# --------------------------------------------------------------------------------- hand cases

def test_single_gold_hand_cases(con):
    ranks = [1, 3, None, 6, 10]
    # success@5: 1, 1, 0, 0, 0 -> 0.4; MRR@5: 1 + 1/3 -> 0.2667; MRR (no cutoff): 1 + 1/3 + 1/6 + 1/10
    assert M.success_at_k(ranks, 5).tolist() == [1, 1, 0, 0, 0]
    assert M.success_at_k(ranks, None).tolist() == [1, 1, 0, 1, 1]
    assert M.reciprocal_rank(ranks, 5).tolist() == pytest.approx([1, 1 / 3, 0, 0, 0])
    assert M.reciprocal_rank(ranks).mean() == pytest.approx((1 + 1 / 3 + 1 / 6 + 1 / 10) / 5)
    con.execute("CREATE OR REPLACE TEMP TABLE r AS SELECT unnest([1, 3, NULL, 6, 10]::INTEGER[]) AS gold_rank")
    assert one(con, "SELECT avg(success_at_k(gold_rank, 5)), avg(success_at_k(gold_rank, NULL)), "
                    "avg(success_at_k(gold_rank, 1)) FROM r") == (0.4, 0.8, 0.2)
    mrr5, mrr = one(con, "SELECT avg(reciprocal_rank(gold_rank, 5)), avg(reciprocal_rank(gold_rank)) FROM r")
    assert mrr5 == pytest.approx(4 / 15) and mrr == pytest.approx((1 + 1 / 3 + 1 / 6 + 1 / 10) / 5)
    assert one(con, "SELECT first_rank([0, 1, 2]), first_rank([0, 1, 2], 2), first_rank([0, 0]), first_rank(NULL)") \
        == (2, 3, None, None)
    cases = (([0, 1, 2], 1), ([0, 1, 2], 2), ([0, 0], 1), (None, 1))
    assert [M.first_rank(r, g) for r, g in cases] == [2, 3, None, None]


def test_map_two_denominators(con):
    # 2 hits in the top 5 (ranks 2 and 4) of 3 relevant items: sum of precision@hit = 1/2 + 2/4 = 1.0
    rels = [0, 1, 0, 1, 0, 1]
    assert one(con, "SELECT ap_at_k_standard(?, 5, 3), ap_at_k_apibench(?, 5)", [rels, rels]) \
        == pytest.approx((1.0 / 3, 1.0 / 2))
    assert M.ap_at_k_standard([rels], 5, [3])[0] == pytest.approx(1 / 3)
    assert M.ap_at_k_apibench([rels], 5)[0] == pytest.approx(1 / 2)
    # cutoff 1: no hit -> 0 for both; no cutoff: (1/2 + 2/4 + 3/6) / 3 = 0.5 for both
    assert one(con, "SELECT ap_at_k_standard(?, 1, 3), ap_at_k_apibench(?, 1), ap_at_k_standard(?, NULL, 3), "
                    "ap_at_k_apibench(?, NULL)", [rels] * 4) == pytest.approx((0, 0, 0.5, 0.5))
    # method level (grade >= 2): [1, 2, 0, 2] -> hits at 2 and 4: (1/2 + 2/4); 2 exact APIs exist.
    # class level (grade >= 1): hits at 1, 2, 4: (1 + 1 + 3/4) / 3
    g = [1, 2, 0, 2]
    assert one(con, "SELECT ap_at_k_standard(?, 5, 2, min_grade := 2), ap_at_k_apibench(?, 5, min_grade := 2), "
                    "ap_at_k_apibench(?, 5)", [g, g, g]) == pytest.approx((0.5, 0.5, (1 + 1 + 3 / 4) / 3))
    assert M.ap_at_k_apibench([g], 5, min_grade=2)[0] == pytest.approx(0.5)
    # nothing returned / nothing relevant
    assert one(con, "SELECT ap_at_k_standard(NULL, 5, 3), ap_at_k_standard([1], 5, 0), ap_at_k_apibench([], 5)") \
        == (0, 0, 0)
    assert M.ap_at_k_standard([None, [1]], 5, [3, 0]).tolist() == [0, 0]


def test_ndcg_class_only_hit(con):
    # top-1 is the right class only (grade 1), the exact API (grade 2) is never returned.
    rels, ideal = [1, 0, 0], [2, 1]
    # APIBench: IDCG from the returned list itself = 1 -> 1.0
    assert one(con, "SELECT ndcg_at_k_apibench(?, 3)", [rels])[0] == 1.0
    assert M.ndcg_at_k_apibench([rels], 3)[0] == 1.0
    # standard: DCG = 1, IDCG = 2/log2(2) + 1/log2(3) = 2.6309..., NDCG = 0.38009...
    expected = 1 / (2 + 1 / math.log2(3))
    assert expected == pytest.approx(0.3800937667)
    assert one(con, "SELECT ndcg_at_k_standard(?, 3, ?)", [rels, ideal])[0] == pytest.approx(expected, abs=1e-12)
    assert M.ndcg_at_k_standard([rels], 3, [ideal])[0] == pytest.approx(expected, abs=1e-12)
    # k = 1: standard 1/2, APIBench 1
    assert one(con, "SELECT ndcg_at_k_standard(?, 1, ?), ndcg_at_k_apibench(?, 1)", [rels, ideal, rels]) == (0.5, 1.0)
    # a badly ordered list: [0, 2, 1] k=3: DCG = 2/log2(3) + 1/2; APIBench IDCG = 2 + 1/log2(3)
    dcg = 2 / math.log2(3) + 0.5
    assert one(con, "SELECT ndcg_at_k_apibench([0, 2, 1], 3)")[0] == pytest.approx(dcg / (2 + 1 / math.log2(3)))
    # the whole list vs its top k: the exact API below k lowers APIBench's NDCG@1 (Table 6's pattern), not the top-k one's
    assert one(con, "SELECT ndcg_at_k_apibench([1, 0, 2], 1), ndcg_at_k_apibench_topk([1, 0, 2], 1)") == (0.5, 1.0)
    assert M.ndcg_at_k_apibench([[1, 0, 2]], 1)[0] == 0.5 and M.ndcg_at_k_apibench_topk([[1, 0, 2]], 1)[0] == 1.0
    # method level (binary grades, one gold): NDCG@1 = SR@1 whenever the gold is returned at all (Table 7)
    assert one(con, "SELECT ndcg_at_k_apibench([0, 1], 1), ndcg_at_k_apibench([1, 0], 1)") == (0, 1)
    # no gain anywhere -> 0; ideal NULL -> NULL
    assert one(con, "SELECT ndcg_at_k_apibench([0, 0], 3), ndcg_at_k_standard([0], 3, []), "
                    "ndcg_at_k_standard([1], 3, NULL)") == (0, 0, None)
    assert np.isnan(M.ndcg_at_k_standard([[1]], 3, [None])[0])


def test_error_rate_and_mae(con):
    pred, gold = ["a", "b", None, "c"], ["a", "c", "x", "c"]
    assert M.error_rate(pred, gold) == 0.5
    assert one(con, "SELECT avg(is_error(p, g)) FROM (SELECT unnest(?::VARCHAR[]) p, unnest(?::VARCHAR[]) g)",
               [pred, gold])[0] == 0.5
    p, g = [1.0, 2.5, None, 4.0], [2.0, 2.0, 3.0, 4.0]
    assert M.mae(p, g) == pytest.approx(0.5)  # (1 + 0.5 + 0) / 3
    assert one(con, "SELECT avg(abs_error(p, g)) FROM (SELECT unnest(?::DOUBLE[]) p, unnest(?::DOUBLE[]) g)",
               [p, g])[0] == pytest.approx(0.5)


def test_spearman_hand_case(con):
    # ties in x: ranks of [1, 2, 2, 3] are [1, 2.5, 2.5, 4]; the pair with None is dropped
    x, y = [1, 2, 2, 3, None], [10, 20, 30, 40, 50]
    r = M.spearman(x, y)
    assert (r.n, r.excluded) == (4, 1)
    assert r.rho == pytest.approx(0.9486832980505138)  # = 3 / sqrt(10)
    assert one(con, "SELECT spearman_rho(?, ?), spearman_n(?, ?)", [x, y, x, y]) == (pytest.approx(3 / 10 ** 0.5), 4)
    assert one(con, "SELECT avg_ranks([3.0, 1, 3, 2])")[0] == [3.5, 1.0, 3.5, 2.0]
    assert M.avg_ranks(np.array([3.0, 1, 3, 2])).tolist() == [3.5, 1.0, 3.5, 2.0]
    # constant side or fewer than 2 pairs -> NULL / NaN
    assert one(con, "SELECT spearman_rho([1, 1, 1], [1, 2, 3]), spearman_rho([1], [2])") == (None, None)
    assert math.isnan(M.spearman_rho([1, 1, 1], [1, 2, 3]))


# --------------------------------------------------------------------------------- vs pytrec_eval

def _random_queries(n=200, seed=7):
    rnd = random.Random(seed)
    qrels, runs, rows = {}, {}, []
    for q in range(n):
        docs = [f"d{i}" for i in range(rnd.randint(3, 25))]
        qrel = {d: rnd.choices([0, 1, 2], weights=[6, 2, 1])[0] for d in docs if rnd.random() < 0.7}
        if not qrel:
            qrel = {docs[0]: 0}
        ret = rnd.sample(docs, rnd.randint(0, len(docs)))
        qid = f"q{q}"
        qrels[qid] = qrel
        runs[qid] = {d: float(len(ret) - i) for i, d in enumerate(ret)}
        rows.append((qid, [qrel.get(d, 0) for d in ret], list(qrel.values())))
    return qrels, runs, rows


@pytest.mark.parametrize("level", [1, 2])
def test_standard_variants_equal_pytrec_eval(con, level):
    qrels, runs, rows = _random_queries()
    cut = ",".join(map(str, KS))
    ev = pytrec_eval.RelevanceEvaluator(qrels, {f"map_cut.{cut}", f"ndcg_cut.{cut}", f"success.{cut}", "recip_rank"},
                                        relevance_level=level)
    ref = ev.evaluate({q: r for q, r in runs.items() if r})
    con.execute("CREATE OR REPLACE TEMP TABLE q (qid VARCHAR, rels INTEGER[], ideal INTEGER[])")
    con.executemany("INSERT INTO q VALUES (?, ?, ?)", rows)
    rels = [r for _, r, _ in rows]
    ideal = [i for _, _, i in rows]
    n_rel = [sum(g >= level for g in i) for i in ideal]
    checked = 0
    for k in KS:
        sql = dict((qid, vals) for qid, *vals in con.execute(
            "SELECT qid, ap_at_k_standard(rels, $k, len(list_filter(ideal, lambda g: g >= $lvl)), min_grade := $lvl), "
            "ndcg_at_k_standard(rels, $k, ideal), success_at_k(first_rank(rels, $lvl), $k), "
            "reciprocal_rank(first_rank(rels, $lvl)) FROM q", {"k": k, "lvl": level}).fetchall())
        py = zip(M.ap_at_k_standard(rels, k, n_rel, min_grade=level), M.ndcg_at_k_standard(rels, k, ideal),
                 M.success_at_k([M.first_rank(r, level) for r in rels], k),
                 M.reciprocal_rank([M.first_rank(r, level) for r in rels]), strict=True)
        for (qid, _, _), p in zip(rows, py, strict=True):
            t = ref.get(qid)
            # a query with an empty run is left out by trec_eval: every measure is 0
            want = (0.0, 0.0, 0.0, 0.0) if t is None else (
                t[f"map_cut_{k}"], t[f"ndcg_cut_{k}"], t[f"success_{k}"], t["recip_rank"])
            assert sql[qid] == pytest.approx(want, abs=1e-9), (qid, k)
            assert list(p) == pytest.approx(want, abs=1e-9), (qid, k)
            checked += 1
    assert checked == 4 * 200


def test_apibench_variants_sql_equals_python(con):
    _, _, rows = _random_queries(seed=11)
    con.execute("CREATE OR REPLACE TEMP TABLE q (qid VARCHAR, rels INTEGER[], ideal INTEGER[])")
    con.executemany("INSERT INTO q VALUES (?, ?, ?)", rows)
    rels = [r for _, r, _ in rows]
    for k in (*KS, None):
        for lvl in (1, 2):
            sql = con.execute("SELECT ap_at_k_apibench(rels, $k, min_grade := $l), ndcg_at_k_apibench(rels, $k), "
                              "ndcg_at_k_apibench_topk(rels, $k) FROM q ORDER BY rowid", {"k": k, "l": lvl}).fetchall()
            ap, nd = M.ap_at_k_apibench(rels, k, min_grade=lvl), M.ndcg_at_k_apibench(rels, k)
            nd_top = M.ndcg_at_k_apibench_topk(rels, k)
            assert [s[0] for s in sql] == pytest.approx(ap.tolist(), abs=1e-12)
            assert [s[1] for s in sql] == pytest.approx(nd.tolist(), abs=1e-12)
            assert [s[2] for s in sql] == pytest.approx(nd_top.tolist(), abs=1e-12)
            assert ((0 <= ap) & (ap <= 1)).all() and ((0 <= nd) & (nd <= nd_top + 1e-12)).all()


# --------------------------------------------------------------------------------- whole runs (numpy)

def _random_run(n=300, seed=5, long=True):
    """TREC-style dicts: grades -1..3, ties (integer scores in every other query), documents in random order,
    empty runs, a query without judgements (left out) and one long query (the lexsort path)."""
    rnd = random.Random(seed)
    qrels, run = {}, {}
    for q in range(n):
        docs = [f"d{i}" for i in range(rnd.randint(1, 400 if long and not q else 40))]
        qrels[f"q{q}"] = {d: rnd.choice((-1, 0, 0, 1, 2, 3)) for d in docs if rnd.random() < 0.6} or {docs[0]: 0}
        ret = rnd.sample(docs, rnd.randint(0, len(docs)))
        run[f"q{q}"] = {d: float(rnd.randint(0, 5)) if q % 2 else rnd.random() for d in ret}
    run["unjudged"] = {"d0": 1.0}
    return qrels, run


TREC_NAMES = {"rr": "recip_rank", **{f"{m}@{k}": f"{t}_{k}" for k in (1, 3, 5, 10, 20)
                                     for m, t in (("success", "success"), ("ap", "map_cut"), ("ndcg", "ndcg_cut"))}}


@pytest.mark.parametrize("level, long", [(1, True), (2, True), (1, False)])
def test_evaluate_run_equals_pytrec_eval_exactly(level, long):
    qrels, run = _random_run(long=long)  # long: one query of up to 400 documents (lexsorts, not padded rows)
    ks = (1, 3, 5, 10, 20)
    got = M.evaluate_run(qrels, run, ks, min_grade=level)
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"success.1,3,5,10,20", "recip_rank", "map_cut.1,3,5,10,20",
                                                "ndcg_cut.1,3,5,10,20"}, relevance_level=level)
    ref = ev.evaluate(run)
    assert got.qids == sorted(ref) and "unjudged" not in got.qids
    assert list(got.values) == [f"success@{k}" for k in ks] + ["rr"] + [f"ap@{k}" for k in ks] \
        + [f"ndcg@{k}" for k in ks]
    for name, values in got.values.items():  # the same arithmetic in the same order: equal, not close
        assert values.tolist() == [ref[q][TREC_NAMES[name]] for q in got.qids], name
    # the same run with every query's documents in rank order (nothing re-sorted) or reversed
    ordered = {q: dict(sorted(r.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)) for q, r in run.items()}
    for other in (ordered, {q: dict(reversed(r.items())) for q, r in ordered.items()}):
        again = M.evaluate_run(qrels, other, ks, min_grade=level)
        assert all(np.array_equal(again.values[m], got.values[m]) for m in got.values)


def test_evaluate_run_equals_the_macros_and_twins(con):
    qrels, run = _random_run(seed=9)
    runs = M.read_run(qrels, run)
    got = M.measure(runs, KS, measures=("success", "rr", "ap", "ap_apibench", "ndcg"))
    con.execute("CREATE OR REPLACE TEMP TABLE wr (i INTEGER, rels INTEGER[], ideal INTEGER[])")
    con.executemany("INSERT INTO wr VALUES (?, ?, ?)", list(zip(range(len(runs.qids)), runs.rels(), runs.judged())))
    cols = [f"success_at_k(first_rank(rels), {k})" for k in KS] + ["reciprocal_rank(first_rank(rels))"]
    cols += [f"ap_at_k_standard(rels, {k}, len(list_filter(ideal, lambda g: g >= 1)))" for k in KS]
    cols += [f"ap_at_k_apibench(rels, {k})" for k in KS] + [f"ndcg_at_k_standard(rels, {k}, ideal)" for k in KS]
    sql = np.array(con.execute(f"SELECT {', '.join(cols)} FROM wr ORDER BY i").fetchall(), dtype=np.float64)
    assert np.array_equal(sql, np.column_stack(list(got.values.values())))  # bit for bit
    rels, ideal = runs.rels(), runs.judged()
    for k in KS:  # the twins sum with fsum: within a rounding
        assert np.allclose(M.ndcg_at_k_standard(rels, k, ideal), got.values[f"ndcg@{k}"], rtol=0, atol=1e-12)
        assert np.allclose(M.ap_at_k_apibench(rels, k), got.values[f"ap_apibench@{k}"], rtol=0, atol=1e-12)
    # from graded lists directly (what the warehouse holds): the same numbers
    again = M.measure(M.GradedRuns.from_lists(rels, ideal), KS, measures=("ap", "ndcg"))
    assert all(np.array_equal(again.values[m], got.values[m]) for m in again.values)


def test_rank_order_padded_rows_equal_lexsort():
    from pipeline.metrics.runs import _by_query_descending

    rng = np.random.default_rng(4)
    lens = rng.integers(1, 30, 500)
    qidx = np.repeat(np.arange(500), lens)
    scores = rng.integers(0, 6, len(qidx)).astype(float)  # many ties: both must keep the input order there
    scores[::7] = -np.inf
    want = np.lexsort((-scores, qidx))
    assert np.array_equal(_by_query_descending(scores, qidx), want)  # padded rows (short queries)
    long = np.concatenate([qidx, np.full(2000, 500)])
    more = np.concatenate([scores, rng.random(2000)])
    assert np.array_equal(_by_query_descending(more, long), np.lexsort((-more, long)))  # one long query: lexsort


def test_read_run_graded_lists_are_trec_evals_order_with_ties():
    """read_run sorts without stability and puts only mixed-grade blocks of equal scores in document-id order:
    every graded list is still the one of trec_eval's full order (score descending, document id descending)."""
    from pipeline.metrics.runs import _by_query_descending

    for seed in (1, 2):
        qrels, run = _random_run(seed=seed)
        got = M.read_run(qrels, run)
        want = [[qrels[q].get(d, 0) for d, _ in sorted(run[q].items(), key=lambda kv: (-kv[1], _desc(kv[0])))]
                for q in got.qids]
        assert got.rels() == want
    rng = np.random.default_rng(7)
    qidx = np.repeat(np.arange(300), rng.integers(1, 30, 300))
    scores = rng.integers(0, 4, len(qidx)).astype(float)
    perm = _by_query_descending(scores, qidx, stable=False)
    assert sorted(perm.tolist()) == list(range(len(qidx)))
    assert np.array_equal(qidx[perm], np.sort(qidx)) and np.array_equal(scores[perm], scores[np.lexsort((-scores, qidx))])


@pytest.mark.parametrize("pairs_per_id", [0, 10**9])  # every block by one sort of its ids / by pairs
def test_tie_blocks_by_pairs_and_by_sort_are_trec_evals_order(monkeypatch, pairs_per_id):
    """Blocks of equal scores holding two grades are put in document-id order, descending, either by one
    comparison per pair of a block (short blocks) or by one sort of every id (long ones): both are trec_eval's
    full order, on short tied runs and on long coarse ones (blocks of hundreds), with non-ASCII ids."""
    from bench.peers.metrics import make_queries

    from pipeline.metrics import runs as R

    monkeypatch.setattr(R, "_PAIRS_PER_ID", pairs_per_id)
    short = make_queries(500, 20, seed=9, shuffle=True, ties=0.5)
    long = _long_tied_run(seed=4, queries=6)
    accents = ({f"q{i}": {f"d\u00e9{j}" if j % 3 else f"dz{j}": j % 3 for j in range(30)} for i in range(20)},
               {f"q{i}": {f"d\u00e9{j}" if j % 3 else f"dz{j}": float(j % 2) for j in range(30)} for i in range(20)})
    for qrels, run in (short, long, accents, _random_run(seed=3)):
        got = R.read_run(qrels, run)
        full = {q: sorted(run[q].items(), key=lambda kv: (-kv[1], _desc(kv[0]))) for q in got.qids}
        assert got.rels() == [[qrels[q].get(d, 0) for d, _ in full[q]] for q in got.qids]


@pytest.mark.parametrize("counting_max", [0, 64])  # by a lexsort / by counting
def test_positive_descending_is_each_querys_positive_grades_sorted(monkeypatch, counting_max):
    from pipeline.metrics import runs as R

    monkeypatch.setattr(R, "_COUNTING_MAX", counting_max)
    qrels, run = _random_run(seed=11)
    runs = R.read_run(qrels, run)
    off, flat = runs.positive_descending()
    want = [sorted((g for g in j if g > 0), reverse=True) for j in runs.judged()]
    assert R._lists(off, flat) == want
    empty = R.GradedRuns.from_lists([[1], []], [[0, -1], []])
    assert R._lists(*empty.positive_descending()) == [[], []]
    table = runs.arrow()
    assert table.column_names == ["rels", "ideal", "gains"] and table.column("gains").to_pylist() == want


def _desc(doc: str) -> list[int]:
    """A sort key ordering document ids descending (trec_eval breaks equal scores by docno, descending)."""
    return [-ord(c) for c in doc] + [1]


def _trec(qrels, run, ks=(1, 5, 10), level=1) -> dict:
    cut = ",".join(map(str, ks))
    return pytrec_eval.RelevanceEvaluator(qrels, {f"success.{cut}", "recip_rank", f"map_cut.{cut}", f"ndcg_cut.{cut}"},
                                          relevance_level=level).evaluate(run)


def _long_tied_run(seed=3, queries=12, universe=3000):
    """The shape of the build's BM25 run: FQN-like document ids from one universe, up to 1,000 documents per
    query in universe order (unsorted), scores at 4 decimals and coarse (long blocks of equal scores), a class
    of graded documents per query (1, the answer 2)."""
    rnd = random.Random(seed)
    docs = [f"pkg{i % 7}.mod{i % 50}.f{i}" for i in range(universe)]
    qrels, run = {}, {}
    for q in range(queries):
        picked = sorted(rnd.sample(range(universe), rnd.randint(1, 1000)))
        run[f"q{q}"] = {docs[i]: round(rnd.choice((0.5, 1.25, 2.0, 3.1416, rnd.random() * 5)), 4) for i in picked}
        klass = rnd.sample(range(universe), 20)
        qrels[f"q{q}"] = {**{docs[i]: 1 for i in klass}, docs[rnd.choice(picked)]: 2}
    return qrels, run


@pytest.mark.parametrize("shape", ["short", "long"])
def test_evaluate_run_and_sql_equal_pytrec_eval_on_tied_unsorted_runs(shape):
    """Short runs (2,000 queries, depth <= 20, documents in random order, 30% of scores equal to the one ranked
    above) as the peers bench draws them, and long ones shaped as the build's BM25 run: numpy and the DuckDB
    macros (over GradedRuns.arrow) equal pytrec_eval exactly, value by value."""
    from bench.peers.metrics import MEASURES, SQL, make_queries, setup_ours_sql, tied_queries

    qrels, run = make_queries(2000, 20, seed=5, shuffle=True, ties=0.3) if shape == "short" else _long_tied_run()
    assert tied_queries(run) > len(run) / 2
    ref = _trec(qrels, run)
    ks = (1, 5, 10)  # the bench's measures (its SQL)
    names = [f"success_{k}" for k in ks] + ["recip_rank"] + [f"map_cut_{k}" for k in ks] + [f"ndcg_cut_{k}" for k in ks]
    want = {q: [v[m] for m in names] for q, v in ref.items()}
    assert M.evaluate_run(qrels, run, ks).rows(MEASURES) == want
    runs = M.read_run(qrels, run)
    q = runs.arrow()  # noqa: F841 (read by name; a fresh connection: no table q of another test in the way)
    got = setup_ours_sql().execute(SQL).fetchnumpy()
    assert dict(zip(runs.qids, np.column_stack([got[c].astype("float64") for c in got]).tolist())) == want
    # the graded lists are trec_eval's full order (score descending, document id descending), not only the measures
    full = {q: sorted(run[q].items(), key=lambda kv: (-kv[1], _desc(kv[0]))) for q in runs.qids}
    assert runs.rels() == [[qrels[q].get(d, 0) for d, _ in full[q]] for q in runs.qids]


def test_the_first_call_of_a_process_equals_pytrec_eval_and_imports_no_pandas():
    """The cold path: a fresh interpreter's first read_run, evaluate_run and SQL over GradedRuns.arrow give
    pytrec_eval's values exactly, and never import pandas (pyarrow's `pa.array` does on its first call,
    ~0.5 CPU-s; counted by module, not timed)."""
    import subprocess
    import sys
    from pathlib import Path

    code = """
import json, sys
from bench.peers.metrics import MEASURES, SQL, make_queries, side_pytrec_eval, setup_ours_sql
from pipeline import metrics
qrels, run = make_queries(500, 20, seed=2, shuffle=True, ties=0.3)
con = setup_ours_sql()
before = "pandas" in sys.modules
numpy_rows = metrics.evaluate_run(qrels, run, (1, 5, 10)).rows(MEASURES)
runs = metrics.read_run(qrels, run)
q = runs.arrow()
got = con.execute(SQL).fetchnumpy()
sql_rows = {k: [float(got[c][i]) for c in got] for i, k in enumerate(runs.qids)}
after = "pandas" in sys.modules
ref = side_pytrec_eval(qrels, run)
print(json.dumps([before, after, numpy_rows == ref, sql_rows == ref]))
"""
    repo = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=repo,
                         env={**__import__("os").environ, "PYTHONPATH": str(repo)})
    assert out.returncode == 0, out.stderr[-2000:]
    assert __import__("json").loads(out.stdout.strip().splitlines()[-1]) == [False, False, True, True]


def test_evaluate_run_bad_input_says_what_to_do():
    with pytest.raises(ValueError, match="NaN score"):
        M.evaluate_run({"a": {"x": 1}}, {"a": {"x": float("nan")}})
    with pytest.raises(ValueError, match="must be integers"):
        M.evaluate_run({"a": {"x": 1.5}}, {"a": {"x": 1.0}})
    with pytest.raises(ValueError, match="must be numbers"):
        M.evaluate_run({"a": {"x": 1}}, {"a": {"x": "high"}})
    with pytest.raises(ValueError, match="unknown measure"):
        M.evaluate_run({"a": {"x": 1}}, {"a": {"x": 1.0}}, measures=("p",))
    with pytest.raises(ValueError, match="cutoffs"):
        M.evaluate_run({"a": {"x": 1}}, {"a": {"x": 1.0}}, ks=(0,))
    assert M.evaluate_run({}, {}).rows() == {}
    assert M.evaluate_run({"a": {"x": 1}}, {"a": {}}).rows() == {"a": [0.0] * 10}  # as pytrec_eval scores it


# --------------------------------------------------------------------------------- Spearman

def test_spearman_vs_scipy(con):
    rng = np.random.default_rng(3)
    rows = []
    for g, n in enumerate((5, 40, 300)):
        x = rng.integers(0, 8, n).astype(float)  # many ties
        y = np.round(x + rng.normal(0, 3, n), 1)
        x[rng.random(n) < 0.1] = np.nan
        y[rng.random(n) < 0.1] = np.nan
        keep = ~(np.isnan(x) | np.isnan(y))
        want = scipy.stats.spearmanr(x[keep], y[keep]).statistic
        xs = [None if np.isnan(v) else float(v) for v in x]
        ys = [None if np.isnan(v) else float(v) for v in y]
        r = M.spearman(xs, ys)
        assert r.rho == pytest.approx(want, abs=1e-12) and r.n == keep.sum() and r.excluded == n - keep.sum()
        assert M.spearman(x, y).rho == pytest.approx(want, abs=1e-12)  # NaN is missing too
        rows += [(f"s{g}", a, b, want, int(keep.sum())) for a, b in zip(xs, ys, strict=True)]
    con.execute("CREATE OR REPLACE TEMP TABLE sp (size VARCHAR, x DOUBLE, y DOUBLE, want DOUBLE, nk INT)")
    con.executemany("INSERT INTO sp VALUES (?, ?, ?, ?, ?)", rows)
    got = con.execute("SELECT size, spearman_rho(list(x), list(y)), spearman_n(list(x), list(y)), "
                      "any_value(want), any_value(nk) FROM sp GROUP BY size ORDER BY size").fetchall()
    assert len(got) == 3
    for _, rho, n, want, nk in got:
        assert rho == pytest.approx(want, abs=1e-12) and n == nk
    con.execute("CREATE OR REPLACE TEMP TABLE sp2 AS SELECT size, x, y FROM sp")
    table = con.execute("SELECT * FROM spearman(sp2) ORDER BY size").fetchall()
    assert [(s, n, e) for s, n, e, _ in table] == [(s, nk, c - nk) for s, _, nk, c in con.execute(
        "SELECT size, 0, any_value(nk), count(*) FROM sp GROUP BY size ORDER BY size").fetchall()]
    assert [t[3] for t in table] == pytest.approx([g[1] for g in got], abs=1e-15)
    # NaN counts as missing in SQL too
    assert one(con, "SELECT spearman_n([1, 'nan'::DOUBLE, 3], [1, 2, 3])")[0] == 2


# --------------------------------------------------------------------------------- bootstrap

def test_poisson_thresholds_are_the_inverse_cdf(con):
    getcontext().prec = 60
    e1, cdf, fact, want = Decimal(-1).exp(), Decimal(0), 1, []
    for k in range(40):
        fact *= max(k, 1)
        cdf += e1 / fact
        t = math.ceil(cdf * 2 ** 52)
        if t >= 2 ** 52:
            break
        want.append(t)
    assert tuple(want) == M.POISSON_THRESHOLDS
    assert one(con, "SELECT poisson_thresholds()")[0] == list(M.POISSON_THRESHOLDS)
    # the hash and the weights agree item by item, and weights look Poisson(1)
    sql = con.execute("SELECT bootstrap_hash52(7, b, i), poisson_weight(7, b, i) FROM range(20) t(b), "
                      "range(200) s(i) ORDER BY b, i").fetchall()
    py = [(M.bootstrap_hash52(7, b, i), M.poisson_weight(7, b, i)) for b in range(20) for i in range(200)]
    assert sql == py
    w = np.array([p[1] for p in py])
    assert abs(w.mean() - 1) < 0.05 and abs(w.var() - 1) < 0.1 and abs((w == 0).mean() - math.exp(-1)) < 0.03
    assert one(con, "SELECT poisson_weight(1, 2, 'item-x')")[0] == M.poisson_weight(1, 2, "item-x")


def _items(con, n=300, seed=5):
    rng = np.random.default_rng(seed)
    hits = (rng.random(n) < 0.6).astype(int)
    floats = np.round(rng.normal(0.5, 0.2, n), 3)
    a = (rng.random(n) < 0.7).astype(int)
    b = np.where(rng.random(n) < 0.8, a, 1 - a) * (rng.random(n) < 0.8)
    con.execute("CREATE OR REPLACE TEMP TABLE items (grp VARCHAR, item_id INTEGER, value DOUBLE)")
    con.executemany("INSERT INTO items VALUES (?, ?, ?)",
                    [("hits", i, float(h)) for i, h in enumerate(hits)]
                    + [("floats", i, float(f)) for i, f in enumerate(floats)])
    con.execute("CREATE OR REPLACE TEMP TABLE pairs (item_id VARCHAR, a INTEGER, b INTEGER)")
    con.executemany("INSERT INTO pairs VALUES (?, ?, ?)", [(f"it{i}", int(x), int(y)) for i, (x, y) in
                                                            enumerate(zip(a, b, strict=True))])
    return hits, floats, a, b


def test_sql_poisson_equals_python_twin(con):
    hits, floats, a, b = _items(con)
    res = {g: rest for g, *rest in con.execute(
        "SELECT * FROM poisson_bootstrap_mean(items, replicates := 200, seed := 11) ORDER BY grp").fetchall()}
    ids = list(range(len(hits)))
    for g, vals in (("hits", hits), ("floats", floats)):
        py = M.poisson_bootstrap_mean(ids, vals, replicates=200, seed=11)
        n, mean, lo, hi, reps = res[g]
        assert (n, reps) == (py.n, py.replicates) == (len(vals), 200)
        if g == "hits":  # integer values: every sum is exact, so the CI is bit for bit the same
            assert (mean, lo, hi) == (py.mean, py.lo, py.hi)
        else:  # float sums may differ in the last bit with the summation order
            assert (mean, lo, hi) == pytest.approx((py.mean, py.lo, py.hi), rel=1e-12)
        assert lo < mean < hi
    sql = one(con, "SELECT n, mean_a, mean_b, diff, lo, hi, replicates, p_value "
                   "FROM poisson_paired_bootstrap(pairs, replicates := 300, seed := 2)")
    py = M.poisson_paired_bootstrap([f"it{i}" for i in range(len(a))], a, b, replicates=300, seed=2)
    assert sql == (py.n, py.mean_a, py.mean_b, py.diff, py.lo, py.hi, py.replicates, py.p_value)
    # determinism, and another seed gives another CI
    assert con.execute("SELECT * FROM poisson_bootstrap_mean(items, replicates := 200, seed := 11) ORDER BY grp"
                       ).fetchall() == [(g, *res[g]) for g in sorted(res)]
    other = one(con, "SELECT lo FROM poisson_bootstrap_mean(items, replicates := 200, seed := 12) WHERE grp = 'hits'")
    assert other[0] != res["hits"][2]


def test_histogram_macros_equal_item_level_and_python_twin(con):
    """poisson_bootstrap_hist / poisson_paired_bootstrap_hist take the counts themselves (what a table
    materialised at warehouse build keeps): the same CI as the item-level macro over the items those
    counts describe, bit for bit, and as the Python twins. Repeated values are added up, NULL values and
    counts <= 0 dropped."""
    hits, floats, a, b = _items(con)
    # the histogram of the hits, split into repeated rows and padded with rows that must be ignored
    ones, zeros = int(hits.sum()), int(len(hits) - hits.sum())
    con.execute("CREATE OR REPLACE TEMP TABLE hist (grp VARCHAR, value INTEGER, items BIGINT)")
    con.executemany("INSERT INTO hist VALUES (?, ?, ?)", [("hits", 1, ones - 10), ("hits", 0, zeros), ("hits", 1, 10),
                                                          ("hits", None, 7), ("hits", 1, 0), ("hits", 0, -3)])
    got = one(con, "SELECT n, mean, lo, hi, replicates FROM poisson_bootstrap_hist(hist, replicates := 200, seed := 11)")
    items = one(con, "SELECT n, mean, lo, hi, replicates FROM poisson_bootstrap_mean(items, replicates := 200, "
                     "seed := 11) WHERE grp = 'hits'")
    py = M.poisson_bootstrap_hist([1, 0, 1, None, 1, 0], [ones - 10, zeros, 10, 7, 0, -3], replicates=200, seed=11)
    assert got == items == (py.n, py.mean, py.lo, py.hi, py.replicates)
    assert py == M.poisson_bootstrap_mean(range(len(hits)), hits, replicates=200, seed=11)
    # floats: the (value, count) histogram in any row order gives the item-level CI
    values, counts = np.unique(floats, return_counts=True)
    con.execute("CREATE OR REPLACE TEMP TABLE fhist (value DOUBLE, items BIGINT)")
    con.executemany("INSERT INTO fhist VALUES (?, ?)", [(float(v), int(c)) for v, c in zip(values[::-1], counts[::-1])])
    assert one(con, "SELECT * FROM poisson_bootstrap_hist(fhist, replicates := 200, seed := 11)") == one(
        con, "SELECT n, mean, lo, hi, replicates FROM poisson_bootstrap_mean(items, replicates := 200, seed := 11) "
             "WHERE grp = 'floats'")
    # paired: counts of the pairs (a, b)
    pairs, pair_counts = np.unique(np.stack([a, b], axis=1), axis=0, return_counts=True)
    con.execute("CREATE OR REPLACE TEMP TABLE phist (a INTEGER, b INTEGER, items BIGINT)")
    con.executemany("INSERT INTO phist VALUES (?, ?, ?)", [(int(x), int(y), int(c)) for (x, y), c in
                                                           zip(pairs, pair_counts)] + [(1, None, 5), (0, 0, 0)])
    got = one(con, "SELECT * FROM poisson_paired_bootstrap_hist(phist, replicates := 300, seed := 2)")
    items = one(con, "SELECT * FROM poisson_paired_bootstrap(pairs, replicates := 300, seed := 2)")
    py = M.poisson_paired_bootstrap_hist([*pairs[:, 0], 1, 0], [*pairs[:, 1], None, 0], [*pair_counts, 5, 0],
                                         replicates=300, seed=2)
    assert got == items == (py.n, py.mean_a, py.mean_b, py.diff, py.lo, py.hi, py.replicates, py.p_value)
    assert got[0] == len(a) and py == M.poisson_paired_bootstrap(range(len(a)), a, b, replicates=300, seed=2)


def test_poisson1_draw_is_poisson_weight_and_scipy(con):
    """Histogram entries of count 1 are drawn by _poisson1_draw (a CASE over the thresholds), the others by
    the ASOF join: the same draw as poisson_weight and as scipy's inverse CDF, at every threshold's edges."""
    edges = [t + d for t in M.POISSON_THRESHOLDS for d in (-1, 0, 1)] + list(range(0, 2 ** 52, 2 ** 40))
    got = con.execute("SELECT list(_poisson1_draw(u) ORDER BY i) FROM (SELECT unnest(?) AS u, "
                      "generate_subscripts(?, 1) AS i)", [edges, edges]).fetchone()[0]
    want = [sum(t <= u for t in M.POISSON_THRESHOLDS) for u in edges]
    assert got == want
    beside = [e for e in edges if 0 < e < 2 ** 52 and e not in M.POISSON_THRESHOLDS]  # one off every edge
    ppf = scipy.stats.poisson.ppf(np.array(beside, dtype=np.float64) / 2.0 ** 52, 1).astype(int)
    assert [w for e, w in zip(edges, got) if e in beside] == ppf.tolist()


@pytest.mark.parametrize("lam", [1, 2, 7, 40, 301, 123_457])
def test_sql_poisson_draws_are_scipys_inverse_cdf(con, lam):
    """The histogram macros draw W ~ Poisson(n) by an ASOF join on a CDF table computed with lgamma;
    at the replicates' own uniforms they equal scipy.stats.poisson.ppf, the twin's draw, exactly."""
    con.execute("CREATE OR REPLACE TEMP TABLE one_value AS SELECT i AS item_id, 1.0 AS value FROM range(?) t(i)", [lam])
    con.execute("CREATE OR REPLACE TEMP TABLE one_zero AS SELECT * FROM one_value UNION ALL SELECT -1, 0.0")
    # with values {1 (n = lam), 0 (n = 1)}: replicate mean = W1 / (W1 + W0); recover W1 through the twin's W0
    w = M.poisson_histogram_weights(['0.0', '1.0'], [1, lam], 400, 3)
    ok = w.sum(axis=1) > 0
    want = np.sort(w[ok, 1] / w[ok].sum(axis=1))
    n, mean, lo, hi, reps = one(con, "SELECT * FROM poisson_bootstrap_mean(one_zero, replicates := 400, seed := 3)")
    assert (n, reps) == (lam + 1, len(want))
    assert (lo, hi) == (M.quantile_linear(want, 0.025), M.quantile_linear(want, 0.975))
    # the draws themselves look Poisson(lam)
    assert abs(w[:, 1].mean() - lam) < 4 * math.sqrt(lam / 400) and abs(w[:, 1].var() / lam - 1) < 0.25


def test_histogram_bootstrap_agrees_with_item_level_and_scipy(con):
    """The histogram draw replaces n Poisson(1) item weights by one Poisson(n) per value: the same
    distribution. Its CIs match the item-level Poisson bootstrap (same replicates scheme, one md5
    per item) and scipy.stats.bootstrap's resampling percentile CI within Monte-Carlo error."""
    rng = np.random.default_rng(21)
    n = 2000
    v = (rng.random(n) < 0.35).astype(float)
    con.execute("CREATE OR REPLACE TEMP TABLE hx AS SELECT unnest(range(?)) AS item_id, unnest(?::DOUBLE[]) AS value",
                [n, v.tolist()])
    _, mean, lo, hi, reps = one(con, "SELECT * FROM poisson_bootstrap_mean(hx, replicates := 2000, seed := 5)")
    assert mean == v.mean() and reps == 2000
    w = M.poisson_weights(list(range(n)), 300, 5)  # item level: 300 x 2000 md5s
    item = (w * v).sum(axis=1) / w.sum(axis=1)
    ref = scipy.stats.bootstrap((v,), np.mean, n_resamples=4000, method="percentile", random_state=1).confidence_interval
    se = math.sqrt(v.mean() * (1 - v.mean()) / n)  # 0.0107; endpoints' Monte-Carlo error ~0.1 se at 2000 replicates
    for lo_ref, hi_ref in ((ref.low, ref.high), (M.quantile_linear(item, 0.025), M.quantile_linear(item, 0.975))):
        assert abs(lo - lo_ref) < 0.35 * se and abs(hi - hi_ref) < 0.35 * se
    assert (hi - lo) == pytest.approx(2 * 1.96 * se, rel=0.1)
    # a paired difference too: the histogram of d = a - b against scipy's paired resampling
    b = np.where(rng.random(n) < 0.7, v, 1 - v)
    con.execute("CREATE OR REPLACE TEMP TABLE hp AS SELECT unnest(range(?)) AS item_id, unnest(?::DOUBLE[]) AS a, "
                "unnest(?::DOUBLE[]) AS b", [n, v.tolist(), b.tolist()])
    _, _, _, diff, plo, phi, _, _ = one(con, "SELECT * FROM poisson_paired_bootstrap(hp, replicates := 2000)")
    pref = scipy.stats.bootstrap((v - b,), np.mean, n_resamples=4000, method="percentile",
                                 random_state=2).confidence_interval
    dse = (v - b).std() / math.sqrt(n)
    assert diff == pytest.approx((v - b).mean(), abs=1e-15)
    assert abs(plo - pref.low) < 0.35 * dse and abs(phi - pref.high) < 0.35 * dse


def test_numpy_bootstrap_determinism_and_coverage():
    rng = np.random.default_rng(0)
    v = (rng.random(500) < 0.3).astype(float)
    ci = M.bootstrap_mean(v, replicates=500, seed=4)
    assert ci == M.bootstrap_mean(v, replicates=500, seed=4)
    assert ci != M.bootstrap_mean(v, replicates=500, seed=5)
    assert ci.lo < ci.mean < ci.hi and ci.mean == v.mean() and ci.n == 500
    # the normal-approximation half-width of a proportion
    se = math.sqrt(v.mean() * (1 - v.mean()) / len(v))
    assert (ci.hi - ci.lo) / 2 == pytest.approx(1.96 * se, rel=0.15)
    assert M.bootstrap_mean([None, 1.0, 0.0, 1.0], replicates=50).n == 3


def test_poisson_and_multinomial_agree_on_a_large_sample(con):
    n = 4000
    rng = np.random.default_rng(9)
    v = rng.exponential(1.0, n)
    con.execute("CREATE OR REPLACE TEMP TABLE big AS SELECT unnest(range(?)) AS item_id, unnest(?::DOUBLE[]) AS value",
                [n, v.tolist()])
    _, mean, lo, hi, _ = one(con, "SELECT * FROM poisson_bootstrap_mean(big, replicates := 400, seed := 1)")
    ref = M.bootstrap_mean(v, replicates=2000, seed=1)
    assert mean == pytest.approx(ref.mean, rel=1e-12)
    se = v.std() / math.sqrt(n)  # ~0.016; endpoints agree to Monte-Carlo error
    assert abs(lo - ref.lo) < 0.25 * 1.96 * se * 2 and abs(hi - ref.hi) < 0.25 * 1.96 * se * 2
    assert (hi - lo) == pytest.approx(ref.hi - ref.lo, rel=0.12)


def test_paired_bootstrap_p_values(con):
    rng = np.random.default_rng(1)
    n = 400
    better = (rng.random(n) < 0.75).astype(float)
    worse = np.where(rng.random(n) < 0.6, better, 0.0)  # loses a share of the hits
    p = M.paired_bootstrap(better, worse, replicates=1000, seed=0)
    assert p.diff > 0.2 and p.p_value < 0.01 and p.lo > 0
    q = M.paired_bootstrap(worse, better, replicates=1000, seed=0)
    assert q.diff == -p.diff and q.p_value < 0.01 and q.hi < 0
    same = M.paired_bootstrap(better, better, replicates=200)
    assert (same.diff, same.lo, same.hi, same.p_value) == (0, 0, 0, 1.0)
    noise = M.paired_bootstrap(better, rng.permutation(better), replicates=1000, seed=0)
    assert noise.p_value > 0.2 and noise.lo < 0 < noise.hi
    con.execute("CREATE OR REPLACE TEMP TABLE pp (sys VARCHAR, item_id INTEGER, a DOUBLE, b DOUBLE)")
    con.executemany("INSERT INTO pp VALUES (?, ?, ?, ?)",
                    [("clear", i, x, y) for i, (x, y) in enumerate(zip(better, worse, strict=True))]
                    + [("same", i, x, x) for i, x in enumerate(better)])
    got = {s: (diff, pv) for s, diff, pv in con.execute(
        "SELECT sys, diff, p_value FROM poisson_paired_bootstrap(pp, replicates := 300)").fetchall()}
    assert got["clear"][0] > 0.2 and got["clear"][1] < 0.01 and got["same"] == (0, 1.0)


# --------------------------------------------------------------------------------- registry, empty tables

def test_registry_and_empty_tables(con):
    assert set(M.METRICS) >= {"success_at_k", "mrr_at_k", "map_at_k_standard", "map_at_k_apibench",
                              "ndcg_at_k_standard", "ndcg_at_k_apibench", "ndcg_at_k_apibench_topk", "error_rate", "mae",
                              "spearman"}
    macros = {r[0] for r in con.execute("SELECT function_name FROM duckdb_functions() "
                                        "WHERE function_type LIKE '%macro%'").fetchall()}
    for m in M.METRICS.values():
        assert m.sql in macros and callable(m.python) and m.description and m.kind in ("per_item", "lists")
    with pytest.raises(dataclasses.FrozenInstanceError):
        M.METRICS["mae"].name = "other"
    con.execute("CREATE OR REPLACE TEMP TABLE empty (gold_rank INTEGER, rels INTEGER[], ideal INTEGER[], "
                "n_relevant INTEGER, pred VARCHAR, gold VARCHAR, x DOUBLE, y DOUBLE, item_id INTEGER, "
                "value DOUBLE, a DOUBLE, b DOUBLE)")
    row = one(con, "SELECT count(*), avg(success_at_k(gold_rank, 5)), avg(reciprocal_rank(gold_rank, 5)), "
                   "avg(ap_at_k_standard(rels, 5, n_relevant)), avg(ap_at_k_apibench(rels, 5)), "
                   "avg(ndcg_at_k_standard(rels, 5, ideal)), avg(ndcg_at_k_apibench(rels, 5)), "
                   "avg(is_error(pred, gold)), avg(abs_error(x, y)), spearman_rho(list(x), list(y)) FROM empty")
    assert row == (0, *[None] * 9)
    con.execute("CREATE OR REPLACE TEMP TABLE e1 AS SELECT x, y FROM empty")
    con.execute("CREATE OR REPLACE TEMP TABLE e2 AS SELECT item_id, value FROM empty")
    con.execute("CREATE OR REPLACE TEMP TABLE e3 AS SELECT item_id, a, b FROM empty")
    assert con.execute("SELECT * FROM spearman(e1)").fetchall() == [(0, 0, None)]
    assert con.execute("SELECT * FROM poisson_bootstrap_mean(e2)").fetchall() == [(0, None, None, None, 0)]
    assert con.execute("SELECT n, diff, replicates, p_value FROM poisson_paired_bootstrap(e3)").fetchall() \
        == [(0, None, 0, None)]
    # a NULL row scores 0 where a score is defined, as the Python twins do
    con.execute("INSERT INTO empty (gold_rank) VALUES (NULL)")
    assert one(con, "SELECT success_at_k(gold_rank, 5), reciprocal_rank(gold_rank), ap_at_k_apibench(rels, 5), "
                    "ndcg_at_k_apibench(rels, 5), ap_at_k_standard(rels, 5, n_relevant) FROM empty") == (0, 0, 0, 0, 0)
    assert M.success_at_k([None], 5).tolist() == [0] and M.ap_at_k_apibench([None], 5).tolist() == [0]


def test_quantile_linear_sql_equals_python(con):
    rng = np.random.default_rng(2)
    for _ in range(50):
        v = np.sort(rng.normal(size=rng.integers(1, 80)))
        for q in (0.0, 0.025, 0.3, 0.5, 0.975, 1.0):
            assert one(con, "SELECT quantile_linear(?::DOUBLE[], ?)", [v.tolist(), q])[0] == M.quantile_linear(v, q)
            assert M.quantile_linear(v, q) == pytest.approx(float(np.quantile(v, q)), abs=1e-12)
    assert one(con, "SELECT quantile_linear([]::DOUBLE[], 0.5)")[0] is None and math.isnan(M.quantile_linear([], 0.5))


def test_macros_persist_for_views_in_a_read_only_warehouse(tmp_path):
    db = tmp_path / "w.duckdb"
    c = duckdb.connect(str(db))
    M.install(c)
    c.execute("CREATE TABLE preds AS SELECT * FROM (VALUES (1), (4), (NULL)) t(gold_rank)")
    c.execute("CREATE VIEW p_at_5 AS SELECT avg(success_at_k(gold_rank, 5)) AS p, "
              "avg(reciprocal_rank(gold_rank)) AS mrr FROM preds")
    c.close()
    c = duckdb.connect(str(db), read_only=True)
    assert c.execute("SELECT * FROM p_at_5").fetchone() == (pytest.approx(2 / 3), pytest.approx(1.25 / 3))
    c.close()
