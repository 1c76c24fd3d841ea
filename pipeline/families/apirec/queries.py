"""apirec APIBench-Q (query-based, Python): natural-language queries with the API that answers them,
the API documents of the candidate universe, and the BM25 baseline's rankings.

Queries (evaluation split only, like the code points; split by project through the manifest):

- `docstring`: the first sentence of a public class / function / method docstring of the corpus
  (the extraction's inventory); answer = that definition's FQN (method level) and its class or
  module (class level);
- `comment`: a block of comment-only lines directly above a line whose first resolved call
  (kind call/method, smallest column) is the answer. Comment text is the block joined, first
  sentence; pragma-like comments (noqa, type:, pylint ...) and commented-out code (the text parses
  as Python with `ast.parse`: two juxtaposed words never do) are skipped, as are texts with fewer
  than two words.

Files are read as text and parsed with `ast` / `tokenize`; corpus code is never imported or run.

Universe: every public class, function and method of the inventory (all libraries, all splits) that
exists on the pipeline's platform (an answer that cannot be called here is invalid; the check:
`pipeline.extract.availability`): a
definition only for another platform is neither in the universe nor an answer (counted per label in
`apis_platform_left_out`, distinct APIs; queries in `queries_platform_left_out`), nor is a stdlib name the
pinned interpreter's stdlib does not bind (`apis_not_in_stdlib_left_out`, `queries_not_in_stdlib_left_out`).
An API's document is its FQN split into words (dots, snake and camel case) plus its docstring
*after the first sentence* (read from the file with `ast`): the first sentence is the docstring
query itself, so indexing it would make every docstring query a verbatim match. `api_doc: full`
indexes the whole docstring (an upper bound, named as such). Queries whose answer is not in the
universe (builtins, C-implemented or re-exported stdlib names) cannot be retrieved: they are
counted (`answer_outside_universe`) and dropped.

Leaky: the query contains the answer's own name (its last FQN part), case-insensitive, either as a
whole identifier (`join` in "join two paths") or as 2-4 consecutive words whose concatenation is the
name without underscores ("base name" for `basename`, "read text" for `read_text`), or, for a name
of several snake / camel-case parts, every part among the query's words ("split a string into
words" for `split_words`).

Dedup: queries with the same normalised text (lower-case words) and the same answer are kept once
(docstrings before comments, then by path and line); the same text with different answers is kept
for each answer, and `answers` says how many answers the text has (ambiguous when > 1).

BM25 (bm25s, Lucene variant, k1 = 1.5, b = 0.75): query and documents are tokenised the same way
(identifier parts, lower case, bm25s's English stop words removed); a ranking lists the documents
with a positive score, best first, ties by FQN. Its top `candidates` per query are the pool the
encoder models re-rank (infer_query.py).
"""

from __future__ import annotations

import ast
import io
import json
import logging
import math
import re
import sys
import tokenize
from collections import Counter, defaultdict
from dataclasses import astuple, dataclass
from itertools import chain, compress
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.core import ids
from pipeline.core import shards as sharding
from pipeline.extract.availability import NOT_IN_STDLIB, Availability, left_out_counts
from pipeline.families.apirec import schemas
from pipeline.families.apirec.points import CALL_KINDS, api_class, ranking_row
from pipeline.manifest import read_text

log = logging.getLogger("pipeline.families.apirec.queries")

