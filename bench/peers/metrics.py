"""Ranking metrics: ours (`pipeline.metrics`) against pytrec_eval, ranx and ir-measures, on the same queries,
values checked equal per query. Our three sides, all library code:

- ours-numpy: `pipeline.metrics.evaluate_run` (runs.py), the whole run in a few vector operations;
- ours-sql: the DuckDB macros the warehouse's views run (macros.sql), over the graded lists that
  `pipeline.metrics.read_run` (the same reading and ranking as ours-numpy) hands over as Arrow list columns;
- ours-python: the macros' Python twins (ranking.py), the readable reference: a Python loop per list.

Input, `--project PATH` (a built project, read only: what `python -m bench peers` runs): a real run of the
build, its BM25 ranker (`pipeline.families.apirec.queries.BM25Index`, the build's universe and every query of
`queries.parquet`) with every document it scores above zero up to `--depth` (the run's usual depth, 1,000), the
scores as the pipeline ranks them (rounded to 4 decimals: real ties, 1 query in 2 ties somewhere in its list),
each query's dict in universe order (unsorted: every side sorts); judgements APIBench's grades over the universe
(2 the answer, 1 an API of its class). Seeded synthetic input otherwise (`--queries` of them): per query, graded judgements (0 / 1 / 2, APIBench's wrong / class /
exact API; at least one relevant) over a pool of 5-80 documents, and a run of up to `--depth` documents
with distinct scores (no ties: trec_eval breaks them by document id, the others by position), each query's
dict in rank order (as run files are written) or, `--shuffle`, in a random order (every side sorts).
Each side starts from the same TREC-style dicts (`qrels[q][doc] = grade`, `run[q][doc] = score`, the peers'
native input) in its own process, one thread (DuckDB `threads = 1`, numba one thread), and is timed
(`time.process_time`) from those dicts to every query's values of the ten measures below: our sides
include reading and ranking the run, the peers building their own structures (ranx's Numba lists,
pytrec_eval's evaluator). Set-up is timed apart: imports, our DuckDB connection with the macros installed,
and one call of every side on 5 of the queries (ranx's Numba kernels compiled, `cache=True`: the first run
after an install compiles for ~40 CPU s, later runs load the cache; pyarrow's lazy pandas import on its
first array; DuckDB's first query).

Measures, relevant = grade >= 1: success@1,5,10 (trec_eval success_k, ranx hit_rate@k), reciprocal rank
(recip_rank, mrr), AP@1,5,10 (map_cut_k, map@k), nDCG@1,5,10 with gain = grade (ndcg_cut_k, ranx ndcg:
Jarvelin's, not ndcg_burges).

    python -m bench.peers.metrics [--project PATH] [--queries 20000] [--depth 50] [--shuffle] [--repeat 1] [--json]

ranx breaks ties differently from trec_eval (trec_eval: equal scores by document id, descending; ranx: by its
own sort, which keeps no such rule): on tied runs its values differ where a tie straddles a relevant document;
the row counts those queries.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script by a side's interpreter: the repository on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.peers._common import PEERS_PYTHON, peers_missing, project_dir, run_side, skip_or_fail, version  # noqa: E402

KS = (1, 5, 10)
MEASURES = [f"success@{k}" for k in KS] + ["rr"] + [f"ap@{k}" for k in KS] + [f"ndcg@{k}" for k in KS]
OURS = ("ours-numpy", "ours-sql", "ours-python")
PEERS = ("pytrec_eval", "ranx", "ir_measures")
PEER_MODULES = ("pytrec_eval", "ranx", "ir_measures")


def make_queries(n: int, depth: int, seed: int, shuffle: bool = False, ties: float = 0.0) -> tuple[dict, dict]:
    """(qrels, run): graded judgements and a ranked run per query, seeded; `shuffle`: each query's run dict
    in a random order (not rank order: every side sorts every query); `ties`: the chance that a document has
    the score of the one ranked above it (equal scores: trec_eval orders them by document id, descending)."""
    rnd = random.Random(seed)
    qrels, run = {}, {}
    for q in range(n):
        pool = [f"d{i}" for i in range(rnd.randint(5, 80))]
        judged = {d: rnd.choices((0, 1, 2), weights=(6, 2, 1))[0] for d in pool if rnd.random() < 0.5}
        if not any(judged.values()):
            judged[rnd.choice(pool)] = rnd.choice((1, 2))
        returned = rnd.sample(pool, rnd.randint(1, min(depth, len(pool))))
        qid = f"q{q}"
        qrels[qid] = judged
        scored, above = [], None
        for i, d in enumerate(returned):
            score = above if above is not None and ties and rnd.random() < ties else \
                float(len(returned) - i) + rnd.random() * 0.5
            scored.append((d, score))
            above = score
        if shuffle:
            rnd.shuffle(scored)
        run[qid] = dict(scored)
    return qrels, run


def project_queries(project: Path, depth: int) -> tuple[dict, dict]:
    """(qrels, run) of the build's BM25 query ranker: every query of the build, each with the documents that
    score above zero (the `depth` best, ties at the cut by FQN as the pipeline ranks), scores rounded to 4
    decimals as the pipeline ranks them, the dict in universe (FQN) order; judgements 2 for the answer, 1 for
    the other APIs of its class (APIBench's grades)."""
    import pyarrow.parquet as pq

    from pipeline.families.apirec.queries import BM25Index

    root = project / "data" / "families" / "apirec"
    if (root / "api_docs.parquet").exists():
        docs = pq.read_table(root / "api_docs.parquet", columns=["fqn", "api_class", "text"]).to_pydict()
        queries = pq.read_table(root / "queries.parquet", columns=["query_id", "text", "api", "api_class"]).to_pylist()
    else:  # the build has not made its universe yet: the standard library's, as apirec builds it (bench.peers._stdlib_apis)
        from bench.peers._stdlib_apis import api_documents

        got = api_documents()
        docs = {"fqn": [d["fqn"] for d in got], "text": [d["text"] for d in got],
                "api_class": [d["fqn"].rsplit(".", 1)[0] for d in got]}
        queries = [{"query_id": f"q{i}", "text": d["query"], "api": d["fqn"], "api_class": d["fqn"].rsplit(".", 1)[0]}
                   for i, d in enumerate(got) if d["query"]]
        queries = sorted(random.Random(0).sample(queries, min(1000, len(queries))), key=lambda q: q["query_id"])
    fqns = docs["fqn"]
    by_class: dict[str, list[str]] = {}
    for f, c in zip(fqns, docs["api_class"]):
        by_class.setdefault(c, []).append(f)
    index = BM25Index(fqns, docs["text"])
    qrels, run = {}, {}
    for q in queries:
        s = np.round(index.scores(q["text"]).astype(np.float64), 4)
        positive = np.nonzero(s > 0)[0]
        if not len(positive):
            continue
        keep = np.sort(positive[np.lexsort((positive, -s[positive]))][:depth])  # universe order, not rank order
        run[q["query_id"]] = {fqns[i]: float(s[i]) for i in keep}
        grades = {f: 1 for f in by_class.get(q["api_class"], [])}
        grades[q["api"]] = 2
        qrels[q["query_id"]] = grades
    return qrels, run


def tied_queries(run: dict) -> int:
    return sum(len(set(r.values())) < len(r) for r in run.values())


# ---------------------------------------------------------------- the sides (each its own process)

def side_ours_numpy(qrels: dict, run: dict) -> dict[str, list[float]]:
    """The library's whole-run path (pipeline.metrics.evaluate_run): the dicts read into flat arrays, ranked
    as trec_eval ranks, every measure a few vector operations over all queries."""
    from pipeline import metrics

    return metrics.evaluate_run(qrels, run, KS).rows(MEASURES)


def side_ours_sql(qrels: dict, run: dict, con=None) -> dict[str, list[float]]:
    """The warehouse's macros over the graded lists: the run read and ranked by the library (read_run, as
    ours-numpy), the lists handed to DuckDB as Arrow list columns over the same buffers (GradedRuns.arrow)."""
    from pipeline import metrics

    con = con or setup_ours_sql()
    runs = metrics.read_run(qrels, run)
    q = runs.arrow()  # noqa: F841 (read by name): the graded lists as Arrow list columns over the same buffers
    t0 = time.process_time()
    got = con.execute(SQL).fetchnumpy()
    QUERY_ONLY.append(time.process_time() - t0)  # the warehouse's part: the grades are already in a table there
    table = np.column_stack([got[c].astype("float64") for c in got]).tolist()
    return dict(zip(runs.qids, table))


# the macros over the graded lists, what a query shares computed once per query (its first relevant rank, its
# number of relevant judgements, its judged gains sorted: GradedRuns.arrow's `gains`, the positive grades
# descending, whose length is the number of grades >= 1 and whose top max(KS) are all IDCG@k reads): the same
# values, bit for bit, as each macro called on the raw lists and as pytrec_eval (tests/test_metrics.py)
SQL = ("SELECT " + ", ".join([f"success_at_k(fr, {k})" for k in KS] + ["reciprocal_rank(fr)"]
                             + [f"ap_at_k_standard(rels, {k}, n_rel)" for k in KS]
                             + [f"ndcg_at_k_standard(rels, {k}, top_gains)" for k in KS])
       + f" FROM (SELECT rels, first_rank(rels, 1) AS fr, len(gains) AS n_rel, gains[1:{max(KS)}] AS top_gains FROM q)")


QUERY_ONLY: list[float] = []


def setup_ours_sql():
    """A DuckDB connection, one thread, our macros installed (process set-up, timed apart)."""
    import duckdb

    from pipeline import metrics

    con = duckdb.connect()
    con.execute("SET threads = 1")
    metrics.install(con)
    return con


def side_ours_python(qrels: dict, run: dict) -> dict[str, list[float]]:
    """The macros' Python twins (pipeline.metrics.ranking), one graded list per query."""
    from pipeline import metrics as M

    runs = M.read_run(qrels, run)
    rels, ideal = runs.rels(), runs.judged()
    first = [M.first_rank(r, 1) for r in rels]
    n_rel = [sum(g >= 1 for g in i) for i in ideal]
    cols = [M.success_at_k(first, k) for k in KS] + [M.reciprocal_rank(first)]
    cols += [M.ap_at_k_standard(rels, k, n_rel) for k in KS] + [M.ndcg_at_k_standard(rels, k, ideal) for k in KS]
    return {q: [float(c[i]) for c in cols] for i, q in enumerate(runs.qids)}


def side_pytrec_eval(qrels: dict, run: dict) -> dict[str, list[float]]:
    import pytrec_eval

    cut = ",".join(map(str, KS))
    ev = pytrec_eval.RelevanceEvaluator(qrels, {f"success.{cut}", "recip_rank", f"map_cut.{cut}", f"ndcg_cut.{cut}"},
                                        relevance_level=1)
    got = ev.evaluate(run)
    names = [f"success_{k}" for k in KS] + ["recip_rank"] + [f"map_cut_{k}" for k in KS] + [f"ndcg_cut_{k}" for k in KS]
    return {q: [float(v[m]) for m in names] for q, v in got.items()}


RANX_METRICS = [f"hit_rate@{k}" for k in KS] + ["mrr"] + [f"map@{k}" for k in KS] + [f"ndcg@{k}" for k in KS]


def side_ranx(qrels: dict, run: dict) -> dict[str, list[float]]:
    from ranx import Qrels, Run, evaluate

    got = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), RANX_METRICS, return_mean=False, threads=1)
    qids = sorted(qrels)  # ranx's Qrels / Run order (its keys sorted)
    return {q: [float(got[m][i]) for m in RANX_METRICS] for i, q in enumerate(qids)}


