"""apirec (APIBench-C): point generation on hand-written files through the real extraction, the
n-gram baseline, candidate rendering, and the Table 5 views on hand-built rankings."""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from pipeline import metrics
from pipeline import schemas as core_schemas
from pipeline.extract.build import Cache, build
from pipeline.families.apirec import generate as gen
from pipeline.families.apirec import schemas

REPO = Path(__file__).resolve().parent.parent

APP = '''import os
import json as js
from collections import OrderedDict
import requests
from mylib.util import helper


def work(path):
    data = js.loads(path)
    if os.path.exists(path):
        full = os.path.join("a", path)
    out = OrderedDict()
    out["x"] = helper(data)
    text = js.dumps(out)
    requests.get(text)
    return text.upper()
'''
UTIL = "def helper(x):\n    return x\n"
TRAIN = '''import os
import json


def a(p):
    x = json.loads(p)
    y = os.path.exists(p)
    z = os.path.join(p, p)
    return json.dumps(x)


def b(p):
    q = json.loads(p)
    return os.path.exists(q)
'''


def padding_functions(n: int = 20) -> str:
    """n functions of 2..n+1 lines, each calling os.getcwd() once (for the length buckets)."""
    out = ["import os\n"]
    for i in range(n):
        body = "".join(f"    v{j} = {j}\n" for j in range(i))
        out.append(f"\n\ndef pad{i}():\n{body}    return os.getcwd()\n")
    return "".join(out)


def manifest_row(root: Path, repo: str, path: str, text: str, split: str) -> dict:
    loc = root / repo / path
    loc.parent.mkdir(parents=True, exist_ok=True)
    loc.write_text(text)
    return {"file_id": hashlib.sha256(f"{repo}/{path}".encode()).hexdigest()[:16],
            "sha256": hashlib.sha256(text.encode()).hexdigest(), "source": "fx", "repository": repo,
            "path": f"{repo}/{path}", "location": str(loc), "language": "python", "encoding": "utf-8",
            "bytes": len(text.encode()), "lines": text.count("\n"), "split": split, "duplicate": False}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("apirec")
    rows = [manifest_row(root, "app", "app/main.py", APP, "test"),
            manifest_row(root, "app", "mylib/__init__.py", "", "test"),
            manifest_row(root, "app", "mylib/util.py", UTIL, "test"),
            manifest_row(root, "app", "app/pads.py", padding_functions(), "test"),
            manifest_row(root, "lib", "lib/train.py", TRAIN, "train")]
    manifest = pa.Table.from_pylist(rows, core_schemas.MANIFEST)
    tables, _, _ = build(manifest, 1, 30, 100000, Cache(None))
    points, base, stats = gen.generate(tables["usages"], tables["imports"], manifest, root, {"fx": "web"},
                                       "general", "test", 0, 5, 10, 0)
    return {r["file_id"]: r for r in rows}, points.to_pylist(), base.to_pylist(), stats


def work_points(built):
    _, points, _, _ = built
    return sorted((p for p in points if p["function"] == "work"), key=lambda p: (p["line"], p["col"]))


def test_context_is_cut_exactly_before_the_call_and_keeps_the_imports(built):
    files, points, _, _ = built
    work = work_points(built)
    assert [p["api"] for p in work] == ["json.loads", "os.path.exists", "os.path.join", "collections.OrderedDict",
                                        "mylib.util.helper", "json.dumps", "requests.get"]
    imports = "import os\nimport json as js\nfrom collections import OrderedDict\nimport requests\n" \
              "from mylib.util import helper"
    join = work[2]
    assert join["written"] == "os.path.join" and join["api_class"] == "os.path"
    assert join["imports"] == imports
    assert join["context"] == imports + "\n\n" + "def work(path):\n    data = js.loads(path)\n" \
        "    if os.path.exists(path):\n        full = "
    for p in points:
        text = Path(files[p["file_id"]]["location"]).read_text()
        lines = text.splitlines(keepends=True)
        offset = sum(len(x) for x in lines[: p["line"] - 1]) + p["col"]
        body = p["context"][len(p["imports"]) + 2 if p["imports"] else 0:]
        assert text[:offset].endswith(body) and text[offset:].startswith(p["written"] + "(")
        # the point's own call is never in its context (each API is called once per function here)
        if p["function"] == "work":
            assert p["written"] + "(" not in body


