"""The warehouse: views over the real Parquet tables, metric views in SQL, a read-only query command."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

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
