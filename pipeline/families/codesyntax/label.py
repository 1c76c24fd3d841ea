"""Cut the manifest's Python or Java functions into CodeSyntax samples and label their relations.

Output: samples (schemas.SAMPLES), relation edges (schemas.RELATIONS) and
rejects (core_schemas.REJECTS, stage "codesyntax"). Files are labelled in parallel processes;
the tables are sorted, so the bytes do not depend on the number of workers. The stage streams:
samples and edges are spilled to temporary bucket files by sample id as files are labelled, and
each bucket is sorted on its own, so its memory does not grow with the corpus (bench/scale/scaling.py).
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import tempfile
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline import schemas as core_schemas
from pipeline.core import logs, shards as sharding
from pipeline.core.ids import stable_id, unit_float
from pipeline.core import budget
from pipeline.core.pool import hard_limit, imap_files
from pipeline.families.codesyntax import schemas
from pipeline.io import parquet_stream, read_parquet, write_json, write_parquet
from pipeline.manifest import read_text
from pipeline.syntax import java, python
from pipeline.syntax.common import Failure, Sample

log = logging.getLogger("pipeline.families.codesyntax.label")
VARIANTS = ("plain", "with_newlines")
CHUNK = 16


@dataclass(frozen=True)
class Options:
    language: str
    with_newlines: bool
    max_tokens: int
    root: str
    timeout_s: float = 0  # CPU seconds per file before its worker is ended (a `timeout` reject); 0: no cap
    max_file_tokens: int = 0  # a file with more tokens is a `too_complex` reject, unparsed (pipeline.core.budget); 0: none


def label_text(text: str, opts: Options, parser=None) -> list[Sample | Failure]:
    if opts.language == "python":
        return python.label_file(text, opts.max_tokens, opts.with_newlines)
    return java.label_file(text, opts.max_tokens, opts.with_newlines, parser or java.java_parser())


@lru_cache(maxsize=None)
def _java_parser():
    """One tree-sitter parser per process, reused file after file."""
    return java.java_parser()


def _label_row(opts: Options, row: dict) -> list[Sample | Failure]:
    try:
        text = read_text(row, opts.root)
    except (OSError, UnicodeDecodeError) as exc:
        return [Failure("", 0, "syntax_error", f"unreadable: {exc}"[:300])]
    too_many = budget.over_budget(text, opts.language, opts.max_file_tokens, "codesyntax.max_file_tokens")
    if too_many:  # before tokenize / ast / tree-sitter hold the whole file
        return [Failure("", 0, budget.REASON, too_many)]
    with hard_limit(opts.timeout_s):  # ends the worker inside the tokenizer or tree-sitter too
        return label_text(text, opts, _java_parser() if opts.language == "java" else None)


def _timed_out(opts: Options, row: dict) -> list[Failure]:
    return [Failure("", 0, "timeout", f"labelling ran past {opts.timeout_s:g} CPU s (codesyntax.timeout_s)")]


def _crashed(opts: Options, row: dict) -> list[Failure]:
    return [Failure("", 0, "worker_crash", "the labelling process died on this file")]


def iter_labelled(files: list[dict], opts: Options, workers: int) -> Iterator[tuple[dict, list[Sample | Failure]]]:
    """(file row, its samples and failures), file after file, in the files' order."""
    labelled = imap_files(partial(_label_row, opts), files, workers, chunksize=CHUNK,
                          desc=f"codesyntax {opts.language}", progress=True, on_crash=partial(_crashed, opts),
                          on_timeout=partial(_timed_out, opts) if opts.timeout_s else None)
    return zip(files, labelled)


def label_corpus(files: list[dict], opts: Options, workers: int) -> tuple[list[tuple[dict, Sample]], list[tuple[dict, Failure]]]:
    """Every sample and failure in memory (small inputs and tests; the stage streams: `write_tables`)."""
    samples, failures = [], []
    for row, items in iter_labelled(files, opts, workers):
        for item in items:
            (samples if isinstance(item, Sample) else failures).append((row, item))
    return samples, failures


SPILL_ROWS = 2048  # samples per batch spilled to the unsorted temporary tables
SAMPLES_ROW_GROUP = 8192  # samples carry their code and token lists: small row groups keep memory flat
CAP_KEY = "_cap_key"
UNSORTED_SAMPLES = pa.schema([*schemas.SAMPLES, pa.field("_order", pa.int64()), pa.field(CAP_KEY, pa.float64())])
UNSORTED_RELATIONS = pa.schema([*schemas.RELATIONS, pa.field("_order", pa.int64())])


