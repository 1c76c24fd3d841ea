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
AUTO = SplitPolicy(mode="auto")  # the former default (repository unless a split lacks library code, then package)


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
    splits, report = assign_splits(rows, 20261122, FRACTIONS, AUTO)
    counts = by_split(rows, splits)
    library = sum(c["library"] for c in counts.values())
    assert report["python"]["policy"] == "package (module)"  # seven one-folder sources: modules are the units
    for split, fraction in FRACTIONS.items():  # each split gets its share of real library code
        assert abs(counts[split]["library"] - fraction * library) <= 2, counts
        if split != "train":
            assert counts[split]["script"] == 0  # scripts never form (or join) an evaluation split
    # deterministic, and seeded
    assert splits == assign_splits(rows, 20261122, FRACTIONS, AUTO)[0]
    assert splits != assign_splits(rows, 7, FRACTIONS, AUTO)[0]


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
    splits, _ = assign_splits(rows, 1, FRACTIONS, AUTO)
    counts = by_split(rows, splits, ("tests/", "examples/", "docs/"))
    assert counts["test"]["library"] >= 4 and counts["test"]["script"] == 0


def test_many_repositories_keep_their_repository_splits():
    rows = [{"source": "s", "repository": f"r{i}", "path": f"r{i}/m.py", "language": "java"} for i in range(400)]
    splits, report = assign_splits(rows, 3, FRACTIONS, AUTO)
    assert report["java"]["policy"] == "repository"
    assert splits == [split_of(3, "s", r["repository"], FRACTIONS) for r in rows]


def test_folders_are_the_units_when_there_are_enough():
    rows = [{"source": "big", "repository": "big", "path": f"big/p{i}/m{j}.py", "language": "python"}
            for i in range(30) for j in range(4)]
    splits, report = assign_splits(rows, 5, FRACTIONS, AUTO)
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
    metrics, lines, _ = evaluation.check(sets, 30, allow_small=False)
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


def test_a_set_with_nothing_to_filter_is_counted_from_the_footer(tmp_path, monkeypatch):
    """apiquiz's set (no where, by or distinct) is its row count: read from the Parquet footer, never the rows
    (its texts and candidate lists took 2.5 GB at 1.2M quizzes)."""
    pq.write_table(pa.table({"text": ["a" * 100] * 5}), tmp_path / "q.parquet", row_group_size=2)
    monkeypatch.setattr(pq, "read_table", lambda *a, **k: pytest.fail("the rows were read"))
    assert evaluation.items({"file": str(tmp_path / "q.parquet")}) == (5, {})


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


# stratified by source: every source is evaluated


def stdlib_and_sdists(libraries: int = 8) -> list[dict]:
    """A stdlib of 200 one-module repositories (as `repository: top_dir` makes it) beside `libraries` sdists."""
    rows = [{"source": "stdlib", "repository": f"mod{i}.py", "path": f"mod{i}.py", "language": "python", "lines": 100}
            for i in range(200)]
    for k in range(libraries):
        rows += [{**r, "lines": 50 + 10 * i} for i, r in enumerate(sdist(f"lib{k}", 6 + k))]
    return rows


def test_with_the_stdlib_present_repository_splits_leave_the_users_libraries_unevaluated():
    """The finding reproduced: 200 stdlib repositories keep auto on repository splits, and the test split holds
    no file of most of the eight libraries."""
    rows = stdlib_and_sdists()
    splits, report = assign_splits(rows, 20261122, FRACTIONS, AUTO)
    assert report["python"]["policy"] == "repository"
    in_test = {r["source"] for r, s in zip(rows, splits) if s == "test"}
    assert len(in_test - {"stdlib"}) <= 2


