"""The probing tasks as the paper's release defines them (pipeline/families/probing/release.py), on
hand-checkable snippets: each expected label below is read off the release's procedure by hand
(serjtroshin/probings4code code_augs/*.py, probings/sentence_regression.py get_depth;
GraphCodeBERT's DFG_java / DFG_python), not computed by the code under test."""

from collections import Counter

import pytest

from pipeline.families.probing import release as R
from pipeline.families.probing import tasks as T

JAVA = T.parser("java")
PY = T.parser("python")


class S:  # the two fields of a Snippet the release's generators read
    def __init__(self, text, language="java", sid="s"):
        self.text, self.language, self.snippet_id = text, language, sid


def edges(code, language="java"):
    a = R.alone(code, language, JAVA if language == "java" else PY)
    return {(f"{a.word(a.leaves[i])}@{i}", f"{a.word(a.leaves[j])}@{j}"): k
            for (i, j), k in R.dataflow_edges(a, language).items()}


def test_depth_is_the_longest_root_to_identifier_path_of_the_snippet_alone():
    # program > method_declaration > block > if_statement > block > return_statement > method_invocation
    #   > argument_list > identifier `a`: 8 edges
    assert R.depth(R.alone("int f(int a) { if (a > 0) { return g(a); } return 0; }", "java", JAVA)) == 8
    # the deepest leaf is the literal 1 (9 edges), but the release measures to identifiers only
    code = "void f() { int s = 0; while (s < 3) { s = s + 1; } }"
    assert R.depth(R.alone(code, "java", JAVA)) == 8
    rows = R.ast_depth([S(code)], JAVA)
    assert rows[0]["target"] == 8.0 and rows[0]["kind"] == "snippet"


def test_dataflow_java_graphcodebert_rules_the_releases_example():
    # dfg.py's own example: a declaration with a value is `comesFrom` (not computedFrom), an
    # assignment `computedFrom` each variable of its right side, a use `comesFrom` its definition
    code = ("public static void printres ( ) { int x1 = 1 ; int y1 = 0 ; if ( x1 == 0 ) { y2 = x1 + y1; } "
            "else { x3 = y1 ; } }")
    assert edges(code) == {("x1@8", "1@10"): "comesFrom", ("y1@13", "0@15"): "comesFrom",
                           ("x1@19", "x1@8"): "comesFrom", ("y2@24", "x1@26"): "computedFrom",
                           ("y2@24", "y1@28"): "computedFrom", ("x1@26", "x1@8"): "comesFrom",
                           ("y1@28", "y1@13"): "comesFrom", ("x3@33", "y1@35"): "computedFrom",
                           ("y1@35", "y1@13"): "comesFrom"}


def test_dataflow_java_loop_merges_both_passes_and_keeps_the_first_source():
    # a while body runs twice; the passes' entries merge per token with their sources sorted, and
    # the release keeps the first: the condition's s comes from the declaration (6, not 17), and
    # `s = s + 1` is computed from the right s only (the literal 1 is the merged entry's 2nd source)
    assert edges("void f() { int s = 0; while (s < 3) { s = s + 1; } }") == {
        ("s@6", "0@8"): "comesFrom", ("s@12", "s@6"): "comesFrom", ("s@17", "s@19"): "computedFrom",
        ("s@19", "s@6"): "comesFrom"}


def test_dataflow_python_graphcodebert_rules():
    assert edges("def f(a):\n    b = a + 1\n    return b\n", "python") == {
        ("b@6", "a@8"): "computedFrom", ("b@6", "1@10"): "computedFrom", ("a@8", "a@3"): "comesFrom",
        ("b@12", "b@6"): "comesFrom"}


