"""Read-only SQL over the warehouse: `python -m pipeline query "SELECT ..."`.

Read-only for real, in three layers:
1. the statement filter: exactly one statement, SELECT or EXPLAIN of a SELECT (not `EXPLAIN ANALYZE COPY`);
2. the connection is opened read-only, with extension auto-install and auto-load off;
3. external access is off (no COPY TO, no read_csv/read_text/glob of arbitrary files, no http), except
   exactly the Parquet files the warehouse's views read (`warehouse_files`, allowed by path), and the
   configuration is then locked so a query cannot turn any of it back on.

Bounded for real: before the configuration is locked, the connection gets a memory limit, a cap on what it
may spill to its own temporary folder, a thread count, and the command a statement timeout (the query is
interrupted) and a row limit on what it prints (`Limits`; params.yaml `query:` sets the defaults, flags
override). Every failure, while planning or while fetching, is one `error:` line and exit code 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import shutil
import sys
import tempfile
import threading
from dataclasses import dataclass, fields, replace
from pathlib import Path

import duckdb
import pyarrow.csv as pacsv

ALLOWED = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}
EXPLAIN = re.compile(r"^\s*EXPLAIN(\s+ANALY[SZ]E)?\s*(\([^)]*\))?", re.IGNORECASE)
DB_IN_ROOT = Path("data/warehouse.duckdb")
SIZE = re.compile(r"^\s*[0-9]+(\.[0-9]+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*$", re.IGNORECASE)


class QueryRefused(ValueError):
    pass


@dataclass(frozen=True)
class Limits:
    """What one query may use. Sizes are DuckDB sizes ("2GB", "512MiB")."""

    memory: str = "2GB"  # DuckDB memory_limit: past it, operators spill to the temporary folder
    temp: str = "4GB"  # max_temp_directory_size: past it, the query fails
    threads: int = 2  # DuckDB worker threads
    timeout_s: float = 60.0  # wall-clock seconds before the statement is interrupted (0: none)
    max_rows: int = 10_000  # rows printed at most, in every format (0: all)

    def __post_init__(self) -> None:
        for name in ("memory", "temp"):
            if not SIZE.match(str(getattr(self, name))):
                raise ValueError(f"query limit {name}: {getattr(self, name)!r} is not a size like '2GB' or '512MiB'")
        if self.threads < 1 or self.timeout_s < 0 or self.max_rows < 0:
            raise ValueError("query limits: threads >= 1, timeout_s >= 0, max_rows >= 0")

    @classmethod
    def from_params(cls, params: dict | None) -> "Limits":
        """params.yaml's `query:` block (keys as the fields' names); missing keys keep the defaults."""
        block = (params or {}).get("query") or {}
        return cls(**{f.name: block[f.name] for f in fields(cls) if f.name in block})


def find_root(start: Path | None = None) -> Path | None:
    """The project folder holding `start` (default: the current one): the nearest folder, going up, with a
    params.yaml and a Snakefile. None outside a project."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "params.yaml").is_file() and (folder / "Snakefile").is_file():
            return folder
    return None


def project_limits(root: Path | None) -> Limits:
    if root is None or not (root / "params.yaml").is_file():
        return Limits()
    import yaml

    return Limits.from_params(yaml.safe_load((root / "params.yaml").read_text()))


def connect(db: Path, threads: int | None = None, limits: Limits | None = None,
            temp_dir: Path | None = None) -> duckdb.DuckDBPyConnection:
    """Open the warehouse read-only. Its views read Parquet by paths relative to the project root,
    which is found from where the warehouse file sits (data/warehouse.duckdb in the project) and
    set as the DuckDB variable the views join their paths to: a moved or copied project still
    opens, and the current directory never matters. `limits` (memory, spill size, threads) and `temp_dir`
    (where spills go; default: DuckDB's) are set before the configuration is locked; `threads` overrides
    the limits' thread count (default: all cores when neither is given)."""
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
    if limits is not None:
        con.execute(f"SET memory_limit = '{limits.memory}'")
        con.execute(f"SET max_temp_directory_size = '{limits.temp}'")
        threads = threads or limits.threads
    if temp_dir is not None:
        con.execute("SET temp_directory = ?", [str(temp_dir)])
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