@dataclass(frozen=True)
class LabelledFile:
    """One file's samples and edges as Arrow tables (`_order` counts the file's samples from 0), and
    its failures. Built in the worker: Arrow buffers cross the process boundary far cheaper than
    Sample and Edge objects, and the ids and splits are hashed in parallel."""

    samples: pa.Table  # UNSORTED_SAMPLES
    relations: pa.Table  # UNSORTED_RELATIONS
    failures: tuple[Failure, ...]


_FUNCTION = {"python": re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]", re.M),
             "java": re.compile(r"\)[ \t\n]*(?:throws[^{;]*)?\{")}


def functions_in(row: dict, root: str | Path = ".") -> int:
    """Functions (methods) a file holds, counted on its text (never run): what codesyntax makes samples of."""
    pattern = _FUNCTION.get(row.get("language") or "python", _FUNCTION["python"])
    try:
        return len(pattern.findall(read_text(row, root)))
    except (OSError, UnicodeDecodeError, LookupError, KeyError):
        return 0


def every_source_tested(files: list[dict], seed: int, dev_fraction: float, root: str | Path = ".") -> int:
    """Every source has samples on the test side: a source whose test-side files (by the seeded hash)
    hold no function gives its dev-side file with most functions (ties: the hash) to test, marked `_test`. A source
    with a function on the test side keeps the hash's choice. Returns the files moved."""
    by_source: dict[str, list[dict]] = {}
    for r in files:
        by_source.setdefault(r["source"], []).append(r)
    moved = 0
    for source, rows in sorted(by_source.items()):
        test = [r for r in rows if unit_float(seed, "codesyntax-split", r["file_id"]) >= dev_fraction]
        if len(test) == len(rows) or any(functions_in(r, root) for r in test):
            continue
        counts = {r["file_id"]: functions_in(r, root) for r in rows if r not in test}
        best = max((r for r in rows if r["file_id"] in counts),
                   key=lambda r: (counts[r["file_id"]], unit_float(seed, "codesyntax-split", r["file_id"]), r["file_id"]))
        if counts[best["file_id"]]:
            best["_test"] = True
            moved += 1
    return moved


def file_tables(row: dict, items: list[Sample | Failure], language: str, seed: int, dev_fraction: float) -> LabelledFile:
    """The rows `write_tables` writes for one file's labelled samples."""
    cols: dict[str, list] = {name: [] for name in UNSORTED_SAMPLES.names}
    rel: dict[str, list] = {name: [] for name in UNSORTED_RELATIONS.names}
    failures = []
    eval_split = ("test" if row.get("_test") or unit_float(seed, "codesyntax-split", row["file_id"]) >= dev_fraction
                  else "dev")
    for item in items:
        if not isinstance(item, Sample):
            failures.append(item)
            continue
        s = item
        order = len(cols["sample_id"])
        sample_id = stable_id(row["sha256"], language, s.start_line, s.function)
        for name, value in (("sample_id", sample_id), ("function", s.function), ("start_line", s.start_line),
                            ("code", s.code), ("tokens", s.tokens), ("token_kinds", s.kinds),
                            ("token_lines", s.lines), ("token_cols", s.cols), ("n_tokens", len(s.tokens)),
                            (CAP_KEY, unit_float(seed, "codesyntax-cap", sample_id))):
            cols[name].append(value)
        n = len(s.edges)
        rel["sample_id"] += [sample_id] * n
        rel["_order"] += [order] * n
        rel["relation"] += [e.relation for e in s.edges]
        rel["head"] += [e.head for e in s.edges]
        rel["dep_start"] += [e.dep_start for e in s.edges]
        rel["dep_end"] += [e.dep_end for e in s.edges]
    n = len(cols["sample_id"])
    cols["_order"] = list(range(n))
    for name, value in (("language", language), ("file_id", row["file_id"]), ("source", row["source"]),
                        ("repository", row["repository"]), ("path", row["path"]), ("file_split", row["split"]),
                        ("eval_split", eval_split)):
        cols[name] = [value] * n
    return LabelledFile(pa.table(cols, schema=UNSORTED_SAMPLES), pa.table(rel, schema=UNSORTED_RELATIONS),
                        tuple(failures))


