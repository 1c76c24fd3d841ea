"""The warehouse: views over the real Parquet tables, metric views in SQL, a read-only query command."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from pipeline.query import QueryRefused, connect, run
from tests.conftest import REPO, default_params, snakemake, write_params
from tests.fixture_corpus import build_sources


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The fixture corpus's manifest and rejects (real Snakemake), in a real DuckDB warehouse.
    The `warehouse` rule itself, over every table, runs in test_end_to_end."""
    from pipeline.warehouse.build import build

    work = tmp_path_factory.mktemp("wh")
    write_params(work, build_sources(tmp_path_factory.mktemp("src")))
    snakemake(work, "manifest")
    spec = {"tables": {"manifest": ["data/manifest.parquet"], "rejects": ["data/rejects.parquet"]},
            "params": yaml.safe_load((work / "params.yaml").read_text()), "sources": sorted(f"data/sources/{p.name}" for p in (work / "data/sources").glob("*.json")),
            "models": [], "not_applicable": []}
    build(work / "data/warehouse.duckdb", spec, work)
    return work


def query(project, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline", "query", *args, "--db",
                           str(project / "data/warehouse.duckdb")],
                          cwd=REPO, capture_output=True, text=True)


def test_views_match_the_parquet_tables(project):
    con = connect(project / "data/warehouse.duckdb")
    manifest = pq.read_table(project / "data/manifest.parquet")
    assert run(con, "SELECT count(*) FROM manifest").fetchall() == [(manifest.num_rows,)]
    summary = run(con, "SELECT source, sum(files)::INT, sum(unique_files)::INT FROM corpus_summary "
                       "GROUP BY 1 ORDER BY 1").fetchall()
    assert summary == [("demo", 3, 3), ("dump", 2, 2), ("evil", 1, 1), ("gitsrc", 3, 3), ("zipsrc", 5, 4)]
    by_reason = dict(run(con, "SELECT reason, sum(items)::INT FROM rejects_summary GROUP BY 1").fetchall())
    assert by_reason["not_source"] == 2 and by_reason["parent_traversal"] == 1


def test_query_command_formats(project):
    res = query(project, "SELECT language, count(*) AS n FROM manifest GROUP BY 1 ORDER BY 1", "--csv")
    assert res.returncode == 0, res.stderr
    assert list(csv.reader(io.StringIO(res.stdout))) == [["language", "n"], ["java", "2"], ["javascript", "1"],
                                                          ["python", "11"]]
    res = query(project, "SELECT language, count(*) AS n FROM manifest GROUP BY 1 ORDER BY 1", "--json")
    assert json.loads(res.stdout) == [{"language": "java", "n": 2}, {"language": "javascript", "n": 1},
                                      {"language": "python", "n": 11}]


@pytest.mark.parametrize("sql", ["CREATE TABLE x AS SELECT 1", "DROP VIEW manifest", "INSERT INTO rejects SELECT * FROM rejects",
                                 "COPY manifest TO 'out.csv'", "ATTACH 'other.db'", "SELECT 1; DROP VIEW manifest"])
def test_query_command_rejects_writes(project, sql):
    res = query(project, sql)
    assert res.returncode == 2 and "error:" in res.stderr
    assert not (REPO / "out.csv").exists()
    with pytest.raises(QueryRefused):
        run(connect(project / "data/warehouse.duckdb"), sql)
    # the warehouse still answers
    assert query(project, "SELECT count(*) FROM manifest", "--csv").stdout.splitlines()[1] == "14"


def test_a_moved_project_still_opens(project, tmp_path):
    """Views read their Parquet relative to the project the warehouse sits in: a copy answers the same."""
    import shutil

    copy = tmp_path / "moved"
    shutil.copytree(project / "data", copy / "data", ignore=shutil.ignore_patterns("cache", "corpus"))
    before = run(connect(project / "data/warehouse.duckdb"), "SELECT count(*), sum(bytes) FROM manifest").fetchall()
    after = run(connect(copy / "data/warehouse.duckdb"), "SELECT count(*), sum(bytes) FROM manifest").fetchall()
    assert before == after and before[0][0] > 0
    # and it reads the copy's files, not the original's
    (copy / "data/manifest.parquet").unlink()
    with pytest.raises(Exception, match="manifest.parquet"):
        run(connect(copy / "data/warehouse.duckdb"), "SELECT count(*) FROM manifest").fetchall()


