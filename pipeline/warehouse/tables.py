"""The tables the warehouse exposes: one entry per Parquet table, declared once."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from pipeline import schemas


@dataclass(frozen=True)
class WarehouseTable:
    name: str  # the view's name in DuckDB
    pattern: str  # file or glob, relative to the project root
    schema: pa.Schema
    description: str


TABLES: list[WarehouseTable] = [
    WarehouseTable("manifest", "data/manifest.parquet", schemas.MANIFEST, "one row per source file"),
    WarehouseTable("rejects", "data/rejects.parquet", schemas.REJECTS, "every file or item left out, with stage and reason"),
]
