"""Java CodeSyntax labels (tree-sitter) against hand-written expectations."""

from pipeline.syntax.common import Failure
from pipeline.syntax.java import java_parser, label_file

SRC = """class A {
  int f(int a) {
    for (int i = 0, j = 1; i < n; i++, j--) { s = "x y" + a + b; } // c
    if (a > 0) { x.foo(1, g(2)); } else if (b) y = 2; else { z = c ? 1 : 2; }
    do { k[i] = 1; } while (k instanceof T);
    switch (v) { case 1: w = 1; break; default: w = 2; }
    out: while (t) { t = false; }
    try { r(); } catch (E e) { q(); } finally { p(); }
  }
}"""


def test_java_relations_by_hand():
    (sample,) = label_file(SRC, 512, False, java_parser())
    t = sample.tokens
    got = {(e.relation, e.head, e.dep_start, e.dep_end) for e in sample.edges if not e.relation.startswith("children")}
    fo = t.index("for")  # for ( int i = 0 , j = 1 ; i < n ; i ++ , j -- ) { s = "x y" + a + b ; }
    s = t.index("s")
    expected = {
        ("For:for->body", fo, s, s + 7), ("For:for->test", fo, fo + 11, fo + 13),
        ("For:for->initializers", fo, fo + 2, fo + 9), ("For:for->updaters", fo, fo + 15, fo + 19),
        ("For:initializers->test", fo + 2, fo + 11, fo + 13), ("For:test->updaters", fo + 11, fo + 15, fo + 19),
        ("For:test->body", fo + 11, s, s + 7), ("For:initializers->updaters", fo + 2, fo + 15, fo + 19),
        ("For:initializers->body", fo + 2, s, s + 7), ("For:updaters->body", fo + 15, s, s + 7),
        ("InfixExpr:left->right", fo + 11, fo + 13, fo + 13),
        ("Assign:target->value", s, s + 2, s + 6), ("InfixExpr:left->right", s + 2, s + 4, s + 4),  # "x y" -> a only
    }
    i1 = t.index("if")  # if ( a > 0 ) { x . foo ( 1 , g ( 2 ) ) ; } else if ( b ) y = 2 ; else { z = c ? 1 : 2 ; }
    x, i2 = i1 + 7, i1 + 21
    z = t.index("z")
    expected |= {
        ("If:if->else", i1, i1 + 20, i1 + 20), ("If:if->test", i1, i1 + 2, i1 + 4), ("If:if->body", i1, x, x + 11),
        ("If:test->body", i1 + 2, x, x + 11), ("If:test->orelse", i1 + 2, i2, z + 7),
        ("If:body->orelse", x, i2, z + 7), ("InfixExpr:left->right", i1 + 2, i1 + 4, i1 + 4),
        ("Call:func->args", x + 2, x + 4, x + 8), ("Attribute:value->attr", x, x + 2, x + 2),
        ("Call:func->args", x + 6, x + 8, x + 8),
        ("If:if->else", i2, i2 + 8, i2 + 8), ("If:if->test", i2, i2 + 2, i2 + 2), ("If:if->body", i2, i2 + 4, i2 + 7),
        ("If:test->body", i2 + 2, i2 + 4, i2 + 7), ("If:test->orelse", i2 + 2, z, z + 7),
        ("If:body->orelse", i2 + 4, z, z + 7), ("Assign:target->value", i2 + 4, i2 + 6, i2 + 6),
        ("Assign:target->value", z, z + 2, z + 6), ("IfExp:test->body", z + 2, z + 4, z + 4),
        ("IfExp:test->orelse", z + 2, z + 6, z + 6), ("IfExp:body->orelse", z + 4, z + 6, z + 6),
    }
    do = t.index("do")  # do { k [ i ] = 1 ; } while ( k instanceof T ) ;
    expected |= {("Do:do->body", do, do + 2, do + 8), ("Do:do->test", do, do + 12, do + 14),
                 ("Do:body->test", do + 2, do + 12, do + 14), ("Subscript:value->slice", do + 2, do + 4, do + 4),
                 ("Assign:target->value", do + 2, do + 7, do + 7), ("InstanceofExpr:expr->type", do + 12, do + 14, do + 14)}
    sw = t.index("switch")  # switch ( v ) { case 1 : w = 1 ; break ; default : w = 2 ; }
    expected |= {("Switch:switch->expr", sw, sw + 2, sw + 2), ("Switch:expr->statement", sw + 2, sw + 5, sw + 19),
                 ("Switch:switch->statement", sw, sw + 5, sw + 19), ("Assign:target->value", sw + 8, sw + 10, sw + 10),
                 ("Assign:target->value", sw + 16, sw + 18, sw + 18)}
    out = t.index("out")  # out : while ( t ) { t = false ; }
    expected |= {("LabeledStatement:label->body", out, out + 2, out + 10), ("While:while->test", out + 2, out + 4, out + 4),
                 ("While:while->body", out + 2, out + 7, out + 10), ("While:test->body", out + 4, out + 7, out + 10),
                 ("Assign:target->value", out + 7, out + 9, out + 9)}
    tr = t.index("try")  # try { r ( ) ; } catch ( E e ) { q ( ) ; } finally { p ( ) ; }
    expected |= {("Try:body->handler", tr + 2, tr + 7, tr + 16), ("Try:body->finalbody", tr + 2, tr + 20, tr + 23),
                 ("Try:handler->finalbody", tr + 7, tr + 20, tr + 23)}
    assert got == expected
    assert {r for r, *_ in expected} | {"children:parent->child"} == {e.relation for e in sample.edges}
    assert len({r for r, *_ in expected}) >= 15