def _label_row_tables(opts: Options, seed: int, dev_fraction: float, row: dict) -> LabelledFile:
    return file_tables(row, _label_row(opts, row), opts.language, seed, dev_fraction)


def iter_labelled_tables(files: list[dict], opts: Options, workers: int, seed: int,
                         dev_fraction: float) -> Iterator[tuple[dict, LabelledFile]]:
    """`iter_labelled` with each file's result already as `LabelledFile` (what the stage writes)."""
    def fallback(make):
        return lambda row: file_tables(row, make(opts, row), opts.language, seed, dev_fraction)

    labelled = imap_files(partial(_label_row_tables, opts, seed, dev_fraction), files, workers, chunksize=CHUNK,
                          desc=f"codesyntax {opts.language}", progress=True, on_crash=fallback(_crashed),
                          on_timeout=fallback(_timed_out) if opts.timeout_s else None)
    return zip(files, labelled)


def bucket_count(files: int) -> int:
    """Sample-id buckets the stage sorts in: a power of two, about 100 files per bucket (a few thousand
    samples, a few MB to sort in memory), at most 128 (two open spill files each)."""
    buckets = 1
    while buckets < 128 and buckets * 100 < files:
        buckets *= 2
    return buckets


def _bucket_of(ids: pa.ChunkedArray | pa.Array, buckets: int) -> np.ndarray:
    """Bucket of each sample id: its first two hex digits scaled to `buckets` (ids are sha256 hex,
    so buckets in increasing order hold increasing ids)."""
    return np.fromiter((int(i[:2], 16) * buckets >> 8 for i in ids.to_pylist()), dtype=np.int64, count=len(ids))


# A sample's `_order` is its place in the corpus walk: (file index << ORDER_BITS) + its index in the
# file when the rows carry their file's `_index` (every shard numbers files the same way, so the
# shards' orders interleave as one job's do), else a running count; both order samples alike.
ORDER_BITS = 24


class _Spill:
    """Samples and edges spilled unsorted to `buckets` Arrow files by sample-id prefix, the
    (order, cap key) pairs to a Parquet file, failures in memory."""

    CAP_SCHEMA = pa.schema([pa.field("_order", pa.int64()), pa.field(CAP_KEY, pa.float64())])

    def __init__(self, tmpdir: Path, buckets: int):
        self.tmpdir, self.buckets = tmpdir, buckets
        self.cap_path = tmpdir / "cap.parquet"
        self.cap_writer = pq.ParquetWriter(self.cap_path, self.CAP_SCHEMA)
        self.s_files = [pa.ipc.new_stream(str(tmpdir / f"samples-{b:03d}.arrow"), UNSORTED_SAMPLES)
                        for b in range(buckets)]
        self.r_files = [pa.ipc.new_stream(str(tmpdir / f"relations-{b:03d}.arrow"), UNSORTED_RELATIONS)
                        for b in range(buckets)]
        self.s_parts: list[pa.Table] = []
        self.r_parts: list[pa.Table] = []
        self.buffered = 0

    def _scatter(self, parts: list[pa.Table], files: list) -> None:
        if not parts:
            return
        table = pa.concat_tables(parts)
        bucket = _bucket_of(table.column("sample_id"), self.buckets)
        order = np.argsort(bucket, kind="stable")
        table, bounds = table.take(order), np.searchsorted(bucket[order], np.arange(self.buckets + 1))
        for b in range(self.buckets):
            if bounds[b + 1] > bounds[b]:
                for batch in table.slice(bounds[b], bounds[b + 1] - bounds[b]).to_batches():
                    files[b].write_batch(batch)
        parts.clear()

    def spill(self) -> None:
        if self.s_parts:
            self.cap_writer.write_table(pa.concat_tables(self.s_parts).select(self.CAP_SCHEMA.names))
        self._scatter(self.s_parts, self.s_files)
        self._scatter(self.r_parts, self.r_files)
        self.buffered = 0

    def add(self, samples: pa.Table | None, relations: pa.Table | None) -> None:
        if samples is not None:
            self.s_parts.append(samples)
            self.buffered += samples.num_rows
        if relations is not None:
            self.r_parts.append(relations)
            self.buffered += relations.num_rows // 16
        if self.buffered >= SPILL_ROWS:
            self.spill()

    def close(self) -> None:
        self.spill()
        self.cap_writer.close()
        for f in (*self.s_files, *self.r_files):
            f.close()

    def keep(self, max_samples: int, memory_limit: str) -> pa.Array | None:
        """The `_order`s of the samples kept under the cap (None: every sample)."""
        if not max_samples:
            return None
        import duckdb

        con = duckdb.connect(config={"memory_limit": memory_limit, "temp_directory": str(self.tmpdir / "duckdb"),
                                     "threads": 1})
        # the samples with the smallest seeded keys (ties: corpus order)
        keep = pa.array(con.sql(f"SELECT _order FROM read_parquet('{self.cap_path}') ORDER BY {CAP_KEY}, _order "
                                f"LIMIT {int(max_samples)}").fetchnumpy()["_order"], pa.int64())
        con.close()
        return keep

    def buckets_read(self, kind: str, keep: pa.Array | None, keys: list[str] | None) -> Iterator[pa.Table]:
        """Each bucket in id order, the capped samples only, sorted by `keys` (None: as spilled)."""
        for b in range(self.buckets):
            path = self.tmpdir / f"{kind}-{b:03d}.arrow"
            with pa.ipc.open_stream(str(path)) as reader:
                table = reader.read_all()
            path.unlink()
            if keep is not None:
                table = table.filter(pc.is_in(table.column("_order"), value_set=keep))
            # pyarrow's sort is stable; ties on sample_id (practically none) keep the corpus order
            yield table.sort_by([(k, "ascending") for k in keys]) if keys else table


