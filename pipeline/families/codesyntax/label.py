"""Cut the manifest's Python or Java functions into CodeSyntax samples and label their relations.

Output: samples (schemas.SAMPLES), relation edges (schemas.RELATIONS) and
rejects (core_schemas.REJECTS, stage "codesyntax"). Files are labelled in parallel processes;
the tables are sorted, so the bytes do not depend on the number of workers.
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from pipeline import schemas as core_schemas
from pipeline.core import logs
from pipeline.core.ids import stable_id, unit_float
from pipeline.core.pool import hard_limit, map_files
from pipeline.families.codesyntax import schemas
from pipeline.io import read_parquet, write_json, write_parquet
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
    with hard_limit(opts.timeout_s):  # ends the worker inside the tokenizer or tree-sitter too
        return label_text(text, opts, _java_parser() if opts.language == "java" else None)


def _timed_out(opts: Options, row: dict) -> list[Failure]:
    return [Failure("", 0, "timeout", f"labelling ran past {opts.timeout_s:g} CPU s (codesyntax.timeout_s)")]


def _crashed(opts: Options, row: dict) -> list[Failure]:
    return [Failure("", 0, "worker_crash", "the labelling process died on this file")]


def label_corpus(files: list[dict], opts: Options, workers: int) -> tuple[list[tuple[dict, Sample]], list[tuple[dict, Failure]]]:
    samples, failures = [], []
    labelled = map_files(partial(_label_row, opts), files, workers, chunksize=CHUNK,
                         desc=f"codesyntax {opts.language}", progress=True, on_crash=partial(_crashed, opts),
                         on_timeout=partial(_timed_out, opts) if opts.timeout_s else None)
    for row, items in zip(files, labelled):
        for item in items:
            (samples if isinstance(item, Sample) else failures).append((row, item))
    return samples, failures


def build_tables(samples: list[tuple[dict, Sample]], failures: list[tuple[dict, Failure]], language: str,
                 seed: int, dev_fraction: float, max_samples: int) -> tuple[pa.Table, pa.Table, pa.Table, dict]:
    ids = [stable_id(row["sha256"], language, s.start_line, s.function) for row, s in samples]
    order = sorted(range(len(samples)), key=lambda i: ids[i])
    found = len(order)
    if max_samples and len(order) > max_samples:  # a seeded, id-based subset: stable when the corpus grows
        keep = sorted(order, key=lambda i: unit_float(seed, "codesyntax-cap", ids[i]))[:max_samples]
        order = sorted(keep, key=lambda i: ids[i])
    cols: dict[str, list] = {name: [] for name in schemas.SAMPLES.names}
    rel: dict[str, list] = {name: [] for name in schemas.RELATIONS.names}
    for i in order:
        row, s = samples[i]
        for name, value in (("sample_id", ids[i]), ("language", language), ("file_id", row["file_id"]),
                            ("source", row["source"]), ("repository", row["repository"]), ("path", row["path"]),
                            ("function", s.function), ("start_line", s.start_line), ("file_split", row["split"]),
                            ("eval_split", "dev" if unit_float(seed, "codesyntax-split", row["file_id"]) < dev_fraction
                             else "test"),
                            ("code", s.code), ("tokens", s.tokens), ("token_kinds", s.kinds),
                            ("token_lines", s.lines), ("token_cols", s.cols), ("n_tokens", len(s.tokens))):
            cols[name].append(value)
        for e in sorted(s.edges, key=lambda e: (e.relation, e.head, e.dep_start, e.dep_end)):
            rel["sample_id"].append(ids[i])
            rel["relation"].append(e.relation)
            rel["head"].append(e.head)
            rel["dep_start"].append(e.dep_start)
            rel["dep_end"].append(e.dep_end)
    rejects = {name: [] for name in core_schemas.REJECTS.names}
    for row, f in sorted(failures, key=lambda x: (x[0]["source"], x[0]["path"], x[1].start_line, x[1].function)):
        where = f"{f.function} (line {f.start_line}): " if f.function else ""
        for name, value in (("source", row["source"]), ("repository", row["repository"]), ("path", row["path"]),
                            ("stage", "codesyntax"), ("reason", f.reason), ("detail", where + f.detail),
                            ("bytes", row["bytes"] if not f.function else None)):
            rejects[name].append(value)
    samples_table = pa.table(cols, schema=schemas.SAMPLES)
    relations_table = pa.table(rel, schema=schemas.RELATIONS)
    rejects_table = pa.table(rejects, schema=core_schemas.REJECTS)
    summary = {
        "language": language,
        "functions_labelled": found,
        "samples": samples_table.num_rows,
        "dropped_by_cap": found - samples_table.num_rows,
        "edges": relations_table.num_rows,
        "rejects": rejects_table.num_rows,
        "rejects_by_reason": {r: int(c) for r, c in sorted(
            (x["values"], x["counts"]) for x in pc.value_counts(rejects_table.column("reason")).to_pylist())}
        if rejects_table.num_rows else {},
    }
    return samples_table, relations_table, rejects_table, summary


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
    ap.add_argument("--root", default=".", help="project root the manifest's locations are relative to")
    ap.add_argument("--samples", required=True, type=Path)
    ap.add_argument("--relations", required=True, type=Path)
    ap.add_argument("--rejects", required=True, type=Path)
    ap.add_argument("--summary", required=True, type=Path, help="JSON counts for the report")
    args = ap.parse_args(argv)
    logs.setup()
    manifest = read_parquet(args.manifest, core_schemas.MANIFEST)
    manifest = manifest.filter(pc.and_(pc.equal(manifest.column("language"), args.language),
                                       pc.invert(manifest.column("duplicate"))))
    files = manifest.sort_by([("source", "ascending"), ("path", "ascending")]).to_pylist()
    opts = Options(args.language, args.variant == "with_newlines", args.max_tokens, args.root, args.timeout_s)
    samples, failures = label_corpus(files, opts, max(1, args.workers))
    tables = build_tables(samples, failures, args.language, args.seed, args.dev_fraction, args.max_samples)
    write_parquet(tables[0], args.samples, schemas.SAMPLES)
    write_parquet(tables[1], args.relations, schemas.RELATIONS)
    write_parquet(tables[2], args.rejects, core_schemas.REJECTS)
    summary = dict(tables[3], variant=args.variant, files=len(files))
    write_json(summary, args.summary)
    log.info("codesyntax %s/%s: %d samples, %d edges, %d rejects", args.language, args.variant,
             summary["samples"], summary["edges"], summary["rejects"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
