"""Read-only SQL over the warehouse: `python -m pipeline query "SELECT ..."`.

Read-only for real, in three layers:
1. the statement filter: exactly one statement that DuckDB's parser types as a query (SELECT, WITH, VALUES, PIVOT,
   UNPIVOT, DESCRIBE, SUMMARIZE, SHOW; `run`), or EXPLAIN of a SELECT (not `EXPLAIN ANALYZE COPY`);
2. the connection is opened read-only, with extension auto-install and auto-load off;
3. external access is off (no COPY TO, no read_csv/read_text/glob of arbitrary files, no http), except
   exactly the Parquet files the warehouse's views read (`warehouse_files`, allowed by path), and the
   configuration is then locked so a query cannot turn any of it back on.

Bounded for real: before the configuration is locked, the connection gets a memory limit, a cap on what it
may spill to its own temporary folder, a thread count, and the command a statement timeout (the query is
interrupted from a timer, and abandoned GRACE_S later if it has not stopped) and a bound on the rows and on the
bytes it prints (rows stream from DuckDB in Arrow batches, few rows a batch unless every column has a fixed
width, and the stream stops at the bound; a single value over the bound is refused inside DuckDB, `guarded`;
`Limits`; params.yaml `query:` sets the defaults, flags override). The command also caps its process's data
segment at the memory limit (`cap_process_memory`): DuckDB's memory_limit bounds only its buffer pool.
Every failure, while planning, fetching or printing, is one `error:` line and exit code 2.
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
import time
from dataclasses import dataclass, fields, replace
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.csv as pacsv

ALLOWED = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}
EXPLAIN = re.compile(r"^\s*EXPLAIN(\s+ANALY[SZ]E)?\s*(\([^)]*\))?", re.IGNORECASE)
DB_IN_ROOT = Path("data/warehouse.duckdb")
SIZE = re.compile(r"^\s*[0-9]+(\.[0-9]+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*$", re.IGNORECASE)


class QueryRefused(ValueError):
    pass


UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
         "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def size_bytes(size: str | int) -> int:
    """'256MB' -> 256000000 (DuckDB's units: KB = 1000, KiB = 1024); 0 or '0' -> 0."""
    text = str(size).strip()
    if text == "0":
        return 0
    m = re.match(r"^([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]+)$", text)
    if not m or m.group(2).lower() not in UNITS:
        raise ValueError(f"{size!r} is not a size like '256MB' or '1GiB'")
    return int(float(m.group(1)) * UNITS[m.group(2).lower()])


@dataclass(frozen=True)
class Limits:
    """What one query may use. Sizes are DuckDB sizes ("2GB", "512MiB")."""

    memory: str = "2GB"  # DuckDB memory_limit: past it, operators spill to the temporary folder
    temp: str = "4GB"  # max_temp_directory_size: past it, the query fails
    threads: int = 2  # DuckDB worker threads
    timeout_s: float = 60.0  # wall-clock seconds before the statement is interrupted (0: none)
    max_rows: int = 10_000  # rows printed at most, in every format (0: all)
    max_bytes: str = "256MB"  # the most the printed rows may hold (Arrow's in-memory size, ~ the CSV's); "0": all

    def __post_init__(self) -> None:
        for name in ("memory", "temp", "max_bytes"):
            if name == "max_bytes" and str(self.max_bytes).strip() == "0":
                continue
            if not SIZE.match(str(getattr(self, name))):
                raise ValueError(f"query limit {name}: {getattr(self, name)!r} is not a size like '2GB' or '512MiB'")
        if self.threads < 1 or self.timeout_s < 0 or self.max_rows < 0:
            raise ValueError("query limits: threads >= 1, timeout_s >= 0, max_rows >= 0")

    @property
    def max_bytes_n(self) -> int:
        """max_bytes in bytes (0: no bound)."""
        return size_bytes(self.max_bytes)

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


# A statement's closing `;` and the whitespace and comments after it (one statement: nothing else can follow)
TRAILING_SEMICOLON = re.compile(r";(\s|--[^\n]*|/\*.*?\*/)*\Z", re.S)


def is_query(con: duckdb.DuckDBPyConnection, sql: str) -> bool:
    """Whether DuckDB's parser takes `sql` as a query, one statement that may stand as a subquery: `FROM (<sql>)`
    parses as one statement. It is how a dynamic PIVOT (no IN list) is told apart: the parser expands it into a
    MULTI statement (a temporary ENUM type of the pivot's values, then the statement itself), whose type no longer
    says whether the statement is a SELECT or an INSERT ... PIVOT / CREATE TABLE ... AS PIVOT / COPY (PIVOT ...) TO;
    only a query parses as a subquery (the newline ends a trailing `--` comment)."""
    try:
        wrapped = con.extract_statements(f"FROM (\n{sql}\n)")
    except duckdb.Error:
        return False
    return len(wrapped) == 1 and wrapped[0].type in (duckdb.StatementType.SELECT, duckdb.StatementType.MULTI)


def run(con: duckdb.DuckDBPyConnection, sql: str) -> duckdb.DuckDBPyRelation:
    """The relation of one read-only statement: any statement DuckDB's parser types SELECT (a SELECT, FROM-first,
    WITH, VALUES, UNPIVOT, a PIVOT with an IN list, DESCRIBE, SUMMARIZE, SHOW), a dynamic PIVOT (typed MULTI:
    `is_query`), or EXPLAIN of a SELECT; anything else, or more than one statement, is refused before it runs."""
    statements = con.extract_statements(sql)
    if len(statements) != 1:
        raise QueryRefused(f"give exactly one statement, got {len(statements)}")
    statement = statements[0]
    if statement.type == duckdb.StatementType.MULTI:
        if not is_query(con, TRAILING_SEMICOLON.sub("", statement.query)):
            raise QueryRefused("only queries are allowed (the warehouse is read-only): this PIVOT is part of a "
                               "statement that is not a query (INSERT, CREATE, COPY, EXPLAIN of a dynamic PIVOT)")
    elif statement.type not in ALLOWED:
        raise QueryRefused("only queries are allowed (SELECT, WITH, VALUES, PIVOT, UNPIVOT, DESCRIBE, SUMMARIZE, SHOW, "
                           f"EXPLAIN of a SELECT; the warehouse is read-only), got {statement.type.name}")
    if statement.type == duckdb.StatementType.EXPLAIN:
        inner = EXPLAIN.sub("", statement.query, count=1)
        inner_statements = con.extract_statements(inner) if inner.strip() else []
        if len(inner_statements) != 1 or inner_statements[0].type != duckdb.StatementType.SELECT:
            raise QueryRefused("EXPLAIN is allowed on a SELECT only")
    return con.sql(sql)


# After a timeout's interrupt, the most a statement may go on before the command gives up on it (one line, exit 2)
GRACE_S = 1.0
# The types whose values have one width: rows of only these travel in big Arrow batches, others a few at a time, so a
# result of huge values (20 x 100 MB strings) is never converted whole before max_bytes is checked
FIXED = re.compile(r"^(BOOLEAN|U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|REAL|DATE|TIME|TIMESTAMP.*|DECIMAL.*|"
                   r"INTERVAL|UUID)$", re.IGNORECASE)


class QueryTimeout(Exception):
    pass


@dataclass
class Result:
    table: "pa.Table"
    more_rows: bool = False  # rows past max_rows exist
    more_bytes: bool = False  # rows were left out to stay within max_bytes


# The bytes one Arrow batch of fixed-width rows holds at most (a fixed-width value counted as 16 bytes)
BATCH_BYTES = 8 << 20


def batch_rows(rel: duckdb.DuckDBPyRelation) -> int:
    """Rows per Arrow batch, from bytes: BATCH_BYTES of rows when every column has a fixed width (at most 65,536),
    else 4 (each value of those is at most max_bytes: `guarded`)."""
    if all(FIXED.match(str(t)) for t in rel.types):
        return max(1, min(65_536, BATCH_BYTES // (16 * max(len(rel.types), 1))))
    return 4


def quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def guarded(rel: duckdb.DuckDBPyRelation, cap: int) -> duckdb.DuckDBPyRelation:
    """`rel` with every VARCHAR and BLOB value over `cap` bytes refused inside DuckDB (its `error()`), before the
    value is converted to Arrow or printed: one 1 GB string stops the query with one line instead of being copied.
    (A result with two columns of one name is left as it is: the process's memory cap still bounds it.)"""
    names = rel.columns
    if not cap or len(set(names)) != len(names):
        return rel
    exprs, checked = [], False
    for name, kind in zip(names, rel.types):
        col = quoted(name)
        length = {"varchar": f"strlen({col})", "blob": f"octet_length({col})"}.get(getattr(kind, "id", ""))
        if length is None:
            exprs.append(col)
            continue
        checked = True
        what = f"a value of column {name} holds more than the {cap:,} bytes a result may print (--max-bytes); select a part of it (substr, left) or its length"
        exprs.append(f"CASE WHEN {length} > {cap} THEN error({duckdb_literal(what)}) ELSE {col} END AS {col}")
    return rel.project(", ".join(exprs)) if checked else rel


def duckdb_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def collect(rel: duckdb.DuckDBPyRelation, limits: Limits) -> Result:
    """The result's rows, at most `max_rows` and `max_bytes` of them (streamed from DuckDB in batches: the
    rows past either bound are never converted; a single VARCHAR or BLOB value over max_bytes is refused inside
    DuckDB, `guarded`)."""
    import pyarrow as pa

    rel = guarded(rel, limits.max_bytes_n)
    if limits.max_rows:
        rel = rel.limit(limits.max_rows + 1)
    cap, kept, size, more_bytes = limits.max_bytes_n, [], 0, False
    reader = rel.to_arrow_reader(batch_rows(rel))
    schema = reader.schema
    for batch in reader:
        if cap and size + batch.nbytes > cap:
            lo, hi = 0, batch.num_rows  # the most rows of this batch that fit (nbytes of a slice counts the slice)
            while lo < hi:
                mid = (lo + hi + 1) // 2
                lo, hi = (mid, hi) if size + batch.slice(0, mid).nbytes <= cap else (lo, mid - 1)
            if lo:
                kept.append(batch.slice(0, lo))
            more_bytes = True
            break
        kept.append(batch)
        size += batch.nbytes
    reader.close()
    table = pa.Table.from_batches(kept, schema=schema)
    more_rows = bool(limits.max_rows) and table.num_rows > limits.max_rows
    if more_rows:
        table = table.slice(0, limits.max_rows)
    return Result(table, more_rows, more_bytes)


def execute(con: duckdb.DuckDBPyConnection, sql: str, limits: Limits, started: float | None = None) -> Result:
    """`collect(run(con, sql))` under the statement timeout: the statement runs in a thread; at the deadline the
    connection is interrupted (DuckDB's interrupt, from this thread), and if the statement has not stopped
    GRACE_S later (an operator that checks the flag seldom), QueryTimeout is raised all the same; the thread is a
    daemon the command's exit ends. `started` (time.monotonic()): when the clock began (default: now), so the
    command's own start-up and connection count against the timeout too."""
    box: dict = {}

    def work() -> None:
        try:
            box["result"] = collect(run(con, sql), limits)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=work, name="query", daemon=True)
    worker.start()
    left = limits.timeout_s - (time.monotonic() - started) if started is not None else limits.timeout_s
    worker.join(max(left, 0.0) if limits.timeout_s else None)
    if worker.is_alive():
        con.interrupt()
        stop = time.monotonic() + GRACE_S
        while worker.is_alive() and time.monotonic() < stop:
            worker.join(0.1)
            con.interrupt()  # again: an interrupt that came between two statements of a pipeline is cleared
        if worker.is_alive() or isinstance(box.get("error"), duckdb.InterruptException):
            raise QueryTimeout()
    if "error" in box:
        raise box["error"]
    return box["result"]


def nested(t: "pa.DataType") -> bool:
    return (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) or pa.types.is_struct(t)
            or pa.types.is_map(t) or pa.types.is_union(t) or getattr(pa.types, "is_list_view", lambda _: False)(t)
            or getattr(pa.types, "is_large_list_view", lambda _: False)(t))


def printable(table: "pa.Table") -> "pa.Table":
    """A table CSV can hold: BLOB columns as DuckDB prints them (\\xAB escapes), so a CSV of any bytes is text;
    list, struct, map and union columns as JSON text (DuckDB's to_json: `[1,2]`, `{"x":1}`)."""
    blobs = [i for i, f in enumerate(table.schema) if pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type)
             or pa.types.is_fixed_size_binary(f.type)]
    trees = [i for i, f in enumerate(table.schema) if nested(f.type)]
    if not blobs and not trees:
        return table
    names = table.column_names
    plain = table.rename_columns([f"c{i}" for i in range(len(names))])
    cols = ", ".join(f"c{i}::VARCHAR AS c{i}" if i in blobs else f"to_json(c{i})::VARCHAR AS c{i}" if i in trees
                     else f"c{i}" for i in range(len(names)))
    with duckdb.connect() as scratch:
        scratch.register("t", plain)
        return scratch.sql(f"SELECT {cols} FROM t").fetch_arrow_table().rename_columns(names)


