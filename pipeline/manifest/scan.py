"""Scan one fetched source: hash, classify, decode-check every file, in parallel.

Output: the source's part of the manifest (schemas.SCANNED) and its rejects.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import logging
import os
import sys
import tokenize
from dataclasses import dataclass
from functools import partial
from pathlib import Path, PurePosixPath

import numpy as np
import pyarrow as pa

from pipeline import schemas
from pipeline.core import ids, logs, shards as sharding
from pipeline.core.pool import map_files
from pipeline.corpus.safety import name_problem, shown
from pipeline.io import read_parquet, write_parquet

log = logging.getLogger("pipeline.manifest.scan")

EXTENSIONS = {".py": "python", ".java": "java", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript"}
SHEBANGS = {b"python": "python", b"node": "javascript"}
# Written by Snakemake at the top of its directory outputs; never a corpus file (the fetch stage
# refuses a corpus file of that name as `reserved_name`). A jsonl source's origins are a file
# beside the tree (data/sources/<name>.origins.parquet), never in it.
BOOKKEEPING = {".snakemake_timestamp"}
CHUNK = 256
# Below this many files per worker a process pool costs more to start than it saves.
MIN_FILES_PER_WORKER = 2000


@dataclass(frozen=True)
class ScanResult:
    rel: str
    language: str | None
    reason: str | None = None
    detail: str | None = None
    sha256: str = ""
    encoding: str = ""
    bytes: int = 0
    lines: int = 0


def detect_language(rel: str, head: bytes) -> str | None:
    """By extension; files without one by their shebang line."""
    suffix = PurePosixPath(rel).suffix.lower()
    if suffix in EXTENSIONS:
        return EXTENSIONS[suffix]
    if not suffix and head.startswith(b"#!"):
        first = head.split(b"\n", 1)[0]
        for word, lang in SHEBANGS.items():
            if word in first:
                return lang
    return None


def decode(data: bytes, language: str) -> tuple[str | None, str]:
    """Return (encoding, "") if the bytes decode as the language says, else (None, why)."""
    if language == "python":
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError as exc:
            return None, f"bad coding cookie: {exc}"
    else:
        encoding = "utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else "utf-8"
    try:
        data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        return None, f"{encoding}: {exc}"[:300]
    return encoding, ""


def count_lines(data: bytes) -> int:
    # numpy's vectorised compare counts newlines ~2x faster than bytes.count here (bench/speed/manifest.py)
    newlines = int(np.count_nonzero(np.frombuffer(data, np.uint8) == 10))
    return newlines + (1 if data and not data.endswith(b"\n") else 0)


def scan_file(root: str, rel: str, languages: frozenset[str], max_bytes: int, language: str | None = None) -> ScanResult:
    path = os.path.join(root, rel)
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(4096)
        language = language or detect_language(rel, head)
        if language is None:
            return ScanResult(rel, None, "not_source", bytes=size)
        if language not in languages:
            return ScanResult(rel, language, "language_not_selected", language, bytes=size)
        if size > max_bytes:
            return ScanResult(rel, language, "too_large", f"{size} > {max_bytes}", bytes=size)
        data = head + f.read()
    if b"\x00" in data:
        return ScanResult(rel, language, "binary", bytes=size)
    encoding, why = decode(data, language)
    if encoding is None:
        return ScanResult(rel, language, "undecodable", why, bytes=size)
    return ScanResult(rel, language, None, None, hashlib.sha256(data).hexdigest(), encoding, len(data), count_lines(data))


def _scan_item(root: str, languages: frozenset[str], max_bytes: int, item: tuple[str, str | None]) -> ScanResult:
    rel, language = item
    return scan_file(root, rel, languages, max_bytes, language)


def bad_names(rels: list[str]) -> tuple[list[str], list[ScanResult]]:
    """(names the manifest can hold, `bad_name` results for the others: not UTF-8, control characters)."""
    good, bad = [], []
    for rel in rels:
        problem = name_problem(rel)
        if problem:
            bad.append(ScanResult(shown(rel), None, "bad_name", problem, bytes=0))
        else:
            good.append(rel)
    return good, bad


def list_files(root: Path) -> list[str]:
    """Every regular file under root (the fetch stage materialised no links), sorted."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        rel_dir = os.path.relpath(dirpath, root)
        for name in filenames:
            rel = name if rel_dir == "." else f"{rel_dir}/{name}".replace(os.sep, "/")
            if rel not in BOOKKEEPING:
                out.append(rel)
    out.sort()
    return out


def excluded_by(path: str, patterns: list[str]) -> str | None:
    """The first `manifest.exclude` pattern that matches `path` or any of its tails starting at a
    folder (`testdata/*` matches `testdata/a.py` and `pkg/testdata/a.py`), else None."""
    from pipeline.extract.library import glob_match  # the one tail-matching rule (split_policy.scripts too)

    return glob_match(path, patterns)


def repository_of(rel: str, mode: str, default: str) -> str:
    """The repository a file belongs to (splits keep a repository on one side).

    `mode` is a fixed name (the usual case: one source, one repository), or `dir:N` to
    group a large tree by the first N folders of each file's path (`top_dir` is `dir:1`;
    the stdlib uses it for one repository per top-level package, a JDK `dir:4` for one per
    package such as java.base/java/util/concurrent). Top-level modules are their own repository.
    """
    if mode == "top_dir":
        mode = "dir:1"
    if not mode.startswith("dir:"):
        return mode or default
    folders = rel.split("/")[:-1]
    if not folders:
        return rel[:-3] if rel.endswith(".py") else rel
    return "/".join(folders[: int(mode[4:])])