def _write_labels(spill: _Spill, max_samples: int, memory_limit: str, out: dict[str, Path]) -> tuple[int, int]:
    """The sorted samples and edges tables from a closed spill; returns their row counts."""
    keep = spill.keep(max_samples, memory_limit)
    with parquet_stream(out["samples"], schemas.SAMPLES, row_group=SAMPLES_ROW_GROUP) as writer:
        for table in spill.buckets_read("samples", keep, ["sample_id", "_order"]):
            writer.write(table)
        samples_rows = writer.rows
    with parquet_stream(out["relations"], schemas.RELATIONS) as writer:
        for table in spill.buckets_read("relations", keep,
                                        ["sample_id", "_order", "relation", "head", "dep_start", "dep_end"]):
            writer.write(table)
        relations_rows = writer.rows
    return samples_rows, relations_rows


def _summary(language: str, found: int, samples_rows: int, relations_rows: int, rejects_table: pa.Table) -> dict:
    return {
        "language": language,
        "functions_labelled": found,
        "samples": samples_rows,
        "dropped_by_cap": found - samples_rows,
        "edges": relations_rows,
        "rejects": rejects_table.num_rows,
        "rejects_by_reason": {r: int(c) for r, c in sorted(
            (x["values"], x["counts"]) for x in pc.value_counts(rejects_table.column("reason")).to_pylist())}
        if rejects_table.num_rows else {},
    }


def _spill_labelled(labelled: Iterable[tuple[dict, LabelledFile | list[Sample | Failure]]], language: str, seed: int,
                    dev_fraction: float, spill: _Spill) -> tuple[int, pa.Table]:
    """Every labelled file's samples and edges into the spill; returns (samples found, rejects table)."""
    failures: list[tuple[dict, Failure]] = []
    found = 0
    for row, result in labelled:
        if not isinstance(result, LabelledFile):
            result = file_tables(row, result, language, seed, dev_fraction)
        failures.extend((row, f) for f in result.failures)
        n = result.samples.num_rows
        if not n:
            continue
        if "_index" in row:
            assert n < 1 << ORDER_BITS, f"{row['path']}: {n} functions in one file"
            base = row["_index"] << ORDER_BITS
        else:
            base = found
        shift = lambda t: t.set_column(t.schema.get_field_index("_order"), "_order",  # noqa: E731
                                       pc.add(t.column("_order"), pa.scalar(base, pa.int64())))
        spill.add(shift(result.samples), shift(result.relations))
        found += n
    spill.close()
    rejects = {name: [] for name in core_schemas.REJECTS.names}
    for row, f in sorted(failures, key=lambda x: (x[0]["source"], x[0]["path"], x[1].start_line, x[1].function)):
        where = f"{f.function} (line {f.start_line}): " if f.function else ""
        for name, value in (("source", row["source"]), ("repository", row["repository"]), ("path", row["path"]),
                            ("stage", "codesyntax"), ("reason", f.reason), ("detail", where + f.detail),
                            ("bytes", row["bytes"] if not f.function else None)):
            rejects[name].append(value)
    return found, pa.table(rejects, schema=core_schemas.REJECTS)