def test_categories_previous_api_and_candidate_rendering(built):
    work = {p["api"]: p for p in work_points(built)}
    assert work["json.loads"]["category"] == "stdlib"
    assert work["mylib.util.helper"]["category"] == "user_defined"
    assert work["requests.get"]["category"] == "third_party"
    assert work["json.loads"]["previous_api"] is None and work["os.path.exists"]["previous_api"] == "json.loads"
    assert {p["domain"] for p in work.values()} == {"web"}
    loads = work["os.path.exists"]
    # n-gram: after json.loads the train split calls os.path.exists (twice), then unigram order
    assert loads["candidates"][0] == "os.path.exists" and loads["seen"]
    texts = dict(zip(loads["candidates"], loads["candidate_texts"]))
    assert texts["json.loads"] == "js.loads" and texts["os.path.exists"] == "os.path.exists"
    assert gen.render("builtins.len", [], "m") == "len"
    assert gen.render("pkg.mod.f", [], "pkg.mod") == "f"
    assert gen.render("numpy.linalg.norm", [("np", "numpy"), ("la", "numpy.linalg")], "m") == "la.norm"


def test_positions_follow_the_paper(built):
    work = work_points(built)
    n, m = work[0]["function_lines"], work[0]["api_count"]
    assert (n, m) == (9, 7)  # def line .. return line; seven resolved calls (text.upper() is unresolved)
    for b, p in enumerate(work, 1):
        a = p["line_in_function"]
        assert p["api_index"] == b and p["position"] == gen.position(a, n, b, m)
    # a/n, b/m: 2/9 1/7 | 3/9 2/7 | 4/9 3/7 | 5/9 4/7 | 6/9 5/7 | 7/9 6/7 | 8/9 7/7
    assert [p["position"] for p in work] == ["front", "middle", "middle", "middle", "middle", "back", "back"]
    assert gen.position(1, 8, 1, 8) == "front" and gen.position(8, 8, 8, 8) == "back"
    assert gen.position(1, 8, 8, 8) == "other"


def test_length_buckets_are_the_shortest_and_longest_five_percent(built):
    _, points, _, _ = built
    pads = {p["function"]: p["length_bucket"] for p in points if p["function"].startswith("pad")}
    # 22 functions hold points (20 pads, work, helper has no call): ceil(5%) = 2 short and 2 long
    assert built[3]["functions"] == 21
    assert pads["pad0"] == "short" and pads["pad19"] == "long" and pads["pad18"] == "long"
    assert pads["pad10"] == "moderate"
    assert gen.length_buckets({("f", str(i)): i for i in range(100)}) == {
        ("f", str(i)): "short" if i < 5 else "long" if i >= 95 else "moderate" for i in range(100)}


def test_ngram_baseline_rankings(built):
    _, points, base, _ = built
    by_id = {p["point_id"]: p for p in points}
    assert len(base) == len(points)
    for row in base:
        p = by_id[row["point_id"]]
        assert row["model"] == "ngram" and row["top"][:5] == p["candidates"]
        if p["api"] in row["top"]:
            assert row["gold_rank"] == row["top"].index(p["api"]) + 1
    unseen = [r for r in base if by_id[r["point_id"]]["api"] == "requests.get"]
    assert unseen[0]["gold_rank"] is None and not unseen[0]["gold_in_candidates"]
    ng = gen.NGram([["a", "b"], ["a", "c"], ["a", "b"], ["d"]])
    assert ng.rank("a") == ["b", "c", "a", "d"] and ng.rank(None) == ["a", "d", "b", "c"]


def views(points: list[dict], rankings: list[dict], queries: list[dict] = (), query_rankings: list[dict] = (),
          predictions: list[dict] = (), twins: dict[str, str] | None = None) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    metrics.install(con)
    # the warehouse's model_twins view (pipeline/warehouse/sql/20_models.sql), from model -> twin
    con.register("_t", pa.Table.from_pylist([{"model": m, "twin": t} for m, t in (twins or {}).items()],
                                            pa.schema([("model", pa.string()), ("twin", pa.string())])))
    con.execute("CREATE VIEW model_twins AS SELECT * FROM _t")
    con.register("_p", pa.Table.from_pylist(points, schemas.POINTS))
    con.register("_b", pa.Table.from_pylist(rankings, schemas.BASELINES))
    con.register("_q", pa.Table.from_pylist(list(queries), schemas.QUERIES))
    con.register("_qb", pa.Table.from_pylist(list(query_rankings), schemas.BASELINES))
    con.register("_r", pa.Table.from_pylist(list(predictions), schemas.PREDICTIONS))
    con.execute("CREATE VIEW apirec_points AS SELECT * FROM _p; CREATE VIEW apirec_baselines AS SELECT * FROM _b; "
                "CREATE VIEW apirec_queries AS SELECT * FROM _q; CREATE VIEW apirec_query_baselines AS SELECT * FROM _qb; "
                "CREATE VIEW apirec_predictions AS SELECT * FROM _r")
    for f in sorted((REPO / "pipeline/families/apirec/sql").glob("*.sql")):
        if "contamination" in f.name:  # reads the warehouse's core tables (manifest, models): tests/test_contamination.py
            continue
        con.execute(f.read_text())
    return con


