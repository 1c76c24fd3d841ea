"""Build data/warehouse.duckdb: a view per Parquet table, then the metric views in sql/*.sql.

Views read the Parquet files in place (nothing is copied), by absolute paths: the same
answers from any working directory. The project root is recorded in `warehouse_info`;
`python -m pipeline query` refuses a warehouse whose root has moved (rebuild it with
`snakemake warehouse --forcerun warehouse`). Tables whose files do not exist yet
(e.g. no predictions) become empty tables of the declared schema, so every metric view
always resolves.
"""

from __future__ import annotations

import argparse
import glob
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


def create_table_view(con: duckdb.DuckDBPyConnection, table: WarehouseTable, root: Path) -> int:
    """A view over the table's files; returns how many files it covers."""
    pattern = str(root.resolve() / table.pattern)
    files = sorted(glob.glob(pattern))
    if files:
        con.execute(f"CREATE VIEW {table.name} AS SELECT * FROM read_parquet({quote(pattern)}, union_by_name = true)")
    else:
        empty = table.schema.empty_table()  # noqa: F841 (read by DuckDB's replacement scan)
        con.execute(f"CREATE TABLE {table.name} AS SELECT * FROM empty")
    con.execute(f"COMMENT ON {'VIEW' if files else 'TABLE'} {table.name} IS {quote(table.description)}")
    return len(files)


def build(out: Path, root: Path = Path(".")) -> dict[str, int]:
    counts = {}
    with atomic_path(out) as tmp:
        tmp.unlink()  # DuckDB creates the file itself
        con = duckdb.connect(str(tmp))
        con.execute("CREATE TABLE warehouse_info AS SELECT ? AS root", [str(root.resolve())])
        for table in TABLES:
            counts[table.name] = create_table_view(con, table, root)
        for sql in sorted(SQL_DIR.glob("*.sql")):
            log.info("metric views: %s", sql.name)
            con.execute(sql.read_text())
        con.close()
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m pipeline.warehouse.build",
        description="Build the DuckDB warehouse: views over every Parquet table and the SQL metric views.",
    )
    ap.add_argument("--out", type=Path, default=Path("data/warehouse.duckdb"))
    ap.add_argument("--root", type=Path, default=Path("."), help="project root the table paths are relative to")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    counts = build(args.out, args.root)
    for name, n in counts.items():
        log.info("%-24s %d file(s)", name, n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
