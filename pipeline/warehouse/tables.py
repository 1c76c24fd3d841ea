"""The tables the warehouse exposes, declared once: name, schema, description.
Which files make up each table is the workflow's business (rules/aggregate.smk passes them)."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from pipeline import schemas


@dataclass(frozen=True)
class WarehouseTable:
    name: str  # the view's name in DuckDB
    schema: pa.Schema
    description: str


TABLES: dict[str, WarehouseTable] = {
    t.name: t
    for t in [
        WarehouseTable("manifest", schemas.MANIFEST, "one row per source file"),
        WarehouseTable("rejects", schemas.REJECTS, "every file or item left out, with stage and reason"),
    ]
}