def side_ir_measures(qrels: dict, run: dict) -> dict[str, list[float]]:
    import ir_measures
    from ir_measures import AP, RR, Success, nDCG

    measures = [Success @ k for k in KS] + [RR] + [AP @ k for k in KS] + [nDCG @ k for k in KS]
    out: dict[str, list[float]] = {q: [0.0] * len(measures) for q in run}
    index = {str(m): i for i, m in enumerate(measures)}
    for m in ir_measures.iter_calc(measures, qrels, run):
        out[m.query_id][index[str(m.measure)]] = float(m.value)
    return out


SIDES = {"ours-numpy": side_ours_numpy, "ours-sql": side_ours_sql, "ours-python": side_ours_python,
         "pytrec_eval": side_pytrec_eval,
         "ranx": side_ranx, "ir_measures": side_ir_measures}
SIDE_IMPORTS = {"ours-numpy": ("numpy", "pipeline.metrics"), "ours-sql": ("pyarrow", "pipeline.metrics"),
                "ours-python": ("pipeline.metrics",),
                "pytrec_eval": ("pytrec_eval",), "ranx": ("ranx",), "ir_measures": ("ir_measures",)}
TOOL = {"ours-numpy": "ours: whole-run numpy (pipeline.metrics.evaluate_run)",
        "ours-sql": "ours: DuckDB macros (pipeline.metrics)", "ours-python": "ours: Python twins (pipeline.metrics)",
        "pytrec_eval": "pytrec-eval-terrier", "ranx": "ranx", "ir_measures": "ir-measures"}


