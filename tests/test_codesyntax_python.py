"""Python CodeSyntax labels against hand-written expectations (the paper's rules)."""

from pipeline.syntax.python import label_file
import pyarrow.compute as pc


def edges(src: str, relation_prefix: str = "", with_newlines: bool = False) -> tuple[list[str], set]:
    (sample,) = label_file(src, 512, with_newlines)
    out = {(e.relation, e.head, e.dep_start, e.dep_end) for e in sample.edges if e.relation.startswith(relation_prefix)}
    return sample.tokens, out


def test_if_elif_else_chain_and_nested_if():
    src = "def f(a, b):\n    if a:\n        x = 1\n    elif b:\n        if a:\n            pass\n    else:\n        y = 2\n"
    tokens, got = edges(src, "If:")
    # tokens: 0 def 1 f 2 ( 3 a 4 , 5 b 6 ) 7 : 8 \n 9 INDENT 10 if 11 a 12 : 13 \n 14 INDENT 15 x 16 = 17 1 18 \n
    # 19 DEDENT 20 elif 21 b 22 : 23 \n 24 INDENT 25 if 26 a 27 : 28 \n 29 INDENT 30 pass 31 \n 32 DEDENT 33 DEDENT
    # 34 else 35 : 36 \n 37 INDENT 38 y 39 = 40 2 41 \n ...
    assert tokens[10] == "if" and tokens[20] == "elif" and tokens[25] == "if" and tokens[34] == "else"
    assert got == {
        ("If:if->else", 10, 20, 20), ("If:if->test", 10, 11, 11), ("If:if->body", 10, 15, 17),
        ("If:test->body", 11, 15, 17), ("If:test->orelse", 11, 20, 40), ("If:body->orelse", 15, 20, 40),
        ("If:if->else", 20, 34, 34), ("If:if->test", 20, 21, 21), ("If:if->body", 20, 25, 30),
        ("If:test->body", 21, 25, 30), ("If:test->orelse", 21, 38, 40), ("If:body->orelse", 25, 38, 40),
        ("If:if->test", 25, 26, 26), ("If:if->body", 25, 30, 30), ("If:test->body", 26, 30, 30),
    }


def test_multiline_call_with_keywords_and_method_callee():
    src = "def f():\n    obj.fn(a,\n           b, key=(1),\n           other=2)\n"
    tokens, got = edges(src, "Call:")
    # 7 obj 8 . 9 fn 10 ( 11 a 12 , 13 NL 14 b 15 , 16 key 17 = 18 ( 19 1 20 ) 21 , 22 NL 23 other 24 = 25 2 26 )
    assert tokens[9] == "fn" and tokens[13] == "\n" and tokens[25] == "2"
    assert got == {("Call:func->args", 9, 11, 14), ("Call:func->keywords", 9, 16, 25),
                   ("Call:args->keywords", 11, 16, 25)}


def test_tuple_target_assign_augassign_attribute():
    src = "def f():\n    (a, b) = c.d\n    a += [1]\n"
    tokens, got = edges(src)
    # 6 INDENT 7 ( 8 a 9 , 10 b 11 ) 12 = 13 c 14 . 15 d 16 \n 17 a 18 += 19 [ 20 1 21 ] 22 \n
    assert tokens[7] == "(" and tokens[20] == "1"
    assert got == {("Assign:target->value", 8, 13, 15),  # the tuple's bracket is not its first token
                   ("Attribute:value->attr", 13, 15, 15), ("AugAssign:target->value", 17, 20, 20),  # `[1]` unwrapped
                   ("children:parent->child", 8, 10, 10),  # Tuple -> b (Tuple -> a has head == dependent)
                   ("children:parent->child", 8, 13, 15), ("children:parent->child", 17, 20, 20)}


def test_decorators_are_in_the_sample_but_not_labelled():
    src = "@dec(1)\ndef f(x=g(2)):\n    return h(x)\n"
    tokens, got = edges(src)
    assert tokens[:2] == ["@", "dec"]
    assert {e[0] for e in got} == {"Call:func->args", "children:parent->child"}
    call = tokens.index("h")
    assert got == {("Call:func->args", call, call + 2, call + 2), ("children:parent->child", call - 1, call, call + 2),
                   ("children:parent->child", call, call + 2, call + 2)}


def test_comprehension_with_several_fors_and_dict_comp():
    src = "def f():\n    return [x for y in z for x in y if x], {k: v for k, v in w}\n"
    tokens, got = edges(src)
    i = tokens.index("[")  # [ x for y in z for x in y if x ]
    assert ("ListComp:elt->generator", i + 1, i + 3, i + 9) in got  # first target .. last iterable (not the if)
    assert ("comprehension:target->iter", i + 3, i + 5, i + 5) in got
    assert ("comprehension:target->iter", i + 7, i + 9, i + 9) in got
    j = tokens.index("{")  # { k : v for k , v in w }
    assert {("DictComp:key->value", j + 1, j + 3, j + 3), ("DictComp:key->generator", j + 1, j + 5, j + 9),
            ("DictComp:value->generator", j + 3, j + 5, j + 9)} <= got


