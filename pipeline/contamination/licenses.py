"""The manifest's provenance columns and the license filter (corpus.licenses.allow), from the sources' fetch
records: every file of a source whose license is not allowed is a `license` reject (stage manifest), counted."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.compute as pc

from pipeline import schemas
from pipeline.contamination.provenance import UNKNOWN, allowed


def of_records(records: list[dict]) -> dict[str, tuple[str, dt.date | None]]:
    """source -> (license, released) from the fetch records (a record without them: unknown, null)."""
    out = {}
    for rec in records:
        released = rec.get("released")
        out[rec["name"]] = (rec.get("license") or UNKNOWN, dt.date.fromisoformat(released) if released else None)
    return out


def filter_scanned(scanned: list[pa.Table], provenance: dict[str, tuple[str, dt.date | None]],
                   allow: list[str] | None) -> tuple[list[pa.Table], pa.Table]:
    """The scanned parts less the files of sources whose license `allow` does not list, and their reject rows."""
    kept, rejected = [], []
    for table in scanned:
        sources = set(table.column("source").to_pylist())
        out = [s for s in sources if not allowed(provenance.get(s, (UNKNOWN, None))[0], allow)]
        if not out:
            kept.append(table)
            continue
        mask = pc.is_in(table.column("source"), pa.array(out, pa.string()))
        gone = table.filter(mask)
        kept.append(table.filter(pc.invert(mask)))
        rejected.append(pa.table({
            "source": gone.column("source"), "repository": gone.column("repository"), "path": gone.column("path"),
            "stage": pa.array(["manifest"] * gone.num_rows, pa.string()),
            "reason": pa.array(["license"] * gone.num_rows, pa.string()),
            "detail": pa.array([f"license {provenance.get(s, (UNKNOWN, None))[0]} is not in corpus.licenses.allow"
                                for s in gone.column("source").to_pylist()], pa.string()),
            "bytes": gone.column("bytes")}, schema=schemas.REJECTS))
    return kept, (pa.concat_tables(rejected) if rejected else schemas.REJECTS.empty_table())


def annotate(manifest: pa.Table, provenance: dict[str, tuple[str, dt.date | None]]) -> pa.Table:
    """The manifest with each file's source's `license` and `released`."""
    sources = manifest.column("source").to_pylist()
    for name, i, kind in (("license", 0, pa.string()), ("released", 1, pa.date32())):
        column = pa.array([provenance.get(s, (UNKNOWN, None))[i] for s in sources], kind)
        at = manifest.schema.get_field_index(name)
        manifest = manifest.set_column(at, name, column) if at >= 0 else manifest.append_column(name, column)
    return manifest