@contextlib.contextmanager
def deadline(con: duckdb.DuckDBPyConnection, seconds: float):
    """Interrupt whatever `con` runs once `seconds` have passed (0: never); the interrupted call raises
    duckdb.InterruptException, reported as a timeout."""
    timer = threading.Timer(seconds, con.interrupt) if seconds else None
    if timer:
        timer.daemon = True
        timer.start()
    try:
        yield
    finally:
        if timer:
            timer.cancel()


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 500 else text[:500] + " ..."


def main(argv: list[str] | None = None) -> int:
    defaults = Limits()
    ap = argparse.ArgumentParser(
        prog="python -m pipeline query",
        description="Run one read-only SQL query over the warehouse (data/warehouse.duckdb of the project the "
        "current folder is in). Tables: manifest, rejects, ... and metric views; list them with: SHOW TABLES. "
        "Every query is bounded: memory, spill size, threads, a timeout and a row limit (defaults from "
        "params.yaml `query:`, else the values shown; the flags override). Errors are one `error:` line, exit 2.",
        epilog='example: python -m pipeline query "SELECT * FROM corpus_summary" --csv',
    )
    ap.add_argument("sql", help="one SELECT (or EXPLAIN) statement")
    ap.add_argument("--db", type=Path, default=None,
                    help="the warehouse (default: data/warehouse.duckdb of the project holding the current folder)")
    fmt = ap.add_mutually_exclusive_group()
    fmt.add_argument("--csv", action="store_true", help="CSV on stdout")
    fmt.add_argument("--json", action="store_true", help="JSON records on stdout")
    ap.add_argument("--max-rows", type=int, default=None,
                    help=f"rows printed at most, every format; 0: all (default {defaults.max_rows})")
    ap.add_argument("--timeout", type=float, default=None, dest="timeout_s",
                    help=f"seconds before the query is interrupted; 0: none (default {defaults.timeout_s:g})")
    ap.add_argument("--memory", default=None, help=f"memory limit, e.g. 2GB (default {defaults.memory})")
    ap.add_argument("--temp", default=None,
                    help=f"most a query may spill to its temporary folder (default {defaults.temp})")
    ap.add_argument("--threads", type=int, default=None, help=f"DuckDB threads (default {defaults.threads})")
    args = ap.parse_args(argv)
    root = find_root()
    db = args.db if args.db is not None else (root / DB_IN_ROOT if root else DB_IN_ROOT)
    temp_dir = Path(tempfile.mkdtemp(prefix="pipeline-query-"))
    try:
        limits = replace(project_limits(root if args.db is None else find_root(Path(args.db).resolve().parent)),
                         **{k: v for k in ("max_rows", "timeout_s", "memory", "temp", "threads")
                            if (v := getattr(args, k)) is not None})
        con = connect(db, limits=limits, temp_dir=temp_dir)
        with deadline(con, limits.timeout_s):
            rel = run(con, args.sql)
            if limits.max_rows:
                rel = rel.limit(limits.max_rows + 1)
            table = rel.fetch_arrow_table()
    except duckdb.InterruptException:
        print(f"error: the query ran past its {limits.timeout_s:g} s limit and was stopped "
              "(--timeout SECONDS, or params.yaml query.timeout_s, to allow more)", file=sys.stderr)
        return 2
    except duckdb.OutOfMemoryException as exc:
        print(f"error: the query needed more than its memory ({limits.memory}) and spill ({limits.temp}) limits "
              f"allow (--memory/--temp to raise them): {one_line(exc)}", file=sys.stderr)
        return 2
    except (QueryRefused, FileNotFoundError, ValueError, duckdb.Error) as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(temp_dir, ignore_errors=True)
    truncated = bool(limits.max_rows) and table.num_rows > limits.max_rows
    if truncated:
        table = table.slice(0, limits.max_rows)
    try:
        if args.csv:
            pacsv.write_csv(table, sys.stdout.buffer)
        elif args.json:
            json.dump(table.to_pylist(), sys.stdout, default=str, indent=1)
            print()
        else:
            duckdb.from_arrow(table).show(max_rows=max(table.num_rows, 1))
    except BrokenPipeError:  # `| head`: the reader left; not an error
        return 0
    if truncated:
        print(f"note: more than {limits.max_rows} rows; the first {limits.max_rows} shown "
              "(--max-rows N, 0 for all)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    from pipeline.__main__ import run_and_exit

    run_and_exit(["query", *sys.argv[1:]])
