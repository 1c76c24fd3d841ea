"""apirec Java points (pipeline/families/apirec/java.py) on hand-written Java files: every resolution
case, the context cut exactly before the call, unresolved receivers counted, the Java n-gram, the
language breakdown of the views. The JDK is a stub corpus of a few classes (the default run indexes
the real one the same way)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from pipeline import metrics
from pipeline import schemas as core_schemas
from pipeline.families.apirec import java, schemas

REPO = Path(__file__).resolve().parent.parent

JDK = {
    "java/lang/String.java": "package java.lang;\npublic final class String {\n    public int length() { return 0; }\n"
                             "    public String trim() { return this; }\n}\n",
    "java/lang/Math.java": "package java.lang;\npublic final class Math {\n    public static int max(int a, int b) "
                           "{ return a; }\n}\n",
    "java/lang/System.java": "package java.lang;\nimport java.io.PrintStream;\npublic final class System {\n"
                             "    public static final PrintStream out = null;\n}\n",
    "java/io/PrintStream.java": "package java.io;\npublic class PrintStream {\n    public void println(Object x) {}\n}\n",
    "java/util/List.java": "package java.util;\npublic interface List<E> {\n    boolean add(E e);\n    int size();\n"
                           "    void clear();\n}\n",
    "java/util/ArrayList.java": "package java.util;\npublic class ArrayList<E> implements List<E> {\n"
                                "    public boolean add(E e) { return true; }\n    public int size() { return 0; }\n"
                                "    public void clear() {}\n}\n",
    "java/util/Collections.java": "package java.util;\npublic class Collections {\n"
                                  "    public static <T> void sort(List<T> list) {}\n"
                                  "    public static <T> List<T> emptyList() { return null; }\n}\n",
    "java/util/Map.java": "package java.util;\npublic interface Map<K, V> {\n    interface Entry<K, V> {\n"
                          "        K getKey();\n    }\n}\n",
}

HELPER = """package demo;

public class Helper {
    public static int help() { return 1; }
}
"""

MAIN = """package demo;

import java.util.*;
import java.util.Collections;
import java.util.List;
import org.acme.Widget;
import static java.util.Collections.emptyList;

public class Main<T> {
    private List<String> items;

    public void work(List<String> xs, String s, T t, Map.Entry<String, Integer> e) {
        Collections.sort(xs);
        List<String> ys = new ArrayList<>();
        xs.add("a");
        items.size();
        this.items.clear();
        int m = Math.max(1, 2);
        int n = "abc".length() + s.length();
        System.out.println(ys);
        Helper.help();
        Widget.make();
        e.getKey();
        emptyList();
        local();
        var zs = new ArrayList<String>();
        zs.size();
        java.util.Collections.sort(zs);
        ((List) zs).clear();
        t.hashCode();
        new Unknown();
        xs.stream().count();
        xs.forEach(x -> x.trim());
        super.toString();
        inherited();
    }

    private void local() {
        int k = 0;
        Helper.help();
    }
}
"""
# Hand count of work(): 26 calls (method invocations and constructors), 20 resolved (below, source
# order); unresolved: t.hashCode() (a type parameter: untyped_variable), new Unknown() (unknown_type),
# xs.stream().count() (call_result; xs.stream() itself resolves), x.trim() (lambda parameter:
# untyped_variable), xs.forEach(...) resolves, super.toString() (super), inherited() (unqualified_unknown).
# local(): Helper.help() resolves. In all 27 calls, 21 resolved.
WORK_APIS = [
    "java.util.Collections.sort", "java.util.ArrayList.<init>", "java.util.List.add", "java.util.List.size",
    "java.util.List.clear", "java.lang.Math.max", "java.lang.String.length", "java.lang.String.length",
    "java.io.PrintStream.println", "demo.Helper.help", "org.acme.Widget.make", "java.util.Map.Entry.getKey",
    "java.util.Collections.emptyList", "demo.Main.local", "java.util.ArrayList.<init>", "java.util.ArrayList.size",
    "java.util.Collections.sort", "java.util.List.clear", "java.util.List.stream", "java.util.List.forEach",
]
HOW = {"static": 5, "constructor": 2, "variable": 6, "field": 2, "literal": 1, "static_field": 1,
       "static_import": 1, "unqualified": 1, "cast": 1}

TRAIN = """package lib;

