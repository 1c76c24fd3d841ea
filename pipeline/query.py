"""Read-only SQL over the warehouse: `python -m pipeline query "SELECT ..."`.

Only SELECT and EXPLAIN statements run (on a read-only connection), so a query can
never change the warehouse or write files.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import duckdb
import pyarrow.csv as pacsv

ALLOWED = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}


class QueryRefused(ValueError):
    pass


def connect(db: Path) -> duckdb.DuckDBPyConnection:
    """Open the warehouse read-only. Its views read Parquet by paths relative to the project root,
    which is found from where the warehouse file sits (data/warehouse.duckdb in the project), so
    a moved or copied project still opens."""
    if not Path(db).exists():
        raise FileNotFoundError(f"{db} does not exist: build it with `snakemake warehouse --cores 2`")
    con = duckdb.connect(str(db), read_only=True)
    where = Path(con.sql("SELECT db_path FROM warehouse_info").fetchall()[0][0])
    root = Path(db).resolve().parents[len(where.parts) - 1]
    con.execute("SET file_search_path = ?", [str(root)])
    return con


def run(con: duckdb.DuckDBPyConnection, sql: str) -> duckdb.DuckDBPyRelation:
    statements = con.extract_statements(sql)
    if len(statements) != 1:
        raise QueryRefused(f"give exactly one statement, got {len(statements)}")
    if statements[0].type not in ALLOWED:
        raise QueryRefused(f"only SELECT and EXPLAIN are allowed (the warehouse is read-only), got {statements[0].type.name}")
    return con.sql(sql)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m pipeline query",
        description="Run one read-only SQL query over the warehouse (data/warehouse.duckdb). "
        "Tables: manifest, rejects, ... and metric views; list them with: SHOW TABLES",
        epilog='example: python -m pipeline query "SELECT * FROM corpus_summary" --csv',
    )
    ap.add_argument("sql", help="one SELECT (or EXPLAIN) statement")
    ap.add_argument("--db", type=Path, default=Path("data/warehouse.duckdb"))
    fmt = ap.add_mutually_exclusive_group()
    fmt.add_argument("--csv", action="store_true", help="CSV on stdout")
    fmt.add_argument("--json", action="store_true", help="JSON records on stdout")
    ap.add_argument("--max-rows", type=int, default=100, help="rows shown in the table format")
    args = ap.parse_args(argv)
    try:
        rel = run(connect(args.db), args.sql)
    except (QueryRefused, FileNotFoundError, duckdb.Error) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.csv:
        pacsv.write_csv(rel.fetch_arrow_table(), sys.stdout.buffer)
    elif args.json:
        cols = rel.columns
        json.dump([dict(zip(cols, row)) for row in rel.fetchall()], sys.stdout, default=str, indent=1)
        print()
    else:
        rel.show(max_rows=args.max_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