def test_dataflow_samples_edges_and_as_many_ordered_non_edges():
    code = "void f() { int s = 0; while (s < 3) { s = s + 1; } }"
    rows = R.dataflow([S(code)], 0, JAVA)
    got = Counter(r["label"] for r in rows)
    assert got == {"comesFrom": 3, "computedFrom": 1, "NoEdge": 4}
    pos = {tuple(r["spans"]) for r in rows if r["label"] != "NoEdge"}
    for r in rows:
        (a, b), (c, d) = r["spans"]
        assert r["word"] == f"{code[a:b]} {code[c:d]}"
        if r["label"] == "NoEdge":  # an ordered pair of edge tokens that is no edge in that direction
            assert tuple(r["spans"]) not in pos and (a, b) != (c, d)
    assert R.dataflow([S(code)], 0, JAVA) == rows


DECL = """void f() {
  int x = 0;
  if (x == 1) { int y; y = 2; }
  for (int i = 0; i < 3; i++) { x += i; }
}"""


def test_declared_candidates_insertion_points_and_visibility():
    a = R.alone(DECL, "java", JAVA)
    decls = R.local_declarations(a)
    # the for header's `int i = 0` is no candidate (the release filters for_statement parents)
    assert [a.word(d) for d in decls] == ["int x = 0;", "int y;"]
    # after `{`, after `;` followed by `}`, after `}` followed by `}`
    assert [a.word(a.leaves[i]) for i in R.insertion_points(a)] == ["{", "{", ";", "{", ";", "}"]
    got = {}
    for d in decls:
        for at in R.insertion_points(a):
            if at > R.declaration_end(a, d):
                text, (s, e), label = R.insert_print(a, decls, d, at, JAVA)
                assert text[s:e] == a.word(d.children[1].children[0])
                got[(text[s:e], at)] = label
    # x is declared in the method block: visible everywhere after it; y only inside the if's block
    assert got == {("x", 16): "declared", ("x", 23): "declared", ("x", 39): "declared", ("x", 43): "declared",
                   ("x", 44): "declared", ("y", 23): "declared", ("y", 39): "undeclared",
                   ("y", 43): "undeclared", ("y", 44): "undeclared"}


def test_declared_one_sample_per_snippet_java_only_and_seeded():
    rows = R.declared([S(DECL, sid=str(k)) for k in range(40)], 0, JAVA)
    assert 0 < len(rows) <= 40 and len({r["group"] for r in rows}) == len(rows)
    assert {r["label"] for r in rows} == {"declared", "undeclared"}
    for r in rows:
        (s, e), = r["spans"]
        assert r["text"][s:e] == r["word"] and f"System.out.println({r['word']});" in r["text"]
    assert R.declared([S(DECL, sid=str(k)) for k in range(40)], 0, JAVA) == rows
    assert R.declared([S("def f(x):\n    y = x\n", "python")], 0, PY) == []


def test_declared_drops_an_insertion_only_on_an_error_token_as_the_release_does():
    # the release drops a new text only when one of its tokens is an `ERROR` node ("ERROR" in the tokens' node
    # types): a statement in an array initialiser is a parse error, but every token keeps its own type: kept
    code = "void f() { int x = 1; int[] a = {x}; }"
    a = R.alone(code, "java", JAVA)
    decls = R.local_declarations(a)
    brace = next(i for i, n in enumerate(a.leaves) if n.type == "{" and n.start_byte > 20)
    text, _, label = R.insert_print(a, decls, decls[0], brace, JAVA)
    assert "{ System.out.println(x);x}" in text and label == "declared"
    # an unlexable character is an ERROR token: dropped
    assert R.error_token(JAVA.parse(b"void f() { int x = 1; # }").root_node)
    assert not R.error_token(JAVA.parse(b"void f() { int x = 1; int[] a = { System.out.println(x); x}; }").root_node)


