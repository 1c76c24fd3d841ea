"""The release's parser runtime (issue 52): py-tree-sitter 0.19.0 + tree-sitter-java ac14b4b in its own environment
(`make fidelity-env`, pipeline/families/probing/runtime019.py), its trees as Node019, the `release_parser` labels on
them, and the release's whitespace split of string literals in data flow. Expected values are read off the trees by
hand (the 0.19 runtime's recovery printed by its own `sexp()` when this test was written)."""

import pytest

from pipeline.families.probing import grammar as G
from pipeline.families.probing import release as R
from pipeline.families.probing import runtime019 as RT

THROWS = b"public void f(int a) throws IOException { int x = a; return; }"


@pytest.fixture(scope="module")
def old():
    reason = RT.check()
    if reason:
        pytest.fail(reason)  # the environment is part of `make install`: a missing one is a broken checkout
    return RT.java_parser()


def dump(node):
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        fields = {f: (c.start_byte, c.end_byte, c.type) for f in ("name", "value", "left", "right", "body", "type",
                                                                 "declarator", "arguments", "object", "condition")
                  if (c := n.child_by_field_name(f)) is not None}
        out.append((n.type, n.start_byte, n.end_byte, tuple(n.start_point), tuple(n.end_point), n.is_named,
                    n.is_missing, n.has_error, n.child_count, sorted(fields.items())))
        stack.extend(reversed(n.children))
    return out


def test_a_clean_tree_is_the_same_on_both_runtimes(old):
    # no parse error: error recovery plays no part, so 0.19's tree equals 0.26's on the same grammar, node for node
    src = b"class A { int f(int a) { int x = a + 1; for (int i = 0; i < x; i++) { x += g(i); } return x; } }"
    assert dump(old.parse(src).root_node) == dump(G.java_parser().parse(src).root_node)


def test_the_release_runtime_recovers_from_the_bare_methods_error_as_0_19_did(old):
    # 0.19: `public void f` + ERROR(formal_parameters) + `throws IOException` as an expression statement + block;
    # 0.26 on the same grammar: ERROR(params, IOException), the block's statements loose under program, an ERROR `}`
    assert [c.type for c in old.parse(THROWS).root_node.children] == [
        "local_variable_declaration", "ERROR", "expression_statement", "block"]
    assert [c.type for c in G.java_parser().parse(THROWS).root_node.children] == [
        "local_variable_declaration", "ERROR", "local_variable_declaration", "return_statement", "ERROR"]
    a = R.alone(THROWS.decode(), "java", old)
    assert R.depth(a) == 4  # program > block > local_variable_declaration > variable_declarator > identifier
    missing = [n for n, _ in R.node_paths(a.root) if n.is_missing]
    assert [n.type for n in missing] == [";", ";"] and all(n.start_byte == n.end_byte for n in missing)


def test_the_cursor_walk_is_the_preorder_of_node_paths(old):
    tree = old.parse(THROWS)
    cur, seen = tree.walk(), []
    while True:  # the release's traverse_tree
        seen.append(cur.node.id)
        if cur.goto_first_child() or cur.goto_next_sibling():
            continue
        while cur.goto_parent():
            if cur.goto_next_sibling():
                break
        else:
            break
    assert seen == [n.id for n, _ in R.node_paths(tree.root_node)]
    root = tree.root_node
    ident = root.descendant_for_byte_range(THROWS.index(b"x ="), THROWS.index(b"x =") + 1)
    assert ident.type == "identifier" and ident.text == b"x" and ident.parent.type == "variable_declarator"


def test_release_parser_path_type_reads_the_one_line_text(old):
    text = "int f(int a)\n    throws E {\n  return a;\n}"
    a = R.alone(text, "java", old)
    line, starts = R.one_line(a)
    assert line == "int f ( int a ) throws E { return a ; }" and len(starts) == len(a.leaves)
    got = {a.word(n): p for n, p in R.token_paths_one_line(a, old)}
    b = R.alone(line, "java", old)
    assert got == {b.word(n): p for n, p in R.token_paths(b, "java")}


def test_dataflow_release_splits_a_string_literal_on_whitespace_as_the_releases_tokens():
    java = G.java_parser()

    class S:
        text, language, snippet_id = 'void f() { String s = "a b c"; String t = s; }', "java", "s"

    whole = R.dataflow([S], 0, java)
    split = R.dataflow([S], 0, java, split_strings=True)
    lit = S.text.index('"a')
    # s comesFrom the literal: the release's token for it is its last whitespace piece `c"` (get_data_flow keeps
    # the last whitespace token whose node is the literal)
    [w] = [r for r in whole if r["word"].startswith('s "')]
    [p] = [r for r in split if r["word"].startswith('s c"')]
    assert w["spans"][1] == (lit, lit + 7) and p["spans"][1] == (lit + 5, lit + 7) and p["label"] == "comesFrom"
    assert p.get("_string_piece") and sum("_string_piece" in r for r in split) == 1
    assert [r["item_id"] for r in whole] == [r["item_id"] for r in split]
    assert [(r["label"], r["spans"]) for r in whole if r is not w] == [
        (r["label"], r["spans"]) for r in split if r is not p]


def test_dataflow_release_reads_names_shifted_after_a_whitespace_run_as_the_release_did():
    # get_data_flow re-joins its whitespace tokens on single spaces and reads each name at the tree's columns: after
    # the literal's double space every name is read one character late, so `;` (read as `t`) comesFrom `t`
    class S:
        text, language, snippet_id = 'void f() { String s = "a b  c"; String t = s; }', "java", "s"

    rows = R.dataflow([S], 0, G.java_parser(), split_strings=True)
    semi = S.text.rindex(";")
    assert ("comesFrom", [(semi, semi + 1), (S.text.index("t ="), S.text.index("t =") + 1)]) in [
        (r["label"], r["spans"]) for r in rows]


def test_paper_probe_overlay_is_valid_params_and_sets_the_releases_probe():
    # examples/paper-probe.yaml on params.yaml, merged as Snakemake merges --configfile overlays (mappings key by key)
    from pathlib import Path

    from snakemake.utils import update_config

    from pipeline.config import load_yaml, validate

    repo = Path(__file__).resolve().parents[1]
    config = load_yaml(repo / "params.yaml")
    update_config(config, load_yaml(repo / "examples" / "paper-probe.yaml"))
    validate(config)
    fit = config["probing"]["fit"]
    assert fit["probe"] == "paper" and fit["also_probes"] == ["ridge"] and fit["paper_layers"] == "selected"
    assert fit["folds"] == 4 and fit["alphas"]  # the default's other fit keys kept
