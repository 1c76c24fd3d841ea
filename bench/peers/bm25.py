"""BM25 over API documents: ours (apirec's `BM25Index`: bm25s 0.3.16, Lucene variant) against rank_bm25 0.2.2,
the same documents, queries, tokens, k1 = 1.5 and b = 0.75, top-10 rankings and scores compared.

Inputs: with `--project PATH` (a built project, read only: what `python -m bench peers` runs), the build's own
apirec universe (`data/families/apirec/api_docs.parquet`: every API document, FQN order) and every query of
`data/families/apirec/queries.parquet` (`--queries N`: a seeded N of them), our top 10 also checked against the
build's stored BM25 rankings (`query_baselines.parquet`). Without it (no build needed): the standard library's
documented public APIs as apirec indexes them (`bench/peers/_stdlib_apis.py`: FQN words plus the docstring after its
first sentence) and `--queries` of their first sentences, seeded: apirec's docstring queries. Both sides
tokenize with apirec's tokenizer (identifier parts, lower case, bm25s's English stop words removed) and
are timed (`time.process_time`, one process and one thread each) from texts to every query's top 10:
index built, every query scored and sorted.

The BM25 variants (what each computes for a query term of document frequency n among N documents,
term frequency tf, document length dl, mean length avgdl):

- ours, Lucene's: idf = ln(1 + (N - n + 0.5) / (n + 0.5)), score = idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))
  (no (k1 + 1) factor: Lucene dropped it, ranks unchanged), float32; ranking = positive scores, rounded to
  4 decimals, ties by FQN (`BM25Index.rank`);
- `rank_bm25` (`BM25Okapi` as shipped, epsilon = 0.25): Robertson's idf = ln((N - n + 0.5) / (n + 0.5)),
  an idf below zero (a term in more than half the documents) replaced by epsilon times the mean idf; score
  = idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)), float64: a different idf, so rankings differ
  where common terms matter; the row counts how often, and the gold's success@10 under each;
- `rank_bm25-lucene-idf`: the same `BM25Okapi` with `_calc_idf` replaced by Lucene's idf (the only change):
  its scores over (k1 + 1) must equal ours (to float32's precision) and its top 10 be ours.

    python -m bench.peers.bm25 [--project PATH] [--queries 400] [--repeat 1] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script by a side's interpreter: the repository on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.peers._common import PEERS_PYTHON, peers_missing, project_dir, run_side, skip_or_fail, version  # noqa: E402

K1, B, TOP = 1.5, 0.75, 10
PEERS = ("rank_bm25", "rank_bm25-lucene-idf")
PHASES: dict[str, float] = {}  # a side's index-building CPU seconds (the rest of its time: the queries)


# ---------------------------------------------------------------- the sides (each its own process)

def side_ours(data: dict) -> tuple[list[list[int]], list[list[float]]]:
    from pipeline.families.apirec.queries import BM25Index

    t0 = time.process_time()
    index = BM25Index(list(range(len(data["texts"]))), data["texts"], k1=K1, b=B)
    PHASES["index_cpu_s"] = time.process_time() - t0
    tops, scores = [], []
    for q in data["queries"]:
        top, s = index.rank(q, TOP)
        tops.append(top)
        scores.append([float(s[i]) for i in top])
    return tops, scores


def side_rank_bm25(data: dict, lucene_idf: bool) -> tuple[list[list[int]], list[list[float]]]:
    import numpy as np
    from rank_bm25 import BM25Okapi

    from pipeline.families.apirec.queries import identifier_parts

    stop = set(data["stopwords"])

    def tokens(text: str) -> list[str]:
        return [w for w in identifier_parts(text) if w not in stop]

    class LuceneIdf(BM25Okapi):
        def _calc_idf(self, nd):
            self.idf = {w: math.log(1 + (self.corpus_size - n + 0.5) / (n + 0.5)) for w, n in nd.items()}

    t0 = time.process_time()
    model = (LuceneIdf if lucene_idf else BM25Okapi)([tokens(t) for t in data["texts"]], k1=K1, b=B)
    PHASES["index_cpu_s"] = time.process_time() - t0
    tops, scores = [], []
    for q in data["queries"]:
        s = model.get_scores(tokens(q))
        positive = np.nonzero(s > 0)[0]
        top = positive[np.lexsort((positive, -s[positive]))][:TOP]  # best first, ties by document order
        tops.append([int(i) for i in top])
        scores.append([float(s[i]) for i in top])
    return tops, scores


def side(name: str, inputs: Path, out: Path) -> dict:
    data = json.loads(inputs.read_text())
    t0 = time.process_time()
    if name == "ours":
        from pipeline.families.apirec.queries import load_bm25s

        load_bm25s()  # as the job does in its set-up: bm25s imported once, outside the index build
    else:
        import rank_bm25  # noqa: F401

        import pipeline.families.apirec.queries  # noqa: F401,F811
    load = time.process_time() - t0
    t0 = time.process_time()
    tops, scores = side_ours(data) if name == "ours" else side_rank_bm25(data, name.endswith("lucene-idf"))
    cpu = time.process_time() - t0
    out.write_text(json.dumps({"tops": tops, "scores": scores}))
    return {"cpu_s": cpu, "import_cpu_s": load, "index_cpu_s": PHASES["index_cpu_s"], "tool": version("bm25s") if name == "ours" else version("rank-bm25")}


# ---------------------------------------------------------------- the driver

def inputs(n_queries: int, seed: int, max_files: int = 0) -> dict:
    from bm25s.stopwords import STOPWORDS_EN

    from bench.peers._stdlib_apis import api_documents

    docs = api_documents(max_files)
    asked = [i for i, d in enumerate(docs) if d["query"]]
    picked = sorted(random.Random(seed).sample(asked, min(n_queries, len(asked))))
    return {"fqns": [d["fqn"] for d in docs], "texts": [d["text"] for d in docs],
            "queries": [docs[i]["query"] for i in picked], "gold": picked, "stopwords": sorted(STOPWORDS_EN)}


def project_inputs(project: Path, n_queries: int, seed: int) -> dict:
    """The build's universe and queries (every one, or a seeded `n_queries`), and its stored BM25 top lists."""
    import pyarrow.parquet as pq
    from bm25s.stopwords import STOPWORDS_EN

    root = project / "data" / "families" / "apirec"
    docs = pq.read_table(root / "api_docs.parquet", columns=["fqn", "text"]).to_pydict()
    queries = pq.read_table(root / "queries.parquet", columns=["query_id", "text", "api"]).to_pylist()
    if n_queries and n_queries < len(queries):
        queries = sorted(random.Random(seed).sample(queries, n_queries), key=lambda q: q["query_id"])
    where = {f: i for i, f in enumerate(docs["fqn"])}
    stored = {r["point_id"]: r["top"] for r in
              pq.read_table(root / "query_baselines.parquet", columns=["point_id", "top"]).to_pylist()}
    return {"fqns": docs["fqn"], "texts": docs["text"], "queries": [q["text"] for q in queries],
            "gold": [where.get(q["api"], -1) for q in queries], "stopwords": sorted(STOPWORDS_EN),
            "stored_tops": [[where[f] for f in stored.get(q["query_id"], [])][:TOP] for q in queries]}