@pytest.mark.parametrize("grammar", ["today", "release"])
def test_declared_constructors_give_samples(grammar):
    # a constructor parsed alone has a zero-width MISSING name today (and an ERROR around its head on the
    # release's grammar): a parse error, no ERROR token. Dropping on any parse error lost every constructor.
    from pipeline.families.probing import grammar as G
    prs = JAVA if grammar == "today" else G.java_parser()
    code = "Point(int a) {\n    int b = a;\n    if (a > 0) {\n        int c = b;\n    }\n    this.a = b;\n}"
    assert prs.parse(code.encode()).root_node.has_error
    rows = R.declared([S(code, sid=str(k)) for k in range(30)], 0, prs)
    assert len(rows) == 30 and {r["label"] for r in rows} == {"declared", "undeclared"}
    for r in rows:
        (s, e), = r["spans"]
        assert r["text"][s:e] == r["word"] in ("b", "c")
        assert r["label"] == ("declared" if r["word"] == "b" or r["text"].index("System") < r["text"].index("this.a")
                              else "undeclared")


def test_misuse_up_to_three_pairs_of_any_identifier():
    code = "void f() { int a = b; }"  # identifiers f, a, b: 3 x 2 (place, other name) pairs
    rows = R.misuse([S(code)], 0, JAVA)
    assert Counter(r["label"] for r in rows) == {"misused": 3, "correct": 3}
    names = {"f", "a", "b"}
    for wrong, right in zip(rows[::2], rows[1::2]):
        (s, e), = wrong["spans"]
        (s2, e2), = right["spans"]
        assert right["text"] == code and wrong["text"][s:e] == wrong["word"] != right["word"] == code[s2:e2]
        assert {wrong["word"], right["word"]} <= names and s == s2
    assert R.misuse([S("void f() { }")], 0, JAVA) == []  # one identifier: no pair


def test_variable_name_from_the_releases_50_names_every_occurrence_replaced():
    code = "int g(int count) { int result = count; obj.result = 1; return result; }"
    seen = set()
    for seed in range(12):
        [r] = R.variable_name([S(code)], seed, JAVA)
        seen.add(r["label"])
        assert r["kind"] == "span" and all(r["text"][s:e] == "var" for s, e in r["spans"])
        # every identifier occurrence, the field `obj.result` included (an identifier too)
        assert len(r["spans"]) == {"count": 2, "result": 3}[r["label"]] and r["label"] not in r["text"]
    assert seen == {"count", "result"}  # `g` and `obj` are not among the 50 names (`f`, `other` are)
    assert R.variable_name([S("void g() { foo(); }")], 0, JAVA) == []


@pytest.mark.parametrize("src", ["class A:\n    def f(self, x): return x\n", "def f(x): return x\n"])
def test_declared_every_python_one_line_function_never_outside_or_invalid(src):
    [s] = T.snippets_of_file(src, "python", "F", T.parser("python"))
    for seed in range(10):
        for r in T.declared([s], seed=seed):
            tree = PY.parse(r["text"].encode()).root_node
            assert not tree.has_error, r["text"]
            # the use lands inside the function (one-line body: its own line is impossible, so none)
            assert r["text"].startswith("def f(") and r["label"] == "declared"


def test_release_tasks_are_the_defaults_and_variants_stay_beside_them():
    import yaml

    from pipeline.families import probing as P
    assert set(P.CORPUS_TASKS) == set(T.GENERATORS) and set(P.RELEASE_TASKS) & set(P.VARIANTS) == set()
    schema = yaml.safe_load((P.FOLDER / "params.schema.yaml").read_text())
    assert set(P.CORPUS_TASKS) <= set(schema["properties"]["tasks"]["items"]["enum"])
    assert "paper" in schema["properties"]["fit"]["properties"]["probe"]["enum"]
    config = {"probing": {"languages": ["java", "python"], "tasks": ["declared", "declared_every", "depth_any_leaf"],
                          "control": False}}
    # the release's declared is Java-only (its insertion points are braces); our variant runs on both
    assert P.language_tasks(config, "java") == ["declared", "declared_every", "depth_any_leaf"]
    assert P.language_tasks(config, "python") == ["declared_every", "depth_any_leaf"]
    assert P.task_type(config, "java-depth_any_leaf") == "regression" == P.task_type(config, "java-depth")


