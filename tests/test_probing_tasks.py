"""The probing generators on hand-written Java and Python snippets, labels written out."""

from collections import Counter

from pipeline.families.probing import tasks as T

JAVA = """class A {
  int f(int a, int b) {
    int c = a + b; // note
    return c * a;
  }
}
"""
PY = """def f(x, y=1):
    z = x + y
    return self.z + z
"""


def java():
    return T.snippets_of_file(JAVA, "java", "F", T.parser("java"))


def py():
    return T.snippets_of_file(PY, "python", "G", T.parser("python"))


def test_java_tokens_paths_and_depth():
    [s] = java()
    assert s.text.startswith("int f(int a, int b) {") and s.text.endswith("}")
    got = [(t.text, T.path_key(t.path)) for t in s.tokens]
    assert got[:10] == [("int", "1,1"), ("f", "2"), ("(", "3,1"), ("int", "3,2,1,1"), ("a", "3,2,2"), (",", "3,3"),
                        ("int", "3,4,1,1"), ("b", "3,4,2"), (")", "3,5"), ("{", "4,1")]
    assert ("a", "4,2,2,3,1") in got and ("return", "4,3,1") in got  # `// note` is no token
    assert s.depth == 5
    assert s.variables == {"a": [4, 13, 20], "b": [7, 15], "c": [11, 18]}
    assert all(s.text[t.start:t.end] == t.text for t in s.tokens)


def test_python_tokens_paths_depth_and_variables():
    [s] = py()
    got = [(t.text, T.path_key(t.path)) for t in s.tokens]
    assert got[:5] == [("def", "1"), ("f", "2"), ("(", "3,1"), ("x", "3,2"), (",", "3,3")]
    assert ("z", "5,1,1,1") in got
    assert s.depth == 5
    # self.z: `z` is an attribute, not the variable z; self is never a variable
    assert s.variables == {"x": [3, 12], "y": [5, 14], "z": [10, 20]}


def test_path_type_keeps_the_k_most_frequent_paths():
    [s] = java()
    rows = T.path_type([s], k=2)
    counts = Counter(T.path_key(t.path) for t in s.tokens)
    assert len({r["label"] for r in rows}) == 2
    assert all(counts[r["label"]] >= 1 for r in rows) and rows[0]["kind"] == "word"
    for r in rows:
        (a, b), = r["spans"]
        assert r["text"][a:b] == r["word"]


def test_depth_sample():
    [row] = T.ast_depth(java())
    assert row["target"] == 5.0 and row["kind"] == "snippet" and row["n_tokens"] == 23


def test_variable_name_placeholder():
    rows = {r["label"]: r for r in T.variable_name(java())}
    assert rows["a"]["text"] == "int f(int var, int b) {\n    int c = var + b; // note\n    return c * var;\n  }"
    assert [rows["a"]["text"][x:y] for x, y in rows["a"]["spans"]] == ["var"] * 3
    assert rows["c"]["text"] == "int f(int a, int b) {\n    int var = a + b; // note\n    return var * a;\n  }"
    assert rows["a"]["group"] == rows["c"]["group"] and rows["a"]["kind"] == "span"


def test_misuse_pairs_the_wrong_snippet_with_the_correct_one():
    rows = T.misuse(java(), seed=0)
    assert [r["label"] for r in rows] == ["correct", "misused"]
    correct, wrong = rows
    assert correct["text"] == java()[0].text and correct["group"] == wrong["group"]
    (a, b), = correct["spans"]
    (c, d), = wrong["spans"]
    assert a == c and correct["text"][a:b] == correct["word"] and wrong["text"][c:d] == wrong["word"]
    assert correct["word"] != wrong["word"] and {correct["word"], wrong["word"]} <= {"a", "b", "c"}
    # everything but the replaced identifier is unchanged
    assert wrong["text"][:c] == correct["text"][:a] and wrong["text"][d:] == correct["text"][b:]
    assert T.misuse(java(), seed=0) == rows  # deterministic


def test_algorithm_labels_and_length_filter():
    subs = [{"code": "print(1)", "target": "correct", "sent_id": "1"},
            {"code": "x" * 1001, "target": "correct", "sent_id": "2"},
            {"code": "print(2)", "target": "wrong", "sent_id": "3"}]
    rows = T.algorithm(subs)
    assert sorted(r["label"] for r in rows) == ["accepted", "wrong_answer"] and rows[0]["kind"] == "snippet"


def test_replace_shifts_later_spans():
    assert T.replace("ab cd ab", [(6, 8), (0, 2)], "xyz") == ("xyz cd xyz", [(0, 3), (7, 10)])


# --- is variable declared (paper sec. 2.3) and data-flow edges (sec. 2.4) ---------------------