def test_every_source_contributes_its_share_of_each_split():
    rows = stdlib_and_sdists()
    splits, report = assign_splits(rows, 20261122, FRACTIONS)
    assert report["python"]["policy"] == "source"
    sources = report["python"]["sources"]
    assert sources["stdlib"]["unit"] == "repository" and sources["lib0"]["unit"] == "module"
    for source, cell in sources.items():
        assert set(cell["library_files_by_split"]) == {"train", "valid", "test"}, (source, cell)
        lines = cell["library_lines_by_split"]
        if source == "stdlib":  # many units: each split within a few units of its share of the lines
            assert abs(lines["test"] / sum(lines.values()) - 0.1) < 0.03, lines
    for r, s in zip(rows, splits):  # scripts train, never forming or joining an evaluation split
        if r["path"].startswith(("tests/", "docs/")):
            assert s == "train"
    # deterministic, seeded, and a source's splits do not depend on the other sources
    assert splits == assign_splits(rows, 20261122, FRACTIONS)[0]
    assert splits != assign_splits(rows, 7, FRACTIONS)[0]
    alone = [r for r in rows if r["source"] == "lib3"]
    assert assign_splits(alone, 20261122, FRACTIONS)[0] == [s for r, s in zip(rows, splits) if r["source"] == "lib3"]


def test_the_unit_is_never_cut_and_is_the_coarsest_that_gives_each_split_one():
    """Repositories when a source has one per split, else folders (packages), else modules; a unit's files share
    one split (no file of a package on both sides when packages are the units)."""
    from pipeline.manifest.build import source_units

    def rows_of(paths, repos=None):
        return [{"source": "s", "repository": (repos or {}).get(p, "s"), "path": p, "language": "python", "lines": 10}
                for p in paths]

    many_repos = rows_of([f"r{i}/m{j}.py" for i in range(5) for j in range(3)], {f"r{i}/m{j}.py": f"r{i}"
                                                                               for i in range(5) for j in range(3)})
    folders = rows_of([f"pkg/sub{i}/m{j}.py" for i in range(4) for j in range(5)])
    one_package = rows_of([f"pkg/m{j}.py" for j in range(6)])
    for rows, level in ((many_repos, "repository"), (folders, "folder"), (one_package, "module")):
        assert source_units(rows, list(range(len(rows))), 3)[0] == level
        splits, report = assign_splits(rows, 1, FRACTIONS)
        assert report["python"]["sources"]["s"]["unit"] == level
        unit = {"repository": lambda r: r["repository"], "folder": lambda r: r["path"].rsplit("/", 1)[0],
                "module": lambda r: r["path"]}[level]
        together: dict = {}
        for r, s in zip(rows, splits):
            together.setdefault(unit(r), set()).add(s)
        assert all(len(v) == 1 for v in together.values())
        assert set(splits) == {"train", "valid", "test"}


def test_a_source_too_small_for_every_split_is_evaluated_first():
    """One module: it is the test split's (a library is evaluated rather than trained on); two: train and test."""
    from pipeline.manifest.build import deal_source, fill_priority

    assert fill_priority(FRACTIONS) == ["test", "train", "valid"]
    assert set(deal_source({("s", "a.py"): 500}, 3, FRACTIONS).values()) == {"test"}
    for seed in range(20):
        two = deal_source({("s", "a.py"): 500, ("s", "b.py"): 20}, seed, FRACTIONS)
        assert sorted(two.values()) == ["test", "train"]
        three = deal_source({("s", "a.py"): 500, ("s", "b.py"): 20, ("s", "c.py"): 30}, seed, FRACTIONS)
        assert sorted(three.values()) == ["test", "train", "valid"]
        assert three[("s", "a.py")] == "train"  # the heaviest unit trains: only the lighter ones are moved
    rows = [{"source": "one", "repository": "one", "path": "one.py", "language": "python", "lines": 40}]
    assert assign_splits(rows, 1, FRACTIONS)[0] == ["test"]


def _manifest(path, rows):
    pq.write_table(pa.table({k: [r[k] for r in rows] for k in ("source", "path", "language", "split", "lines",
                                                                 "duplicate")}), path)