def test_path_type_zero_based_from_the_snippets_root_comments_counted():
    # program > method_declaration (0) > [integral_type 0, identifier f 1, formal_parameters 2, block 3];
    # block > [`{` 0, block_comment 1, return_statement 2, `}` 3]: the comment takes index 1 (the
    # release's cursor walk counts every child), so `return` is 0,3,2,0 (0,3,1,0 without the comment)
    code = 'int f(int a) { /* c */ return a + "x y"; }'
    a = R.alone(code, "java", JAVA)
    got = [(a.word(n), R.path_key(p)) for n, p in R.token_paths(a, "java")]
    assert got == [("int", "0,0,0"), ("f", "0,1"), ("(", "0,2,0"), ("int", "0,2,1,0,0"), ("a", "0,2,1,1"),
                   (")", "0,2,2"), ("{", "0,3,0"), ("return", "0,3,2,0"), ("a", "0,3,2,1,0"), ("+", "0,3,2,1,1"),
                   ('"x y"', "0,3,2,1,2"), (";", "0,3,2,2"), ("}", "0,3,3")]  # a string literal: one token
    rows = R.path_type([S(code)], JAVA)
    assert [(r["word"], r["label"]) for r in rows] == got
    assert all(code[s:e] == r["word"] for r in rows for s, e in r["spans"]) and rows[0]["kind"] == "word"
    # ours (the `path_type_ours` variant): 1-based from the method node, comments not counted
    [s] = T.snippets_of_file("class A { " + code + " }", "java", "F", JAVA)
    assert [T.path_key(t.path) for t in s.tokens if t.text == "return"] == ["4,2,1"]


def test_release_classes_keep_15_frequent_drop_rare_merge_when_few_labels():
    # 20 distinct labels (>= 15): a class with fewer than 30 samples is dropped (index 15, filtered)
    labels = ["a"] * 40 + ["b"] * 35 + ["c"] * 30 + ["d"] * 29 + [f"z{i}" for i in range(16)]
    got = R.release_classes(labels)
    assert {k for k, v in got.items() if v is not None} == {"a", "b", "c"} and got["a"] == "a"
    assert got["d"] is None and got["z0"] is None
    # 3 distinct labels (< 15): the rare ones take index min(15, 3) = 3 < 15, kept as one merged class
    assert R.release_classes(["a"] * 40 + ["b"] * 5 + ["c"] * 2) == {"a": "a", "b": R.OTHER, "c": R.OTHER}
    # 17 labels with >= 30 samples each: indices 0..16 in order of frequency, 15 and 16 dropped
    many = [f"k{i:02d}" for i in range(17) for _ in range(30 + 17 - i)]
    kept = {k for k, v in R.release_classes(many).items() if v is not None}
    assert kept == {f"k{i:02d}" for i in range(15)}
    # the rule's own counts beside the rows it keeps: never a silent drop
    rows = [{"label": y, "item_id": str(i)} for i, y in enumerate(labels)]
    out, info = R.apply_classes(rows, 15, 30)
    assert len(out) == 105 and info["dropped_samples"] == 45 and info["classes"] == 3
    assert info["dropped_labels"][:2] == ["d", "z0"] and info["merged_into_other"] == []


def test_variable_name_class_rule_at_small_and_large_counts():
    # one sample per snippet: 40 snippets naming `result`, 3 naming `count` and 2 naming `i` -> 3 labels
    # (< 15): `result` kept, the two rare ones merged (the release's index arithmetic)
    snippets = [S(f"int g{k}() {{ int {n} = 0; return {n}; }}", sid=f"{n}{k}")
                for n, m in (("result", 40), ("count", 3), ("i", 2)) for k in range(m)]
    rows = R.variable_name(snippets, 0, JAVA)
    assert Counter(r["label"] for r in rows) == {"result": 40, "count": 3, "i": 2}
    out, info = R.apply_classes(rows, 15, 30)
    assert Counter(r["label"] for r in out) == {"result": 40, R.OTHER: 5}
    assert info["merged_into_other"] == ["count", "i"] and info["dropped_samples"] == 0