DEF_KINDS = ("class", "function", "method")
SKIP_COMMENT = re.compile(r"^(noqa|type:|pragma|fmt:|pylint|mypy|isort|flake8|coding[:=]|-\*-|!|nosec|pyright)",
                          re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z0-9]+")
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# BM25Index.corpus_token_ids (documents joined by NUL): _PARTS's parts, its branches in an order that matches
# sooner (the lower-case run first: no two of the first three branches match at one place, so the order changes
# nothing), and a NUL as a part of its own
_PARTS_OR_NUL = re.compile(r"[a-z]+|[A-Z][a-z]+|[A-Z]+(?=[A-Z][a-z])|[A-Z]+|[0-9]+|\0")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
# reST / Markdown markup (a query should read as prose, not as markup), replaced by the text a reader sees,
# in this order
_MARKUP = [
    (re.compile(r"^\s*\.\.\s+[\w-]+::\s*"), ""),  # a directive's head (`.. note::`)
    (re.compile(r"!?\[([^\]]*)\]\([^)]*\)"), r"\1"),  # Markdown link / image: its text
    (re.compile(r":(?:[\w-]+:)*[\w-]+:`~?([^`<]*?)\s*(?:<[^>]*>)?`"), r"\1"),  # :role:`text <target>`
    (re.compile(r"``(.+?)``"), r"\1"),  # inline literal
    (re.compile(r"`([^`<]*?)\s*(?:<[^>]*>)?`_{1,2}"), r"\1"),  # `link <url>`_ and `ref`_
    (re.compile(r"`([^`]+)`"), r"\1"),  # interpreted text / Markdown code
    (re.compile(r"\*\*(\S(?:.*?\S)?)\*\*"), r"\1"),  # strong
    (re.compile(r"(?<![\w*])\*(\S(?:[^*]*?\S)?)\*(?![\w*])"), r"\1"),  # emphasis (not `*args`)
    (re.compile(r"\|([\w -]+)\|"), r"\1"),  # substitution
    (re.compile(r"<(https?://[^>]+)>"), r"\1"),  # bare link in brackets
    (re.compile(r"^#+\s+"), ""),  # Markdown heading
    (re.compile(r"::(\s|$)"), r":\1"),  # a literal block's `::`
]


@dataclass(frozen=True)
class Query:
    """One query before deduplication."""

    origin: str  # docstring / comment
    text: str
    api: str
    kind: str  # class / function / method (docstring) or call (comment)
    category: str
    file_id: str
    source: str
    repository: str
    path: str
    split: str
    line: int


def first_sentence(text: str) -> str:
    """Whitespace collapsed, cut after the first `.`, `!` or `?` that a space follows."""
    flat = " ".join(text.split())
    return _SENTENCE_END.split(flat, 1)[0].strip() if flat else ""


def clean_markup(text: str) -> str:
    """The text without reST / Markdown markup (roles, literals, links, emphasis, directives),
    whitespace collapsed: `Return :func:`os.path.join` of ``a``.` -> `Return os.path.join of a.`"""
    flat = " ".join(text.split())
    for pattern, repl in _MARKUP:
        flat = pattern.sub(repl, flat)
    return " ".join(flat.split())


def identifier_parts(text: str) -> list[str]:
    """Lower-case words of `text`, identifiers split at underscores, dots and camel case: the parts of each
    word (`_WORD`), found by `_PARTS` over the whole text at once (its classes and lookahead are ASCII
    alphanumerics, so no part crosses a word's edge: the same parts as word by word, in one regex pass)."""
    return [p.lower() for p in _PARTS.findall(text)]


def normalise(text: str) -> str:
    """The dedup key: lower-case alphanumeric words."""
    return " ".join(w.lower() for w in _WORD.findall(text))


def is_leaky(query: str, fqn: str) -> bool:
    """The query names the answer: its last FQN part as a whole identifier (case-insensitive),
    2-4 consecutive words whose concatenation is that name without underscores, or (a name of
    several snake / camel parts) every part among the query's words."""
    name = fqn.rsplit(".", 1)[-1]
    if not name.strip("_"):
        return False
    if re.search(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])", query, re.IGNORECASE):
        return True
    squashed = name.replace("_", "").lower()
    words = [w.lower() for w in _WORD.findall(query)]
    if any("".join(words[i:i + n]) == squashed for n in (2, 3, 4) for i in range(len(words) - n + 1)):
        return True
    parts = identifier_parts(name)
    return len(parts) > 1 and set(parts) <= set(identifier_parts(query))


def comment_text(lines: list[str]) -> str | None:
    """The query of a comment block, or None when it is no natural-language description."""
    body = " ".join(line.lstrip("#").strip() for line in lines).strip()
    if not body or SKIP_COMMENT.match(body) or SKIP_COMMENT.match(lines[0].lstrip("#").strip()):
        return None
    text = first_sentence(clean_markup(body))
    if len([w for w in _WORD.findall(text) if any(c.isalpha() for c in w)]) < 2:
        return None
    try:
        ast.parse(text)
        return None  # commented-out code
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return text