import java.util.ArrayList;
import java.util.List;

public class Train {
    void a() {
        List<String> xs = new ArrayList<>();
        xs.add("x");
        xs.add("y");
    }

    void b() {
        List<String> ys = new ArrayList<>();
        ys.size();
    }
}
"""


def row(root: Path, source: str, repo: str, path: str, text: str, split: str) -> dict:
    loc = root / source / path
    loc.parent.mkdir(parents=True, exist_ok=True)
    loc.write_text(text)
    return {"file_id": hashlib.sha256(f"{source}/{path}".encode()).hexdigest()[:16],
            "sha256": hashlib.sha256(text.encode()).hexdigest(), "source": source, "repository": repo,
            "path": path, "location": str(loc), "language": "java", "encoding": "utf-8",
            "bytes": len(text.encode()), "lines": text.count("\n"), "split": split, "duplicate": False}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("apirec_java")
    rows = [row(root, "jdk", "java.base/" + p.rsplit("/", 1)[0], "java.base/" + p, t, "valid") for p, t in JDK.items()]
    rows += [row(root, "app", "app", "app/demo/Main.java", MAIN, "test"),
             row(root, "app", "app", "app/demo/Helper.java", HELPER, "test"),
             row(root, "lib", "lib", "lib/Train.java", TRAIN, "train")]
    points, base, stats = java.java_points(rows, root, {"app": "web"}, "general", "test", 0, 5, 10, 1)
    return {r["path"]: r for r in rows}, points, base, stats


def by_line(points):
    return sorted(points, key=lambda p: (p["line"], p["col"]))


def test_every_resolution_case_and_its_category(built):
    _, points, _, stats = built
    work = [p for p in by_line(points) if p["function"].startswith("Main.work:")]
    assert [p["api"] for p in work] == WORK_APIS
    assert stats["calls"] == 27 and stats["resolved"] == 21 and stats["coverage"] == round(21 / 27, 4)
    assert stats["resolved_by_how"] == {**HOW, "static": 6}  # + Helper.help() in local()
    assert stats["unresolved_by_reason"] == {"call_result": 1, "super": 1, "unknown_type": 1,
                                             "unqualified_unknown": 1, "untyped_variable": 2}
    cats = {p["api"]: p["category"] for p in work}
    assert cats["java.util.List.add"] == "stdlib" and cats["demo.Helper.help"] == "user_defined"
    assert cats["org.acme.Widget.make"] == "third_party" and cats["demo.Main.local"] == "user_defined"
    from pipeline.families.apirec.java import Index, category
    assert [category(c, "r", Index()) for c in ("jdk.internal.misc.Unsafe", "sun.nio.ch.Util", "javax.swing.JButton",
                                                "org.acme.Widget")] == ["stdlib", "stdlib", "stdlib", "third_party"]
    assert {p["api_class"] for p in work if p["api"].endswith("<init>")} == {"java.util.ArrayList"}
    assert all(p["domain"] == "web" and p["split"] == "test" for p in points)


def test_context_is_cut_exactly_before_the_call(built):
    rows, points, _, _ = built
    text = MAIN
    lines = text.splitlines(keepends=True)
    header = "\n".join(x for x in text.splitlines() if x.startswith(("package ", "import ")))
    work_start = sum(len(x) for x in lines[:11])  # `public void work(` is line 12
    assert lines[11].lstrip().startswith("public void work(")
    for p in points:
        if p["path"] != "app/demo/Main.java":
            continue
        offset = sum(len(x) for x in lines[:p["line"] - 1]) + p["col"]
        assert text[offset:].startswith(p["written"])
        assert p["context"].startswith(header + "\n\n")
        body = p["context"][len(header) + 2:]
        start = work_start if p["function"].startswith("Main.work:") else text.index("    private void local()")
        assert body == text[start:offset]  # the method from its first line, up to the call and no further
    sort = next(p for p in points if p["written"] == "Collections.sort")
    assert "Collections.sort(" not in sort["context"] and sort["context"].endswith("{\n        ")
    new = next(p for p in points if p["written"] == "new ArrayList<>")
    assert new["context"].endswith("List<String> ys = ")
    chain = next(p for p in points if p["written"] == "System.out.println")
    assert chain["api"] == "java.io.PrintStream.println" and chain["line"] == 20 and chain["col"] == 8
    # the point's own call is never in its context: the context is a strict prefix of the file before it
    for p in points:
        assert p["context"].count(p["written"] + "(") == sum(
            1 for q in points if q["file_id"] == p["file_id"] and q["function"] == p["function"]
            and (q["line"], q["col"]) < (p["line"], p["col"]) and q["written"] == p["written"])


def test_positions_and_previous_apis(built):
    _, points, _, _ = built
    work = [p for p in by_line(points) if p["function"].startswith("Main.work:")]
    assert [p["api_index"] for p in work] == list(range(1, 21)) and {p["api_count"] for p in work} == {20}
    assert work[0]["previous_api"] is None and work[1]["previous_api"] == "java.util.Collections.sort"
    first = work[0]  # line 13 of a 25-line method (lines 12..36): a = 2 (2/25 < 1/4), b = 1 of 20
    assert (first["line_in_function"], first["function_lines"]) == (2, 25)
    assert first["position"] == "front"
    assert work[9]["position"] == "middle" and work[-1]["position"] == "back"


def test_java_ngram_and_candidate_rendering(built):
    _, points, base, stats = built
    assert stats["train_apis"] == 3  # ArrayList.<init>, List.add, List.size from the Java train split only
    new = next(p for p in points if p["written"] == "new ArrayList<>")
    assert new["candidates"] == ["java.util.ArrayList.<init>", "java.util.List.add", "java.util.List.size"]
    assert new["candidate_texts"] == ["new ArrayList", "List.add", "List.size"]
    add = next(p for p in points if p["written"] == "xs.add")
    assert add["previous_api"] == "java.util.ArrayList.<init>" and add["candidates"][0] == "java.util.List.add"
    assert add["seen"] and not next(p for p in points if p["written"] == "Collections.sort")["seen"]
    rows = {r["point_id"]: r for r in base}
    assert rows[new["point_id"]]["gold_rank"] == 1 and rows[add["point_id"]]["gold_rank"] == 1
    assert {r["ranker"] for r in base} == {"ngram"} and len(base) == len(points)
    assert stats["ide"].startswith("not applicable")


def test_deterministic_and_capped(built, tmp_path):
    rows, points, base, stats = built
    root = Path(rows["app/demo/Main.java"]["location"]).parents[3]
    again = java.java_points(list(rows.values()), root, {"app": "web"}, "general", "test", 0, 5, 10, 1)
    assert again == (points, base, stats)
    capped, _, cstats = java.java_points(list(rows.values()), root, {"app": "web"}, "general", "test", 5, 5, 10, 1)
    assert len(capped) == 5 and cstats["points_all"] == len(points) and cstats["calls"] == stats["calls"]
    assert {p["point_id"] for p in capped} <= {p["point_id"] for p in points}


def test_render_outside_the_files_imports(built):
    rows, _, _, _ = built
    index = java.Index()
    p = java.parser()
    for r in rows.values():
        src = Path(r["location"]).read_bytes()
        index.add_file(r["file_id"], r["repository"], p.parse(src), src)
    scope = index.scopes[rows["lib/Train.java"]["file_id"]]
    assert java.render("java.util.List.add", scope, index) == "List.add"
    assert java.render("java.util.Collections.sort", scope, index) == "java.util.Collections.sort"
    assert java.render("java.lang.Math.max", scope, index) == "Math.max"
    assert java.render("java.util.ArrayList.<init>", scope, index) == "new ArrayList"


def test_unparsable_and_empty_inputs_do_not_crash(tmp_path):
    rows = [row(tmp_path, "app", "app", "app/Broken.java", "class A { void m() { x.y(); int = ; } }", "test"),
            row(tmp_path, "app", "app", "app/Gone.java", "", "test")]
    Path(rows[1]["location"]).unlink()
    points, base, stats = java.java_points(rows, tmp_path, {}, "general", "test", 0, 5, 10, 1)
    assert points == [] and base == [] and stats["unreadable_files"] == 1
    assert stats["calls"] == 1 and stats["unresolved_by_reason"] == {"parse_error": 1}  # x.y( in a broken method
    assert java.java_points([], tmp_path, {}, "general", "test", 0, 5, 10, 1)[2]["calls"] == 0


def test_language_breakdown_in_the_views_and_report(built, tmp_path):
    _, points, base, _ = built
    py = {**points[0], "point_id": "py1", "path": "lib/x.py", "api": "os.getcwd", "api_class": "os"}
    con = duckdb.connect()
    metrics.install(con)
    con.register("_p", pa.Table.from_pylist(points + [py], schemas.POINTS))
    con.register("_b", pa.Table.from_pylist(base + [{**base[0], "point_id": "py1", "gold_rank": None,
                                                      "class_rank": None, "top": ["json.loads"]}], schemas.BASELINES))
    con.register("_q", pa.Table.from_pylist([], schemas.QUERIES))
    con.register("_e", pa.Table.from_pylist([], schemas.BASELINES))
    con.execute("CREATE VIEW apirec_points AS SELECT * FROM _p; CREATE VIEW apirec_baselines AS SELECT * FROM _b; "
                "CREATE VIEW apirec_queries AS SELECT * FROM _q; CREATE VIEW apirec_query_baselines AS SELECT * FROM _e; "
                "CREATE VIEW apirec_predictions AS SELECT * FROM _e")
    con.execute("CREATE VIEW model_twins AS SELECT NULL::VARCHAR AS model, NULL::VARCHAR AS twin WHERE false")
    for f in sorted((REPO / "pipeline/families/apirec/sql").glob("*.sql")):
        if "contamination" in f.name:  # reads the warehouse's core tables (manifest, models): tests/test_contamination.py
            continue
        con.execute(f.read_text())
    got = dict(con.sql("SELECT language, points FROM apirec_metrics_by_language WHERE k = 1").fetchall())
    assert got == {"java": len(points), "python": 1}
    hits = sum(1 for r in base if r["gold_rank"] == 1)
    sr1 = dict(con.sql("SELECT value, sr1_method FROM apirec_breakdown WHERE dimension = 'language'").fetchall())
    assert sr1 == {"java": round(hits / len(points), 4), "python": 0.0}
    con.execute("CREATE TABLE not_applicable (family VARCHAR, model VARCHAR, reason VARCHAR)")
    from pipeline.families.apirec import report

    md = str(report.section(con, tmp_path, "figures", {}))
    assert f"| code | java | ngram | ngram | 1 | {len(points)} |" in md and "ours, code: python: ngram/ngram" in md
    headline = {m for (m,) in con.sql("SELECT metric FROM apirec_headline").fetchall()}
    assert {"ngram_java_sr_at_1_method", "ngram_java_sr_at_10_method", "ngram_sr_at_1_method"} <= headline


def test_java_points_go_through_the_model_reranking(built, tmp_path):
    """The same re-ranking as Python points (infer.py), with a tiny random causal LM: every Java point
    with candidates is ranked over exactly its n-gram pool, the gold's presence recorded."""
    from pipeline.families.apirec import infer
    from tests.test_scoring_cache import tiny

    _, points, _, _ = built
    table = pa.Table.from_pylist(points, schemas.POINTS)
    rows = infer.score_shard(table, tiny(tmp_path, "causal-lm"), 0, 1, 4096, 0, 1, 3).to_pylist()
    # one row per ranking protocol (rerank_ngram: summed log-likelihood, _mean, _pmi), each point once
    assert sorted({r["ranker"] for r in rows}) == ["rerank_ngram", "rerank_ngram_mean", "rerank_ngram_pmi"]
    out = [r for r in rows if r["ranker"] == "rerank_ngram"]
    assert len(out) == len(points) == len(rows) // 3 and {r["status"] for r in rows} == {"ok"}
    pools = {p["point_id"]: p["candidates"][:3] for p in points}
    golds = {p["point_id"]: p["api"] for p in points}
    for r in out:
        assert sorted(r["top"]) == sorted(pools[r["point_id"]])
        assert r["gold_in_candidates"] == (golds[r["point_id"]] in pools[r["point_id"]])
        assert (r["gold_rank"] is not None) == r["gold_in_candidates"]


