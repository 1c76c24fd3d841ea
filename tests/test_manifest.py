"""The spine end to end: real Snakemake over a fixture corpus of every source kind."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline import schemas
from pipeline.io import read_parquet
from pipeline.manifest.build import assign_splits, split_of
from tests.conftest import snakemake, write_params
from tests.fixture_corpus import LATIN1, SETUP_PY, build_sources

MOD_PY = b"import os\n\n\ndef f():\n    return os.getcwd()\n"
MAIN_JAVA = b"class Main {\n  int f() { return 1; }\n}\n"

# (source, repository, path, language, encoding, bytes, lines, duplicate), in manifest order
EXPECTED_FILES = [
    ("demo", "demo", "setup.py", "python", "utf-8", len(SETUP_PY), 1, False),
    ("demo", "demo", "src/demo/__init__.py", "python", "utf-8", 22, 1, False),
    ("demo", "demo", "src/demo/core.py", "python", "utf-8", 24, 2, False),
    ("dump", "octo/alpha", "src/util.py", "python", "utf-8", 27, 2, False),
    ("dump", "octo/beta", "src/Util.java", "java", "utf-8", 22, 1, False),
    ("evil", "evil", "good.py", "python", "utf-8", 6, 1, False),
    ("gitsrc", "gitsrc", "Main.java", "java", "utf-8", len(MAIN_JAVA), 3, False),
    ("gitsrc", "gitsrc", "pkg/__init__.py", "python", "utf-8", 0, 0, False),
    ("gitsrc", "gitsrc", "pkg/mod.py", "python", "utf-8", len(MOD_PY), 5, False),
    ("zipsrc", "zipsrc", "zipproj/a.py", "python", "utf-8", 22, 2, False),
    ("zipsrc", "zipsrc", "zipproj/b.py", "python", "utf-8", 22, 2, True),
    ("zipsrc", "zipsrc", "zipproj/latin.py", "python", "iso-8859-1", len(LATIN1), 2, False),
    ("zipsrc", "zipsrc", "zipproj/tool", "python", "utf-8", 35, 2, False),
    ("zipsrc", "zipsrc", "zipproj/web/app.js", "javascript", "utf-8", 16, 1, False),
]

# (source, path, stage, reason)
EXPECTED_REJECTS = [
    ("demo", "PKG-INFO", "manifest", "not_source"),
    ("dump", "functions.jsonl.gz:3", "fetch", "bad_record"),
    ("evil", "/abs.py", "fetch", "absolute_path"),
    ("evil", "link", "fetch", "link_escapes_tree"),
    ("evil", "ok/../../escape.py", "fetch", "parent_traversal"),
    ("zipsrc", "zipproj/big.py", "fetch", "too_large"),
    ("zipsrc", "zipproj/README.md", "manifest", "not_source"),
    ("zipsrc", "zipproj/notutf8.py", "manifest", "undecodable"),
    ("zipsrc", "zipproj/nul.py", "manifest", "binary"),
]


@pytest.fixture(scope="module")
def fixture_sources(tmp_path_factory) -> list[dict]:
    return build_sources(tmp_path_factory.mktemp("sources"))


def build(workdir: Path, sources: list[dict]) -> Path:
    write_params(workdir, sources)
    snakemake(workdir, "manifest")  # the spine's target; test_end_to_end runs the whole DAG
    return workdir


@pytest.fixture(scope="module")
def built(tmp_path_factory, fixture_sources) -> Path:
    return build(tmp_path_factory.mktemp("build1"), fixture_sources)


def test_manifest_rows_exact(built):
    table = read_parquet(built / "data/manifest.parquet", schemas.MANIFEST)
    rows = [(r["source"], r["repository"], r["path"], r["language"], r["encoding"], r["bytes"], r["lines"],
             r["duplicate"]) for r in table.to_pylist()]
    assert rows == EXPECTED_FILES
    for r in table.to_pylist():
        data = (built / r["location"]).read_bytes()
        assert len(data) == r["bytes"]
    # the git source is the pinned first commit, not HEAD
    mod = next(r for r in table.to_pylist() if r["path"] == "pkg/mod.py")
    assert (built / mod["location"]).read_bytes() == MOD_PY
    assert not any(r["path"] == "pkg/later.py" for r in table.to_pylist())


def test_rejects_exact(built):
    table = read_parquet(built / "data/rejects.parquet", schemas.REJECTS)
    rows = sorted((r["source"], r["path"], r["stage"], r["reason"]) for r in table.to_pylist())
    assert rows == sorted(EXPECTED_REJECTS)
    assert set(table.column("reason").to_pylist()) <= set(schemas.REJECT_REASONS)


def test_nothing_escaped_or_executed(built, fixture_sources):
    assert not (built / "data" / "escape.py").exists()
    assert not list(built.rglob("escape.py"))
    assert not list(built.rglob("abs.py"))
    assert not list(built.rglob("EXECUTED")) and not list(Path.cwd().glob("EXECUTED"))
    assert not [p for p in (built / "data/corpus").rglob("*") if p.is_symlink()]


def test_splits_by_repository(built):
    """Languages the split policy keeps by repository (reports/metrics/manifest.json split_policy) are split
    by repository; by default (source) each source's units are dealt on their own (tests/test_split_policy.py)."""
    import json

    table = pq.read_table(built / "data/manifest.parquet").to_pylist()
    policy = json.loads((built / "reports/metrics/manifest.json").read_text())["split_policy"]
    seed = 20261122
    fractions = {"train": 0.8, "valid": 0.1, "test": 0.1}
    by_repo: dict[tuple, set] = {}
    for r in table:
        if policy[r["language"]]["policy"] == "repository":
            by_repo.setdefault((r["source"], r["repository"]), set()).add(r["split"])
            assert r["split"] == split_of(seed, r["source"], r["repository"], fractions)
    assert all(len(s) == 1 for s in by_repo.values())
    # the default policy stratifies by source: each source's library units dealt on their own, every source with
    # library code in the test split
    # (as the build: what each source's metadata declares, and each file's call sites, read from the tree)
    from pipeline.extract import library
    from pipeline.manifest.build import carry_of

    rows = [dict(r, location=str(built / r["location"])) for r in table]
    for r in rows:
        r["carry"] = carry_of(r["location"], r["encoding"])
    assert [r["split"] for r in table] == assign_splits(rows, seed, fractions, declarations=library.declarations(rows))[0]
    assert {p["policy"] for p in policy.values()} == {"source"}
    for language, used in policy.items():
        for source, cell in used["sources"].items():
            assert cell["library_files_by_split"].get("test"), (language, source, cell)