def comment_blocks(text: str) -> list[tuple[int, str]]:
    """(the line after the block, the block's query) for each block of comment-only lines."""
    blocks: list[tuple[int, list[str]]] = []
    last = None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type != tokenize.COMMENT or tok.line[: tok.start[1]].strip():
                continue  # a trailing comment after code
            row = tok.start[0]
            if last is not None and row == last + 1 and blocks:
                blocks[-1][1].append(tok.string)
            else:
                blocks.append((row, [tok.string]))
            last = row
    except (tokenize.TokenError, IndentationError, SyntaxError, ValueError):
        return []
    out = []
    for start, lines in blocks:
        q = comment_text(lines)
        if q is not None:
            out.append((start + len(lines), q))
    return out


def docstrings(tree: ast.Module) -> dict[str, tuple[int, str]]:
    """qualname (`C.m`, as the inventory names them) -> (def line, full docstring) of classes and functions."""
    out: dict[str, tuple[int, str]] = {}

    def walk(node, prefix: str):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                doc = ast.get_docstring(child)
                out.setdefault(name, (child.lineno, doc or ""))
                if isinstance(child, ast.ClassDef):
                    walk(child, name + ".")

    walk(tree, "")
    return out


def rest_of_doc(doc: str) -> str:
    """The docstring after its first sentence."""
    flat = " ".join(doc.split())
    parts = _SENTENCE_END.split(flat, 1)
    return parts[1] if len(parts) > 1 else ""


def category_of(library: str) -> str:
    """A docstring query's category when the inventory does not record one (an older extraction)."""
    return "stdlib" if library in sys.stdlib_module_names else "third_party"


def load_bm25s():
    """bm25s (and its stop words), imported once per process: the job imports it in its set-up (main), so no
    index build pays it (~0.4 CPU-s); a later call returns the module already loaded."""
    global _BM25S
    if _BM25S is None:
        import bm25s
        import bm25s.stopwords

        _BM25S = bm25s
    return _BM25S


_BM25S = None


class BM25Index:
    """bm25s over the API documents, documents in FQN order (so index order breaks ties by FQN).

    The index is bm25s's own (`bm25s.BM25`, Lucene's variant, its scoring), its score matrix built here in a
    few whole-corpus numpy operations (`lucene_matrix`) instead of bm25s's per-document Python loop (a
    Counter and five small arrays per document: most of the build's time): the same float32 matrix, entry
    for entry (tests/test_apirec.py compares it with bm25s's own build)."""

    def __init__(self, fqns: list[str], texts: list[str], k1: float = 1.5, b: float = 0.75):
        bm25s = load_bm25s()  # imported once per process, in the job's set-up (main), not here
        self.stop = set(bm25s.stopwords.STOPWORDS_EN)
        self.fqns = fqns
        self.model = bm25s.BM25(k1=k1, b=b, method="lucene")
        vocab, flat, lengths = self.corpus_token_ids(texts)
        if not vocab:  # no token at all: bm25s's own build (and its own error)
            self.model.index([self.tokens(t) for t in texts], show_progress=False)
            return
        self.model.scores = lucene_matrix(flat, lengths, len(vocab), k1, b)
        self.model.nonoccurrence_array = None
        vocab[""] = len(vocab)  # bm25s's empty token (create_empty_token): the id after the vocabulary's
        self.model.vocab_dict = vocab
        self.model.unique_token_ids_set = set(vocab.values())

    def corpus_token_ids(self, texts: list[str]) -> tuple[dict, np.ndarray, np.ndarray]:
        """Every document's tokens (`tokens`) as ids, whole-corpus: the vocabulary (token -> id, first-seen order),
        the ids of every document one after another, and each document's count. One regex pass over the texts
        joined by NUL (a part is ASCII alphanumerics: none crosses it; each NUL is found as its own part, so the
        documents' edges are kept), one `lower` of the parts joined, the stop words (and the NULs) dropped by id:
        the same tokens as `tokens` text by text (tests/test_apirec.py). A text holding a NUL: text by text."""
        joined = "\0".join(texts)
        if joined.count("\0") != max(len(texts) - 1, 0):
            docs = [self.tokens(t) for t in texts]
            vocab = {w: i for i, w in enumerate(dict.fromkeys(chain.from_iterable(docs)))}
            lengths = np.fromiter(map(len, docs), dtype=np.int64, count=len(docs))
            flat = np.fromiter(map(vocab.__getitem__, chain.from_iterable(docs)), dtype=np.int64,
                               count=int(lengths.sum()))
            return vocab, flat, lengths
        parts = _PARTS_OR_NUL.findall(joined)
        if not parts:
            return {}, np.zeros(0, np.int64), np.zeros(len(texts), np.int64)
        words = "\n".join(parts).lower().split("\n")  # a part holds no newline
        distinct = list(dict.fromkeys(words))  # first-seen order (stop words and the NUL among them)
        where = dict(zip(distinct, range(len(distinct))))
        ids = np.fromiter(map(where.__getitem__, words), np.int64, len(words))
        drop = np.fromiter(map((self.stop | {"\0"}).__contains__, distinct), bool, len(distinct))
        doc = np.cumsum(ids == where.get("\0", -1), dtype=np.int32)  # each word's document: the NULs before it
        keep = ~drop[ids]
        lengths = np.bincount(doc[keep], minlength=len(texts)).astype(np.int64)
        new_id = np.cumsum(~drop, dtype=np.int64) - 1  # first-seen order without the dropped words
        vocab = dict(zip(compress(distinct, (~drop).tolist()), range(int((~drop).sum()))))
        return vocab, new_id[ids[keep]], lengths

    def tokens(self, text: str) -> list[str]:
        return [w for w in identifier_parts(text) if w not in self.stop]

    def scores(self, query: str) -> np.ndarray:
        toks = [t for t in self.tokens(query) if t in self.model.vocab_dict]
        if not toks:
            return np.zeros(len(self.fqns), dtype=np.float32)
        return self.model.get_scores(toks)

    def rank(self, query: str, depth: int) -> tuple[list[str], np.ndarray]:
        """The top `depth` documents with a positive score (ties by FQN), and every score."""
        s = np.round(self.scores(query).astype(np.float64), 4)
        positive = np.nonzero(s > 0)[0]
        order = positive[np.lexsort((positive, -s[positive]))][:depth]
        return [self.fqns[i] for i in order], s

    def gold_rank(self, scores: np.ndarray, gold: int) -> int | None:
        g = scores[gold]
        if g <= 0:
            return None
        return int(np.sum(scores > g) + np.sum(scores[:gold] == g)) + 1