def compare(data: dict, ours: dict, peer: dict, scale: float) -> dict:
    """Top-10 lists: identical, identical as sets, overlap; scores of the shared documents (peer / scale);
    where the lists differ only by the order of near-tied documents (|score diff| <= 1e-4), counted."""
    same = same_set = near_ties = 0
    overlap, worst = 0.0, 0.0
    hits = {"ours": 0, "peer": 0}
    for g, (to, so), (tp, sp) in zip(data["gold"], zip(ours["tops"], ours["scores"]),
                                      zip(peer["tops"], peer["scores"])):
        same += to == tp
        same_set += set(to) == set(tp)
        overlap += len(set(to) & set(tp)) / max(len(to), len(tp), 1)
        by_ours = dict(zip(to, so))
        for d, s in zip(tp, sp):
            if d in by_ours:
                worst = max(worst, abs(by_ours[d] - s / scale))
        if to != tp and set(to) == set(tp):
            peer_scores = dict(zip(tp, sp))
            near_ties += all(abs(peer_scores[a] - peer_scores[b]) / scale <= 1e-4 for a, b in zip(to, tp) if a != b)
        hits["ours"] += g in to
        hits["peer"] += g in tp
    n = len(data["queries"])
    return {"queries": n, "top10_identical": same, "top10_same_set": same_set,
            "top10_differ_only_in_near_ties": near_ties, "mean_top10_overlap": round(overlap / n, 4),
            "max_abs_score_diff": worst, "success10_ours": hits["ours"], "success10_peer": hits["peer"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--project", help="a built project folder, read only: its apirec universe and queries")
    ap.add_argument("--queries", type=int, default=None, help="seeded queries (default: 400; with --project all: 0)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-files", type=int, default=0, help="standard-library files read at most (0: all)")
    ap.add_argument("--repeat", type=int, default=1, help="runs (processes) per side, the sides alternating; the "
                    "median of the runs is kept (whole run and index build)")
    ap.add_argument("--peers-python", default=None, help=f"the peers venv's python (default {PEERS_PYTHON})")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--side", choices=["ours", *PEERS], help=argparse.SUPPRESS)
    ap.add_argument("--inputs", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.side:
        print(json.dumps(side(args.side, Path(args.inputs), Path(args.out))))
        return 0
    python = args.peers_python or PEERS_PYTHON
    missing = peers_missing(python, ("rank_bm25",))
    if missing:
        return skip_or_fail(missing, args.peers_python is not None)
    from_build = bool(args.project) and (project_dir(args.project) / "data/families/apirec/api_docs.parquet").exists()
    if from_build:
        data = project_inputs(project_dir(args.project), args.queries or 0, args.seed)
    else:
        data = inputs(400 if args.queries is None else args.queries, args.seed, args.max_files)
    script = Path(__file__).resolve()
    runs_of: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "in.json").write_text(json.dumps(data))
        for _ in range(args.repeat):  # alternating: every side once, then again
            for name in ("ours", *PEERS):
                got = run_side(sys.executable if name == "ours" else python, script, name,
                               ["--inputs", str(tmp / "in.json"), "--out", str(tmp / f"{name}.json")])
                runs_of.setdefault(name, []).append(got)
        results = {name: json.loads((tmp / f"{name}.json").read_text()) for name in runs_of}
    best = {name: {"tool": got[0]["tool"], "cpu_s": statistics.median(r["cpu_s"] for r in got),
                   "index_cpu_s": statistics.median(r["index_cpu_s"] for r in got),
                   "index_cpu_runs": [round(r["index_cpu_s"], 4) for r in got]}
            for name, got in runs_of.items()}
    rows = []
    for name in PEERS:
        o, p = best["ours"], best[name]
        rows.append({"peer": name, "tool": p["tool"], "ours": o["tool"], "ours_cpu_s": round(o["cpu_s"], 3),
                     "peer_cpu_s": round(p["cpu_s"], 3), "ratio": round(p["cpu_s"] / o["cpu_s"], 1),
                     "ours_index_cpu_s": round(o["index_cpu_s"], 3), "peer_index_cpu_s": round(p["index_cpu_s"], 3),
                     "index_ratio": round(p["index_cpu_s"] / o["index_cpu_s"], 2),
                     "ours_index_cpu_runs": o["index_cpu_runs"], "peer_index_cpu_runs": p["index_cpu_runs"],
                     "query_ratio": round((p["cpu_s"] - p["index_cpu_s"]) / (o["cpu_s"] - o["index_cpu_s"]), 1),
                     "idf": "Lucene" if name.endswith("lucene-idf") else "Robertson, floored at 0.25 x mean idf",
                     **compare(data, results["ours"], results[name], K1 + 1)})
    out = {"documents": len(data["texts"]), "queries": len(data["queries"]), "k1": K1, "b": B, "threads": 1,
           "repeat": args.repeat, "summary": "median of the runs",
           "inputs": "the build's apirec universe and queries" if from_build else "standard-library API documents"
           + (" (the build had no apirec universe yet)" if args.project and not from_build else ""),
           "rows": rows}
    if "stored_tops" in data:  # ours against the build's own stored BM25 rankings
        out["ours_equal_to_build"] = sum(t == s for t, s in zip(results["ours"]["tops"], data["stored_tops"]))
    if args.json:
        print(json.dumps(out))
    else:
        if "ours_equal_to_build" in out:
            print(f"ours: top 10 equal to the build's stored BM25 ranking in {out['ours_equal_to_build']} / {out['queries']}")
        print(f"{out['documents']} API documents ({out['inputs']}), {out['queries']} queries, k1 {K1}, b {B}, "
              "one process and thread per side, CPU seconds from texts to every top 10")
        for r in rows:
            print(f"{r['peer']:21s} ({r['tool']}, idf {r['idf']}) {r['peer_cpu_s']:.2f} s, ours ({r['ours']}, Lucene) "
                  f"{r['ours_cpu_s']:.2f} s: {r['ratio']:.1f}x (index {r['peer_index_cpu_s']:.2f} vs {r['ours_index_cpu_s']:.2f} s, "
                  f"queries alone {r['query_ratio']:.1f}x); top 10 identical {r['top10_identical']} / {r['queries']} "
                  f"(same set {r['top10_same_set']}, near-tie order only {r['top10_differ_only_in_near_ties']}), "
                  f"mean overlap {r['mean_top10_overlap']:.3f}, max |score diff| {r['max_abs_score_diff']:.2g}; "
                  f"gold in top 10: ours {r['success10_ours']}, peer {r['success10_peer']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
