"""Identifier sequences: the identifier tokens of every JavaScript, Python and Java file of the
manifest, in source order (tree-sitter), one row per manifest file (`schemas.SEQUENCES`).

What counts as an identifier token (the leaf node types of each tree-sitter grammar):

| language | node types |
|---|---|
| javascript | identifier, property_identifier, shorthand_property_identifier, shorthand_property_identifier_pattern, private_property_identifier (`#x` gives `x`), statement_identifier (labels) |
| python | identifier (soft keywords used as names, e.g. `match`, `type`, count: the grammar makes them identifiers) |
| java | identifier, type_identifier |

Keywords, literals (strings, numbers, regexes, template text, `true`/`None`/`null`/`undefined`),
`this`/`super`, operators and comments are other node types and never count. Identifiers inside
code embedded in a string (JS template substitutions `${a.b}`, Python f-string fields `{a.b}`)
are code and count, in their place. Each token is the name as written (no splitting, no case
folding: subtoken splitting is the consumer's choice; IdBench embeds whole identifiers).

A file tree-sitter cannot parse well is rejected (stage `identifiers`, reason `parse_error`) when
the ERROR nodes cover more than `identifiers.max_error_fraction` of its bytes (default 0.1: a few
stray tokens, e.g. a Flow annotation or a Python 2 print statement, do not lose a whole file, a file
in another dialect does); files above `identifiers.max_file_bytes` are `too_large`. Each distinct
content is parsed once per language, in a process pool, and cached on disk by content hash under a
key that changes with this module's code and the grammars' versions (the cache stores the raw
parse, so changing the threshold needs no re-parse). Files of languages not selected are skipped.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import pickle
import sys
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache, partial
from importlib.metadata import version as package_version
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from pipeline import schemas
from pipeline.core import logs
from pipeline.core import shards as sharding
from pipeline.core import budget
from pipeline.core.pool import imap_files
from pipeline.identifiers.schemas import SEQUENCES
from pipeline.io import atomic_path, read_parquet, write_json, write_parquet

log = logging.getLogger("pipeline.identifiers.build")

STAGE = "identifiers"
CHUNK = 32
GRAMMARS = {"javascript": "tree_sitter_javascript", "python": "tree_sitter_python", "java": "tree_sitter_java"}
NODE_TYPES: dict[str, tuple[str, ...]] = {
    "javascript": ("identifier", "property_identifier", "shorthand_property_identifier",
                   "shorthand_property_identifier_pattern", "private_property_identifier", "statement_identifier"),
    "python": ("identifier",),
    "java": ("identifier", "type_identifier"),
}
LANGUAGES = tuple(NODE_TYPES)


def analysis_version() -> str:
    """Changes with this module's code and the tree-sitter grammars: the cache key."""
    h = hashlib.sha256(Path(__file__).read_bytes())
    for dist in ("tree-sitter", *(m.replace("_", "-") for m in GRAMMARS.values())):
        h.update(f"\0{dist}={package_version(dist)}".encode())
    return h.hexdigest()[:16]


@lru_cache(maxsize=None)
def _grammar(language: str):
    """(parser, identifier query, error query) for a language, built once per process."""
    import importlib

    import tree_sitter as ts

    lang = ts.Language(importlib.import_module(GRAMMARS[language]).language())
    ids = ts.Query(lang, "[" + " ".join(f"({t})" for t in NODE_TYPES[language]) + "] @id")
    errors = ts.Query(lang, "(ERROR) @error")
    return ts.Parser(lang), ids, errors


@dataclass(frozen=True, slots=True)
class Parsed:
    """The raw result of one parse: identifiers in source order and the bytes ERROR nodes cover."""

    identifiers: tuple[str, ...]
    error_bytes: int
    size: int  # bytes parsed (UTF-8)


@dataclass(frozen=True, slots=True)
class Failed:
    reason: str
    detail: str
    cacheable: bool


Outcome = Parsed | Failed