# Data segment a thread may claim beyond the memory limit: its stack, thread-local data and malloc arena (a thread
# that cannot get them aborts the process), so the cap is met by an error, never an abort
THREAD_HEADROOM = 64 << 20


def cap_process_memory(limit: int, threads: int = 2) -> int | None:
    """Cap this process's data segment (RLIMIT_DATA: heap and anonymous mappings) at what it holds now plus `limit`
    bytes plus THREAD_HEADROOM per DuckDB thread and one, so what DuckDB allocates outside its buffer pool (a chunk
    of 2,048 rows of huge values; its memory_limit bounds only the pool) and the Arrow batches fail with an
    out-of-memory error instead of growing past it. Returns the cap, or None where /proc/self/status is not there
    (not Linux) or a lower cap is already set."""
    import resource

    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return None
    held = next((int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmData:")), None)
    if held is None:
        return None
    cap = held + limit + (threads + 1) * THREAD_HEADROOM
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if soft != resource.RLIM_INFINITY and soft <= cap:
        return None
    resource.setrlimit(resource.RLIMIT_DATA, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
    return cap


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 500 else text[:500] + " ..."


def main(argv: list[str] | None = None) -> int:
    started = time.monotonic()
    defaults = Limits()
    ap = argparse.ArgumentParser(
        prog="python -m pipeline query",
        description="Run one read-only SQL query over the warehouse (data/warehouse.duckdb of the project the "
        "current folder is in). Tables: manifest, rejects, ... and metric views; list them with: SHOW TABLES. "
        "Every query is bounded: memory, spill size, threads, a timeout, and the rows and bytes it prints (defaults "
        "from params.yaml `query:`, else the values shown; the flags override). Errors are one `error:` line, exit 2.",
        epilog='example: python -m pipeline query "SELECT * FROM corpus_summary" --csv',
    )
    ap.add_argument("sql", help="one query: SELECT, WITH, VALUES, PIVOT, UNPIVOT, DESCRIBE, SUMMARIZE, SHOW, or "
                    "EXPLAIN of a SELECT")
    ap.add_argument("--db", type=Path, default=None,
                    help="the warehouse (default: data/warehouse.duckdb of the project holding the current folder)")
    fmt = ap.add_mutually_exclusive_group()
    fmt.add_argument("--csv", action="store_true", help="CSV on stdout (BLOBs as DuckDB prints them, \\xAB escapes; "
                     "lists, structs and maps as JSON text)")
    fmt.add_argument("--json", action="store_true", help="JSON records on stdout")
    ap.add_argument("--max-rows", type=int, default=None,
                    help=f"rows printed at most, every format; 0: all (default {defaults.max_rows})")
    ap.add_argument("--max-bytes", default=None,
                    help=f"the most the printed rows may hold, e.g. 64MB (Arrow's size of the rows, about the CSV's); "
                    f"0: no bound (default {defaults.max_bytes})")
    ap.add_argument("--timeout", type=float, default=None, dest="timeout_s",
                    help=f"seconds before the query is interrupted (it stops within {GRACE_S:g} s more); 0: none "
                    f"(default {defaults.timeout_s:g})")
    ap.add_argument("--memory", default=None, help=f"memory limit, e.g. 2GB: DuckDB's, and the process's data beyond "
                    f"what it holds at start (default {defaults.memory})")
    ap.add_argument("--temp", default=None,
                    help=f"most a query may spill to its temporary folder (default {defaults.temp})")
    ap.add_argument("--threads", type=int, default=None, help=f"DuckDB threads (default {defaults.threads})")
    args = ap.parse_args(argv)
    root = find_root()
    db = args.db if args.db is not None else (root / DB_IN_ROOT if root else DB_IN_ROOT)
    temp_dir = Path(tempfile.mkdtemp(prefix="pipeline-query-"))
    limits = defaults
    try:
        limits = replace(project_limits(root if args.db is None else find_root(Path(args.db).resolve().parent)),
                         **{k: v for k in ("max_rows", "max_bytes", "timeout_s", "memory", "temp", "threads")
                            if (v := getattr(args, k)) is not None})
        cap_process_memory(size_bytes(limits.memory), limits.threads)
        con = connect(db, limits=limits, temp_dir=temp_dir)
        result = execute(con, args.sql, limits, started)
    except (QueryTimeout, duckdb.InterruptException):
        print(f"error: the query ran past its {limits.timeout_s:g} s limit and was stopped "
              "(--timeout SECONDS, or params.yaml query.timeout_s, to allow more)", file=sys.stderr)
        return 2
    except duckdb.OutOfMemoryException as exc:
        print(f"error: the query needed more than its memory ({limits.memory}) and spill ({limits.temp}) limits "
              f"allow (--memory/--temp to raise them): {one_line(exc)}", file=sys.stderr)
        return 2
    except MemoryError as exc:  # Python's, and pyarrow's ArrowMemoryError
        print(f"error: the query's rows did not fit in its memory limit ({limits.memory}, --memory): select fewer or "
              f"smaller columns or rows, or lower --max-bytes (now {limits.max_bytes}): {one_line(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:
        if "out of memory" not in str(exc).lower():
            print(f"error: {one_line(exc)}", file=sys.stderr)
            return 2
        print(f"error: the query's rows did not fit in its memory limit ({limits.memory}, --memory): select fewer or "
              f"smaller columns or rows, or lower --max-bytes (now {limits.max_bytes}): {one_line(exc)}", file=sys.stderr)
        return 2
    except (QueryRefused, FileNotFoundError, ValueError, TypeError, pa.ArrowException, duckdb.Error) as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(temp_dir, ignore_errors=True)
    table = result.table
    try:
        if args.csv:
            pacsv.write_csv(printable(table), sys.stdout.buffer)
        elif args.json:
            json.dump(table.to_pylist(), sys.stdout, default=str, indent=1)
            print()
        else:
            duckdb.from_arrow(table).show(max_rows=max(table.num_rows, 1))
    except BrokenPipeError:  # `| head`: the reader left; not an error
        return 0
    except (pa.ArrowException, duckdb.Error, ValueError, TypeError, UnicodeError) as exc:
        print(f"error: the result cannot be printed {'as CSV' if args.csv else 'as JSON' if args.json else ''}: "
              f"{one_line(exc)}; select the column cast to VARCHAR, or use another format", file=sys.stderr)
        return 2
    if result.more_bytes:
        print(f"note: the result holds more than {limits.max_bytes}; the first {table.num_rows} rows shown "
              "(--max-bytes SIZE, 0 for no bound)", file=sys.stderr)
    elif result.more_rows:
        print(f"note: more than {limits.max_rows} rows; the first {limits.max_rows} shown "
              "(--max-rows N, 0 for all)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    from pipeline.__main__ import run_and_exit

    run_and_exit(["query", *sys.argv[1:]])
