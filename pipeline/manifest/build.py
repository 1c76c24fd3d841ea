"""Merge the per-source scans into the manifest: splits by repository, duplicate flags,
and one rejects table from every stage so far."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from pipeline import schemas
from pipeline.core import ids, logs
from pipeline.io import read_parquet, write_json, write_parquet

log = logging.getLogger("pipeline.manifest.build")

SPLITS = ("train", "valid", "test")


def split_of(seed: int, source: str, repository: str, fractions: dict[str, float]) -> str:
    """Deterministic split of a repository: a hash of (seed, source, repository) mapped to [0, 1).

    Hashing each repository on its own (rather than shuffling the list) keeps every
    repository's split unchanged when other repositories are added or removed.
    """
    u = ids.unit_float(seed, source, repository)
    edge = 0.0
    for name in SPLITS:
        edge += fractions[name]
        if u < edge:
            return name
    return SPLITS[-1]


def build(scanned: list[pa.Table], seed: int, fractions: dict[str, float]) -> pa.Table:
    total = sum(fractions[s] for s in SPLITS)
    if abs(total - 1.0) > 1e-9:
        raise ValueError(f"manifest.split fractions must add up to 1, got {total}")
    table = pa.concat_tables(scanned) if scanned else schemas.SCANNED.empty_table()
    table = table.sort_by([("source", "ascending"), ("repository", "ascending"), ("path", "ascending"),
                           ("location", "ascending")])
    sources, repos = table.column("source").to_pylist(), table.column("repository").to_pylist()
    cache: dict[tuple[str, str], str] = {}
    splits = [cache.setdefault((s, r), split_of(seed, s, r, fractions)) for s, r in zip(sources, repos)]
    seen: set[str] = set()
    duplicate = []
    for h in table.column("sha256").to_pylist():
        duplicate.append(h in seen)
        seen.add(h)
    table = table.append_column("split", pa.array(splits, pa.string()))
    return table.append_column("duplicate", pa.array(duplicate, pa.bool_()))


def caps(records: list[dict]) -> list[dict]:
    """Every cap that left members of a source out (fetch records' `caps`), with what it kept of what it saw."""
    return [{"source": rec["name"], **cap} for rec in sorted(records, key=lambda r: r["name"])
            for cap in rec.get("caps", [])]


def summary(manifest: pa.Table, rejects: pa.Table) -> dict:
    def counts(table: pa.Table, column: str) -> dict:
        if table.num_rows == 0:
            return {}
        vc = pc.value_counts(table.column(column)).to_pylist()
        return {str(x["values"]): x["counts"] for x in sorted(vc, key=lambda x: str(x["values"]))}

    unique = manifest.filter(pc.invert(manifest.column("duplicate")))
    return {
        "files": manifest.num_rows,
        "bytes": int(pc.sum(manifest.column("bytes")).as_py() or 0),
        "lines": int(pc.sum(manifest.column("lines")).as_py() or 0),
        "unique_files": unique.num_rows,
        "repositories": len(set(zip(manifest.column("source").to_pylist(), manifest.column("repository").to_pylist()))),
        "files_by_language": counts(manifest, "language"),
        "files_by_split": counts(manifest, "split"),
        "files_by_source": counts(manifest, "source"),
        "rejects": rejects.num_rows,
        "rejects_by_reason": counts(rejects, "reason"),
        # manifest.exclude at work: files left out as not code of the project, by the pattern that matched
        "excluded_by_pattern": counts(rejects.filter(pc.equal(rejects.column("reason"), "excluded")), "detail"),
    }


def split_order(fractions: dict[str, float]) -> list[str]:
    """train, valid, test first (whatever order params gave them), then any other split by name."""
    known = [s for s in ("train", "valid", "test") if s in fractions]
    return known + sorted(s for s in fractions if s not in known)


def split_warnings(files: dict[str, dict[str, int]], fractions: dict[str, float]) -> list[str]:
    """One line per (language, split) whose split is empty or tiny: fewer than a quarter of the files
    its fraction promises (when it promises at least 4). `files`: language -> split -> unique files.
    Splits are by repository, so a corpus of few repositories gives lopsided splits."""
    out = []
    for language in sorted(files):
        total = sum(files[language].values())
        for split in split_order(fractions):
            fraction = fractions[split]
            n, expected = files[language].get(split, 0), fraction * total
            if fraction > 0 and (n == 0 or (expected >= 4 and n < expected / 4)):
                out.append(f"the {split} split of {language} has {n} of {total} files (manifest.split promises about "
                           f"{expected:.0f}): {language} scores on {split} will be {'missing' if n == 0 else 'noisy'}. "
                           "Splits are by repository: give large sources `repository: dir:N` (or top_dir) so their "
                           "folders become repositories, or add sources")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m pipeline.manifest.build",
        description="Merge per-source scans into the manifest (splits, duplicates) and all rejects into one table.",
    )
    ap.add_argument("--scanned", nargs="*", default=[], type=Path, help="per-source manifest parts")
    ap.add_argument("--rejects-in", nargs="*", default=[], type=Path, help="per-source reject tables (fetch and scan)")
    ap.add_argument("--records", nargs="*", default=[], type=Path,
                    help="the sources' fetch records (data/sources/<name>.json): their caps' kept and seen counts")
    ap.add_argument("--seed", required=True, type=int)
    ap.add_argument("--split", required=True, help='fractions as JSON, e.g. {"train":0.8,"valid":0.1,"test":0.1}')
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--rejects", required=True, type=Path)
    ap.add_argument("--metrics", required=True, type=Path)
    args = ap.parse_args(argv)
    logs.setup()
    manifest = build([read_parquet(p, schemas.SCANNED) for p in args.scanned], args.seed, json.loads(args.split))
    rejects = pa.concat_tables([read_parquet(p, schemas.REJECTS) for p in args.rejects_in] or [schemas.REJECTS.empty_table()])
    rejects = rejects.sort_by([("source", "ascending"), ("stage", "ascending"), ("path", "ascending"), ("reason", "ascending")])
    write_parquet(manifest, args.out, schemas.MANIFEST)
    write_parquet(rejects, args.rejects, schemas.REJECTS)
    stats = summary(manifest, rejects)
    stats["caps"] = caps([json.loads(p.read_text()) for p in args.records])
    for cap in stats["caps"]:
        log.warning("manifest: source %s: %s kept %d of %d members seen (%s)", cap["source"], cap["reason"],
                    cap["kept"], cap["seen"], cap["path"])
    unique = manifest.filter(pc.invert(manifest.column("duplicate")))
    by_language: dict[str, dict[str, int]] = {}
    for language, split in zip(unique.column("language").to_pylist(), unique.column("split").to_pylist()):
        by_language.setdefault(language, {}).setdefault(split, 0)
        by_language[language][split] += 1
    stats["warnings"] = split_warnings(by_language, json.loads(args.split))
    for warning in stats["warnings"]:
        log.warning("manifest: %s", warning)
    write_json(stats, args.metrics)
    log.info("manifest: %d files (%d unique), %d rejects", stats["files"], stats["unique_files"], stats["rejects"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