def test_provenance_tables_and_column_comments(project):
    con = connect(project / "data/warehouse.duckdb")
    sources = dict(run(con, "SELECT name, status FROM sources").fetchall())
    assert sources and set(sources.values()) <= {"ok", "unavailable"} and "demo" in sources
    params = dict(run(con, "SELECT key, value FROM run_params").fetchall())
    assert json.loads(params["seed"]) == default_params()["seed"]
    assert json.loads(params["corpus.limits.max_file_bytes"]) == 2000
    comments = dict(run(con, "SELECT column_name, comment FROM duckdb_columns() WHERE table_name = 'manifest' "
                             "AND comment IS NOT NULL").fetchall())
    assert comments["sha256"] == "content hash" and comments["split"].startswith("train / valid / test")
    fams = run(con, "SELECT name FROM families ORDER BY name").fetchall()
    assert [f for (f,) in fams] == sorted(default_params()["families"])


READ_WRITE_PROBES = [
    "EXPLAIN ANALYZE COPY (SELECT 42) TO '{out}/x.csv'",
    "EXPLAIN ANALYZE COPY (SELECT 42) TO '{out}/x.parquet' (FORMAT parquet)",
    "EXPLAIN COPY manifest TO '{out}/x.csv'",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM read_blob('/etc/hostname')",
    "SELECT * FROM glob('/etc/*')",
    "SELECT * FROM glob('data/*')",
    "SELECT * FROM read_json('{out}/../data/sources/demo.json')",
    "SELECT * FROM read_csv('http://127.0.0.1:9/x.csv')",
    "SELECT * FROM read_parquet('https://example.com/x.parquet')",
    "SELECT * FROM 'data/sources/demo.json'",
    "SET enable_external_access = true",
    "SELECT * FROM read_text('data/corpus/*/*')",
]


@pytest.mark.parametrize("probe", READ_WRITE_PROBES)
def test_query_is_read_only_for_real(project, tmp_path, probe):
    """Issue 15 item 11: no query writes a file, reads a file the views do not read, lists a folder, reaches
    the network or installs an extension; the warehouse's own Parquet still answers (via the views and
    read_parquet of an allowed file)."""
    home = tmp_path / "home"
    home.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    sql = probe.format(out=out)
    res = subprocess.run([sys.executable, "-m", "pipeline", "query", sql, "--db", str(project / "data/warehouse.duckdb")],
                         cwd=project, capture_output=True, text=True,
                         env={**__import__("os").environ, "HOME": str(home), "PYTHONPATH": str(REPO)})
    assert res.returncode == 2, (sql, res.stdout)
    assert "error:" in res.stderr
    assert list(out.iterdir()) == [] and list(home.rglob("*")) == []  # nothing written, no extension installed
    con = connect(project / "data/warehouse.duckdb")
    with pytest.raises((QueryRefused, __import__("duckdb").Error)):
        run(con, sql).fetchall()
    # the same locked connection still serves the warehouse
    assert run(con, "SELECT count(*) FROM manifest").fetchall() == [(14,)]
    assert run(con, f"SELECT count(*) FROM read_parquet('{project}/data/manifest.parquet')").fetchall() == [(14,)]
    assert run(con, "EXPLAIN SELECT count(*) FROM manifest").fetchall()


def test_query_on_an_old_warehouse_says_rebuild(project, tmp_path):
    import duckdb

    db = tmp_path / "data/warehouse.duckdb"
    db.parent.mkdir()
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE warehouse_info AS SELECT 'data/warehouse.duckdb' AS db_path")
    con.close()
    with pytest.raises(FileNotFoundError, match="rebuild it"):
        connect(db)