JAVA_SCOPES = """class A {
  int f(int a) {
    int x = 0;
    if (a > 0) {
      int y = x;
      y += a;
    }
    for (int i = 0; i < a; i++) { x = x + i; }
    return x;
  }
}
"""
PY_SCOPES = """def f(a, b=1):
    x = a
    try:
        g()
    except ValueError as e:
        h(e)
    for i in range(a):
        x = x + i
    return x
"""


def scopes(src, language):
    [s] = T.snippets_of_file(src, language, "F", T.parser(language))
    return s


def test_java_declarations_and_their_scopes():
    s = scopes(JAVA_SCOPES, "java")
    got = {d.name: (s.source[d.scope_start:d.scope_end].decode()[:12], s.source[d.scope_end - 1:d.scope_end].decode())
           for d in T.declarations(s.root, "java")}
    # a: the method body; x: the rest of the method body; y: the rest of the if block; i: the for statement
    assert got == {"a": ("{\n    int x ", "}"), "x": ("\n    if (a >", "}"), "y": ("\n      y += ", "}"),
                   "i": (" i < a; i++)", "}")}


def test_declared_inserted_use_inside_and_outside_the_scope_java():
    s = scopes(JAVA_SCOPES, "java")
    rows = {r["word"]: r for r in T.declared([s], seed=0)}
    assert {w: r["label"] for w, r in rows.items()} == {"a": "declared", "x": "declared", "y": "undeclared",
                                                         "i": "declared"}
    # y is used after its block closed: the paper's own example of an undeclared variable
    assert "    }\n    System.out.println(y); for (int i = 0;" in rows["y"]["text"]
    # never after `return x;` (unreachable: javac rejects it); i is used inside its for statement
    assert all("return x;\n  System.out.println" not in r["text"] for r in rows.values())
    assert "i++) { System.out.println(i); x = x + i;" in rows["i"]["text"]
    assert "y += a;\n    System.out.println(a); }" in rows["a"]["text"]
    for r in rows.values():
        (a, b), = r["spans"]
        assert r["text"][a:b] == r["word"] and r["kind"] == "word" and r["group"] == s.snippet_id
        # everything but the inserted statement is the original snippet
        assert r["text"].replace(f"System.out.println({r['word']}); ", "", 1) == s.text
    assert T.declared([s], seed=0) == list(rows.values())  # deterministic


def test_declared_python_function_scope_and_except_alias():
    s = scopes(PY_SCOPES, "python")
    rows = T.declared([s], seed=0)
    assert [r["word"] for r in rows] == ["a", "b", "x", "e", "i", "x"]
    seen = set()
    for seed in range(8):
        for r in T.declared([s], seed=seed):
            (a, b), = r["spans"]
            assert r["text"][a:b] == r["word"]
            compile(r["text"], "<probe>", "exec")  # the insertion keeps the function valid Python
            if r["word"] != "e":  # Python binds these for the whole rest of the function
                assert r["label"] == "declared"
                continue
            # `except ... as e` is unbound after its handler: declared only inside it
            inside = "as e:\n        print(e)\n        h(e)" in r["text"]
            assert r["label"] == ("declared" if inside else "undeclared")
            seen.add(r["label"])
    assert seen == {"declared", "undeclared"}
    e1 = next(r for r in T.declared([s], seed=1) if r["word"] == "e")
    assert e1["label"] == "undeclared" and "        h(e)\n    print(e)\n    for i" in e1["text"]
    for seed in range(20):  # never after the `return` (the old generator put one there)
        assert all(not r["text"].rstrip().endswith(f"return x\n    print({r['word']})") for r in T.declared([s], seed=seed))


def test_dataflow_edges_java():
    s = scopes(JAVA_SCOPES, "java")
    named = sorted((kind, s.tokens[a].text, s.tokens[a].start, s.tokens[b].text, s.tokens[b].start)
                   for (a, b), kind in T.dataflow_edges(s).items())
    at = lambda text, k=0: [i for i in range(len(s.text)) if s.text.startswith(text, i)][k]  # noqa: E731
    expected = sorted([
        ("computed_from", "x", at("x = 0"), "0", at("0;")),  # int x = 0
        ("comes_from", "a", at("a > 0"), "a", at("a)")),  # the use of a in the condition comes from the parameter
        ("computed_from", "y", at("y = x"), "x", at("x;")),  # int y = x
        ("comes_from", "x", at("x;"), "x", at("x = 0")),
        ("computed_from", "y", at("y += a"), "a", at("a;")),  # y += a
        ("comes_from", "a", at("a;"), "a", at("a)")),
        ("computed_from", "i", at("i = 0"), "0", at("0; i")),
        ("comes_from", "i", at("i < a"), "i", at("i = 0")),
        ("comes_from", "a", at("a; i++"), "a", at("a)")),
        ("comes_from", "i", at("i++"), "i", at("i = 0")),
        ("computed_from", "x", at("x = x + i"), "x", at("x + i")),  # x = x + i: the target from both sources
        ("computed_from", "x", at("x = x + i"), "i", at("i; }")),
        ("comes_from", "x", at("x + i"), "x", at("x = 0")),  # the right x is read before the new definition
        ("comes_from", "i", at("i; }"), "i", at("i = 0")),
        ("comes_from", "x", at("x;\n  }"), "x", at("x = x + i")),  # return x: the last definition in text order
    ])
    assert named == expected


