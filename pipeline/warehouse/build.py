"""Build data/warehouse.duckdb: a view per Parquet table, then the metric views in sql/*.sql.

Views read exactly the Parquet files the workflow names (nothing is copied; a stale shard
left from an earlier shard count is never picked up), by absolute paths: the same
answers from any working directory. The project root is recorded in `warehouse_info`;
`python -m pipeline query` refuses a warehouse whose root has moved (rebuild it with
`snakemake warehouse --forcerun warehouse`). Tables whose files do not exist yet
(e.g. no predictions) become empty tables of the declared schema, so every metric view
always resolves.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import duckdb

from pipeline.io import atomic_path
from pipeline.warehouse.tables import TABLES, WarehouseTable

log = logging.getLogger("pipeline.warehouse.build")

SQL_DIR = Path(__file__).parent / "sql"


def quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def create_table_view(con: duckdb.DuckDBPyConnection, table: WarehouseTable, files: list[Path]) -> None:
    """A view over exactly these files (absolute paths), or an empty typed table if there are none."""
    if files:
        paths = ", ".join(quote(str(f.resolve())) for f in files)
        if table.derived:
            select = f"SELECT * EXCLUDE (filename), {table.derived} FROM read_parquet([{paths}], filename = true)"
        else:
            select = f"SELECT * FROM read_parquet([{paths}], union_by_name = true)"
        con.execute(f"CREATE VIEW {table.name} AS {select}")
    else:
        empty = table.schema.empty_table()  # noqa: F841 (read by DuckDB's replacement scan)
        derived = f", {table.derived.replace('filename', 'NULL::VARCHAR')}" if table.derived else ""
        con.execute(f"CREATE TABLE {table.name} AS SELECT *{derived} FROM empty")
    con.execute(f"COMMENT ON {'VIEW' if files else 'TABLE'} {table.name} IS {quote(table.description)}")


def build(out: Path, files: dict[str, list[Path]], root: Path = Path(".")) -> None:
    unknown = set(files) - set(TABLES)
    if unknown:
        raise ValueError(f"no such warehouse table(s): {sorted(unknown)}; declare them in pipeline/warehouse/tables.py")
    with atomic_path(out) as tmp:
        tmp.unlink()  # DuckDB creates the file itself
        con = duckdb.connect(str(tmp))
        con.execute("CREATE TABLE warehouse_info AS SELECT ? AS root", [str(root.resolve())])
        for table in TABLES.values():
            create_table_view(con, table, files.get(table.name, []))
        for sql in sorted(SQL_DIR.glob("*.sql")):
            log.info("metric views: %s", sql.name)
            con.execute(sql.read_text())
        con.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m pipeline.warehouse.build",
        description="Build the DuckDB warehouse: views over every Parquet table and the SQL metric views.",
    )
    ap.add_argument("--out", type=Path, default=Path("data/warehouse.duckdb"))
    ap.add_argument("--table", nargs="+", action="append", default=[], metavar=("NAME", "FILE"),
                    help="a table and its Parquet files (repeat for each table; tables not given are empty)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    files = {name: [Path(f) for f in paths] for name, *paths in args.table}
    build(args.out, files)
    for name in TABLES:
        log.info("%-24s %d file(s)", name, len(files.get(name, [])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