def lucene_matrix(flat: np.ndarray, lengths: np.ndarray, n_vocab: int, k1: float, b: float) -> dict:
    """bm25s's Lucene score matrix (`BM25.build_index_from_ids`, method and idf "lucene", float32, CSC by
    token) from every document's token ids (`flat`, documents one after another, `lengths` of them),
    whole-corpus: each (document, token) entry is
    idf(token) * tf / (k1 * ((1 - b) + b * dl / avgdl) + tf), with bm25s's operations and dtypes (the idf by
    `math.log` in float64 stored as float32; the tf part in float64, as bm25s's numpy scalars make it; the
    product cast to float32), so every entry has bm25s's bits."""
    n_docs = len(lengths)
    avg = lengths.mean()  # np.float64, as bm25s's `np.array([...]).mean()`
    doc = np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
    # distinct (token, document) pairs in token-major, document-minor order: the CSC layout; tf their counts
    pairs, tf = np.unique(flat * n_docs + doc, return_counts=True)
    tok, doc = np.divmod(pairs, n_docs)
    df = np.bincount(tok, minlength=n_vocab)
    idf = np.zeros(n_vocab, dtype=np.float32)
    for t, d in enumerate(df.tolist()):
        if d:
            idf[t] = math.log(1 + (n_docs - d + 0.5) / (d + 0.5))
    tf = tf.astype(np.float32).astype(np.float64)
    norm = k1 * ((1 - b) + b * lengths.astype(np.float64) / avg)
    data = (idf[tok].astype(np.float64) * (tf / (norm[doc] + tf))).astype(np.float32)
    indptr = np.zeros(n_vocab + 1, dtype=np.int32)
    np.cumsum(df, out=indptr[1:])
    return {"data": data, "indices": doc.astype(np.int32), "indptr": indptr, "num_docs": n_docs}


def universe_verdicts(inventory: pa.Table, available: Availability) -> dict[str, str]:
    """FQN -> why it does not exist here, for the public definitions that do not (the last row's verdict for a
    name several rows define)."""
    every = {r["fqn"]: available.verdict(r["fqn"], r["category"] if "category" in r else None)
             for r in inventory.select([c for c in ("fqn", "kind", "private", "category")
                                        if c in inventory.column_names]).to_pylist()
             if r["kind"] in DEF_KINDS and not r["private"]}
    return {f: v for f, v in every.items() if v is not None}