def test_path_type_ours_is_an_opt_in_variant_with_its_control(tmp_path):
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline import schemas
    from pipeline.families import probing as P
    from pipeline.families.probing.generate import main

    config = {"probing": {"languages": ["java"], "tasks": ["path_type", "path_type_ours"], "control": True}}
    assert P.fit_tasks(config) == ["java-path_type", "java-path_type_ours", "java-path_type-control",
                                   "java-path_type_ours-control"]
    assert "path_type_ours" not in yaml_default_tasks()
    java = "class A {\n" + "".join(f"  int m{i}(int a) {{\n    // c\n    return a + {i};\n  }}\n"
                                   for i in range(12)) + "}\n"
    (tmp_path / "A.java").write_text(java)
    row = {"file_id": "f1", "sha256": "0" * 64, "source": "s", "repository": "r", "path": "A.java",
           "location": str(tmp_path / "A.java"), "language": "java", "encoding": "utf-8", "bytes": len(java),
           "lines": java.count("\n"), "split": "train", "duplicate": False}
    pq.write_table(pa.Table.from_pylist([row], schema=schemas.MANIFEST), tmp_path / "manifest.parquet")
    out = tmp_path / "out"
    assert main(["corpus", "--manifest", str(tmp_path / "manifest.parquet"), "--language", "java", "--tasks",
                 "path_type", "path_type_ours", "depth", "depth_any_leaf", "--min-class-samples", "12",
                 "--keep-comments", "--out", str(out),
                 "--summary", str(out / "summary.json")]) == 0
    tasks = json.loads((out / "summary.json").read_text())["tasks"]
    release = pq.read_table(out / "path_type/labels.parquet").to_pylist()
    ours = pq.read_table(out / "path_type_ours/labels.parquet").to_pylist()
    # the same tokens; the release's `return` counts the comment before it (block child 2), ours does not
    assert len(release) == len(ours) == 12 * 13 and (out / "path_type_ours/control.parquet").exists()
    assert {r["label"] for r in release if r["word"] == "return"} == {"0,3,2,0"}
    assert {r["label"] for r in ours if r["word"] == "return"} == {"4,2,1"}
    assert "class_rule" in tasks["path_type"] and "class_rule" not in tasks["path_type_ours"]
    # a variant beside its release task (same snippets, same generator ids): its own item ids
    depth = pq.read_table(out / "depth/labels.parquet")["item_id"].to_pylist()
    other = pq.read_table(out / "depth_any_leaf/labels.parquet")["item_id"].to_pylist()
    assert len(depth) == len(other) == 12 and not set(depth) & set(other)


def yaml_default_tasks():
    import yaml

    from pipeline.families.probing import FOLDER
    return yaml.safe_load((FOLDER.parents[2] / "params.yaml").read_text())["probing"]["tasks"]


def _java_corpus(tmp_path, java):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline import schemas
    (tmp_path / "A.java").write_text(java)
    row = {"file_id": "f1", "sha256": "0" * 64, "source": "s", "repository": "r", "path": "A.java",
           "location": str(tmp_path / "A.java"), "language": "java", "encoding": "utf-8", "bytes": len(java),
           "lines": java.count("\n"), "split": "train", "duplicate": False}
    pq.write_table(pa.Table.from_pylist([row], schema=schemas.MANIFEST), tmp_path / "manifest.parquet")
    return str(tmp_path / "manifest.parquet")