def point(pid: str, api: str, siblings: int = 1, category: str = "stdlib") -> dict:
    return {"point_id": pid, "file_id": "f", "source": "s", "repository": "r", "path": "p", "split": "test",
            "domain": "general", "function": "f", "line": 1, "col": 0, "written": api, "api": api,
            "api_class": gen.api_class(api), "category": category,
            "library_group": gen.library_group(category, api, ("json",)), "previous_api": None, "api_index": 1,
            "api_count": 1, "line_in_function": 1, "function_lines": 1, "position": "front",
            "length_bucket": "moderate", "imports": "", "context": "", "class_siblings": siblings, "seen": True,
            "candidates": [], "candidate_texts": []}


def ranking(pid: str, top: list[str], gold: str) -> dict:
    rank = top.index(gold) + 1 if gold in top else None
    crank = next((i + 1 for i, a in enumerate(top) if gen.api_class(a) == gen.api_class(gold)), None)
    return {"point_id": pid, "model": "ngram", "ranker": "ngram", "status": "ok", "gold_rank": rank,
            "class_rank": crank, "n_candidates": len(top), "gold_in_candidates": rank is not None, "top": top,
            "gold_logprob": None}


def test_table5_views_on_hand_built_rankings():
    # p1: top-1 is the right class only, the exact API never returned (paper NDCG 1.0, standard < 1)
    # p2: exact API at rank 2 after a wrong one; p3: nothing relevant
    pts = [point("p1", "os.path.join", siblings=1), point("p2", "json.loads", siblings=0, category="third_party"),
           point("p3", "re.sub", siblings=0)]
    rks = [ranking("p1", ["os.path.exists", "json.dumps", "x.y"], "os.path.join"),
           ranking("p2", ["os.getcwd", "json.loads", "x.y"], "json.loads"),
           ranking("p3", ["a.b", "c.d"], "re.sub")]
    con = views(pts, rks)
    got = {r[0]: r[1:] for r in con.sql(
        "SELECT point_id, sr_method, sr_class, map_apibench_method, map_standard_method, map_apibench_class, "
        "map_standard_class, mrr_method, ndcg_apibench, ndcg_standard, ndcg_apibench_topk, ndcg_standard_method "
        "FROM apirec_point_scores WHERE k = 3").fetchall()}
    assert got["p1"][:2] == (0, 1) and got["p1"][6] == 0
    assert got["p1"][4] == 1.0 and got["p1"][5] == pytest.approx(0.5)  # class level: 2 relevant exist, 1 found
    # code points: the paper's NDCG is method level (Table 7), so a class-only hit gains nothing; the top-k 2/1
    # reading scores it 1 (IDCG from the returned top k itself)
    assert got["p1"][7] == 0 and got["p1"][9] == pytest.approx(1.0) and got["p1"][10] == 0
    assert got["p1"][8] == pytest.approx(1 / (2 + 1 / 1.5849625007211563))  # ideal [2, 1]
    assert got["p2"][:4] == (1, 1, 0.5, 0.5) and got["p2"][6] == 0.5
    lg3 = 1.5849625007211563
    assert got["p2"][7] == pytest.approx(1 / lg3) == got["p2"][10]  # method level: 1/log2(3), the gold returned
    assert got["p2"][9] == pytest.approx((2 / lg3) / 2) == got["p2"][8]
    assert got["p3"] == (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    # Table 7's pattern: NDCG@1 = SR@1 for code points
    assert con.sql("SELECT bool_and(pattern_holds) FROM apirec_ndcg_at_1").fetchall() == [(True,)]
    m = dict(con.sql("SELECT k, sr_method FROM apirec_metrics").fetchall())
    assert m == {1: 0.0, 3: pytest.approx(1 / 3, abs=1e-4), 5: pytest.approx(1 / 3, abs=1e-4), 10: pytest.approx(1 / 3, abs=1e-4)}
    cats = con.sql("SELECT value, points, sr10_method FROM apirec_breakdown WHERE dimension = 'category'").fetchall()
    assert cats == [("stdlib", 2, 0.0), ("third_party", 1, 1.0)]
    assert con.sql("SELECT count(*) FROM apirec_sr_ci").fetchall() == [(2,)]
    ci = con.sql("SELECT dimension, value, n, sr10_method, lo, hi FROM apirec_breakdown_ci "
                 "WHERE dimension = 'category' ORDER BY value").fetchall()
    assert ci == [("category", "stdlib", 2, 0.0, 0.0, 0.0), ("category", "third_party", 1, 1.0, 1.0, 1.0)]
    assert {r[1] for r in con.sql("SELECT * FROM apirec_headline").fetchall()} == {
        "ngram_sr_at_1_method", "ngram_sr_at_10_method", "ngram_mrr_method", "ngram_pool_recall"}


def test_twin_diff_pairs_a_model_with_its_twin_on_the_same_points():
    pts = [point(f"p{i}", "os.path.join" if i % 2 else "json.loads") for i in range(6)]
    golds = {p["point_id"]: p["api"] for p in pts}
    other = {"os.path.join": "os.getcwd", "json.loads": "json.dumps"}

    def pred(model: str, pid: str, first: bool) -> dict:
        gold = golds[pid]
        top = [gold, other[gold]] if first else [other[gold], gold]
        return dict(ranking(pid, top, gold), model=model, ranker="rerank_ngram")

    # the model ranks the gold first on p0..p4, its twin on p0 only; both second otherwise
    preds = [pred("m", p, p != "p5") for p in golds] + [pred("m-random", p, p == "p0") for p in golds]
    con = views(pts, [ranking(p["point_id"], [p["api"]], p["api"]) for p in pts], predictions=preds,
                twins={"m": "m-random"})
    rows = {(r[0], r[1]): r[2:] for r in con.sql(
        "SELECT language, metric, n, score, twin_score, diff, lo, hi, beats_twin FROM apirec_twin_diff "
        "WHERE model = 'm' AND twin = 'm-random' AND ranker = 'rerank_ngram'").fetchall()}
    n, score, twin, diff, lo, hi, beats = rows[("all", "SR@1")]
    assert (n, score, twin, diff) == (6, round(5 / 6, 4), round(1 / 6, 4), round(4 / 6, 4))
    assert lo <= diff <= hi and beats == (lo > 0)
    assert rows[("all", "SR@5")][1:4] == (1.0, 1.0, 0.0)  # both rank the gold within 5 everywhere
    assert con.sql("SELECT count(*) FROM apirec_twin_diff WHERE model = 'ngram'").fetchall() == [(0,)]


def test_ide_baseline_never_runs_corpus_code(tmp_path):
    marker = tmp_path / "MARKER"
    evil = (f"import os\nimport payload\nfrom pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n\n\n"
            "def go(p):\n    payload.run()\n    return os.path.join(p, 'x')\n")
    payload = f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n\n\ndef run():\n    pass\n"
    rows = [manifest_row(tmp_path, "bad", "bad/evil.py", evil, "test"),
            manifest_row(tmp_path, "bad", "bad/payload.py", payload, "test"),
            manifest_row(tmp_path, "lib", "lib/train.py", TRAIN, "train")]
    manifest = pa.Table.from_pylist(rows, core_schemas.MANIFEST)
    tables, _, _ = build(manifest, 1, 30, 100000, Cache(None))
    for typed in (0, 1):
        points, base, stats = gen.generate(tables["usages"], tables["imports"], manifest, tmp_path, {}, "general",
                                           "test", 0, 5, 10, 0, ide_max_points=0, ide_typed_chars=typed)
        jedi = {r["point_id"]: r for r in base.to_pylist() if r["model"] == "jedi"}
        assert stats["ide_points"] == len(jedi) == points.num_rows >= 2  # 0: every point
        join = next(p for p in points.to_pylist() if p["api"] == "os.path.join")
        row = jedi[join["point_id"]]  # completes `os.path.` (`os.path.j`) from the file alone, in jedi's order
        if typed == 0:  # nothing typed after the qualifier: jedi's order is alphabetical
            assert row["gold_in_candidates"] and row["top"][0] == "os.path.abspath" and row["gold_rank"] > 10
        else:
            assert row["top"][0] == "os.path.join" and row["gold_rank"] == 1
    assert not marker.exists()


def test_ide_names_the_files_own_definitions_by_its_module():
    from pipeline.families.apirec import ide

    code = "import os\n\n\ndef helper(x):\n    return x\n\n\ndef go():\n    "
    assert ide.typed_prefix("os.path.join", 2) == "os.path.jo" and ide.typed_prefix("helper", 0) == ""
    with ide.project() as project, ide.project() as other:
        got = ide.complete(code, "helper", project, typed=2, key="f1", module="pkg.mod")
        assert "pkg.mod.helper" in got and not any(n.startswith("__main__.") for n in got)
        # a second cut of the same file under the same key (jedi's diff parser) gives the same answer as a fresh one
        again = ide.complete(code + "x = 1\n    ", "helper", project, typed=2, key="f1", module="pkg.mod")
        fresh = ide.complete(code + "x = 1\n    ", "helper", other, typed=2, key="f2", module="pkg.mod")
        folders = [Path(project.path), Path(other.path)]
        assert all(f.is_dir() for f in folders)
    assert not any(f.exists() for f in folders)  # issue 37 F: no folder left behind per run
    assert again == fresh and "pkg.mod.helper" in again


def test_ide_parse_trees_are_never_evicted_by_the_clock_and_each_file_is_dropped_when_done():
    """parso drops trees unused for 10 minutes once 600 are cached, while jedi may still look one up (a KeyError
    that made which points fail depend on the machine's speed, and crashed a 4,920-file build): inside
    ide.project() nothing is evicted by time; forget() drops a finished file; the block's end drops the rest."""
    import parso.cache

    from pipeline.families.apirec import ide

    code = "import os\n\n\ndef go():\n    "
    survival = parso.cache._CACHED_FILE_MINIMUM_SURVIVAL
    with ide.project() as project:
        assert ide.complete(code, "os.path.join", project, typed=1, key="f1")
        assert ide.complete(code, "os.path.join", project, typed=1, key="f2")
        grammar = next(g for g, t in parso.cache.parser_cache.items() if Path(project.path) / "f1.py" in t)
        item = parso.cache.parser_cache[grammar][Path(project.path) / "f1.py"]
        item.last_used = 0.0  # unused "since 1970"
        fillers = [Path(f"/nonexistent/filler{i}.py") for i in range(parso.cache._CACHED_SIZE_TRIGGER)]
        for f in fillers:  # enough trees to start parso's collection (it rebuilds the map), which keeps them all here
            parso.cache._set_cache_item(grammar, f, item)
        trees = parso.cache.parser_cache[grammar]
        assert Path(project.path) / "f1.py" in trees
        ide.forget(project, "f1")
        assert Path(project.path) / "f1.py" not in trees and Path(project.path) / "f2.py" in trees
        folder = Path(project.path)
    assert not any(p is not None and Path(p).parent == folder for t in parso.cache.parser_cache.values() for p in t)
    assert parso.cache._CACHED_FILE_MINIMUM_SURVIVAL == survival
    for t in parso.cache.parser_cache.values():
        for f in fillers:
            t.pop(f, None)


def query(qid: str, api: str, leaky: bool, siblings: int = 0, category: str = "stdlib") -> dict:
    return {"query_id": qid, "origin": "docstring", "file_id": "f", "source": "s", "repository": "r", "path": "p",
            "split": "test", "domain": "general", "line": 1, "text": "t", "norm": "t", "api": api,
            "api_class": gen.api_class(api), "kind": "function", "category": category, "leaky": leaky, "answers": 1,
            "duplicates": 0, "class_siblings": siblings, "candidates": []}


def test_query_metrics_with_and_without_leaky_queries():
    qs = [query("q1", "os.path.join", True), query("q2", "json.loads", False),
          query("q3", "re.sub", False, category="third_party")]
    bm25 = [dict(ranking("q1", ["os.path.join"], "os.path.join"), model="bm25", ranker="bm25"),
            dict(ranking("q2", ["json.dumps", "json.loads"], "json.loads"), model="bm25", ranker="bm25"),
            dict(ranking("q3", ["a.b"], "re.sub"), model="bm25", ranker="bm25")]
    # the encoder scores q2 and could not embed q1 (no_vector): q1 counts as a miss, not a smaller denominator
    enc = [dict(ranking("q2", ["json.loads"], "json.loads"), model="minilm", ranker="embed_bm25"),
           dict(ranking("q1", [], "os.path.join"), model="minilm", ranker="embed_bm25", status="no_vector",
                gold_in_candidates=True)]
    con = views([point("p1", "os.getcwd")], [ranking("p1", ["os.getcwd"], "os.getcwd")], qs, bm25, enc)
    got = {r[:3]: r[3:] for r in con.sql("SELECT benchmark, subset, ranker, points, sr_method, mrr_method "
                                         "FROM apirec_metrics WHERE k = 1").fetchall()}
    assert got == {("code", "all", "ngram"): (1, 1.0, 1.0),
                   ("query", "all", "bm25"): (3, pytest.approx(1 / 3, abs=1e-4), pytest.approx(0.5, abs=1e-4)),
                   ("query", "non_leaky", "bm25"): (2, 0.0, 0.25),
                   ("query", "stdlib", "bm25"): (2, 0.5, 0.75),  # the paper's APIBench-Q: standard APIs only
                   ("query", "stdlib_non_leaky", "bm25"): (1, 0.0, 0.5),
                   ("query", "all", "embed_bm25"): (2, 0.5, 0.5),
                   ("query", "non_leaky", "embed_bm25"): (1, 1.0, 1.0),
                   ("query", "stdlib", "embed_bm25"): (2, 0.5, 0.5),
                   ("query", "stdlib_non_leaky", "embed_bm25"): (1, 1.0, 1.0)}
    scored = dict(con.sql("SELECT ranker, scored FROM apirec_metrics WHERE k = 1 AND subset = 'all'").fetchall())
    assert scored == {"ngram": 1, "bm25": 3, "embed_bm25": 1}
    k10 = dict(con.sql("SELECT ranker || subset, sr_method FROM apirec_metrics WHERE k = 10 AND benchmark = 'query'").fetchall())
    assert k10["bm25all"] == pytest.approx(2 / 3, abs=1e-4) and k10["bm25non_leaky"] == 0.5
    leaky = con.sql("SELECT value, points, sr1_method FROM apirec_breakdown WHERE dimension = 'leaky' "
                    "AND ranker = 'bm25' ORDER BY value").fetchall()
    assert leaky == [("false", 2, 0.0), ("true", 1, 1.0)]
    head = dict(con.sql("SELECT model || ':' || metric, value FROM apirec_headline").fetchall())
    assert head["bm25:bm25_non_leaky_sr_at_10_method"] == 0.5 and head["minilm:embed_bm25_sr_at_1_method"] == 0.5
    assert head["bm25:bm25_stdlib_sr_at_1_method"] == 0.5 and head["minilm:embed_bm25_pool_recall"] == 1.0
    cov = con.sql("SELECT benchmark, ranker, points, gold_in_candidates FROM apirec_coverage ORDER BY ALL").fetchall()
    assert cov == [("code", "ngram", 1, 1.0), ("query", "bm25", 3, pytest.approx(2 / 3, abs=1e-4)),
                   ("query", "embed_bm25", 2, 1.0)]
    # paired against BM25 on the same two queries: SR@1 a = [0, 1], b = [1, 0]; SR@10 a = [0, 1], b = [1, 1]
    paired = {(r[0], r[1]): r[2:] for r in con.sql(
        "SELECT subset, k, baseline, n, sr_method, baseline_sr_method, diff, replicates FROM apirec_vs_baseline "
        "JOIN (SELECT 1000 AS replicates) ON true WHERE ranker = 'embed_bm25'").fetchall()}
    assert paired[("all", 1)][:5] == ("bm25", 2, 0.5, 0.5, 0.0)
    assert paired[("all", 10)][:5] == ("bm25", 2, 0.5, 1.0, -0.5)
    assert head["minilm:embed_bm25_sr_at_10_minus_bm25"] == -0.5
    # Table 6's pattern for queries: method SR@1 <= NDCG@1 <= class SR@1
    assert con.sql("SELECT bool_and(pattern_holds) FROM apirec_ndcg_at_1").fetchall() == [(True,)]
    md = report_of(con)
    assert "paper Table 6: BIKER" in md and "| query | all | minilm | embed_bm25 | bm25 | 10 | 2 |" in md
    assert md.index("ours, query: bm25/bm25 (stdlib)") < md.index("ours, query: bm25/bm25 (all)")


def report_of(con) -> str:
    import tempfile

    from pipeline.families.apirec import report

    con.execute("CREATE TABLE IF NOT EXISTS not_applicable (family VARCHAR, model VARCHAR, reason VARCHAR)")
    return str(report.section(con, Path(tempfile.mkdtemp()), "figures", {}))


def test_cross_domain_and_library_groups():
    assert [gen.library_group(c, f, ("flask", "numpy")) for c, f in [
        ("stdlib", "os.getcwd"), ("third_party", "flask.Flask"), ("third_party", "requests.get"),
        ("user_defined", "app.util.helper"), ("third_party", "numpy.array")]] == [
        "stdlib", "popular_third_party", "other_third_party", "user_defined", "popular_third_party"]
    pts = [dict(point("p1", "os.getcwd"), domain="web", path="a.py"),
           dict(point("p2", "os.getcwd"), domain="general", path="b.py")]
    rks = [ranking("p1", ["os.getcwd"], "os.getcwd"), ranking("p2", ["x.y"], "os.getcwd"),
           dict(ranking("p1", ["x.y"], "os.getcwd"), model="ngram@general", ranker="ngram_domain"),
           dict(ranking("p2", ["os.getcwd"], "os.getcwd"), model="ngram@general", ranker="ngram_domain")]
    con = views(pts, rks)
    got = con.sql("SELECT train_domain, test_domain, n, sr10_method FROM apirec_cross_domain").fetchall()
    assert got == [("all", "general", 1, 0.0), ("all", "web", 1, 1.0), ("general", "general", 1, 1.0),
                   ("general", "web", 1, 0.0)]
    # the per-domain n-grams stay out of scores.json and the paired table
    assert not con.sql("SELECT * FROM apirec_headline WHERE metric LIKE 'ngram_domain%'").fetchall()
    groups = con.sql("SELECT DISTINCT value FROM apirec_breakdown WHERE dimension = 'library_group'").fetchall()
    assert groups == [("stdlib",)]
    md = report_of(con)
    assert "| all | web | 1 | 1.00 |" in md and "paper Table 9: TravTrans" in md


def test_cross_domain_ngrams_rank_every_point(built):
    _, points, _, _ = built
    from pipeline.families.apirec.generate import cross_domain_rows, train_counts

    seqs = {("a", "f"): [{"fqn": "os.getcwd", "split": "train", "source": "s1"}],
            ("b", "g"): [{"fqn": "json.loads", "split": "train", "source": "s2"}],
            ("c", "h"): [{"fqn": "re.sub", "split": "test", "source": "s2"}]}
    rows = cross_domain_rows(points, train_counts(seqs, {"s1": "web"}, "general"), 10)
    assert len(rows) == 2 * len(points) and {r["model"] for r in rows} == {"ngram@general", "ngram@web"}
    web = [r for r in rows if r["model"] == "ngram@web"]
    assert all(r["top"] == ["os.getcwd"] and r["ranker"] == "ngram_domain" for r in web)
    assert cross_domain_rows(points, train_counts(seqs, {}, "general"), 10) == []  # one training domain: nothing to compare


def test_standard_scores_stay_within_one_when_a_ranker_returns_unknown_class_members():
    # the train split knows no other os.path API (siblings 0), but jedi lists three of them
    con = views([point("p1", "os.path.join", siblings=0)],
                [ranking("p1", ["os.path.abspath", "os.path.basename", "os.path.join", "x.y"], "os.path.join")])
    got = con.sql("SELECT k, map_standard_class, ndcg_standard FROM apirec_point_scores ORDER BY k").fetchall()
    assert got[-1][1] == pytest.approx(1.0) and all(0 <= m <= 1 and 0 <= n <= 1 for _, m, n in got)
    # ideal = [2, 1, 1]; returned [1, 1, 2]: DCG@3 = 1 + 1/log2(3) + 2/2, IDCG@3 = 2 + 1/log2(3) + 1/2
    lg3 = 1.5849625007211563
    assert got[1][2] == pytest.approx((1 + 1 / lg3 + 1) / (2 + 1 / lg3 + 0.5))


def test_in_class_macro_equals_the_regex_it_replaces():
    """apirec_in_class (grading without a regex per returned element) = regexp_replace(x, '\\.[^.]*$', '') = cls,
    NULLs, dot-free names, trailing dots and non-ASCII included."""
    sql = (REPO / "pipeline/families/apirec/sql/10_views.sql").read_text()
    start = sql.index("CREATE MACRO apirec_in_class")
    con = duckdb.connect()
    con.execute(sql[start:sql.index(";", start)])
    xs = ["lib.C1.m", "lib.C1", "lib.C1.", "lib.C1.m.n", "foo", "lib.C10.m", "", ".", "lib..m", "ä.b.c", "ä.b", None]
    classes = ["lib.C1", "lib", "foo", "", "ä.b", "ä", None, "lib."]
    rows = con.execute("SELECT apirec_in_class(x, c), regexp_replace(x, '\\.[^.]*$', '') = c "
                       "FROM unnest(?) a(x), unnest(?) b(c)", [xs, classes]).fetchall()
    assert len(rows) == len(xs) * len(classes)
    assert all(mine is ref or mine == ref for mine, ref in rows)
    # in class: lib.C1.m and lib.C1. (lib.C1), lib.C1 (lib), foo (foo), '' ('': dot-free), '.' (''), lib..m (lib.),
    # ä.b.c (ä.b), ä.b (ä)
    assert sum(bool(mine) for mine, _ in rows) == 9


def test_bm25_corpus_token_ids_are_the_tokens_text_by_text():
    """BM25Index tokenizes the whole corpus in one regex pass (texts joined by NUL): the same tokens, documents
    and first-seen vocabulary as `tokens` text by text, at the edges too (a camel-case run at a text's end, empty
    and stop-word-only texts, one text, none, a text holding a NUL)."""
    import random
    from itertools import chain

    from pipeline.families.apirec.queries import BM25Index

    index = BM25Index(["a"], ["path join"])
    cases = [["HTTPServer ABC", "Def x2 the", "", "the a an", "getItem_ofJSON os.path.join", "ÄÖ é ünïcode x"],
             ["just one text here"], [], ["", ""], ["the", "a"], ["a\0b", "Path\0Join", "c"]]
    rnd = random.Random(5)  # and fuzz: letters of both cases, digits, separators, non-ASCII
    cases.append(["".join(rnd.choice("aAbBzZ09_. -é\nÄx") for _ in range(rnd.randint(0, 30))) for _ in range(500)])
    for texts in cases:
        docs = [index.tokens(t) for t in texts]
        want = {w: i for i, w in enumerate(dict.fromkeys(chain.from_iterable(docs)))}
        vocab, flat, lengths = index.corpus_token_ids(texts)
        assert vocab == want and list(vocab) == list(want), texts
        assert lengths.tolist() == [len(d) for d in docs], texts
        assert flat.tolist() == [want[w] for w in chain.from_iterable(docs)], texts


def test_bm25_index_build_imports_nothing():
    """bm25s is imported once, in the job's set-up (`load_bm25s`, called by main): an index build after it
    imports nothing (counted, not timed)."""
    import builtins

    from pipeline.families.apirec import queries

    queries.load_bm25s()
    seen = []
    real = builtins.__import__

    def counting(name, *args, **kwargs):
        seen.append(name)
        return real(name, *args, **kwargs)

    builtins.__import__ = counting
    try:
        queries.BM25Index(["m.a", "m.b"], ["read a file", "write json"])
    finally:
        builtins.__import__ = real
    assert [n for n in seen if n.startswith("bm25s")] == [] and seen == [], seen
    assert "load_bm25s()" in (Path(queries.__file__).read_text().split("def main(", 1)[1])


def test_bm25_index_matrix_is_bm25s_own_build_entry_for_entry():
    """BM25Index builds bm25s's Lucene score matrix in whole-corpus numpy (`lucene_matrix`): every entry has
    the bits of bm25s's own per-document build, and every query's scores too."""
    import random

    import bm25s

    from pipeline.families.apirec.queries import BM25Index

    rnd = random.Random(3)
    words = ["path", "join", "read", "file", "the", "json", "loads", "dumps", "parse", "HTTPServer", "get_item", "x2",
             "walk", "os", "sys", "list", "dir", "encode", "utf8", "stream", "buffer", "socket", "connect"]
    texts = [" ".join(rnd.choice(words) for _ in range(rnd.randint(1, 40))) for _ in range(400)] + ["the a an", ""]
    ours = BM25Index([f"m.f{i}" for i in range(len(texts))], texts)
    ref = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    ref.index([ours.tokens(t) for t in texts], show_progress=False)
    assert ours.model.scores["num_docs"] == ref.scores["num_docs"] == len(texts)
    assert set(ours.model.vocab_dict) == set(ref.vocab_dict)
    for w, i in ours.model.vocab_dict.items():
        if w == "":
            continue
        j = ref.vocab_dict[w]
        a = slice(ours.model.scores["indptr"][i], ours.model.scores["indptr"][i + 1])
        c = slice(ref.scores["indptr"][j], ref.scores["indptr"][j + 1])
        assert ours.model.scores["indices"][a].tolist() == ref.scores["indices"][c].tolist(), w
        assert ours.model.scores["data"][a].tobytes() == ref.scores["data"][c].tobytes(), w
    assert ours.model.scores["data"].dtype == ref.scores["data"].dtype == np.float32
    for _ in range(50):
        q = [w for w in ours.tokens(" ".join(rnd.sample(words, 4))) if w in ref.vocab_dict]
        got = ours.scores(" ".join(q)) if q else None
        if q:
            assert got.tobytes() == ref.get_scores(q).tobytes()