def side(name: str, inputs: Path, out: Path, calls: int = 1) -> dict:
    data = json.loads(inputs.read_text())
    qrels, run = data["qrels"], data["run"]
    # set-up apart: imports, our DuckDB connection with the macros installed (the warehouse holds one open)
    t0 = time.process_time()
    compute = SIDES[name]
    if name == "ours-sql":
        con = setup_ours_sql()
        compute = lambda q, r: side_ours_sql(q, r, con)  # noqa: E731
    for module in SIDE_IMPORTS[name]:
        __import__(module)
    load = time.process_time() - t0
    # cold: the process's first call, whatever it pays once (ranx compiles or loads its Numba kernels, DuckDB
    # binds its first query, numpy's first sorts); warm: the calls after it
    t0 = time.process_time()
    values = compute(qrels, run)
    cold = time.process_time() - t0
    QUERY_ONLY.clear()
    cpu = float("inf")
    for _ in range(calls):  # small runs take milliseconds: the least of several calls, every side alike
        t0 = time.process_time()
        values = compute(qrels, run)
        cpu = min(cpu, time.process_time() - t0)
    out.write_text(json.dumps(values))
    tool = "ours" if name.startswith("ours") else version(TOOL[name])
    return {"cpu_s": cpu, "cold_cpu_s": cold, "setup_cpu_s": load, "tool": tool,
            "query_only_cpu_s": min(QUERY_ONLY, default=None)}


