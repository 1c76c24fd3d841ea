"""Read-only SQL over the warehouse: `python -m pipeline query "SELECT ..."`.

Read-only for real, in three layers:
1. the statement filter: exactly one statement, SELECT or EXPLAIN of a SELECT (not `EXPLAIN ANALYZE COPY`);
2. the connection is opened read-only, with extension auto-install and auto-load off;
3. external access is off (no COPY TO, no read_csv/read_text/glob of arbitrary files, no http), except
   exactly the Parquet files the warehouse's views read (`warehouse_files`, allowed by path), and the
   configuration is then locked so a query cannot turn any of it back on.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import duckdb
import pyarrow.csv as pacsv

ALLOWED = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}
EXPLAIN = re.compile(r"^\s*EXPLAIN(\s+ANALY[SZ]E)?\s*(\([^)]*\))?", re.IGNORECASE)


class QueryRefused(ValueError):
    pass


def connect(db: Path, threads: int | None = None) -> duckdb.DuckDBPyConnection:
    """Open the warehouse read-only. Its views read Parquet by paths relative to the project root,
    which is found from where the warehouse file sits (data/warehouse.duckdb in the project) and
    set as the DuckDB variable the views join their paths to: a moved or copied project still
    opens, and the current directory never matters. `threads`: DuckDB's worker threads (default: all cores),
    set before the configuration is locked."""
    if not Path(db).exists():
        raise FileNotFoundError(f"{db} does not exist: build it with `snakemake warehouse --cores 2`")
    con = duckdb.connect(str(db), read_only=True,
                         config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    where = Path(con.sql("SELECT db_path FROM warehouse_info").fetchall()[0][0])
    root = Path(db).resolve().parents[len(where.parts) - 1]
    try:
        files = [r[0] for r in con.sql("SELECT path FROM warehouse_files ORDER BY path").fetchall()]
    except duckdb.CatalogException:
        con.close()
        raise FileNotFoundError(f"{db} was built by an older version (no warehouse_files table): "
                                "rebuild it with `snakemake warehouse --cores 2`") from None
    from pipeline.warehouse.build import ROOT_VARIABLE

    con.execute(f"SET VARIABLE {ROOT_VARIABLE} = ?", [str(root)])
    allowed = sorted(str(root / f) if not Path(f).is_absolute() else f for f in files)
    con.execute("SET allowed_paths = ?", [allowed])
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con


def run(con: duckdb.DuckDBPyConnection, sql: str) -> duckdb.DuckDBPyRelation:
    statements = con.extract_statements(sql)
    if len(statements) != 1:
        raise QueryRefused(f"give exactly one statement, got {len(statements)}")
    statement = statements[0]
    if statement.type not in ALLOWED:
        raise QueryRefused(f"only SELECT and EXPLAIN are allowed (the warehouse is read-only), got {statement.type.name}")
    if statement.type == duckdb.StatementType.EXPLAIN:
        inner = EXPLAIN.sub("", statement.query, count=1)
        inner_statements = con.extract_statements(inner) if inner.strip() else []
        if len(inner_statements) != 1 or inner_statements[0].type != duckdb.StatementType.SELECT:
            raise QueryRefused("EXPLAIN is allowed on a SELECT only")
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
