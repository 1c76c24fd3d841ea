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