def test_java_error_nodes_are_rejected_and_token_zero_dropped():
    src = "class A {\n  void ok() { a = b; }\n  void bad() { a = ; }\n  abstract void none();\n}"
    results = label_file(src, 512, False, java_parser())
    assert [type(r).__name__ for r in results] == ["Sample", "Failure"]
    assert isinstance(results[1], Failure) and results[1].reason == "parse_error" and results[1].function == "A.bad"
    assert all(e.head > 0 for e in results[0].edges)


def test_java_with_newlines_inserts_newline_tokens():
    src = "class A {\n  void f() {\n    a = b;\n  }\n}"
    (sample,) = label_file(src, 512, True, java_parser())
    assert sample.tokens == ["void", "f", "(", ")", "{", "\n", "a", "=", "b", ";", "\n", "}"]
    edge = [(e.head, e.dep_start, e.dep_end) for e in sample.edges if e.relation == "Assign:target->value"]
    assert edge == [(6, 8, 8)]


def _reference_positions(code: str, tokens_at: list[int]) -> list[tuple[int, int]]:
    """Line (1-based) and character column of each byte offset, the slow obvious way."""
    data = code.encode()
    out = []
    for at in tokens_at:
        prefix = data[:at].decode()
        out.append((prefix.count("\n") + 1, len(prefix) - (prefix.rfind("\n") + 1)))
    return out


def test_java_token_positions_are_exact_and_linear_in_line_length():
    """Issue 15 item 8: columns are counted incrementally (a 1 MB one-line method is linear); they must equal
    a from-scratch count, with non-ASCII text, blank lines and several tokens per line."""
    body = "  int f() {\n\n    String s = \"héllo wörld\"; int ü = 1; /* ☃ */ s = s + \"€\" + ü;\n" + \
           "    " + " ".join(f"x{i} = ü + {i};" for i in range(200)) + "\n  }\n"
    code = "class A {\n" + body + "}\n"
    for with_newlines in (False, True):
        (sample,) = label_file(code, 100000, with_newlines, java_parser())
        # rebuild each token's byte offset in the file: tokens appear in order, NEWLINE tokens sit on '\n'
        data, at, offsets = code.encode(), code.encode().index(b"int f"), []
        for tok in sample.tokens:
            needle = b"\n" if tok == "\n" or tok == "NEWLINE" else tok.encode()
            at = data.index(needle, at)
            offsets.append(at)
            at += len(needle)
        expected = _reference_positions(code, offsets)
        first_line = code[: code.index("int f")].count("\n") + 1
        got = [(line + first_line - 1, col + (2 if line == 1 else 0)) for line, col in
               zip(sample.lines, sample.cols)]
        assert got == expected