def test_views_never_read_the_current_directorys_files(project, tmp_path, monkeypatch):
    """A query run from another project's folder (which has its own data/manifest.parquet) reads the
    warehouse's own files: the views join their relative paths to the warehouse's root, not the CWD."""
    other = tmp_path / "other"
    (other / "data").mkdir(parents=True)
    pq.write_table(pq.read_table(project / "data/manifest.parquet").slice(0, 2), other / "data/manifest.parquet")
    monkeypatch.chdir(other)
    assert run(connect(project / "data/warehouse.duckdb"), "SELECT count(*) FROM manifest").fetchall() == [(14,)]
    res = subprocess.run([sys.executable, "-m", "pipeline", "query", "SELECT count(*) FROM manifest", "--csv", "--db",
                          str(project / "data/warehouse.duckdb")], cwd=other, capture_output=True, text=True,
                         env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    assert res.stdout.splitlines()[1] == "14", res.stderr


def query_cmd(project, *args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline", "query", *args, "--db",
                           str(project / "data/warehouse.duckdb")], cwd=cwd or REPO, capture_output=True, text=True,
                          timeout=120)


def timed_query(project, *args: str) -> tuple[subprocess.CompletedProcess, float]:
    """query_cmd and its wall seconds."""
    import time

    start = time.perf_counter()
    res = query_cmd(project, *args)
    return res, time.perf_counter() - start


def within_timeout(project, elapsed: float, timeout_s: float) -> bool:
    """Whether a query stopped by its timeout ended in about the time the limit allows: the timeout, the grace
    after the interrupt, and (generously, x4) what the command takes on this machine now without the query (a
    `SELECT 1` measured here: start-up, connection, exit), so a loaded machine does not fail the test while a
    query that runs on past its interrupt (seconds to minutes here) does."""
    from pipeline.query import GRACE_S

    res, baseline = timed_query(project, "SELECT 1")
    assert res.returncode == 0, res.stderr
    return elapsed < timeout_s + GRACE_S + 4 * baseline


@pytest.mark.parametrize("sql, flags, says", [
    ("SELECT count(*) FROM range(100000000000)", ["--timeout", "1.5"], "ran past its 1.5 s limit"),
    ("WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r",
     ["--timeout", "1.5"], "ran past its 1.5 s limit"),
    ("SELECT max(rn) FROM (SELECT row_number() OVER (ORDER BY hash(range)) AS rn FROM range(40000000))",
     ["--memory", "64MB", "--temp", "96MB"], "memory (64MB) and spill (96MB) limits"),
])
def test_runaway_queries_stop_within_their_limits(project, sql, flags, says):
    """Issue 27 item 8: a runaway query is stopped by its limits (timeout, memory + spill cap), with one
    `error:` line and exit 2 (no traceback), in about the time the limit allows (a timeout: within_timeout; the
    memory case: its message, not the timeout's, says which limit stopped it)."""
    res, elapsed = timed_query(project, sql, *flags)
    assert res.returncode == 2, (res.stdout[-500:], res.stderr[-2000:])
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and says in lines[0], res.stderr
    assert "Traceback" not in res.stderr
    if "--timeout" in flags:
        assert within_timeout(project, elapsed, float(flags[flags.index("--timeout") + 1])), elapsed


def test_errors_while_fetching_are_one_line(project):
    res = query_cmd(project, "SELECT error('boom ' || path) FROM manifest")
    assert res.returncode == 2 and res.stderr.startswith("error:") and "boom" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr


def test_printed_rows_are_limited_in_every_format(project):
    for fmt, header in (("--csv", 1), ("--json", 0)):
        res = query_cmd(project, "SELECT * FROM range(50)", fmt, "--max-rows", "7")
        assert res.returncode == 0, res.stderr
        assert "more than 7 rows" in res.stderr
        rows = json.loads(res.stdout) if fmt == "--json" else res.stdout.splitlines()
        assert len(rows) == 7 + header
    res = query_cmd(project, "SELECT * FROM range(5)", "--csv", "--max-rows", "7")
    assert res.stdout.splitlines()[1:] == [str(i) for i in range(5)] and res.stderr == ""