def universe_rows(inventory: pa.Table, verdicts: dict[str, str | None]) -> list[dict]:
    """The inventory's public definitions that exist here (`verdicts`: FQN -> why one does not)."""
    return [r for r in inventory.to_pylist() if r["kind"] in DEF_KINDS and not r["private"]
            and verdicts.get(r["fqn"]) is None]


def file_docs(rows: list[dict], files: dict[str, dict], root: Path, stats: Counter, shard: int = 0,
              shards: int = 1) -> dict[str, tuple[str, int, str]]:
    """FQN -> (path, def line, full docstring) of the universe's `rows`, each defining file parsed once; with
    shards > 1 only the paths whose file is in `shard` (pipeline.core.shards; a path no manifest file holds: shard
    0). A name two paths define keeps the last path's, in path order."""
    by_path: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_path[r["path"]].append(r)
    full: dict[str, tuple[str, int, str]] = {}
    for path in sorted(by_path):
        row = files.get(path)
        if shards > 1 and not (sharding.in_shard(row["source"], row["path"], shard, shards) if row else shard == 0):
            continue
        try:
            docs = docstrings(ast.parse(read_text(row, root))) if row else {}
        except (OSError, SyntaxError, ValueError, RecursionError, UnicodeDecodeError, MemoryError):
            stats["doc_unreadable_files"] += 1
            docs = {}
        for r in by_path[path]:
            full[r["fqn"]] = (path, *docs.get(r["qualname"], (0, r["doc"] or "")))
    return full


def merge_docs(parts: list[dict[str, tuple[str, int, str]]]) -> dict[str, tuple[str, int, str]]:
    """The shards' `file_docs` as one job's: a name two paths define keeps the last path's (one path, one shard)."""
    full: dict[str, tuple[str, int, str]] = {}
    for part in parts:
        for fqn, (path, line, doc) in part.items():
            if fqn not in full or path > full[fqn][0]:
                full[fqn] = (path, line, doc)
    return full


def api_documents(inventory: pa.Table, files: dict[str, dict], root: Path, api_doc: str,
                  stats: Counter, verdicts: dict[str, str | None] | None = None,
                  found: dict[str, tuple[str, int, str]] | None = None) -> tuple[pa.Table, dict[str, tuple[int, str]]]:
    """The universe's documents (API_DOCS), and per FQN (def line, full docstring). `verdicts`: FQN -> why
    it does not exist here (`Availability.verdict`); those are left out of the universe. `found`: the shards'
    merged `file_docs` instead of reading the files here."""
    verdicts = verdicts or {}
    rows = universe_rows(inventory, verdicts)
    if found is None:
        found = file_docs(rows, files, root, stats)
    full = {fqn: (line, doc) for fqn, (_, line, doc) in found.items()}
    out = []
    for r in sorted(rows, key=lambda r: r["fqn"]):
        doc = full[r["fqn"]][1]
        body = doc if api_doc == "full" else rest_of_doc(doc)
        words = " ".join(identifier_parts(r["fqn"]))
        out.append({"fqn": r["fqn"], "api_class": api_class(r["fqn"]), "library": r["library"], "kind": r["kind"],
                    "doc": r["doc"], "text": (words + (". " + body if body else "")).strip()})
    return pa.Table.from_pylist(out, schemas.API_DOCS), full


def leaving_out(available: Availability, verdicts: dict[str, str | None], stats: Counter):
    """gone(fqn, category): whether a query's answer does not exist here (counted in `stats`, its verdict
    kept in `verdicts`)."""
    def gone(fqn: str, category: str | None) -> bool:
        verdict = available.verdict(fqn, category)
        if verdict is not None:
            verdicts[fqn] = verdict
            stats["queries_not_in_stdlib_left_out" if verdict == NOT_IN_STDLIB else "queries_platform_left_out"] += 1
        return verdict is not None

    return gone


def not_library_code(inventory: pa.Table) -> set[str]:
    """No query's answer is a test, example, docs, tools or scripts definition (no library's API)."""
    return {r["fqn"] for r in inventory.select(["fqn", "library_code"]).to_pylist() if r["library_code"] is False}