def test_try_except_else_finally():
    src = ("def f():\n    try:\n        a()\n    except E:\n        b()\n    except F:\n        c()\n"
           "    else:\n        d()\n        e()\n    finally:\n        g()\n")
    tokens, got = edges(src, "Try:")
    a, exc, d, e, g = tokens.index("a"), tokens.index("except"), tokens.index("d"), tokens.index("e"), tokens.index("g")
    c = tokens.index("c")
    assert got == {("Try:body->handler", a, exc, c + 1), ("Try:handler->orelse", exc, d, e + 1),
                   ("Try:handler->finalbody", exc, g, g + 1), ("Try:body->orelse", a, d, e + 1),
                   ("Try:body->finalbody", a, g, g + 1)}


def test_loops_with_ifexp_boolop_compare_binop_slice_dict():
    src = ("def f():\n    for i, j in z:\n        while i < 3 and j:\n            q = a if b else c\n"
           "    with o as p:\n        r = s[1:n] + {1: 2}\n")
    tokens, got = edges(src)
    t = tokens
    fo, wh = t.index("for"), t.index("while")
    assert {("For:for->target", fo, fo + 1, fo + 3), ("For:for->iter", fo, fo + 5, fo + 5),
            ("For:target->iter", fo + 1, fo + 5, fo + 5), ("For:for->body", fo, wh, t.index("c")),
            ("For:target->body", fo + 1, wh, t.index("c")), ("For:iter->body", fo + 5, wh, t.index("c"))} <= got
    assert {("While:while->test", wh, wh + 1, wh + 5), ("While:test->body", wh + 1, t.index("q"), t.index("c")),
            ("BoolOp:value->value", wh + 1, wh + 5, wh + 5), ("Compare:left->comparator", wh + 1, wh + 3, wh + 3)} <= got
    a = t.index("a")
    assert {("IfExp:body->test", a, a + 2, a + 2), ("IfExp:test->orelse", a + 2, a + 4, a + 4),
            ("IfExp:body->orelse", a, a + 4, a + 4)} <= got
    s = t.index("s")  # s [ 1 : n ] + { 1 : 2 }
    assert {("Subscript:value->slice", s, s + 2, s + 4), ("Slice:lower->upper", s + 2, s + 4, s + 4),
            ("BinOp:left->right", s, s + 8, s + 10), ("Dict:key->value", s + 8, s + 10, s + 10),
            ("With:item->body", t.index("o"), t.index("r"), s + 10)} <= got


def test_with_newlines_variant_ends_spans_on_the_newline():
    src = "def f():\n    x = g(1)\n"
    tokens, plain = edges(src, "Assign")
    _, nl = edges(src, "Assign", with_newlines=True)
    x = tokens.index("x")
    assert plain == {("Assign:target->value", x, x + 2, x + 4)}  # g ( 1
    assert nl == {("Assign:target->value", x, x + 2, x + 6)} and tokens[x + 6] == "\n"


def test_robustness_syntax_errors_tabs_unicode_caps():
    bad = label_file("def f(:\n    pass\n", 512, False)
    assert [(f.reason, f.function) for f in bad] == [("syntax_error", "")]
    tabs = label_file("class A:\n\tdef m(self):\n\t\tif x:\n\t\t\treturn 1\n", 512, False)
    assert tabs[0].tokens[:2] == ["def", "m"] and any(e.relation == "If:if->body" for e in tabs[0].edges)
    uni = label_file("def f():\n    ñame = 'é' + ü.attr\n", 512, False)[0]
    n = uni.tokens.index("ñame")
    assert ("Attribute:value->attr", n + 4, n + 6, n + 6) in {(e.relation, e.head, e.dep_start, e.dep_end)
                                                              for e in uni.edges}
    long = label_file("def f():\n" + "    x = 1\n" * 200, 512, False)
    assert long[0].reason == "too_many_tokens"


def test_labelling_cap_makes_a_timeout_reject_and_goes_on(tmp_path):
    """Issue 15 item 7: codesyntax labelling has a per-file cap that ends its worker (native code included):
    the slow file is one `timeout` failure, the other files are labelled as without a cap."""
    from pipeline.families.codesyntax.label import Options, label_corpus

    big = "".join(f"def f{i}(a, b):\n    if a > b:\n        return [a + {i} for _ in range(b)]\n    return b\n\n"
                  for i in range(4000))
    (tmp_path / "big.py").write_text(big)
    (tmp_path / "small.py").write_text("def g(x):\n    return x + 1\n")
    rows = [{"location": "big.py", "encoding": "utf-8"}, {"location": "small.py", "encoding": "utf-8"}]
    capped = Options("python", False, 512, str(tmp_path), timeout_s=0.2)
    samples, failures = label_corpus(rows, capped, workers=1)
    assert [(row["location"], f.reason) for row, f in failures] == [("big.py", "timeout")]
    assert [(row["location"], s.function) for row, s in samples] == [("small.py", "g")]
    uncapped, _ = label_corpus(rows[1:], Options("python", False, 512, str(tmp_path)), workers=1)
    assert [s.tokens for _, s in uncapped] == [s.tokens for _, s in samples]