def write_tables(labelled: Iterable[tuple[dict, LabelledFile | list[Sample | Failure]]], language: str, seed: int,
                 dev_fraction: float, max_samples: int, out: dict[str, Path], tmpdir: Path,
                 memory_limit: str = "256MB", buckets: int = 16) -> dict:
    """Stream labelled files (as `LabelledFile`, or as samples and failures) into the three tables in
    memory that does not grow with the corpus: samples and edges are spilled unsorted to `buckets`
    Arrow files of `tmpdir` by the first hex digits of their sample id; each bucket, in id order, is
    then sorted in memory by sample id (edges by sample id, relation, head, dependent span) and
    written in row groups (`pipeline.io.parquet_stream`: the bytes equal an in-memory write of the same
    rows). DuckDB sorting the wide sample rows needed 250 MB at 1,600 files and failed under 128 MB;
    a bucket is a few MB. A seeded, id-based subset of `max_samples` (0: all) is kept (DuckDB picks it
    from the spilled (order, key) pairs within `memory_limit`): stable when the corpus grows."""
    spill = _Spill(tmpdir, buckets)
    found, rejects_table = _spill_labelled(labelled, language, seed, dev_fraction, spill)
    samples_rows, relations_rows = _write_labels(spill, max_samples, memory_limit, out)
    write_parquet(rejects_table, out["rejects"], core_schemas.REJECTS)
    return _summary(language, found, samples_rows, relations_rows, rejects_table)


# -- shards (codesyntax.shards; pipeline.core.shards) --------------------------------------------------
def part_path(summary: Path, table: str) -> Path:
    """A shard's table beside its summary: X.json -> X.<table>.parquet."""
    return summary.with_suffix(f".{table}.parquet")


def write_part(labelled: Iterable[tuple[dict, LabelledFile]], language: str, seed: int, dev_fraction: float,
               max_samples: int, out: dict[str, Path], tmpdir: Path, memory_limit: str = "256MB",
               buckets: int = 16) -> dict:
    """One shard's part (`out`: its samples, relations, rejects; `merge` finds them beside the
    summary as X.samples.parquet, ...): its samples and edges unsorted with their corpus `_order` and cap key (only
    those under the cap among the shard's: the cap's choice over all shards is among them), its
    rejects sorted as one job sorts them, and its counts (`merge` reads them)."""
    spill = _Spill(tmpdir, buckets)
    found, rejects_table = _spill_labelled(labelled, language, seed, dev_fraction, spill)
    keep = spill.keep(max_samples, memory_limit)
    rows = {}
    for kind, schema in (("samples", UNSORTED_SAMPLES), ("relations", UNSORTED_RELATIONS)):
        with parquet_stream(out[kind], schema,
                            **({"row_group": SAMPLES_ROW_GROUP} if kind == "samples" else {})) as writer:
            for table in spill.buckets_read(kind, keep, None):
                writer.write(table)
            rows[kind] = writer.rows
    write_parquet(rejects_table, out["rejects"], core_schemas.REJECTS)
    return _summary(language, found, rows["samples"], rows["relations"], rejects_table)


