"""Issue 24 item 1: a split policy that cannot silently fail. Few repositories no longer leave an
evaluation split empty or made of scripts; every enabled family's evaluation set is checked against
manifest.evaluation.min_items per language, and the run fails naming each family and language."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline import families
from pipeline.manifest import evaluation
from pipeline.manifest.build import SplitPolicy, assign_splits, deal, degenerate, split_of
from tests.conftest import REPO, default_params

FRACTIONS = {"train": 0.8, "valid": 0.1, "test": 0.1}


def sdist(name: str, modules: int, tests: int = 5) -> list[dict]:
    """One source = one repository, as a pypi sdist is: src/<name>/ library modules, tests/, docs/."""
    rows = [{"source": name, "repository": name, "path": f"src/{name}/m{i}.py", "language": "python"}
            for i in range(modules)]
    rows += [{"source": name, "repository": name, "path": f"tests/test_m{i}.py", "language": "python"}
             for i in range(tests)]
    return rows + [{"source": name, "repository": name, "path": "docs/conf.py", "language": "python"}]


def seven_sdists() -> list[dict]:
    return [r for i in range(7) for r in sdist(f"lib{i}", 8 + 3 * i)]


def by_split(rows, splits, script_paths=("tests/", "docs/")) -> dict:
    out: dict = {}
    for r, s in zip(rows, splits):
        kind = "script" if r["path"].startswith(script_paths) else "library"
        out.setdefault(s, {"library": 0, "script": 0})[kind] += 1
    return out


def test_seven_sources_by_repository_leave_the_test_split_empty():
    """The issue's failure, reproduced: seven sources split by repository (seed 20261122) give no test file (and no valid one)."""
    rows = seven_sdists()
    splits = [split_of(20261122, r["source"], r["repository"], FRACTIONS) for r in rows]
    assert "test" not in splits
    _, report = assign_splits(rows, 20261122, FRACTIONS, SplitPolicy(mode="repository"))
    assert "test" in report["python"]["degenerate_by_repository"]


def test_auto_deals_library_code_to_every_split_and_scripts_train():
    rows = seven_sdists()
    splits, report = assign_splits(rows, 20261122, FRACTIONS)
    counts = by_split(rows, splits)
    library = sum(c["library"] for c in counts.values())
    assert report["python"]["policy"] == "package (module)"  # seven one-folder sources: modules are the units
    for split, fraction in FRACTIONS.items():  # each split gets its share of real library code
        assert abs(counts[split]["library"] - fraction * library) <= 2, counts
        if split != "train":
            assert counts[split]["script"] == 0  # scripts never form (or join) an evaluation split
    # deterministic, and seeded
    assert splits == assign_splits(rows, 20261122, FRACTIONS)[0]
    assert splits != assign_splits(rows, 7, FRACTIONS)[0]


def test_dir_groupings_made_only_of_scripts_never_evaluate():
    """`repository: dir:2` made docs/examples/tests folders repositories; by repository they could be the
    whole test split. A repository of scripts only now trains, and auto re-deals the library code."""
    rows = []
    for name in ("a", "b", "c"):
        rows += [{"source": name, "repository": f"src/{name}", "path": f"src/{name}/m{i}.py", "language": "python"}
                 for i in range(20)]
        rows += [{"source": name, "repository": f"{d}", "path": f"{d}/x{i}.py", "language": "python"}
                 for d in ("tests", "examples", "docs") for i in range(3)]
    splits, _ = assign_splits(rows, 1, FRACTIONS, SplitPolicy(mode="repository"))
    assert {s for r, s in zip(rows, splits) if not r["path"].startswith("src/")} == {"train"}
    splits, _ = assign_splits(rows, 1, FRACTIONS)
    counts = by_split(rows, splits, ("tests/", "examples/", "docs/"))
    assert counts["test"]["library"] >= 4 and counts["test"]["script"] == 0


def test_many_repositories_keep_their_repository_splits():
    rows = [{"source": "s", "repository": f"r{i}", "path": f"r{i}/m.py", "language": "java"} for i in range(400)]
    splits, report = assign_splits(rows, 3, FRACTIONS)
    assert report["java"]["policy"] == "repository"
    assert splits == [split_of(3, "s", r["repository"], FRACTIONS) for r in rows]


def test_folders_are_the_units_when_there_are_enough():
    rows = [{"source": "big", "repository": "big", "path": f"big/p{i}/m{j}.py", "language": "python"}
            for i in range(30) for j in range(4)]
    splits, report = assign_splits(rows, 5, FRACTIONS)
    assert report["python"]["policy"] == "package (folder)" and report["python"]["units"] == 30
    by_folder: dict = {}
    for r, s in zip(rows, splits):
        by_folder.setdefault(r["path"].rsplit("/", 1)[0], set()).add(s)
    assert all(len(s) == 1 for s in by_folder.values())  # a package is never cut across splits