def test_split_function_is_stable_and_proportional():
    fractions = {"train": 0.8, "valid": 0.1, "test": 0.1}
    repos = [f"repo{i}" for i in range(4000)]
    splits = [split_of(7, "src", r, fractions) for r in repos]
    share = {s: splits.count(s) / len(splits) for s in ("train", "valid", "test")}
    assert abs(share["train"] - 0.8) < 0.03 and abs(share["valid"] - 0.1) < 0.02
    # a repository keeps its split whatever else is in the corpus, and the seed matters
    assert splits[:100] == [split_of(7, "src", r, fractions) for r in repos[:100]]
    assert splits != [split_of(8, "src", r, fractions) for r in repos]
    assert {split_of(7, "src", r, {"train": 0.0, "valid": 0.0, "test": 1.0}) for r in repos[:50]} == {"test"}


def test_metrics_summary(built):
    import json

    metrics = json.loads((built / "reports/metrics/manifest.json").read_text())
    assert metrics["files"] == len(EXPECTED_FILES)
    assert metrics["unique_files"] == len(EXPECTED_FILES) - 1
    assert metrics["rejects"] == len(EXPECTED_REJECTS)
    assert metrics["files_by_language"] == {"java": 2, "javascript": 1, "python": 11}
    assert metrics["bytes"] == sum(r[5] for r in EXPECTED_FILES)