def merge(parts: list[Path], language: str, max_samples: int, out: dict[str, Path], tmpdir: Path,
          memory_limit: str = "256MB", buckets: int = 16) -> tuple[dict, int]:
    """The shards' parts (given as their summaries) as one job's tables: samples and edges through the
    same spill, cap and bucket sort (the `_order`s of all shards interleave as one job's), rejects
    re-sorted stably by (source, path) (a path's files are in one shard, in its order). Returns the
    summary and the files labelled."""
    summaries = [json.loads(p.read_text()) for p in parts]
    spill = _Spill(tmpdir, buckets)
    for p in parts:
        for kind, schema in (("samples", UNSORTED_SAMPLES), ("relations", UNSORTED_RELATIONS)):
            part = pq.ParquetFile(part_path(p, kind))
            for i in range(part.num_row_groups):
                table = part.read_row_group(i).cast(schema)
                spill.add(table, None) if kind == "samples" else spill.add(None, table)
    spill.close()
    samples_rows, relations_rows = _write_labels(spill, max_samples, memory_limit, out)
    rejects = sharding.merge_tables([read_parquet(part_path(p, "rejects"), core_schemas.REJECTS) for p in parts],
                                    ["source", "path"], core_schemas.REJECTS)
    write_parquet(rejects, out["rejects"], core_schemas.REJECTS)
    summary = _summary(language, sum(s["functions_labelled"] for s in summaries), samples_rows, relations_rows, rejects)
    return summary, sum(s["files"] for s in summaries)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m pipeline.families.codesyntax.label",
        description="Cut the manifest's non-duplicate files of one language into functions, tokenize them as "
                    "the CodeSyntax paper does, and write every AST relation edge.",
    )
    ap.add_argument("--manifest", required=True, type=Path, help="data/manifest.parquet")
    ap.add_argument("--language", required=True, choices=["python", "java"])
    ap.add_argument("--variant", required=True, choices=VARIANTS,
                    help="with_newlines: dependent spans end on the newline after them (Java: newline tokens added)")
    ap.add_argument("--max-tokens", required=True, type=int, help="functions with more tokens are rejected")
    ap.add_argument("--max-samples", required=True, type=int, help="keep at most this many (seeded subset); 0: all")
    ap.add_argument("--dev-fraction", required=True, type=float, help="share of files whose samples are 'dev'")
    ap.add_argument("--seed", required=True, type=int)
    ap.add_argument("--workers", default=1, type=int)
    ap.add_argument("--timeout-s", default=0, type=float,
                    help="CPU seconds per file; a file past it is a `timeout` reject, its worker replaced (0: no cap)")
    ap.add_argument("--max-file-tokens", default=budget.DEFAULT, type=int,
                    help=f"files with more tokens are too_complex rejects, unparsed (default {budget.DEFAULT}; 0: none)")
    ap.add_argument("--root", default=".", help="project root the manifest's locations are relative to")
    ap.add_argument("--samples", required=True, type=Path)
    ap.add_argument("--relations", required=True, type=Path)
    ap.add_argument("--rejects", required=True, type=Path)
    ap.add_argument("--summary", required=True, type=Path, help="JSON counts for the report")
    sharding.add_arguments(ap, "instead of labelling: merge these shards' parts, given as their summaries (X.json "
                           "beside X.samples.parquet, X.relations.parquet, X.rejects.parquet); the manifest is not read")
    args = ap.parse_args(argv)
    sharding.check_arguments(ap, args)
    logs.setup()
    out = {"samples": args.samples, "relations": args.relations, "rejects": args.rejects}
    with tempfile.TemporaryDirectory(prefix=".codesyntax-", dir=args.summary.parent if args.summary.parent.exists()
                                     else None) as tmp:
        if args.merge:
            summary, n_files = merge(args.merge, args.language, args.max_samples, out, Path(tmp),
                                     buckets=bucket_count(sum(json.loads(p.read_text())["files"] for p in args.merge)))
        else:
            manifest = read_parquet(args.manifest, core_schemas.MANIFEST)
            manifest = manifest.filter(pc.and_(pc.equal(manifest.column("language"), args.language),
                                               pc.invert(manifest.column("duplicate"))))
            files = manifest.sort_by([("source", "ascending"), ("path", "ascending")]).to_pylist()
            moved = every_source_tested(files, args.seed, args.dev_fraction, args.root)
            if moved:
                log.info("codesyntax %s: %d source(s) had no function on the test side; each gives its file with most "
                         "functions to test", args.language, moved)
            if args.shards > 1:  # numbered in the one-job walk, so the shards' sample orders interleave as its
                files = [dict(r, _index=i) for i, r in enumerate(files)
                         if sharding.in_shard(r["source"], r["path"], args.shard, args.shards)]
            opts = Options(args.language, args.variant == "with_newlines", args.max_tokens, args.root, args.timeout_s,
                           args.max_file_tokens)
            labelled = iter_labelled_tables(files, opts, max(1, args.workers), args.seed, args.dev_fraction)
            if args.shards > 1:
                summary = write_part(labelled, args.language, args.seed, args.dev_fraction, args.max_samples,
                                     out, Path(tmp), buckets=bucket_count(len(files)))
            else:
                summary = write_tables(labelled, args.language, args.seed, args.dev_fraction, args.max_samples, out,
                                       Path(tmp), buckets=bucket_count(len(files)))
            n_files = len(files)
    summary = dict(summary, variant=args.variant, files=n_files)
    write_json(summary, args.summary)
    log.info("codesyntax %s/%s: %d samples, %d edges, %d rejects", args.language, args.variant,
             summary["samples"], summary["edges"], summary["rejects"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