def test_java_children_follow_jdt_for_throws_switch_case_and_finally():
    """Three node shapes read as Eclipse JDT's AST has them (the release labels JDT's tree): a method's thrown
    types are the MethodDeclaration's own children (no `throws` head; a method-level edge has head 0, which the
    release drops), a SwitchCase ends on its `:`, and the finally Block is the TryStatement's child (no `finally`
    node between them)."""
    src = """class A {
  int f(int a) throws IOException, E2 {
    switch (v) { case 1: w = 1; break; default: w = 2; }
    try { r(); } catch (E e) { q(); } finally { p(); }
  }
}"""
    (sample,) = label_file(src, 512, False, java_parser())
    t = sample.tokens
    got = {(t[e.head], " ".join(t[e.dep_start:e.dep_end + 1]))
           for e in sample.edges if e.relation == "children:parent->child"}
    assert not {h for h, _ in got} & {"throws", "finally"}
    assert {("switch", "case 1 :"), ("switch", "default :"), ("try", "p ( ) ;"), ("try", "r ( ) ;")} <= got
    assert ("switch", "case 1") not in got and ("try", "finally { p ( ) ;") not in got


NEWLINE_SRC = """class A {
  void f(int a) {
    if (a > 0)
      g(a);
    else
      h(a);
    while (a < 9)
      a++;
    if (a == 1) {
      g(a);
    } else {
      h(a);
    }
  }
}"""


def _spans(sample, relation):
    t = sample.tokens
    return {(t[e.head], " ".join(t[e.dep_start:e.dep_end + 1])) for e in sample.edges if e.relation == relation}


def test_java_with_newlines_follows_the_release_get_idx():
    """The release's with-newlines rule (generate_labels_java.py `get_idx` on JDT's character ranges): a dependent
    ends on the newline token only when that newline directly follows it. A condition is JDT's expression inside the
    parentheses, so `if (a > 0)` + line break ends on `0`, not on `) \\n`; the `else` keyword followed by a line
    break is `else \\n`; a one-statement body on the next line ends on its newline. Dropping a closing bracket that
    leaves a newline token last drops the span, as an opener would: a block closed by `}` with `else` after it on
    the same line has no `If:if->body` / `If:test->body` edge (the plain variant keeps it)."""
    (nl,) = label_file(NEWLINE_SRC, 512, True, java_parser())
    (plain,) = label_file(NEWLINE_SRC, 512, False, java_parser())
    assert _spans(nl, "If:if->test") == {("if", "a > 0"), ("if", "a == 1")}
    assert _spans(nl, "While:while->test") == {("while", "a < 9")}
    assert _spans(nl, "If:if->else") == {("if", "else \n"), ("if", "else")}  # `} else {`: no line break
    assert _spans(nl, "If:if->body") == {("if", "g ( a ) ; \n")}
    assert _spans(nl, "If:test->body") == {("a", "g ( a ) ; \n")}
    assert _spans(nl, "If:test->orelse") == {("a", "h ( a ) ; \n"), ("a", "h ( a ) ; \n } \n")}
    assert _spans(nl, "While:while->body") == {("while", "a ++ ; \n")}
    children = _spans(nl, "children:parent->child")
    assert {("if", "a > 0"), ("while", "a < 9"), ("if", "a == 1")} <= children
    assert not {dep for head, dep in children if dep.endswith(") \n")}
    assert ("if", "g ( a ) ; \n") in children and ("if", "g ( a ) ; \n }") not in children
    # the plain variant: the same conditions, `else` alone, and the block body kept (its `}` dropped)
    assert _spans(plain, "If:if->test") == {("if", "a > 0"), ("if", "a == 1")}
    assert [plain.tokens[e.dep_end] for e in plain.edges if e.relation == "If:if->else"] == ["else", "else"]
    assert [" ".join(plain.tokens[e.dep_start:e.dep_end + 1]) for e in plain.edges if e.relation == "If:if->body"] \
        == ["g ( a ) ;", "g ( a ) ;"]


def test_java_annotation_arguments_are_the_annotation_children():
    """JDT's SingleMemberAnnotation holds its value and NormalAnnotation its member-value pairs: tree-sitter's
    annotation_argument_list is flattened, so `@A("x")` + line break ends on the value, not on `) \\n`."""
    src = 'class A {\n  void f() {\n    @SuppressWarnings("x")\n    int a = 1;\n    @B(k = 1, v = 2) int b;\n  }\n}'
    for with_newlines in (False, True):
        (sample,) = label_file(src, 512, with_newlines, java_parser())
        children = _spans(sample, "children:parent->child")
        assert {("@", '"x"'), ("@", "k = 1"), ("@", "v = 2")} <= children
        assert ("k", "v = 2") not in children and ("@", "k = 1 , v = 2") not in children