def test_a_source_with_library_code_but_nothing_evaluated_fails_naming_it(tmp_path):
    """Per source and set drawn from a split: no library file in the split, or files there but no item, is an
    ERROR evaluation: line naming the family, language and source with the fix; allow_unevaluated opts out. The
    composition per source and column is in the metrics either way."""
    rows = [{"source": "stdlib", "path": "os.py", "language": "python", "split": "test", "lines": 900, "duplicate": False},
            {"source": "mylib", "path": "mylib/a.py", "language": "python", "split": "train", "lines": 90,
             "duplicate": False},
            {"source": "mylib", "path": "tests/test_a.py", "language": "python", "split": "test", "lines": 9,
             "duplicate": False},
            {"source": "other", "path": "other/b.py", "language": "python", "split": "test", "lines": 50,
             "duplicate": False}]
    _manifest(tmp_path / "manifest.parquet", rows)
    pq.write_table(pa.table({"path": ["os.py"] * 40, "source": ["stdlib"] * 40, "split": ["test"] * 40,
                             "library_group": ["stdlib"] * 39 + ["user_defined"], "domain": ["general"] * 40}),
                   tmp_path / "p.parquet")
    sets = [{"family": "apirec", "name": "points", "language": "python", "file": str(tmp_path / "p.parquet"),
             "suffixes": [".py"], "fix": "or choose apirec.eval_split", "every_source": True,
             "by": ["source", "library_group", "domain"]}]
    library = evaluation.library_code(tmp_path / "manifest.parquet", list(SplitPolicy().scripts))
    assert library["python"]["mylib"] == {"train": [1, 90]}  # its test file is a script
    metrics, small, missing = evaluation.check(sets, 30, False, library, strict=True)
    assert small == [] and metrics["ok"] is False and len(missing) == 2
    # by default (manifest.evaluation.strict: false) a source left unevaluated is a warning, one line per source
    assert evaluation.check(sets, 30, False, library)[0]["ok"] is True
    assert [line.split(" (")[0] for line in metrics["unevaluated_sources"]] == ["source mylib", "source other"]
    assert metrics["per_source"]["python"]["mylib"] == {"library_files": 1, "test_library_files": 0,
                                                         "items": {"apirec points": 0}}
    assert metrics["per_source"]["python"]["stdlib"]["items"] == {"apirec points": 40}
    assert missing[0].startswith("apirec python: source mylib has 1 library files but 0 points in the evaluation set")
    assert "none of them is in the test split" in missing[0] and "allow_unevaluated" in missing[0]
    assert missing[1].startswith("apirec python: source other has 1 library files") and "its 1 in the test split" in missing[1]
    comp = metrics["sets"][0]["composition"]
    assert comp["source"] == {"stdlib": 40} and comp["source_by_library_group"]["stdlib"] == {"stdlib": 39, "user_defined": 1}
    assert metrics["split_composition"]["python"]["mylib"] == {"train": {"library_files": 1, "library_lines": 90}}
    assert evaluation.check(sets, 30, False, library, allow_unevaluated=True, strict=True)[0]["ok"] is True
    # a set with no item at all is the size check's (allow_small), not one line per source
    empty = [{**sets[0], "file": str(tmp_path / "none.parquet")}]
    assert evaluation.check(empty, 30, True, library)[2] == []
    cmd = [sys.executable, "-m", "pipeline.manifest.evaluation", "--sets", json.dumps(sets), "--min-items", "30",
           "--manifest", str(tmp_path / "manifest.parquet"), "--metrics", str(tmp_path / "m.json")]
    res = subprocess.run(cmd + ["--strict", "--keep", str(tmp_path / "kept.json")], cwd=REPO, capture_output=True,
                         text=True)
    assert res.returncode == 1 and res.stderr.count("ERROR evaluation: source ") == 2
    # written before failing: the metrics are there (and in --keep, which a failed job's outputs are not)
    assert json.loads((tmp_path / "kept.json").read_text())["ok"] is False and (tmp_path / "m.json").exists()
    res = subprocess.run(cmd + ["--strict", "--allow-unevaluated"], cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 0 and res.stderr.count("WARNING pipeline.manifest.evaluation") <= 2
    res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 0 and res.stderr.count("evaluation: source ") == 2 and "ERROR" not in res.stderr


def test_apirec_cap_keeps_every_source_and_its_share():
    """The seeded cap over the evaluation split's points is stratified by source (at least one each, else by its
    share), and a shard's part (each source's first max_points) holds every point the global cap keeps."""
    from pipeline.families.apirec.generate import allocate, cap_points

    assert allocate({"stdlib": 9000, "a": 900, "b": 5, "c": 0}, 1000) == {"stdlib": 908, "a": 91, "b": 1, "c": 0}
    assert sum(allocate({f"s{i}": 7 * i + 1 for i in range(30)}, 100).values()) == 100
    assert allocate({"a": 3, "b": 2}, 10) == {"a": 3, "b": 2}
    raw = [({"file_id": f"f{i % 50}", "line": i, "col": 0, "source": "stdlib"},) for i in range(3000)]
    raw += [({"file_id": "g", "line": i, "col": 1, "source": "mylib"},) for i in range(3)]
    kept = cap_points(raw, 200, 5)
    assert len(kept) == 200 and sum(x[0]["source"] == "mylib" for x in kept) == 1
    assert cap_points(raw, 200, 5) == kept and cap_points(raw, 200, 6) != kept
    halves = [raw[::2], raw[1::2]]
    parts = [x for h in halves for x in cap_points(h, 200, 5, per_source=200)]
    again = cap_points(parts, 200, 5, {"stdlib": 3000, "mylib": 3})
    assert sorted(x[0]["line"] * 10 + x[0]["col"] for x in again) == sorted(x[0]["line"] * 10 + x[0]["col"] for x in kept)


def test_the_apirec_report_gives_points_per_source_and_category_and_says_when_popular_is_absent():
    import duckdb

    from pipeline.families.apirec.report import _composition

    con = duckdb.connect()
    con.sql("CREATE TABLE apirec_points AS SELECT * FROM (VALUES ('stdlib', 'stdlib'), ('flask', 'user_defined'), "
            "('flask', 'stdlib'), ('mylib', 'other_third_party')) t(source, library_group)")
    text = "".join(_composition(con, {"apirec": {"popular_libraries": ["flask", "numpy"]}}))
    assert "| flask | 1 | 0 | 0 | 1 | 2 |" in text and "| all | 2 | 0 | 1 | 1 | 4 |" in text
    assert "**No popular third-party point:**" in text and "(flask, numpy)" in text
    con.sql("INSERT INTO apirec_points VALUES ('mylib', 'popular_third_party')")
    assert "No popular" not in "".join(_composition(con, {}))


def test_a_split_left_empty_takes_the_unit_nearest_its_share_not_a_stub():
    """sortedcontainers (the own corpus, seed 20261122): the deal left test empty, and the lightest unit, its 74-line
    __init__.py, gave 0 points (the per-source check named it). The unit nearest the split's share goes instead."""
    from pipeline.manifest.build import deal, deal_source

    units = {("s", "__init__.py"): 74, ("s", "sortedlist.py"): 2646, ("s", "sorteddict.py"): 812,
             ("s", "sortedset.py"): 733}
    assert "test" not in deal(units, 20261122, FRACTIONS).values()
    dealt = deal_source(units, 20261122, FRACTIONS)
    assert [u for u, s in dealt.items() if s == "test"] == [("s", "sortedset.py")]  # 733 lines: nearest 10% of 4,265
    assert sorted(set(dealt.values())) == ["test", "train", "valid"]


def test_a_documentation_folder_is_scripts_so_a_one_module_source_is_evaluated():
    """six's sdist: `six.py` beside `documentation/conf.py` (and a root test file). Before `documentation/*` was a
    script glob, conf.py was the source's other library file and the source split dealt it to test and six.py to
    train, so six had no point in the evaluation set (the own corpus's ERROR evaluation line)."""
    rows = [{"source": "six", "repository": "six", "path": p, "language": "python"}
            for p in ("six.py", "documentation/conf.py", "test_six.py", "setup.py")]
    rows += [r for i in range(3) for r in sdist(f"lib{i}", 12)]
    splits, _ = assign_splits(rows, 20261122, FRACTIONS, SplitPolicy(mode="source"))
    got = {r["path"]: s for r, s in zip(rows, splits) if r["source"] == "six"}
    assert got["six.py"] == "test", got
    assert {got["documentation/conf.py"], got["test_six.py"], got["setup.py"]} == {"train"}