def scan_source(
    name: str,
    root: Path,
    repository: str,
    languages: list[str],
    max_bytes: int,
    workers: int = 1,
    location_prefix: str | None = None,
    origins: Path | None = None,
    exclude: list[str] | None = None,
    shard: int = 0,
    shards: int = 1,
) -> tuple[pa.Table, pa.Table]:
    """Scan a fetched source folder (`origins`: where a jsonl source's files came from, written by
    the fetch beside the tree). Returns (scanned rows, reject rows), each sorted by path. Files
    matching an `exclude` pattern (manifest.exclude: vendored code, test data, caches) are not
    read: each is an `excluded` reject naming the pattern. With shards > 1, only the files of
    `shard` (`pipeline.core.shards`: the hash of the source's name and the path the file is
    reported under, known before it is read); `merge` of the parts is the one-job result."""
    by_location = {}
    if origins is not None and origins.exists():
        by_location = {r["location"]: r for r in read_parquet(origins, schemas.ORIGINS).to_pylist()}
    rels, misnamed = bad_names(list_files(root))
    if shards > 1:
        def mine(rel: str) -> bool:
            return sharding.in_shard(name, by_location[rel]["path"] if rel in by_location else rel, shard, shards)
        rels = [rel for rel in rels if mine(rel)]
        misnamed = [r for r in misnamed if mine(r.rel)]
    langs = frozenset(languages)
    skipped: list[ScanResult] = []
    if exclude:
        kept = []
        for rel in rels:
            pattern = excluded_by(by_location[rel]["path"] if rel in by_location else rel, exclude)
            if pattern is None:
                kept.append(rel)
            else:
                skipped.append(ScanResult(rel, None, "excluded", f"manifest.exclude {pattern}",
                                          bytes=os.path.getsize(os.path.join(root, rel))))
        rels = kept
    items = [(rel, by_location[rel]["language"] if rel in by_location else None) for rel in rels]
    workers = min(workers, len(items) // MIN_FILES_PER_WORKER)
    results: list[ScanResult] = map_files(partial(_scan_item, str(root), langs, max_bytes), items, workers,
                                          chunksize=CHUNK, desc=f"scan {name}") + misnamed + skipped
    prefix = location_prefix if location_prefix is not None else root.as_posix()
    good, bad = [], []
    for r in results:
        if r.rel in by_location:
            repo, path = by_location[r.rel]["repository"], by_location[r.rel]["path"]
        else:
            repo = repository_of(r.rel, repository, name)
            path = r.rel
        if r.reason:
            bad.append({"source": name, "repository": repo, "path": path, "stage": "manifest",
                        "reason": r.reason, "detail": r.detail, "bytes": r.bytes})
        else:
            location = f"{prefix}/{r.rel}"
            good.append({
                "file_id": ids.stable_id(name, location),
                "sha256": r.sha256, "source": name, "repository": repo, "path": path, "location": location,
                "language": r.language, "encoding": r.encoding, "bytes": r.bytes, "lines": r.lines,
            })
    return pa.Table.from_pylist(_sort_scanned(good), schemas.SCANNED), pa.Table.from_pylist(_sort_rejects(bad), schemas.REJECTS)


def _sort_scanned(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: (r["repository"], r["path"], r["location"]))  # location: unique


def _sort_rejects(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: (r["repository"] or "", r["path"]))  # stable: ties keep the scan's order


def merge(files: list[Path], rejects: list[Path]) -> tuple[pa.Table, pa.Table]:
    """The shards' parts as `scan_source`'s one-job result: rows re-sorted by the same keys, stably
    (files that tie on (repository, path) share a path, so they come from one shard, in its order)."""
    good = [r for p in files for r in read_parquet(p, schemas.SCANNED).to_pylist()]
    bad = [r for p in rejects for r in read_parquet(p, schemas.REJECTS).to_pylist()]
    return (pa.Table.from_pylist(_sort_scanned(good), schemas.SCANNED),
            pa.Table.from_pylist(_sort_rejects(bad), schemas.REJECTS))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m pipeline.manifest.scan",
        description="Scan one fetched source folder: hash, detect language, check decoding; "
        "write its manifest part and its rejects.",
    )
    ap.add_argument("--name", required=True, help="source name")
    ap.add_argument("--root", required=True, type=Path, help="the fetched folder (data/corpus/<name>)")
    ap.add_argument("--repository", required=True,
                    help="repository name, or dir:N to group files by their first N folders (top_dir = dir:1)")
    ap.add_argument("--languages", required=True, help="JSON list of languages to keep")
    ap.add_argument("--max-file-bytes", required=True, type=int)
    ap.add_argument("--workers", type=int, default=1, help="processes")
    ap.add_argument("--origins", type=Path, help="where a jsonl source's files came from (the fetch's Parquet)")
    ap.add_argument("--exclude", default="[]", help="JSON list of manifest.exclude patterns (excluded rejects)")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--rejects", required=True, type=Path)
    sharding.add_arguments(ap, "instead of scanning: merge these shards' parts (X.parquet, beside X.rejects.parquet); "
                           "the folder is not read")
    args = ap.parse_args(argv)
    sharding.check_arguments(ap, args)
    logs.setup()
    if args.merge:
        files, rejects = merge(args.merge, [p.with_suffix(".rejects.parquet") for p in args.merge])
    else:
        files, rejects = scan_source(args.name, args.root, args.repository, json.loads(args.languages),
                                     args.max_file_bytes, args.workers, origins=args.origins,
                                     exclude=json.loads(args.exclude), shard=args.shard, shards=args.shards)
    write_parquet(files, args.out, schemas.SCANNED)
    write_parquet(rejects, args.rejects, schemas.REJECTS)
    log.info("%s: %d files kept, %d rejected", args.name, files.num_rows, rejects.num_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