def test_limits_come_from_params(tmp_path):
    from pipeline.query import Limits, project_limits

    (tmp_path / "Snakefile").write_text("")
    (tmp_path / "params.yaml").write_text("query: {memory: 1GB, timeout_s: 5}\n")
    assert project_limits(tmp_path) == Limits(memory="1GB", timeout_s=5)
    assert project_limits(None) == Limits()
    with pytest.raises(ValueError, match="not a size"):
        Limits(memory="lots")


def test_a_plain_duckdb_client_opens_the_warehouse(project, tmp_path):
    """Issue 27 item 5: a DuckDB client that knows nothing of the pipeline answers from the project folder with
    no set-up line, and from anywhere else with one (`SET file_search_path`): Python and the DuckDB CLI."""
    import os
    import shutil

    import duckdb

    db = project / "data/warehouse.duckdb"
    expected = [(14,)]
    here = os.getcwd()
    try:
        os.chdir(project)
        assert duckdb.connect(str(db), read_only=True).sql("SELECT count(*) FROM manifest").fetchall() == expected
        os.chdir(tmp_path)
        con = duckdb.connect(str(db), read_only=True)
        con.execute(f"SET file_search_path = '{project}'")
        assert con.sql("SELECT count(*) FROM manifest").fetchall() == expected
    finally:
        os.chdir(here)
    cli = shutil.which("duckdb", path=str(Path(sys.executable).parent)) or shutil.which("duckdb")
    assert cli, "the DuckDB CLI (requirements: duckdb-cli) is not installed: run make install"
    out = subprocess.run([cli, "-readonly", "-csv", str(db), "-c", "SELECT count(*) AS n FROM manifest"],
                         cwd=project, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.splitlines() == ["n", "14"], out.stderr
    out = subprocess.run([cli, "-readonly", "-csv", str(db), "-c",
                          f"SET file_search_path = '{project}'; SELECT count(*) AS n FROM manifest"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.splitlines() == ["n", "14"], out.stderr


@pytest.mark.parametrize("where", [".", "docs", "pipeline/families"])
def test_the_command_line_works_from_any_folder_of_the_project(where):
    """Issue 27 item 6: `python -m pipeline --help` lists the commands (exit 0), from any folder of the project
    (make install puts the project on the venv's path); an unknown command is exit 2."""
    env = {k: v for k, v in __import__("os").environ.items() if k != "PYTHONPATH"}
    res = subprocess.run([sys.executable, "-m", "pipeline", "--help"], cwd=REPO / where, capture_output=True,
                         text=True, env=env)
    assert res.returncode == 0, res.stderr + " (run `make install`: it puts the project on the venv's path)"
    assert "query" in res.stdout and "usage:" in res.stdout
    res = subprocess.run([sys.executable, "-m", "pipeline", "nope"], cwd=REPO / where, capture_output=True,
                         text=True, env=env)
    assert res.returncode == 2 and "no command 'nope'" in res.stderr


@pytest.mark.parametrize("params_file", ["params.yaml", ".test/params.yaml"])
def test_every_column_is_described_and_counts_are_bigint(params_file, tmp_path):
    """Issue 27 item 4: every column of every table and view of the warehouse has a description (its schema's
    comment, the glossary, or the described column a view passes through), and no count is HUGEINT (which
    pandas turns into a float)."""
    import duckdb

    from pipeline.warehouse.build import build, comment_every_column

    spec = {"tables": {}, "params": yaml.safe_load((REPO / params_file).read_text()), "models": [], "sources": [],
            "datasets": [], "not_applicable": []}
    build(tmp_path / "data/warehouse.duckdb", spec, tmp_path)
    con = duckdb.connect(str(tmp_path / "data/warehouse.duckdb"))
    where = "database_name = current_database() AND schema_name = 'main'"
    assert comment_every_column(con) == [], "add these columns to pipeline/warehouse/glossary.yaml"
    total, described = con.sql(f"SELECT count(*), count(comment) FROM duckdb_columns() WHERE {where}").fetchall()[0]
    assert total > 500 and described == total
    assert con.sql(f"SELECT table_name, column_name FROM duckdb_columns() WHERE {where} "
                   "AND data_type = 'HUGEINT'").fetchall() == []


def test_no_view_is_in_percent(tmp_path):
    """Issue 27 item 4, one unit: no column of any family's tables and views is named in percent, and no view
    or macro multiplies by 100 (scores are fractions in the warehouse; percent only in rendered text)."""
    import duckdb

    from pipeline.warehouse.build import build
    from tests.fractions import percent_columns, views_times_100

    spec = {"tables": {}, "params": yaml.safe_load((REPO / "params.yaml").read_text()), "models": [], "sources": [],
            "datasets": [], "not_applicable": []}
    build(tmp_path / "data/warehouse.duckdb", spec, tmp_path)
    con = duckdb.connect(str(tmp_path / "data/warehouse.duckdb"))
    assert len(con.sql("SELECT * FROM duckdb_views() WHERE NOT internal").fetchall()) > 50
    assert percent_columns(con) == []
    assert views_times_100(con) == []


# issue 37 item D: results bounded in bytes, the timeout honoured within a second, every error one line


def test_printed_bytes_are_bounded_and_the_rest_never_converted(project):
    """20 rows of 10 MB under --max-bytes 25MB: 2 rows printed, a note, exit 0 (a row limit alone printed all)."""
    res = query_cmd(project, "SELECT repeat('x', 10000000) AS s FROM range(20)", "--csv", "--max-bytes", "25MB")
    assert res.returncode == 0, res.stderr[-500:]
    assert res.stdout.count("\n") == 1 + 2 and len(res.stdout) < 25_000_000
    assert res.stderr.startswith("note: the result holds more than 25MB; the first 2 rows shown")
    res = query_cmd(project, "SELECT * FROM range(5)", "--csv", "--max-bytes", "0")
    assert res.returncode == 0 and res.stdout.splitlines()[1:] == [str(i) for i in range(5)] and res.stderr == ""


def test_max_bytes_comes_from_params_and_is_checked(tmp_path):
    from pipeline.query import Limits, project_limits, size_bytes

    (tmp_path / "Snakefile").write_text("")
    (tmp_path / "params.yaml").write_text("query: {max_bytes: 1MiB}\n")
    assert project_limits(tmp_path).max_bytes_n == 2**20
    assert size_bytes("256MB") == 256_000_000 and Limits(max_bytes=0).max_bytes_n == 0
    with pytest.raises(ValueError, match="not a size"):
        Limits(max_bytes="lots")


def test_a_timeout_stops_a_long_sort_within_a_second(project):
    res, elapsed = timed_query(project, "SELECT * FROM range(400000000) ORDER BY hash(range)", "--max-rows", "0",
                               "--timeout", "2", "--memory", "4GB")
    assert res.returncode == 2 and "ran past its 2 s limit" in res.stderr and len(res.stderr.splitlines()) == 1
    # the limit, the grace after the interrupt, and the command's own cost measured now (no wall-clock constant)
    assert within_timeout(project, elapsed, 2), elapsed


def test_blobs_print_as_csv_and_printing_errors_are_one_line(project):
    res = query_cmd(project, "SELECT '\\x00\\xFF'::BLOB AS b, 'ok' AS s", "--csv")
    assert res.returncode == 0 and res.stdout.splitlines() == ['"b","s"', '"\\x00\\xFF","ok"'], res.stderr
    res = query_cmd(project, f"SELECT * FROM read_blob('{project}/data/manifest.parquet')", "--csv")
    assert res.returncode == 0 and res.stdout.startswith('"filename","content"') and "Traceback" not in res.stderr
