"""The warehouse: views over the real Parquet tables, metric views in SQL, a read-only query command."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from pipeline.query import QueryRefused, connect, run
from tests.conftest import REPO, snakemake, write_params
from tests.fixture_corpus import build_sources


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The fixture corpus's manifest and rejects (real Snakemake), in a real DuckDB warehouse.
    The `warehouse` rule itself, over every table, runs in test_end_to_end."""
    from pipeline.warehouse.build import build

    work = tmp_path_factory.mktemp("wh")
    write_params(work, build_sources(tmp_path_factory.mktemp("src")))
    snakemake(work, "manifest")
    build(work / "data/warehouse.duckdb", {"manifest": [work / "data/manifest.parquet"],
                                           "rejects": [work / "data/rejects.parquet"]}, work)
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
    assert summary == [("demo", 3, 3), ("dump", 2, 2), ("evil", 1, 1), ("gitsrc", 3, 3), ("zipsrc", 4, 3)]
    by_reason = dict(run(con, "SELECT reason, sum(items)::INT FROM rejects_summary GROUP BY 1").fetchall())
    assert by_reason["not_source"] == 2 and by_reason["parent_traversal"] == 1


def test_query_command_formats(project):
    res = query(project, "SELECT language, count(*) AS n FROM manifest GROUP BY 1 ORDER BY 1", "--csv")
    assert res.returncode == 0, res.stderr
    assert list(csv.reader(io.StringIO(res.stdout))) == [["language", "n"], ["java", "2"], ["python", "11"]]
    res = query(project, "SELECT language, count(*) AS n FROM manifest GROUP BY 1 ORDER BY 1", "--json")
    assert json.loads(res.stdout) == [{"language": "java", "n": 2}, {"language": "python", "n": 11}]


@pytest.mark.parametrize("sql", ["CREATE TABLE x AS SELECT 1", "DROP VIEW manifest", "INSERT INTO rejects SELECT * FROM rejects",
                                 "COPY manifest TO 'out.csv'", "ATTACH 'other.db'", "SELECT 1; DROP VIEW manifest"])
def test_query_command_rejects_writes(project, sql):
    res = query(project, sql)
    assert res.returncode == 2 and "error:" in res.stderr
    assert not (REPO / "out.csv").exists()
    with pytest.raises(QueryRefused):
        run(connect(project / "data/warehouse.duckdb"), sql)
    # the warehouse still answers
    assert query(project, "SELECT count(*) FROM manifest", "--csv").stdout.splitlines()[1] == "13"


def test_a_moved_project_is_a_clear_error(tmp_path):
    from pipeline.warehouse.build import build

    root = tmp_path / "proj"
    (root / "data").mkdir(parents=True)
    db = tmp_path / "w.duckdb"
    build(db, {}, root)
    assert run(connect(db), "SELECT count(*) FROM manifest").fetchall() == [(0,)]  # empty, typed, not an error
    root.rename(tmp_path / "moved")
    with pytest.raises(FileNotFoundError, match="forcerun warehouse"):
        connect(db)
