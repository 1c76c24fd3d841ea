"""Issue 37 item A: a per-file parse budget (pipeline.core.budget). A 1 MB file of one line (10^6 tokens, under the
1 MB cap) took the extract job to 2.4 GB; every parsing stage now refuses a file over its `max_file_tokens` as a
counted `too_complex` reject, unparsed."""

from __future__ import annotations

import time

from pipeline.core import budget
from pipeline.core.budget import count_tokens, over_budget


def test_strings_and_comments_are_one_token_code_in_fstrings_counts():
    assert count_tokens("x = 1 // 2  # a comment of many words\n", "python") == 7  # // is floor division
    assert count_tokens('"""a docstring\nof many words"""\n', "python") == 1
    assert count_tokens('f"{a + b + c}"', "python") > 5  # libcst parses the expression inside
    assert count_tokens("int a = b / c; /* x y z */ s = \"a b\"; // c d", "java") == 13
    assert count_tokens("x = [" + ",".join(["1"] * 1000) + "]", "python") == 3 + 1999 + 1  # x = [ ... ]


def test_the_count_is_linear_on_hostile_text():
    start = time.process_time()
    for text, language in (('"""' + "x" * 300_000, "python"), ('"' * 300_000, "python"), ("/*" * 300_000, "java"),
                           ("'''" * 100_000, "python")):
        count_tokens(text, language)
    assert time.process_time() - start < 5


def test_over_budget_names_the_key_and_zero_is_no_budget():
    text = "x = [" + ",".join(["1"] * 1000) + "]"
    assert over_budget(text, "python", 0) is None and over_budget(text, "python", 5000) is None
    detail = over_budget(text, "python", 100, "extract.max_file_tokens")
    assert detail.startswith("more than 100 tokens (extract.max_file_tokens)")
    assert budget.REASON == "too_complex"


def _manifest(tmp_path, files: dict[str, str]):
    import hashlib

    import pyarrow as pa

    from pipeline import schemas

    rows = []
    for i, (name, text) in enumerate(sorted(files.items())):
        path = tmp_path / name
        path.write_text(text)
        data = path.read_bytes()
        rows.append(dict(file_id=f"f{i}", sha256=hashlib.sha256(data).hexdigest(), source="s", repository="r",
                         path=name, location=str(path), language="java" if name.endswith(".java") else "python",
                         encoding="utf-8", bytes=len(data), lines=data.count(b"\n"), split="test", duplicate=False))
    return pa.Table.from_pylist(rows, schemas.MANIFEST)


BIG = "x = [" + ",".join(["a"] * 3000) + "]\n"  # 6,002 tokens on one line


def test_extract_rejects_a_file_over_its_budget_and_caches_per_budget(tmp_path):
    from pipeline.extract.build import Cache, build

    manifest = _manifest(tmp_path, {"big.py": BIG, "small.py": "import os\nos.path.join('a')\n"})
    for workers in (1, 2):
        tables, _, _ = build(manifest, workers, 30, 1_000_000, Cache(tmp_path / "cache", 1000), max_tokens=1000)
        rejects = tables["rejects"].to_pylist()
        assert [(r["path"], r["reason"]) for r in rejects] == [("big.py", "too_complex")]
        assert "extract.max_file_tokens" in rejects[0]["detail"]
        assert {u["fqn"] for u in tables["usages"].to_pylist()} >= {"os.path.join"}
    # a larger budget never meets the smaller one's cached outcome
    tables, _, hits = build(manifest, 1, 30, 1_000_000, Cache(tmp_path / "cache", 10_000), max_tokens=10_000)
    assert tables["rejects"].num_rows == 0 and hits == 0


def test_identifiers_reject_a_file_over_their_budget(tmp_path):
    from pipeline.identifiers.build import Cache, build

    manifest = _manifest(tmp_path, {"big.py": BIG, "A.java": "class A { int f() { return 1; } }\n"})
    seq, rej, _, _ = build(manifest, ["python", "java"], 1, 0.1, 1_000_000, Cache(None), max_tokens=1000)
    assert [(r["path"], r["reason"]) for r in rej.to_pylist()] == [("big.py", "too_complex")]
    assert seq.num_rows == 1


def test_codesyntax_labelling_rejects_a_file_over_its_budget(tmp_path):
    from pipeline.families.codesyntax.label import Options, _label_row

    (tmp_path / "big.py").write_text("def f():\n    return " + BIG)
    out = _label_row(Options("python", False, 512, str(tmp_path), max_file_tokens=1000),
                     {"location": "big.py", "encoding": "utf-8"})
    assert [(f.reason, "codesyntax.max_file_tokens" in f.detail) for f in out] == [("too_complex", True)]
    from pipeline import schemas

    assert "too_complex" in schemas.REJECT_REASONS


def test_probing_leaves_a_file_over_its_budget_unparsed_and_counts_it(tmp_path):
    import argparse

    from pipeline.families.probing import generate, tasks

    (tmp_path / "Big.java").write_text("class A { int[] f() { return new int[]{" + ",".join(["a"] * 3000) + "}; } }\n")
    (tmp_path / "Small.java").write_text("class B { int g(int x) { int y = x + 1; return y; } }\n")
    args = argparse.Namespace(language="java", max_chars=1000, max_file_tokens=1000)
    prs = tasks.parser("java")
    generate.TOO_COMPLEX.clear()
    big = generate.file_snippets({"location": str(tmp_path / "Big.java"), "encoding": "utf-8", "file_id": "b"}, args, prs)
    small = generate.file_snippets({"location": str(tmp_path / "Small.java"), "encoding": "utf-8", "file_id": "s"}, args,
                                   prs)
    assert big == [] and len(small) == 1 and generate.TOO_COMPLEX == {"b"}
    generate.TOO_COMPLEX.clear()
