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
