"""A family's item dates before inference: `python -m pipeline.warehouse.dates --family F --tables JSON --out P`.

A zoo cap may draw a family's items by contamination label (`max_items: {<family>: {released_after_cutoff: 100,
released_before_cutoff: 100}}`, docs/contamination.md). The label compares an item's date with the model's cutoff,
and the date must be the one the warehouse's label reads: so this job runs the same SQL files the warehouse runs
(pipeline/warehouse/sql/25_item_dates.sql, then the family's `ItemDates.sql`) over views of the same Parquet
files (the warehouse tables `ItemDates.tables` names, made by the warehouse's own `create_table_view`), and
writes the family's `ItemDates.view` as one row per item (pipeline.runtime.predict.ITEM_DATES). Only the
predict jobs of a model whose cap names labels read it (rules/contamination.smk, `item_dates`).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import duckdb
import pyarrow as pa

from pipeline import registry as families
from pipeline.core import logs
from pipeline.io import write_parquet
from pipeline.runtime.predict import ITEM_DATES

log = logging.getLogger("pipeline.warehouse.dates")

CORE_SQL = Path(__file__).resolve().parent / "sql" / "25_item_dates.sql"


def sql_files(family: families.Family) -> list[Path]:
    """The SQL this job runs, in order: the core dating macros, then the family's dates file."""
    return [CORE_SQL, family.folder / "sql" / family.inference.item_dates.sql]


def item_dates(family: families.Family, tables: dict[str, list[str]]) -> pa.Table:
    """The family's item dates over these warehouse tables' files ({table: [paths]}; a table without files is an
    empty table of its schema, as in the warehouse)."""
    from pipeline.warehouse.build import create_table_view, family_tables
    from pipeline.warehouse.tables import TABLES

    spec = family.inference.item_dates
    known = {**TABLES, **{t.name: t for t in family_tables(family)}}
    missing = [t for t in spec.tables if t not in tables]
    if missing:
        raise ValueError(f"{family.name} item dates: no files given for {', '.join(missing)}")
    con = duckdb.connect()
    for name in spec.tables:
        create_table_view(con, known[name], [str(f) for f in tables[name]])
    for sql in sql_files(family):
        con.execute(sql.read_text())
    group = f"{spec.group}::VARCHAR" if spec.group else "NULL::VARCHAR"
    table = con.sql(f"SELECT {spec.id}::VARCHAR AS item_id, released::DATE AS released, date_basis, "
                    f'{group} AS "group" FROM {spec.view} ORDER BY item_id').fetch_arrow_table()
    return table.cast(ITEM_DATES)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m pipeline.warehouse.dates",
        description="Write a family's item dates (the warehouse's own SQL over the same Parquet files) before "
        "inference, for a zoo cap that draws by contamination label.",
    )
    ap.add_argument("--family", required=True)
    ap.add_argument("--tables", required=True, help="JSON {warehouse table: [Parquet files]}")
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    logs.setup()
    family = families.load(args.family)
    if family.inference is None or family.inference.item_dates is None:
        ap.error(f"{family.name} dates no items before inference")
    dated = item_dates(family, json.loads(args.tables))
    write_parquet(dated, args.out, ITEM_DATES)
    counts = dict(duckdb.sql("SELECT date_basis, count(*) FROM dated GROUP BY ALL ORDER BY ALL").fetchall())
    log.info("%s: %d items dated (%s)", family.name, dated.num_rows, ", ".join(f"{k} {v}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