def collect(usages: pa.Table, inventory: pa.Table, manifest: pa.Table, root: Path, eval_split: str,
            full: dict[str, tuple[int, str]], stats: Counter, available: Availability | None = None,
            verdicts: dict[str, str | None] | None = None, comments: list[Query] | None = None) -> list[Query]:
    """Every docstring and comment query of the evaluation split, before dedup. A query whose answer does
    not exist here (`available`) is counted, not made; its verdict goes into `verdicts`. `comments`: the
    shards' `comment_queries`, in file_id order, instead of reading the files here."""
    available = available or Availability(None)
    verdicts = {} if verdicts is None else verdicts
    gone = leaving_out(available, verdicts, stats)
    files = {r["path"]: r for r in manifest.to_pylist()}
    out: list[Query] = []
    not_library = not_library_code(inventory)
    for r in inventory.to_pylist():
        if r["kind"] not in DEF_KINDS or r["private"]:  # the universe is the public API (the inventory flags private parts)
            continue
        f = files.get(r["path"])
        if f is None or f["split"] != eval_split:
            continue
        if r["fqn"] in not_library:
            stats["docstring_not_library_code"] += 1
            continue
        text = first_sentence(clean_markup(r["doc"] or ""))
        if len([w for w in _WORD.findall(text) if any(c.isalpha() for c in w)]) < 2:
            stats["docstring_too_short"] += 1
            continue
        if gone(r["fqn"], r["category"]):
            continue
        # the extraction's category of the definition seen from its own distribution: the points' rule
        out.append(Query("docstring", text, r["fqn"], r["kind"], r["category"] or category_of(r["library"]), f["file_id"],
                         r["source"], r["repository"], r["path"], f["split"], full.get(r["fqn"], (0, ""))[0]))
    if comments is None:
        comments = comment_queries(usages, manifest, root, eval_split, not_library, gone, stats)
    return out + comments


def comment_queries(usages: pa.Table, manifest: pa.Table, root: Path, eval_split: str, not_library: set[str], gone,
                    stats: Counter, left_out: list | None = None) -> list[Query]:
    """The comment queries of the evaluation split's files that `usages` holds calls of (a shard's: its files'
    usages, pipeline.core.shards.rows_of_shard), file by file in file_id order. `left_out` receives (file_id,
    fqn, category) of each call whose answer does not exist here (`gone`), in that order."""
    out: list[Query] = []
    mask = pc.and_(pc.and_(pc.is_in(usages.column("kind"), pa.array(CALL_KINDS)), pc.is_valid(usages.column("fqn"))),
                   pc.equal(usages.column("split"), eval_split))
    calls: dict[str, dict[int, dict]] = defaultdict(dict)
    cols = ["file_id", "line", "col", "fqn", "category", "path", "source", "repository", "split"]
    for u in usages.filter(mask).select(cols).to_pylist():
        first = calls[u["file_id"]].get(u["line"])
        if first is None or u["col"] < first["col"]:
            calls[u["file_id"]][u["line"]] = u
    by_id = {r["file_id"]: r for r in manifest.to_pylist()}
    for fid in sorted(calls):
        try:
            text = read_text(by_id[fid], root)
        except (KeyError, OSError, ValueError, UnicodeDecodeError):
            stats["comment_unreadable_files"] += 1
            continue
        for line, q in comment_blocks(text):
            u = calls[fid].get(line)
            if u is None:
                stats["comment_without_call"] += 1
                continue
            if u["fqn"] in not_library:
                stats["comment_not_library_code"] += 1
                continue
            if gone(u["fqn"], u["category"]):
                if left_out is not None:
                    left_out.append((fid, u["fqn"], u["category"]))
                continue
            out.append(Query("comment", q, u["fqn"], "call", u["category"], fid, u["source"], u["repository"],
                             u["path"], u["split"], line - 1))
    return out