NODE = "package org.w3c.dom;\npublic interface Node {\n    String getNodeName();\n}\n"
USES_NODE = """package demo;

import org.w3c.dom.Node;

public class Tree {
    void walk(Node n) {
        n.getNodeName();
        Helper.help();
    }
}
"""


def test_categories_by_distribution_do_not_move_when_the_grouping_changes(tmp_path):
    """Issue 24 item 2 for Java: a type of the caller's own distribution is user-defined and a JDK source's type
    is stdlib, under any `repository:` grouping (each file its own repository flipped Helper.help to third_party
    when categories were by repository)."""
    files = [("jdk", "java.base/" + p, t, "valid") for p, t in JDK.items()]
    files += [("jdk", "java.xml/org/w3c/dom/Node.java", NODE, "valid"),
              ("app", "app/demo/Main.java", MAIN, "test"), ("app", "app/demo/Helper.java", HELPER, "test"),
              ("app", "app/demo/Tree.java", USES_NODE, "test"), ("lib", "lib/Train.java", TRAIN, "train")]
    got = {}
    for grouping in ("source", "file"):
        rows = [row(tmp_path / grouping, s, s if grouping == "source" else p.rsplit("/", 1)[0], p, t, split)
                for s, p, t, split in files]
        points, _, _ = java.java_points(rows, tmp_path / grouping, {}, "general", "test", 0, 5, 10, 1,
                                        stdlib_sources=frozenset({"jdk"}))
        got[grouping] = {(p["path"], p["line"], p["col"]): (p["api"], p["category"]) for p in points}
    assert got["source"] == got["file"]  # no label moves
    cats = {api: cat for api, cat in got["file"].values()}
    assert cats["demo.Helper.help"] == "user_defined" and cats["demo.Main.local"] == "user_defined"
    assert cats["org.w3c.dom.Node.getNodeName"] == "stdlib"  # a JDK module's type outside java.*
    assert cats["org.acme.Widget.make"] == "third_party" and cats["java.util.List.add"] == "stdlib"
    # a dump of many projects (jsonl) is one distribution per repository: another project's type is third-party
    rows = [row(tmp_path / "dump", "dump", "org/" + p.split("/")[2], p, t, split) for s, p, t, split in files
            if s == "app"]
    points, _, _ = java.java_points(rows, tmp_path / "dump", {}, "general", "test", 0, 5, 10, 1,
                                    per_repository_sources=frozenset({"dump"}))
    assert {p["category"] for p in points if p["api"] == "demo.Helper.help"} == {"third_party"}