# ---------------------------------------------------------------- the driver

def compare(ours: dict, peer: dict) -> dict:
    worst, exact, within, n = 0.0, 0, 0, 0
    missing = sorted(set(ours) ^ set(peer))
    for q in ours.keys() & peer.keys():
        for a, b in zip(ours[q], peer[q], strict=True):
            d = abs(a - b)
            worst = max(worst, d)
            exact += a == b
            within += d <= 1e-12
            n += 1
    return {"values": n, "equal_exactly": exact, "equal_within_1e-12": within, "max_abs_diff": worst,
            "queries_missing": len(missing)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--project", help="a built project folder, read only: its BM25 run over its apirec queries")
    ap.add_argument("--queries", type=int, default=20000)
    ap.add_argument("--depth", type=int, default=None, help="documents returned per query at most (default 50; "
                    "with --project 1000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shuffle", action="store_true", help="each query's documents in a random order in the "
                    "run dict (default: rank order, as run files are written)")
    ap.add_argument("--ties", type=float, default=0.0, help="synthetic runs: the chance that a document has the "
                    "score of the one ranked above it (default 0: no ties)")
    ap.add_argument("--repeat", type=int, default=1, help="runs (processes) per side, the sides interleaved; the "
                    "median of the runs is reported (warm and cold)")
    ap.add_argument("--calls", type=int, default=None, help="calls per run, the least kept (default: "
                    "ceil(20000 / queries), at most 50: a run of 300 queries takes ~3 ms)")
    ap.add_argument("--peers", nargs="+", default=list(PEERS), choices=PEERS)
    ap.add_argument("--peers-python", default=None, help=f"the peers venv's python (default {PEERS_PYTHON})")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--side", choices=list(SIDES), help=argparse.SUPPRESS)
    ap.add_argument("--inputs", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.side:
        print(json.dumps(side(args.side, Path(args.inputs), Path(args.out), args.calls or 1)))
        return 0
    python = args.peers_python or PEERS_PYTHON
    missing = peers_missing(python, tuple(PEER_MODULES[PEERS.index(p)] for p in args.peers))
    if missing:
        return skip_or_fail(missing, args.peers_python is not None)
    if args.project:
        args.depth = args.depth or 1000
        qrels, run = project_queries(project_dir(args.project), args.depth)
        args.queries, args.shuffle = len(run), True
    else:
        args.depth = args.depth or 50
        qrels, run = make_queries(args.queries, args.depth, args.seed, args.shuffle, args.ties)
    calls = args.calls or (1 if args.project else min(50, -(-20000 // max(args.queries, 1))))
    ours_sides = OURS[:2] if args.project else OURS  # the Python twins (a loop per list) are the reference, not a path
    script = Path(__file__).resolve()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "in.json").write_text(json.dumps({"qrels": qrels, "run": run}))
        runs_of: dict[str, list[dict]] = {}
        sides = (*ours_sides, *args.peers)
        for i in range(args.repeat):  # interleaved: every side once, then again, each round starting one side later
            # (a round's first process ran slower here: ours-numpy's cold call on the build's run took 0.31-0.34
            # CPU-s as the first of each round of the committed table, 0.15-0.17 when it was not first; a fixed
            # order charged that to the same side every round)
            for name in sides[i % len(sides):] + sides[:i % len(sides)]:
                got = run_side(sys.executable if name in OURS else python, script, name,
                               ["--inputs", str(tmp / "in.json"), "--out", str(tmp / f"{name}.json"),
                                "--calls", str(calls)])
                runs_of.setdefault(name, []).append(got)
        values = {name: json.loads((tmp / f"{name}.json").read_text()) for name in runs_of}
    med = lambda name, key: statistics.median(r[key] for r in runs_of[name])  # noqa: E731
    best = {name: {"cpu_s": med(name, "cpu_s"), "cold_cpu_s": med(name, "cold_cpu_s"),
                   "setup_cpu_s": med(name, "setup_cpu_s"), "tool": got[0]["tool"],
                   "query_only_cpu_s": (statistics.median(r["query_only_cpu_s"] for r in got)
                                        if got[0]["query_only_cpu_s"] is not None else None),
                   "cpu_s_runs": [round(r["cpu_s"], 4) for r in got],
                   "cold_cpu_s_runs": [round(r["cold_cpu_s"], 4) for r in got]}
            for name, got in runs_of.items()}
    ref = values["ours-sql"]
    for name in (*ours_sides, *args.peers):
        b = best[name]
        row = {"side": name, "tool": b["tool"], "cpu_s": round(b["cpu_s"], 4), "cold_cpu_s": round(b["cold_cpu_s"], 4),
               "cpu_s_runs": b["cpu_s_runs"], "cold_cpu_s_runs": b["cold_cpu_s_runs"],
               "setup_cpu_s": round(b["setup_cpu_s"], 2), **compare(ref, values[name])}
        row["queries_differing"] = sum(values[name].get(q) != v for q, v in ref.items())
        if name == "ours-sql":
            row["query_only_cpu_s"] = round(b["query_only_cpu_s"], 4)
        if name not in OURS:
            row["peer_over_ours_numpy"] = round(b["cpu_s"] / best["ours-numpy"]["cpu_s"], 2)
            row["peer_over_ours_sql"] = round(b["cpu_s"] / best["ours-sql"]["cpu_s"], 2)
            row["cold_peer_over_ours_numpy"] = round(b["cold_cpu_s"] / best["ours-numpy"]["cold_cpu_s"], 2)
            row["cold_peer_over_ours_sql"] = round(b["cold_cpu_s"] / best["ours-sql"]["cold_cpu_s"], 2)
            if "ours-python" in best:
                row["peer_over_ours_python"] = round(b["cpu_s"] / best["ours-python"]["cpu_s"], 2)
        rows.append(row)
    out = {"queries": args.queries, "depth": args.depth, "shuffled": args.shuffle, "calls_per_run": calls,
           "ties": None if args.project else args.ties, "repeat": args.repeat, "summary": "median of the runs",
           "input": ("the build's BM25 run over its apirec queries"
                     if (project_dir(args.project) / "data/families/apirec/api_docs.parquet").exists() else
                     "the BM25 run over the standard library's API documents and docstring queries (the build had "
                     "no apirec universe yet)") if args.project else "seeded synthetic",
           "queries_with_ties": tied_queries(run),
           "measures": MEASURES, "threads": 1,
           "judged_pairs": sum(map(len, qrels.values())), "run_pairs": sum(map(len, run.values())), "rows": rows}
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{args.queries} queries ({out['input']}; {out['run_pairs']} ranked documents, {out['judged_pairs']} "
              f"judgements, {out['queries_with_ties']} queries with tied scores), "
              f"{len(MEASURES)} measures per query, one thread per side, CPU seconds (median of {args.repeat} "
              f"interleaved runs); values against ours (DuckDB)")
        for r in rows:
            ratio = "" if "peer_over_ours_sql" not in r else \
                f", {r['peer_over_ours_numpy']:.2f}x ours (numpy), {r['peer_over_ours_sql']:.2f}x ours (SQL)" + \
                (f", {r['peer_over_ours_python']:.2f}x ours (Python)" if "peer_over_ours_python" in r else "") + \
                f"; cold {r['cold_peer_over_ours_numpy']:.2f}x (numpy), {r['cold_peer_over_ours_sql']:.2f}x (SQL)"
            warm = f" (cold {r['cold_cpu_s']:.4f} s; +{r['setup_cpu_s']:.2f} s set-up)"
            if "query_only_cpu_s" in r:
                warm += f" [the SQL query alone, grades already in a table: {r['query_only_cpu_s']:.4f} s]"
            print(f"{r['side']:12s} {r['tool']:24s} {r['cpu_s']:7.4f} s{warm}{ratio}; {r['values']} values, "
                  f"{r['equal_exactly']} equal exactly, {r['equal_within_1e-12']} within 1e-12 "
                  f"(max |diff| {r['max_abs_diff']:.2g}), {r['queries_differing']} queries differ, "
                  f"{r['queries_missing']} queries missing")
    return 0


if __name__ == "__main__":
    sys.exit(main())
