"""The end-of-run warnings summary (issue #47 item 6; pipeline.run_warnings): what a job recorded in its
outputs reaches the console once, in a fixed order, and the report's corpus page."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline import run_warnings

CONFIG = {"corpus": {"sources": [{"name": "zeta"}, {"name": "alpha"}, {"name": "gone"}]},
          "idbench": {"new_pairs": {"ranges": 2, "per_range": 2, "random_pairs": 1}}}


def build(root: Path) -> None:
    """A build's records as the jobs write them, one warning of each kind."""
    def put(rel: str, data: dict) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(json.dumps(data))

    put("data/sources/zeta.json", {"name": "zeta", "pin": {"sha256": "ab", "unpinned": True},
                                   "caps": [{"reason": "max_members", "path": "z.tar", "kept": 1000, "seen": 1500}]})
    put("data/sources/alpha.json", {"name": "alpha", "pin": {"sha256": "cd", "unpinned": True}, "caps": []})
    put("reports/metrics/manifest.json", {"warnings": ["java has no file in the test split"]})
    put("reports/metrics/evaluation.json", {"too_small": ["apiquiz java: 3 quizzes in its evaluation set, fewer than "
                                                          "manifest.evaluation.min_items 10"], "unevaluated_sources": []})
    put("data/models/b/card.json", {"allowed_missing": ["lm_head.weight", "pooler.dense.bias"]})
    put("data/models/a/card.json", {"allowed_missing": []})
    (root / "data/families/idbench").mkdir(parents=True)
    pq.write_table(pa.table({"language": ["java", "python", "python", "python", "python", "python"]}),
                   root / "data/families/idbench/new_pairs.parquet")


def test_every_kind_is_said_once_in_a_fixed_order(tmp_path):
    build(tmp_path)
    lines = run_warnings.from_files(tmp_path, CONFIG)
    assert [line.split(" ", 2)[:2] for line in lines] == [
        ["source", "alpha"], ["source", "zeta"],  # unpinned, by name
        ["source", "zeta:"],  # the cap that dropped 500 members
        ["manifest:", "java"], ["evaluation:", "apiquiz"],
        ["idbench", "new"],  # java: 1 pair of the 5 asked (python has its 5)
        ["model", "b"]]
    assert "kept 1,000 of 1,500 members" in lines[2] and "java has 1 of the 5 pairs" in lines[5]
    assert "2 tensor(s) randomly initialised" in lines[6]
    text = run_warnings.console(lines)
    assert text.startswith("7 warning(s) from this build") and text.count("\nWARNING ") == 7
    assert run_warnings.from_files(tmp_path, CONFIG) == lines  # the same outputs, the same lines
    assert run_warnings.console([]) == ""


def test_the_command_prints_the_summary_of_a_folder(tmp_path):
    build(tmp_path)
    (tmp_path / "params.yaml").write_text(json.dumps(CONFIG))
    res = subprocess.run([sys.executable, "-m", "pipeline.run_warnings", "--root", str(tmp_path)], capture_output=True,
                         text=True, check=True)
    assert res.stdout == run_warnings.console(run_warnings.from_files(tmp_path, CONFIG))


def test_the_warehouse_gives_the_same_lines_for_the_report(tmp_path):
    """The corpus page's list (from the warehouse) holds the same source, cap, new-pair and model lines."""
    import duckdb

    build(tmp_path)
    con = duckdb.connect()
    con.sql("CREATE TABLE sources (name VARCHAR, pin VARCHAR, caps VARCHAR)")
    for name in ("alpha", "zeta"):
        rec = json.loads((tmp_path / f"data/sources/{name}.json").read_text())
        con.execute("INSERT INTO sources VALUES (?, ?, ?)", [name, json.dumps(rec["pin"]), json.dumps(rec["caps"])])
    con.sql("CREATE TABLE models (name VARCHAR, card VARCHAR)")
    for card in sorted((tmp_path / "data/models").glob("*/card.json")):
        con.execute("INSERT INTO models VALUES (?, ?)", [card.parent.name, card.read_text()])
    con.sql(f"CREATE TABLE idbench_new_pairs AS SELECT * FROM '{tmp_path}/data/families/idbench/new_pairs.parquet'")
    from_files = [line for line in run_warnings.from_files(tmp_path, CONFIG)
                  if not line.startswith(("manifest:", "evaluation:"))]  # those two are not in the warehouse
    assert run_warnings.from_warehouse(con, CONFIG) == from_files


def test_make_run_prints_the_summary_last_on_every_run_and_snakemake_not_twice():
    """Snakemake calls no `onsuccess` when it has nothing to do, so `make run` prints the summary itself, after the
    adoption; its Snakemake, told so, leaves it out of `onsuccess` (a bare `snakemake` still prints it there)."""
    from tests.conftest import REPO

    recipe = REPO.joinpath("Makefile").read_text().split("\nrun:", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    assert [line.split()[-1] if "run_warnings" in line or "adopt" in line else line.split()[0] for line in recipe] == [
        "BENCHMARK_FACTORY_WARNINGS=after", "pipeline.adopt", "pipeline.run_warnings"], recipe
    onsuccess = REPO.joinpath("Snakefile").read_text().split("\nonsuccess:", 1)[1].split("\nonerror:", 1)[0]
    guard = 'if _os.environ.get("BENCHMARK_FACTORY_WARNINGS") != "after":'
    assert guard in onsuccess and "_run_warnings.console" in onsuccess.split(guard, 1)[1].split("\n", 2)[1]