def test_deal_and_degenerate_by_hand():
    assert degenerate({"train": 100}, FRACTIONS) == ["valid", "test"]
    assert degenerate({"train": 80, "valid": 10, "test": 2}, FRACTIONS) == ["test"]  # 2 < 9.2 / 4
    assert degenerate({"train": 80, "valid": 10, "test": 10}, FRACTIONS) == []
    # an evaluation split made mostly of scripts (the anycorpus at 0.7 / 0.1 / 0.2: 119 scripts, 11 library files)
    assert degenerate({"train": 127, "valid": 21, "test": 11}, {"train": 0.7, "valid": 0.1, "test": 0.2},
                      {"train": 168, "valid": 14, "test": 119}) == ["test"]
    dealt = deal({("s", f"u{i}"): 1 for i in range(10)}, 0, FRACTIONS)
    assert sorted(dealt.values()).count("test") == 1 and sorted(dealt.values()).count("valid") == 1


# the evaluation-size check


def _points(path, paths):
    pq.write_table(pa.table({"path": paths, "split": ["test"] * len(paths)}), path)


def test_small_evaluation_sets_fail_with_one_line_per_family_and_language(tmp_path):
    _points(tmp_path / "p.parquet", ["a.py"] * 3 + ["B.java"] * 40)
    sets = [{"family": "apirec", "name": "points", "language": "python", "file": str(tmp_path / "p.parquet"),
             "suffixes": [".py"], "fix": "or choose apirec.eval_split"},
            {"family": "apirec", "name": "points", "language": "java", "file": str(tmp_path / "p.parquet"),
             "suffixes": [".java"]},
            {"family": "apiquiz", "name": "quizzes", "language": "python", "file": str(tmp_path / "missing.parquet")}]
    metrics, lines = evaluation.check(sets, 30, allow_small=False)
    assert [r["items"] for r in metrics["sets"]] == [3, 40, 0] and metrics["ok"] is False
    assert len(lines) == 2 and lines[0].startswith("apirec python: 3 points in its evaluation set, fewer than "
                                                   "manifest.evaluation.min_items 30: add sources")
    assert "apirec.eval_split" in lines[0] and "allow_small" in lines[0] and lines[1].startswith("apiquiz python: 0")
    cmd = [sys.executable, "-m", "pipeline.manifest.evaluation", "--sets", json.dumps(sets), "--min-items", "30",
           "--metrics", str(tmp_path / "m.json")]
    res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 1 and res.stderr.count("ERROR evaluation: ") == 2
    res = subprocess.run(cmd + ["--allow-small"], cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 0 and res.stderr.count("WARNING evaluation: ") == 2
    assert json.loads((tmp_path / "m.json").read_text())["ok"] is True


def test_distinct_and_where_filters(tmp_path):
    pq.write_table(pa.table({"group": ["g1", "g1", "g2"], "eval_split": ["test", "dev", "test"]}), tmp_path / "s.parquet")
    assert evaluation.size({"file": str(tmp_path / "s.parquet"), "distinct": "group"}) == 2
    assert evaluation.size({"file": str(tmp_path / "s.parquet"), "where": [["eval_split", "test"]]}) == 2
    _points(tmp_path / "empty.parquet", [])  # the run: no point at all
    assert evaluation.size({"file": str(tmp_path / "empty.parquet"), "suffixes": [".py"]}) == 0


@pytest.mark.parametrize("family", ["apiquiz", "apirec", "codesyntax", "probing"])
def test_every_corpus_family_declares_its_evaluation_sets(family):
    config = default_params()
    config["probing"]["languages"] = ["java", "python"]
    sets = families.load(family).evaluation(config)
    assert sets and all(s.file.startswith("data/families/") for s in sets)
    targets = set(families.load(family).targets(config))
    assert {s.file for s in sets} <= targets  # built by the family's own rule


@pytest.mark.slow
def test_the_run_fails_naming_each_small_family_and_language(tmp_path):
    """Through real Snakemake on the .test configuration: min_items above what the fixture gives and no
    opt-out stop the run non-zero with one ERROR line per family and language; allow_small lets it pass."""
    import yaml

    from tests.conftest import make_project, snakemake

    root = make_project(tmp_path / "p", shards=1)
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["families"] = ["apiquiz", "codesyntax"]
    params["manifest"]["evaluation"] = {"min_items": 100000, "allow_small": False}
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    res = snakemake(root, "evaluation_sizes", check=False)
    lines = sorted({l for l in res.stderr.splitlines() if l.startswith("ERROR evaluation: ")})
    assert res.returncode != 0 and "Traceback" not in res.stderr
    assert sorted(l.split(":")[1].strip() for l in lines) == [
        "apiquiz python", "codesyntax java", "codesyntax python"], res.stderr[-3000:]
    params["manifest"]["evaluation"]["allow_small"] = True
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    assert snakemake(root, "evaluation_sizes", check=False).returncode == 0
    assert len(json.loads((root / "reports/metrics/evaluation.json").read_text())["too_small"]) == 3