def identifiers_of(code: str | bytes, language: str) -> Parsed:
    """The identifier tokens of `code` (text, or UTF-8 bytes) in source order; see the module doc."""
    data = code.encode("utf-8") if isinstance(code, str) else code
    import tree_sitter as ts

    parser, ids, errors = _grammar(language)
    tree = parser.parse(data)
    nodes = ts.QueryCursor(ids).captures(tree.root_node).get("id", [])
    nodes.sort(key=lambda n: n.start_byte)
    tokens = []
    for n in nodes:
        text = data[n.start_byte : n.end_byte].decode("utf-8", "replace")
        if n.type == "private_property_identifier":
            text = text.lstrip("#")
        if text:
            tokens.append(text)
    error_bytes = 0
    if tree.root_node.has_error:
        spans = sorted((n.start_byte, n.end_byte) for n in ts.QueryCursor(errors).captures(tree.root_node).get("error", []))
        end = 0
        for start, stop in spans:  # union of the (possibly nested) ERROR ranges
            start = max(start, end)
            if stop > start:
                error_bytes += stop - start
                end = stop
    return Parsed(tuple(tokens), error_bytes, len(data))


@dataclass(frozen=True, slots=True)
class Task:
    """One distinct (content, language) to parse: its hash and one file that has it."""

    sha256: str
    language: str
    location: str
    encoding: str
    max_tokens: int = 0  # identifiers.max_file_tokens (pipeline.core.budget); 0: no budget


def parse_task(task: Task) -> Outcome:
    try:
        text = Path(task.location).read_bytes().decode(task.encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        return Failed("undecodable", f"{task.encoding}: {exc}"[:300], True)
    # before tree-sitter builds the tree
    too_many = budget.over_budget(text, task.language, task.max_tokens, "identifiers.max_file_tokens")
    if too_many:
        return Failed(budget.REASON, too_many, True)
    return identifiers_of(text.lstrip("\ufeff"), task.language)


def _crashed(task: Task) -> Outcome:
    return Failed("worker_crash", "the parsing process died", False)


class Cache:
    """One pickle per (content hash, language), under the analysis version and the token budget; written
    atomically."""

    def __init__(self, root: Path | None, max_tokens: int = 0):
        self.root = root / analysis_version() / f"tokens-{max_tokens}" if root else None

    def _path(self, task: Task) -> Path:
        return self.root / task.sha256[:2] / f"{task.sha256}.{task.language}.pkl"

    def get(self, task: Task) -> Outcome | None:
        if self.root is None:
            return None
        try:
            return pickle.loads(self._path(task).read_bytes())
        except (FileNotFoundError, EOFError, pickle.UnpicklingError):
            return None

    def put(self, task: Task, outcome: Outcome) -> None:
        if self.root is None or (isinstance(outcome, Failed) and not outcome.cacheable):
            return
        with atomic_path(self._path(task)) as tmp:
            tmp.write_bytes(pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL))


