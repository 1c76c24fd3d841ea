"""pipeline.export: a built family as a Hugging Face dataset folder (Parquet by config and split, a card, Croissant), the
same bytes on every rebuild; lm-evaluation-harness tasks from it that rank as our pipeline does (issue 54)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
import yaml

from pipeline.export.build import redistributable

REPO = Path(__file__).resolve().parent.parent


def export(project: Path, family: str, out: Path) -> subprocess.CompletedProcess:
    res = subprocess.run([sys.executable, "-m", "pipeline", "export", family, "--out", str(out)], cwd=project,
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert res.returncode == 0, res.stderr[-3000:]
    return res


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def hf_env(tmp_path: Path) -> None:
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ["HF_HOME"] = str(tmp_path / "hf")
    os.environ["HF_DATASETS_CACHE"] = str(tmp_path / "hf" / "datasets")


def test_redistributable_licenses():
    allowed = ("MIT", "BSD", "Apache", "PSF", "GPL")
    assert redistributable("MIT", allowed) and redistributable("GPL-2.0 WITH Classpath-exception-2.0", allowed)
    assert redistributable("PSF-2.0", allowed) and redistributable("BSD-3-Clause", allowed)
    assert not redistributable("unknown", allowed) and not redistributable(None, allowed)
    assert not redistributable("LicenseRef-proprietary", allowed)


@pytest.fixture(scope="module")
def exported(e2e_project, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("export")
    return {family: export(e2e_project, family, root / family) and root / family
            for family in ("apiquiz", "apirec", "codesyntax", "idbench")}


def test_export_loads_with_datasets_and_counts_equal_the_warehouse(e2e_project, exported, tmp_path, monkeypatch):
    import datasets

    hf_env(tmp_path)
    monkeypatch.chdir(e2e_project)  # the warehouse's views read the Parquet files relative to the project
    con = duckdb.connect(str(e2e_project / "data" / "warehouse.duckdb"), read_only=True)
    card = yaml.safe_load((exported["apiquiz"] / "README.md").read_text().split("---", 2)[1])
    settings = [c["config_name"] for c in card["configs"]]
    assert settings and set(settings) <= {"call", "import", "alias", "adversarial_alias", "nl"}
    assert set(settings) == {s for s, in con.execute("SELECT DISTINCT setting FROM apiquiz_quizzes").fetchall()}
    for setting in settings:
        want = con.execute("SELECT count(*) FROM apiquiz_quizzes WHERE setting = ?", [setting]).fetchone()[0]
        ds = datasets.load_dataset(str(exported["apiquiz"]), setting)
        assert sum(len(s) for s in ds.values()) == want
        direct = datasets.load_dataset("parquet", data_dir=str(exported["apiquiz"] / setting))
        assert sum(len(s) for s in direct.values()) == want
        row = ds["test"][0]
        assert row["ranked_candidates"][row["gold_index"]] == row["answer"]
        assert {"source", "license", "source_released", "reference_only"} <= set(row)
    code = datasets.load_dataset(str(exported["apirec"]), "code")
    assert sum(len(s) for s in code.values()) == con.execute("SELECT count(*) FROM apirec_points").fetchone()[0]
    assert set(code) <= {"train", "validation", "test"}
    queries = con.execute("SELECT count(*) FROM apirec_queries").fetchone()[0]
    if queries:
        query = datasets.load_dataset(str(exported["apirec"]), "query")
        assert sum(len(s) for s in query.values()) == queries
    else:  # a config with no items is left out, and the card says so
        assert "left out: query" in (exported["apirec"] / "README.md").read_text()
    test = code["test"]
    for r in test.select(range(min(20, len(test)))):
        assert r["file_sha256"] and r["path"] and r["license"] == "MIT"  # the fixture's license: redistributable
        assert (r["gold_index"] < 0) == (r["api"] not in r["candidates"])


def test_export_is_byte_identical_on_rebuild(e2e_project, exported, tmp_path):
    again = tmp_path / "apiquiz"
    export(e2e_project, "apiquiz", again)
    assert digest(again) == digest(exported["apiquiz"])


def test_card_header_and_croissant_validate_and_load(exported):
    import mlcroissant as mlc

    for family, folder in exported.items():
        text = (folder / "README.md").read_text()
        header = yaml.safe_load(text.split("---", 2)[1])
        assert header["configs"] and header["license"] and header["task_categories"]
        assert "## How the population differs from the paper's" in text and "```bibtex" in text
        meta = json.loads((folder / "croissant.json").read_text())
        for f in meta["distribution"]:
            assert hashlib.sha256((folder / f["contentUrl"]).read_bytes()).hexdigest() == f["sha256"]
        ds = mlc.Dataset(jsonld=folder / "croissant.json")  # raises on a validation error
        first = meta["recordSet"][0]
        n = pq.read_metadata(folder / meta["distribution"][0]["contentUrl"]).num_rows
        assert sum(1 for _ in ds.records(record_set=first["@id"])) == n


def test_reference_only_rows_drop_their_text(e2e_project, tmp_path):
    params = yaml.safe_load((e2e_project / "params.yaml").read_text())
    params["export"] = {"redistribute": ["Apache"]}  # the fixture is MIT: every row becomes a reference
    res = subprocess.run([sys.executable, "-m", "pipeline", "export", "apirec", "--out", str(tmp_path / "ref"),
                          "--params-json", json.dumps(params)], cwd=e2e_project, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert res.returncode == 0, res.stderr[-2000:]
    table = pq.read_table(next((tmp_path / "ref" / "code").glob("test-*.parquet")))
    assert all(table.column("reference_only").to_pylist())
    assert table.column("context").null_count == table.num_rows
    assert all(table.column("file_sha256").to_pylist())
    assert "references only" in (tmp_path / "ref" / "README.md").read_text()


def test_missing_warehouse_is_a_clear_error(tmp_path):
    res = subprocess.run([sys.executable, "-m", "pipeline", "export", "apiquiz", "--out", str(tmp_path / "x"),
                          "--warehouse", str(tmp_path / "none.duckdb"), "--params", str(REPO / "params.yaml")],
                         cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert res.returncode == 2 and "build it first" in res.stderr


def test_lm_eval_tasks_rank_as_our_pipeline(e2e_project, exported, tmp_path):
    """The pinned lm-eval on a tiny causal model, through the generated tasks, gives every quiz's and point's gold rank
    our pipeline gives the same model under `scoring: lm-eval`, so P@1 and SR@k are equal."""
    import lm_eval
    from lm_eval.tasks import TaskManager

    from bench.peers.causal import tiny_model
    from pipeline.export.lm_eval import write_tasks
    from pipeline.families.apiquiz.infer import score_quizzes
    from pipeline.models.entries import parse_zoo
    from pipeline.models.zoo import load_model

    hf_env(tmp_path)
    folder = tiny_model(tmp_path / "tiny")
    tasks = tmp_path / "tasks"
    names = write_tasks(exported["apiquiz"], tasks)
    assert names and all(n.startswith("factory_apiquiz_") for n in names)
    results = lm_eval.simple_evaluate(
        model="hf", model_args=f"pretrained={folder},dtype=float32", tasks=names, device="cpu", batch_size=16,
        task_manager=TaskManager(include_path=str(tasks)), log_samples=True)
    theirs = {}
    for name in names:
        for s in results["samples"][name]:
            theirs[s["doc"]["quiz_id"]] = s["gold_rank"]
    entry = parse_zoo([{"name": "tiny", "source": f"path:{folder}", "family": "causal-lm", "max_length": 256,
                        "batch_size": 16, "scoring": "lm-eval"}])["tiny"]
    loaded = load_model(entry, device="cpu")
    quizzes = pq.read_table(e2e_project / "data" / "families" / "apiquiz" / "quizzes.parquet")
    cap = yaml.safe_load((e2e_project / "params.yaml").read_text())["apiquiz"]["inference"]["max_candidates"]
    ours = score_quizzes(quizzes, loaded, 0, 4096, 10, 20, cap, ("rank",)).to_pylist()
    ours = {r["quiz_id"]: r["gold_rank"] for r in ours if r["protocol"] == "rank" and r["status"] == "ok"}
    common = sorted(set(ours) & set(theirs))
    assert len(common) >= 0.9 * len(ours) and len(common) > 0
    same = sum(ours[q] == theirs[q] for q in common)
    assert same == len(common), f"{len(common) - same} of {len(common)} gold ranks differ"
    p1 = lambda d: sum(d[q] == 1 for q in common) / len(common)  # noqa: E731
    assert abs(p1(ours) - p1(theirs)) < 1e-6
    print(f"apiquiz: {len(common)} quizzes, gold rank equal {same}/{len(common)}, P@1 ours {p1(ours):.6f} "
          f"lm-eval {p1(theirs):.6f}")

    # apirec: the code points' SR@k
    from pipeline.families.apirec.infer import score_points

    rec_tasks = tmp_path / "rec_tasks"
    rec_names = write_tasks(exported["apirec"], rec_tasks)
    assert rec_names == ["factory_apirec_code"]
    results = lm_eval.simple_evaluate(
        model="hf", model_args=f"pretrained={folder},dtype=float32", tasks=rec_names, device="cpu", batch_size=16,
        task_manager=TaskManager(include_path=str(rec_tasks)), log_samples=True)
    theirs = {s["doc"]["point_id"]: s["gold_rank"] for s in results["samples"]["factory_apirec_code"]}
    import pyarrow.compute as pc

    points = pq.read_table(e2e_project / "data" / "families" / "apirec" / "points.parquet")
    points = points.filter(pc.equal(points.column("split"), "test"))  # the tasks' split
    k = yaml.safe_load((e2e_project / "params.yaml").read_text())["apirec"]["inference"]["candidates"]
    ours = {r["point_id"]: (r["gold_rank"] if r["gold_rank"] is not None else -1)
            for r in score_points(points, loaded, 4096, k, ("rank",)).to_pylist() if r["status"] == "ok"}
    common = sorted(set(ours) & set(theirs))
    assert common and len(common) == len(ours)
    same = sum(ours[q] == theirs[q] for q in common)
    assert same == len(common), f"{len(common) - same} of {len(common)} apirec gold ranks differ"
    for k_ in (1, 3, 5, 10):
        sr = lambda d: sum(0 < d[q] <= k_ for q in common) / len(common)  # noqa: E731
        assert abs(sr(ours) - sr(theirs)) < 1e-6
    print(f"apirec: {len(common)} points, gold rank equal {same}/{len(common)}")