def build_queries(usages: pa.Table, inventory: pa.Table, manifest: pa.Table, root: Path, domains: dict[str, str],
                  default_domain: str, eval_split: str, max_queries: int, candidates: int, top_k: int, seed: int,
                  api_doc: str = "rest", imports: pa.Table | None = None,
                  parts: list[dict] | None = None) -> tuple[pa.Table, pa.Table, pa.Table, dict]:
    """(QUERIES, API_DOCS, BM25 rankings in the BASELINES schema, stats). `imports`: the extraction's (re-exports
    of platform-specific names). `parts`: the shards' `shard_part`s (docstrings and comment queries read from
    the files; then `usages` is not read)."""
    stats: Counter = Counter({"queries_platform_left_out": 0, "queries_not_in_stdlib_left_out": 0})
    files = {r["path"]: r for r in manifest.to_pylist()}
    available = Availability(inventory, imports)
    verdicts = universe_verdicts(inventory, available)
    found = comments = None
    if parts is not None:
        found = merge_docs([{f: tuple(x) for f, x in part["docs"].items()} for part in parts])
        comments = sorted((Query(*q) for part in parts for q in part["comments"]), key=lambda q: q.file_id)
        for part in parts:
            stats.update(part["stats"])
    docs, full = api_documents(inventory, files, root, api_doc, stats, verdicts, found)
    universe = docs.column("fqn").to_pylist()
    index_of = {f: i for i, f in enumerate(universe)}
    by_class = Counter(api_class(f) for f in universe)

    raw = collect(usages, inventory, manifest, root, eval_split, full, stats, available, verdicts, comments)
    # the comment queries' answers that do not exist here, as one job records them: after the docstrings', in file order
    for _, fqn, category in sorted((e for part in parts or [] for e in part["left_out"]), key=lambda e: e[0]):
        verdicts[fqn] = available.verdict(fqn, category)
    stats["queries_raw"] = len(raw)
    raw.sort(key=lambda q: (q.origin != "docstring", q.path, q.line, q.api))
    kept: dict[tuple[str, str], Query] = {}
    dups: Counter = Counter()
    for q in raw:
        if q.api not in index_of:
            stats["answer_outside_universe"] += 1
            continue
        key = (normalise(q.text), q.api)
        if key in kept:
            dups[key] += 1
        else:
            kept[key] = q
    stats["duplicates_dropped"] = sum(dups.values())
    answers = Counter(norm for norm, _ in kept)
    rows = []
    for (norm, api), q in kept.items():
        rows.append({"query_id": ids.stable_id("apirec-q", q.origin, q.path, q.line, q.api, norm), "origin": q.origin,
                     "file_id": q.file_id, "source": q.source, "repository": q.repository, "path": q.path,
                     "split": q.split, "domain": domains.get(q.source, default_domain), "line": q.line,
                     "text": q.text, "norm": norm, "api": api, "api_class": api_class(api), "kind": q.kind,
                     "category": q.category, "leaky": is_leaky(q.text, api), "answers": answers[norm],
                     "duplicates": dups[(norm, api)], "class_siblings": by_class[api_class(api)] - 1,
                     "candidates": []})
    stats["queries_all"] = len(rows)
    if max_queries and len(rows) > max_queries:
        keep = set(sorted((r["query_id"] for r in rows), key=lambda i: ids.seeded_order_key(seed, "q", i))[:max_queries])
        rows = [r for r in rows if r["query_id"] in keep]
    # no documented API in the corpus: no universe, no query can have an answer in it (bm25s cannot index nothing)
    index = BM25Index(universe, docs.column("text").to_pylist()) if universe else None
    ranks = []
    for r in rows if index is not None else []:
        top, scores = index.rank(r["text"], max(candidates, top_k))
        r["candidates"] = top[:candidates]
        row = ranking_row({"point_id": r["query_id"], "api": r["api"], "api_class": r["api_class"]}, top, "bm25",
                          "bm25", top_k)
        rank = index.gold_rank(scores, index_of[r["api"]])
        row.update(gold_rank=rank, gold_in_candidates=rank is not None and rank <= candidates,
                   n_candidates=int(np.sum(scores > 0)))
        ranks.append(row)
    table = pa.Table.from_pylist(rows, schemas.QUERIES).sort_by("query_id")
    base = pa.Table.from_pylist(ranks, schemas.BASELINES).sort_by("point_id")
    stats.update({"queries": table.num_rows, "universe": len(universe)})
    for key, value in left_out_counts(verdicts).items():  # assigned: Counter.update would add to a dict
        stats[key] = value
    for col in ("origin", "leaky", "category"):
        stats[f"queries_by_{col}"] = {str(k): v for k, v in sorted(Counter(table.column(col).to_pylist()).items())}
    stats["ambiguous_queries"] = int(pc.sum(pc.greater(table.column("answers"), 1)).as_py() or 0)
    return table, docs, base, dict(stats)