def test_two_clean_builds_are_byte_identical(built, tmp_path, fixture_sources):
    second = build(tmp_path / "build2", fixture_sources)
    for name in ("data/manifest.parquet", "data/rejects.parquet", "reports/metrics/manifest.json"):
        assert (built / name).read_bytes() == (second / name).read_bytes(), name


def test_noop_rerun_does_nothing_quickly(built):
    start = time.perf_counter()
    res = snakemake(built, "manifest")
    elapsed = time.perf_counter() - start
    print(f"no-op rerun: {elapsed:.2f} s")
    assert "Nothing to be done" in res.stdout + res.stderr


def test_param_change_reruns_only_manifest(tmp_path, fixture_sources):
    work = build(tmp_path / "w", fixture_sources)
    write_params(work, fixture_sources, manifest__split={"train": 0.0, "valid": 0.0, "test": 1.0})
    res = snakemake(work, "--summary", check=True)
    plan = {line.split("\t")[0]: line.split("\t")[-1] for line in res.stdout.splitlines()[1:] if "\t" in line}
    assert plan["data/manifest.parquet"] == "update pending"  # the manifest must be rebuilt
    upstream = [p for p in plan if p.startswith(("data/corpus/", "data/sources/", "data/manifest/parts/"))]
    assert len(upstream) == 5 * 6 and all(plan[p] == "no update" for p in upstream)  # tree, record, rejects, origins, part, part rejects
    snakemake(work, "manifest")
    table = pq.read_table(work / "data/manifest.parquet")
    assert set(table.column("split").to_pylist()) == {"test"}


def test_split_warnings_by_hand():
    from pipeline.manifest.build import split_warnings

    fractions = {"train": 0.8, "valid": 0.1, "test": 0.1}
    # 40 python files: valid promises 4 and has 0 (empty), test promises 4 and has 1 (< a quarter of 4? no: 1 == 4/4)
    got = split_warnings({"python": {"train": 39, "test": 1}}, fractions)
    assert len(got) == 1 and got[0].startswith("the valid split of python has 0 of 40 files")
    assert "missing" in got[0] and "manifest.split_policy.mode: package" in got[0]
    # 200 files: test promises 20 and has 4 (< 5): noisy; valid 20 of 20: fine
    got = split_warnings({"java": {"train": 176, "valid": 20, "test": 4}}, fractions)
    assert [w.split(":")[0] for w in got] == ["the test split of java has 4 of 200 files (manifest.split promises about 20)"]
    assert "noisy" in got[0]
    # tiny languages: an empty split still warns, a small one does not (expected < 4)
    assert len(split_warnings({"js": {"train": 3}}, fractions)) == 2
    assert split_warnings({"js": {"train": 8, "valid": 1, "test": 1}}, fractions) == []
    assert split_warnings({"python": {"test": 10}}, {"train": 0.0, "valid": 0.0, "test": 1.0}) == []


def test_empty_split_warns_in_metrics_and_on_the_console(tmp_path, fixture_sources):
    """Issue 13 item 12: a split left empty by few repositories is a loud warning, not an INFO line in a log."""
    import json

    from pipeline.manifest.build import split_warnings

    work = tmp_path / "w"
    write_params(work, fixture_sources, manifest__split={"train": 0.6, "valid": 0.2, "test": 0.2},
                 manifest__split_policy={"mode": "repository"})  # auto would deal the few repositories by package
    res = snakemake(work, "manifest")
    table = pq.read_table(work / "data/manifest.parquet").to_pylist()
    counts: dict = {}
    for row in table:
        if not row["duplicate"]:
            counts.setdefault(row["language"], {}).setdefault(row["split"], 0)
            counts[row["language"]][row["split"]] += 1
    expected = split_warnings(counts, {"train": 0.6, "valid": 0.2, "test": 0.2})
    assert expected, counts  # the fixture's few repositories leave a split empty
    assert json.loads((work / "reports/metrics/manifest.json").read_text())["warnings"] == expected
    for warning in expected:
        assert f"WARNING manifest: {warning}" in res.stderr