def test_comments_removed_by_default_as_the_releases_data_has_none(tmp_path):
    import json

    import pyarrow.parquet as pq

    from pipeline.families.probing.generate import main

    java = "class A {\n" + "".join(f"  int m{i}(int a) {{ // head\n    // c\n    return a /* x */ + {i};\n  }}\n"
                                   for i in range(12)) + "}\n"
    out = tmp_path / "out"
    assert main(["corpus", "--manifest", _java_corpus(tmp_path, java), "--language", "java", "--tasks", "path_type",
                 "depth", "--min-class-samples", "12", "--out", str(out), "--summary", str(out / "summary.json")]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["snippets"] == summary["snippets_with_comments"] == 12 and "comment_strip_failed" not in summary
    texts = set(pq.read_table(out / "samples.parquet")["text"].to_pylist())
    assert texts == {f"int m{i}(int a) {{\n    return a + {i};\n  }}" for i in range(12)}
    # without the comment, `return` is the block's child 1 (the release's data: no comment to count)
    labels = pq.read_table(out / "path_type/labels.parquet").to_pylist()
    assert {r["label"] for r in labels if r["word"] == "return"} == {"0,3,1,0"}


@pytest.mark.parametrize("raw, comments, want", [
    (b"a; // x\nb;", [(3, 7)], b"a;\nb;"),
    (b"{\n  // x\n  b;\n}", [(4, 8)], b"{\n  b;\n}"),
    (b"a/*x*/b", [(1, 6)], b"a b"),
    (b"a /*x*/ b", [(2, 7)], b"a b"),
    (b"{\n  /* x\n  y */\n  b;\n}", [(4, 15)], b"{\n  b;\n}"),
])
def test_strip_comments(raw, comments, want):
    assert T.strip_comments(raw, comments) == want


def test_release_parser_variants_label_on_the_releases_grammar(tmp_path):
    import pyarrow.parquet as pq

    from pipeline.families import probing as P
    from pipeline.families.probing import grammar as G
    from pipeline.families.probing.generate import main

    # tree-sitter-java ac14b4b (the release's): a method alone is a declaration `int m`, an ERROR and a block
    root = G.java_parser().parse(b"int m(int a) { return a; }").root_node
    assert G.java_language().abi_version == 13
    assert [c.type for c in root.children] == ["local_variable_declaration", "ERROR", "block"]
    assert "depth_release_parser" in P.REGRESSION and "declared_release_parser" in P.JAVA_ONLY
    config = {"probing": {"languages": ["java", "python"], "tasks": ["depth", "depth_release_parser"], "control": False}}
    assert P.language_tasks(config, "python") == ["depth"]
    java = "class A {\n" + "".join(f"  int m{i}(int a) {{\n    if (a > {i}) {{ return g(a); }}\n    return a;\n  }}\n"
                                   for i in range(12)) + "}\n"
    out = tmp_path / "out"
    assert main(["corpus", "--manifest", _java_corpus(tmp_path, java), "--language", "java", "--tasks", "depth",
                 "depth_release_parser", "path_type", "path_type_release_parser", "--min-class-samples", "12",
                 "--out", str(out), "--summary", str(out / "summary.json")]) == 0
    today = pq.read_table(out / "depth/labels.parquet").to_pylist()
    old = pq.read_table(out / "depth_release_parser/labels.parquet").to_pylist()
    # program > method_declaration > block > if > block > return > invocation > argument_list > a: 8 today;
    # the old tree has no method node: program > block > ... : 7
    assert {r["target"] for r in today} == {8.0} and {r["target"] for r in old} == {7.0}
    assert not {r["item_id"] for r in today} & {r["item_id"] for r in old}
    paths = pq.read_table(out / "path_type_release_parser/labels.parquet").to_pylist()
    # the method's block is the program's third child (today: 0,3 under method_declaration)
    assert {r["label"] for r in paths if r["word"] == "return"} == {"2,1,2,1,0"}
    assert {r["label"] for r in pq.read_table(out / "path_type/labels.parquet").to_pylist()
            if r["word"] == "return"} == {"0,3,1,2,1,0"}


def test_release_parser_rows_sit_beside_their_table1_row():
    from pipeline.families.probing.report import enabled_tasks, paper_task

    config = {"probing": {"languages": ["java"], "control": False,
                          "tasks": ["depth_release_parser", "path_type", "depth", "path_type_release_parser"]}}
    assert [t for t, _ in enabled_tasks(config)] == ["path_type", "path_type_release_parser", "depth",
                                                      "depth_release_parser"]
    assert paper_task("declared_release_parser") == "declared" and paper_task("declared_every") == "declared_every"
    assert {"path_type_release_parser", "depth_release_parser", "declared_release_parser",
            "dataflow_release_parser"} <= set(yaml_default_tasks())
