"""bench.fidelity.codesyntax_jdt's pure parts (no JVM): the two patches of the release's main.java, and the
release's `get_idx` positions-to-tokens rule re-stated on our token stream (expected indices read off by hand)."""

import pytest

from bench.fidelity import codesyntax_jdt as B
from pipeline.syntax import java as J

MAIN = """for (int i =0; i<13711; i ++) {
    ASTParser parser = ASTParser.newParser(AST.JLS3);
    parser.setSource((m_code).toCharArray());"""


def test_patched_main_changes_the_loop_bound_and_the_level_only():
    as_released = B.patched_main(MAIN, 7, None)
    assert as_released == MAIN.replace("i<13711;", "i<7;")
    modern = B.patched_main(MAIN, 7, "17")
    assert "AST.JLS17" in modern and "AST.JLS3" not in modern and 'setComplianceOptions("17", o)' in modern
    assert "parser.setCompilerOptions(o);" in modern
    with pytest.raises(SystemExit):
        B.patched_main("no loop here", 7, None)


def method(code, with_newlines):
    [s] = J.label_file("class A {\n" + code + "\n}\n", 512, with_newlines, J.java_parser())
    return s


def test_get_idx_on_our_tokens():
    code = "void f(int a) {\n    if (a > 0) {\n        g(a);\n    }\n}"
    s = method(code, False)
    ix = B.Indexer(s, False)
    c = s.code
    # tokens: void f ( int a ) { if ( a > 0 ) { g ( a ) ; } }
    assert s.tokens[7:14] == ["if", "(", "a", ">", "0", ")", "{"]
    cond = c.index("a > 0")
    assert ix.idx(cond, cond + 5, True) == 9 and ix.idx(cond, cond + 5, False) == 11
    # a dependent starting at `(`: the opener skipped; ending at `)`: the closer dropped
    close = c.index(") {", cond) + 1
    assert ix.idx(c.index("(a >"), close, True) == 9
    assert ix.idx(c.index("(a >"), close, False) == 11
    block, end = c.index("{\n        g"), c.rindex("}", 0, len(c) - 2) + 1
    line = f"If:if->body {c.index('if')} {c.index('if') + 2} {block} {end}"
    assert ix.edge(line) == ("If:if->body", 7, 14, 18)  # `{` skipped: g; the closing `}` dropped: `;`
    # with newlines: the block's span ends on the newline after it
    s2 = method(code, True)
    got = B.Indexer(s2, True).edge(line)
    assert got is not None and s2.tokens[got[3]] == "\n" and s2.tokens[got[2]] == "g"


def test_categories_name_the_side_and_the_shape():
    ours = {("Call:func->args", 3, 5, 6)}
    assert B.category(("Call:func->args", 3, 5, 7), ours, "JDT") == "Call:func->args | only JDT | other end"
    assert B.category(("Call:func->args", 2, 5, 6), ours, "JDT") == "Call:func->args | only JDT | other head"
    assert B.category(("If:if->test", 2, 5, 6), ours, "JDT") == "If:if->test | only JDT | absent"


def test_with_newlines_labels_equal_get_idx_on_jdt_ranges():
    """Our with-newlines edges against the release's `get_idx` on the character ranges JDT gives (written by hand:
    a condition without its parentheses, a statement with its `;`, a block with its braces, the `else` keyword):
    the same edge, or no edge on either side."""
    code = ("void f(int a) {\n    if (a > 0)\n        g(a);\n    else\n        h(a);\n"
            "    if (a == 1) {\n        g(a);\n    } else {\n        h(a);\n    }\n}")
    s = method(code, True)
    c, ix = s.code, B.Indexer(s, True)
    ours = {(e.relation, e.head, e.dep_start, e.dep_end) for e in s.edges}
    if1, if2 = c.index("if ("), c.index("if (a == 1")
    then2 = c.index("{\n        g")
    else2 = c.index("else {")
    ranges = [
        ("If:if->test", if1, if1 + 2, c.index("a > 0"), c.index("a > 0") + 5),
        ("If:if->body", if1, if1 + 2, c.index("g(a);"), c.index("g(a);") + 5),
        ("If:if->else", if1, if1 + 2, c.index("else"), c.index("else") + 4),
        ("If:test->orelse", c.index("a > 0"), c.index("a > 0") + 5, c.index("h(a);"), c.index("h(a);") + 5),
        ("If:if->test", if2, if2 + 2, c.index("a == 1"), c.index("a == 1") + 6),
        ("If:if->body", if2, if2 + 2, then2, c.index("}", then2) + 1),
        ("If:if->else", if2, if2 + 2, else2, else2 + 4),
        ("If:body->orelse", then2, c.index("}", then2) + 1, else2 + 5, c.index("}", else2) + 1),
    ]
    got = [ix.edge(" ".join(map(str, r))) for r in ranges]
    assert got[5] is None  # `{ ... \n }` then ` else`: the release drops the span
    assert all(e in ours for e in got if e is not None)
    assert not any(e[0] == "If:if->body" and e[1] == got[4][1] for e in ours)  # and so do we
    assert [s.tokens[e[3]] for e in got if e is not None] == ["0", "\n", "\n", "\n", "1", "else", "\n"]


def test_causes_name_the_jdt_shapes_ours_does_not_reproduce():
    t = "void f ( ) { for ( final T x : xs ) g ( new int [ n ] , a && b == c && d , C < ? super E > , O . this ) ; }"
    t = t.split()
    at = t.index
    assert B.cause(("InfixExpr:left->right", at("a"), at("d"), at("d")), t, True) == "infix chain"
    assert B.cause(("children:parent->child", at("for"), at("T"), at("x")), t, True) == "enhanced for"
    assert B.cause(("children:parent->child", at("for"), at("xs"), at("xs")), t, True) == "unexplained"
    assert B.cause(("children:parent->child", at("new"), at("int"), at("n")), t, True) == "array creation"
    assert B.cause(("children:parent->child", at("?"), at("super"), at("super")), t, True) == "wildcard"
    assert B.cause(("children:parent->child", at("O"), at("this"), at("this")), t, True) == "qualified this"
    assert B.cause(("children:parent->child", at("g"), at("a"), at("d")), t, False) == "jdt problem"
    assert set(B.CAUSES) >= {"infix chain", "enhanced for", "array creation", "wildcard", "qualified this",
                             "jdt problem", "unexplained"}