def test_stage_tables_from_workers_equal_the_in_process_rows(tmp_path):
    """Issue 14 item 5: the labelling workers send each file's rows as Arrow tables (`LabelledFile`);
    the stage's three tables are byte-identical to writing the labelled samples in this process, for 1
    and 2 workers, and hold exactly the samples and edges `label_file` finds (ids, splits and the
    per-file sample order rebuilt by hand for one file)."""
    import hashlib
    from pathlib import Path

    import pyarrow.parquet as pq

    from pipeline.core.ids import stable_id, unit_float
    from pipeline.families.codesyntax.label import Options, iter_labelled, iter_labelled_tables, write_tables

    corpus = Path(__file__).resolve().parent.parent / ".test" / "corpus"
    files = sorted(corpus.glob("**/*.py"))
    rows = [{"location": str(f.relative_to(corpus)), "encoding": "utf-8", "sha256": hashlib.sha256(f.read_bytes()).hexdigest(),
             "file_id": f"f{i}", "source": "s", "repository": f.parent.name, "path": str(f.relative_to(corpus)),
             "split": "train", "bytes": f.stat().st_size} for i, f in enumerate(files)]
    (tmp_path / "c").mkdir()
    for f in files:
        (tmp_path / "c" / f.relative_to(corpus)).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "c" / f.relative_to(corpus)).write_bytes(f.read_bytes())
    (tmp_path / "c" / "broken.py").write_text("def f(:\n")
    rows.append(dict(rows[0], location="broken.py", path="broken.py", file_id="fb", sha256="0" * 64, bytes=8))
    opts = Options("python", False, 512, str(tmp_path / "c"), timeout_s=30)
    outputs = {}
    for name, labelled, buckets, cap in (("items-1", iter_labelled(rows, opts, 1), 1, 0),
                                         ("tables-1", iter_labelled_tables(rows, opts, 1, 7, 0.5), 4, 0),
                                         ("tables-2", iter_labelled_tables(rows, opts, 2, 7, 0.5), 16, 0),
                                         ("cap-1", iter_labelled(rows, opts, 1), 1, 10),
                                         ("cap-8", iter_labelled(rows, opts, 1), 8, 10)):
        out = {t: tmp_path / name / f"{t}.parquet" for t in ("samples", "relations", "rejects")}
        (tmp_path / name).mkdir()
        (tmp_path / name / "tmp").mkdir()
        summary = write_tables(labelled, "python", 7, 0.5, cap, out, tmp_path / name / "tmp", buckets=buckets)
        outputs[name] = ({t: p.read_bytes() for t, p in out.items()}, summary)
    # bucketed sorting: the same bytes for any number of buckets and workers
    assert outputs["tables-1"] == outputs["items-1"] == outputs["tables-2"]
    assert outputs["cap-1"] == outputs["cap-8"] and outputs["cap-1"][1]["samples"] == 10
    capped_ids = pq.read_table(tmp_path / "cap-8" / "samples.parquet").column("sample_id").to_pylist()
    all_ids = pq.read_table(tmp_path / "tables-2" / "samples.parquet").column("sample_id").to_pylist()
    assert capped_ids == sorted(sorted(all_ids, key=lambda i: unit_float(7, "codesyntax-cap", i))[:10])
    capped_edges = pq.read_table(tmp_path / "cap-8" / "relations.parquet").column("sample_id").to_pylist()
    assert set(capped_edges) <= set(capped_ids) and len(set(capped_edges)) > 5
    samples = pq.read_table(tmp_path / "tables-2" / "samples.parquet").to_pylist()
    relations = pq.read_table(tmp_path / "tables-2" / "relations.parquet")
    expected = [(row, s) for row in rows[:-1] for s in label_file((corpus / row["path"]).read_text(), 512, False)]
    assert len(samples) == len(expected) > 20 and outputs["tables-2"][1]["rejects"] == 1
    assert relations.num_rows == sum(len(s.edges) for _, s in expected)
    row, s = expected[0]
    sid = stable_id(row["sha256"], "python", s.start_line, s.function)
    got = next(r for r in samples if r["sample_id"] == sid)
    split = "dev" if unit_float(7, "codesyntax-split", row["file_id"]) < 0.5 else "test"
    assert (got["function"], got["tokens"], got["eval_split"], got["repository"]) == (s.function, s.tokens, split,
                                                                                        row["repository"])
    mine = relations.filter(pc.equal(relations.column("sample_id"), sid))
    assert sorted(zip(mine.column("relation").to_pylist(), mine.column("head").to_pylist())) == sorted(
        (e.relation, e.head) for e in s.edges)