def parse_all(tasks: list[Task], workers: int, cache: Cache) -> tuple[dict[tuple[str, str], Outcome], int]:
    """Outcome per (content hash, language); returns (outcomes, cache hits)."""
    outcomes: dict[tuple[str, str], Outcome] = {}
    todo = []
    for task in tasks:
        hit = cache.get(task)
        if hit is not None:
            outcomes[(task.sha256, task.language)] = hit
        else:
            todo.append(task)
    hits = len(outcomes)
    size = max(1, min(CHUNK, len(todo) // (4 * max(1, workers))))
    for task, outcome in zip(todo, imap_files(parse_task, todo, workers, chunksize=size, desc="identifiers",
                                              on_crash=_crashed)):
        outcomes[(task.sha256, task.language)] = outcome
        cache.put(task, outcome)
    return outcomes, hits


def build(manifest: pa.Table, languages: list[str], workers: int, max_error_fraction: float, max_file_bytes: int,
          cache: Cache, shard: int = 0, shards: int = 1, max_tokens: int = 0) -> tuple[pa.Table, pa.Table, dict, int]:
    """(sequences, rejects, metrics, cache hits) for the manifest's files of `languages`; with shards > 1,
    only the files of `shard` (pipeline.core.shards: the hash of their source and path, so files whose
    rejects tie on (source, repository, path) are in one shard): `merge` of the N parts equals the
    one-job result byte for byte."""
    unknown = sorted(set(languages) - set(LANGUAGES))
    if unknown:
        raise ValueError(f"identifiers.languages: no grammar for {unknown}; supported: {list(LANGUAGES)}")
    rows = manifest.filter(pc.is_in(manifest.column("language"), pa.array(sorted(languages), pa.string())))
    rows = rows.sort_by([("file_id", "ascending")]).to_pylist()
    if shards > 1:
        rows = [r for r in rows if sharding.in_shard(r["source"], r["path"], shard, shards)]
    tasks, seen = [], set()
    for r in rows:
        key = (r["sha256"], r["language"])
        if r["bytes"] <= max_file_bytes and key not in seen:
            seen.add(key)
            tasks.append(Task(r["sha256"], r["language"], r["location"], r["encoding"], max_tokens))
    outcomes, hits = parse_all(tasks, workers, cache)

    sequences, rejects = [], []
    with_errors, rejected = Counter(), Counter()
    for r in rows:
        reject = None
        outcome = None
        if r["bytes"] > max_file_bytes:
            reject = ("too_large", f"{r['bytes']} > identifiers.max_file_bytes={max_file_bytes}")
        else:
            outcome = outcomes[(r["sha256"], r["language"])]
            if isinstance(outcome, Failed):
                reject = (outcome.reason, outcome.detail)
            elif outcome.size and outcome.error_bytes / outcome.size > max_error_fraction:
                reject = ("parse_error", f"tree-sitter ERROR nodes cover {outcome.error_bytes / outcome.size:.1%} of "
                                         f"the bytes (> identifiers.max_error_fraction={max_error_fraction})")
        if reject:
            rejected[r["language"]] += 1
            rejects.append({"source": r["source"], "repository": r["repository"], "path": r["path"], "stage": STAGE,
                            "reason": reject[0], "detail": reject[1], "bytes": r["bytes"]})
            continue
        with_errors[r["language"]] += outcome.error_bytes > 0
        sequences.append({k: r[k] for k in ("file_id", "sha256", "language", "source", "repository", "split",
                                             "duplicate")} | {"identifiers": list(outcome.identifiers)})
    rejects.sort(key=lambda x: (x["source"], x["repository"], x["path"]))
    seq = pa.Table.from_pylist(sequences, SEQUENCES)
    rej = pa.Table.from_pylist(rejects, schemas.REJECTS)
    return seq, rej, summary(sequences, rejects, with_errors, rejected, languages), hits


def summary(sequences: list[dict], rejects: list[dict], with_errors: Counter, rejected: Counter,
            languages: list[str]) -> dict:
    """Counts per language (a function of the inputs only: cache hits go to the log)."""
    per = {}
    for lang in sorted(languages):
        mine = [s for s in sequences if s["language"] == lang]
        distinct = set()
        for s in mine:
            distinct.update(s["identifiers"])
        unique = [s for s in mine if not s["duplicate"]]
        per[lang] = {
            "files": len(mine),
            "unique_files": len(unique),
            "tokens": sum(len(s["identifiers"]) for s in mine),
            "tokens_unique_files": sum(len(s["identifiers"]) for s in unique),
            "distinct_identifiers": len(distinct),
            "files_with_some_errors": int(with_errors[lang]),
            "rejects": int(rejected[lang]),
        }
    return {
        "files": len(sequences),
        "tokens": sum(p["tokens"] for p in per.values()),
        "rejects": len(rejects),
        "rejects_by_reason": dict(sorted(Counter(x["reason"] for x in rejects).items())),
        "languages": per,
    }


def merge(sequences: list[Path], rejects: list[Path], metrics: list[Path],
          languages: list[str]) -> tuple[pa.Table, pa.Table, dict]:
    """The shards' parts as one result: rows in build's order (file_id; rejects by source, repository,
    path), the summary recomputed (distinct identifiers are not additive; error and reject counts are)."""
    seq = pa.concat_tables([read_parquet(p, SEQUENCES) for p in sequences]).sort_by([("file_id", "ascending")])
    rej_rows = [r for p in rejects for r in read_parquet(p, schemas.REJECTS).to_pylist()]
    rej_rows.sort(key=lambda x: (x["source"], x["repository"], x["path"]))
    with_errors, rejected = Counter(), Counter()
    for path in metrics:
        for lang, counts in json.loads(Path(path).read_text())["languages"].items():
            with_errors[lang] += counts["files_with_some_errors"]
            rejected[lang] += counts["rejects"]
    seq_rows = seq.select(["language", "duplicate", "identifiers"]).to_pylist()
    return (seq, pa.Table.from_pylist(rej_rows, schemas.REJECTS),
            summary(seq_rows, rej_rows, with_errors, rejected, languages))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m pipeline.identifiers.build",
        description="Identifier sequences: parse every JavaScript / Python / Java file of the manifest with "
        "tree-sitter and write its identifier tokens in source order (one row per file; node types in the "
        "module doc: identifiers, property and type names; never keywords, literals or comments). Files "
        "whose ERROR nodes cover more than --max-error-fraction of their bytes, or larger than "
        "--max-file-bytes, become reject rows (stage identifiers). Each content is parsed once and cached.",
    )
    ap.add_argument("--manifest", required=True, type=Path, help="data/manifest.parquet")
    ap.add_argument("--languages", required=True, help='JSON list, e.g. ["javascript","python","java"]')
    ap.add_argument("--workers", type=int, default=1, help="processes")
    ap.add_argument("--max-error-fraction", type=float, required=True, help="share of bytes under ERROR nodes above which a file is rejected")
    ap.add_argument("--max-file-bytes", type=int, required=True, help="larger files are rejected (too_large)")
    ap.add_argument("--max-file-tokens", type=int, default=budget.DEFAULT,
                    help="files with more tokens are rejected unparsed (too_complex; identifiers.max_file_tokens, "
                    f"default {budget.DEFAULT}; 0: no budget)")
    ap.add_argument("--cache", type=Path, default=None, help="per-content-hash cache folder (none: no cache)")
    ap.add_argument("--sequences", required=True, type=Path, help="output: one row per file (SEQUENCES)")
    ap.add_argument("--rejects", required=True, type=Path, help="output: files left out (core REJECTS schema)")
    ap.add_argument("--metrics", required=True, type=Path, help="output: counts per language (JSON)")
    sharding.add_arguments(ap, "instead of parsing: merge these shards' outputs, given as their metrics JSON files "
                           "(X.json beside X.sequences.parquet and X.rejects.parquet); --manifest is not read")
    args = ap.parse_args(argv)
    sharding.check_arguments(ap, args)
    logs.setup()
    languages = json.loads(args.languages)
    if args.merge:
        parts = [p.with_suffix("") for p in args.merge]
        seq, rej, stats = merge([Path(f"{p}.sequences.parquet") for p in parts],
                                [Path(f"{p}.rejects.parquet") for p in parts], args.merge, languages)
        hits = 0
    else:
        manifest = read_parquet(args.manifest, schemas.MANIFEST)
        seq, rej, stats, hits = build(manifest, languages, args.workers, args.max_error_fraction,
                                      args.max_file_bytes, Cache(args.cache, args.max_file_tokens), args.shard,
                                      args.shards, args.max_file_tokens)
    write_parquet(seq, args.sequences, SEQUENCES)
    write_parquet(rej, args.rejects, schemas.REJECTS)
    write_json(stats, args.metrics)
    log.info("identifiers: %d files (%d parses cached), %d tokens, %d rejects", stats["files"], hits,
             stats["tokens"], stats["rejects"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