def shard_part(usages: pa.Table, inventory: pa.Table, manifest: pa.Table, root: Path, eval_split: str,
               imports: pa.Table | None, shard: int, shards: int) -> dict:
    """The per-file part of build_queries for one shard's files (pipeline.core.shards): the universe's docstrings
    of the files it defines names in, the comment queries of its evaluation-split files, and what they counted
    (stats, verdicts). Everything else (the docstring queries from the inventory, dedup, the cap, BM25) runs once,
    in the merge."""
    stats: Counter = Counter()
    available = Availability(inventory, imports)
    verdicts = universe_verdicts(inventory, available)
    files = {r["path"]: r for r in manifest.to_pylist()}
    docs = file_docs(universe_rows(inventory, verdicts), files, root, stats, shard, shards)
    left_out: list = []
    comments = comment_queries(sharding.rows_of_shard(usages, shard, shards), manifest, root, eval_split,
                               not_library_code(inventory), leaving_out(available, {}, stats), stats, left_out)
    return {"docs": {f: list(x) for f, x in sorted(docs.items())}, "comments": [list(astuple(q)) for q in comments],
            "stats": {k: v for k, v in sorted(stats.items()) if v}, "left_out": [list(e) for e in left_out]}


def main(argv: list[str] | None = None) -> int:
    import argparse

    from pipeline import schemas as core_schemas
    from pipeline.core import logs
    from pipeline.io import read_parquet, write_json, write_parquet

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--usages", required=True, type=Path)
    ap.add_argument("--inventory", required=True, type=Path)
    ap.add_argument("--imports", type=Path, default=None,
                    help="the extraction's imports (re-exports of platform-specific names)")
    ap.add_argument("--manifest", required=True, type=Path)
    ap.add_argument("--domains", nargs="*", default=[], help="source=domain pairs")
    ap.add_argument("--default-domain", required=True)
    ap.add_argument("--eval-split", required=True)
    ap.add_argument("--max-queries", type=int, required=True)
    ap.add_argument("--candidates", type=int, required=True)
    ap.add_argument("--top-k", type=int, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--api-doc", choices=("rest", "full"), default="rest")
    ap.add_argument("--queries", type=Path)
    ap.add_argument("--api-docs", type=Path)
    ap.add_argument("--baselines", type=Path)
    ap.add_argument("--metrics", type=Path)
    sharding.add_arguments(ap, "merge these shards' parts (--part of each) into --queries/--api-docs/--baselines/--metrics")
    ap.add_argument("--part", type=Path, help="with --shard/--shards: write this shard's part (JSON) and stop")
    args = ap.parse_args(argv)
    sharding.check_arguments(ap, args)
    if bool(args.part) != (args.shards > 1):
        ap.error("--part takes one shard of --shards N > 1; without it give no --shard/--shards")
    if not args.part and not (args.queries and args.api_docs and args.baselines and args.metrics):
        ap.error("give --queries, --api-docs, --baselines and --metrics (or a shard's --part)")
    logs.setup()
    domains = dict(d.split("=", 1) for d in args.domains)
    inventory = read_parquet(args.inventory, core_schemas.INVENTORY)
    manifest = read_parquet(args.manifest, core_schemas.MANIFEST)
    imports = read_parquet(args.imports, core_schemas.IMPORTS) if args.imports else None
    if args.part:
        part = shard_part(read_parquet(args.usages, core_schemas.USAGES), inventory, manifest, Path("."),
                          args.eval_split, imports, args.shard, args.shards)
        write_json(part, args.part)
        log.info("apirec queries shard %d of %d: %d files' docstrings, %d comment queries", args.shard, args.shards,
                 len(part["docs"]), len(part["comments"]))
        return 0
    load_bm25s()  # the job's set-up: bm25s imported once here, not inside the index build
    parts = [json.loads(p.read_text()) for p in args.merge] if args.merge else None
    queries, docs, base, stats = build_queries(
        None if parts is not None else read_parquet(args.usages, core_schemas.USAGES), inventory, manifest,
        Path("."), domains, args.default_domain, args.eval_split, args.max_queries, args.candidates, args.top_k,
        args.seed, args.api_doc, imports, parts)
    write_parquet(queries, args.queries, schemas.QUERIES)
    write_parquet(docs, args.api_docs, schemas.API_DOCS)
    write_parquet(base, args.baselines, schemas.BASELINES)
    write_json(stats, args.metrics)
    log.info("apirec queries: %d (%s), universe %d APIs", stats["queries"], stats["queries_by_origin"],
             stats["universe"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