def test_dataflow_pairs_are_balanced_and_python_edges():
    s = scopes(PY_SCOPES, "python")
    named = {(s.tokens[a].text, s.tokens[a].start, s.tokens[b].text, s.tokens[b].start): k
             for (a, b), k in T.dataflow_edges(s).items()}
    assert named[("x", s.text.index("x = a"), "a", s.text.index("a\n"))] == "computed_from"
    assert named[("a", s.text.index("a\n"), "a", s.text.index("a, b"))] == "comes_from"
    assert named[("i", s.text.index("i in"), "a", s.text.index("a):"))] == "computed_from"  # for i in range(a)
    assert named[("x", s.text.rindex("x"), "x", s.text.index("x = x"))] == "comes_from"  # return x
    rows = T.dataflow([s], seed=0)
    labels = Counter(r["label"] for r in rows)
    assert labels["no_edge"] == labels["comes_from"] + labels["computed_from"] == len(named)
    edges = {frozenset(e) for e in T.dataflow_edges(s)}
    for r in rows:
        (a, b), (c, d) = r["spans"]
        assert r["kind"] == "pair" and r["word"] == f"{r['text'][a:b]} {r['text'][c:d]}"
        if r["label"] == "no_edge":
            ia = next(i for i, t in enumerate(s.tokens) if t.start == a)
            ic = next(i for i, t in enumerate(s.tokens) if t.start == c)
            assert frozenset((ia, ic)) not in edges
    assert T.dataflow([s], seed=0) == rows and T.dataflow([s], seed=1) != rows


def test_generator_caps_samples_per_task_with_overrides(tmp_path):
    """--max-samples caps every task; --max-samples-per-task overrides it (0: all) for the tasks it names,
    and the subsets are nested (seeded by item id, never by file order)."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq
    import pytest

    from pipeline import schemas
    from pipeline.families.probing.generate import main, task_caps

    java = "class A {\n" + "".join(
        f"  int m{i}(int a, int b) {{\n    int c = a + b * {i};\n    return c - a;\n  }}\n" for i in range(12)) + "}\n"
    (tmp_path / "A.java").write_text(java)
    row = {"file_id": "f1", "sha256": "0" * 64, "source": "s", "repository": "r", "path": "A.java",
           "location": str(tmp_path / "A.java"), "language": "java", "encoding": "utf-8", "bytes": len(java),
           "lines": java.count("\n"), "split": "train", "duplicate": False}
    pq.write_table(pa.Table.from_pylist([row], schema=schemas.MANIFEST), tmp_path / "manifest.parquet")

    def run(out, *extra):
        assert main(["corpus", "--manifest", str(tmp_path / "manifest.parquet"), "--language", "java", "--tasks",
                     "path_type", "depth", "--max-samples", "5", "--seed", "3", "--min-class-samples", "10",
                     "--out", str(out), "--summary", str(out / "summary.json"), *extra]) == 0
        return json.loads((out / "summary.json").read_text())["tasks"], pq.read_table(out / "path_type/labels.parquet")

    capped, small = run(tmp_path / "a")
    assert capped["path_type"]["samples"] == 5 and capped["depth"]["samples"] == 5
    # every sample carries its snippet's source (the manifest's): the evaluation check counts snippets per source
    assert set(pq.read_table(tmp_path / "a/samples.parquet").column("source").to_pylist()) == {"s"}
    wide, big = run(tmp_path / "b", "--max-samples-per-task", "path_type=0")
    from pipeline.families.probing import release as R
    snippets = T.snippets_of_file(java, "java", "f1", T.parser("java"))
    everything = len(R.apply_classes(R.path_type(snippets, T.parser("java")), 15, 10)[0])
    assert wide["path_type"]["samples"] == everything > 5 and wide["depth"]["samples"] == 5
    # the release's class rule ran before the caps, and says what it dropped (12 tokens per path: all kept
    # up to the 15 most frequent paths)
    rule = wide["path_type"]["class_rule"]
    tokens = len(R.path_type(snippets, T.parser("java")))
    assert rule["classes"] == 15 and rule["dropped_samples"] == tokens - everything
    assert set(small["item_id"].to_pylist()) <= set(big["item_id"].to_pylist())
    mid, _ = run(tmp_path / "c", "--max-samples-per-task", "path_type=9,depth=0")
    assert mid["path_type"]["samples"] == 9 and mid["depth"]["samples"] == 12
    assert pq.read_table(tmp_path / "b/path_type/control.parquet").num_rows == everything
    assert task_caps("") == {}
    with pytest.raises(Exception, match="TASK=N"):
        task_caps("path_type")
