"""manifest.exclude: vendored copies, test data and caches are not code of the project. Each file a
default pattern matches is an `excluded` reject naming the pattern, counted by pattern in the
manifest metrics; tests themselves stay code; `exclude: []` keeps everything (real Snakemake)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline import schemas
from pipeline.io import read_parquet
from pipeline.manifest.scan import excluded_by
from tests.conftest import default_params, snakemake, write_params

DEFAULTS = default_params()["manifest"]["exclude"]

KEPT = ["pkg/__init__.py", "pkg/core.py", "tests/test_core.py", "tests/conftest.py"]
EXCLUDED = {  # path -> the default pattern that leaves it out
    "tests/examplefiles/Example.java": "test*/examplefiles/*",
    "tests/examplefiles/py2.py": "test*/examplefiles/*",
    "tests/fixtures/sample.py": "test*/fixtures/*",
    "pkg/testdata/input.py": "testdata/*",
    "pkg/__pycache__/core.cpython-311.py": "__pycache__/*",
    "pkg/_vendor/six.py": "_vendor/*",
    "pkg.egg-info/top.py": "*.egg-info/*",
    "web/node_modules/left-pad/index.js": "node_modules/*",
}


@pytest.mark.parametrize("path, pattern", [
    *EXCLUDED.items(),
    ("testdata/a.py", "testdata/*"),  # at the top of the source too
    ("a/b/c/test/data/x.py", "test*/data/*"),
])
def test_default_patterns_match_at_any_depth(path, pattern):
    assert excluded_by(path, DEFAULTS) == pattern


@pytest.mark.parametrize("path", KEPT + ["pkg/vendors.py", "pkg/fixtures.py", "src/testing/core.py",
                                         "pkg/data/table.py", "latest/examplefiles.py"])
def test_code_and_tests_are_kept(path):
    assert excluded_by(path, DEFAULTS) is None


def test_no_patterns_keep_everything():
    assert excluded_by("tests/examplefiles/Example.java", []) is None


def write_corpus(root: Path) -> Path:
    corpus = root / "corpus"
    for rel in KEPT + list(EXCLUDED):
        path = corpus / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith(".java"):
            path.write_text("class Example {\n  int f() { return 1; }\n}\n")
        elif rel.endswith(".js"):
            path.write_text("module.exports = function (s) { return s; };\n")
        else:
            path.write_text(f"def f():\n    return {len(rel)}\n")
    return corpus


@pytest.mark.slow
def test_excluded_files_are_rejects_counted_by_pattern(tmp_path):
    corpus = write_corpus(tmp_path)
    sources = [{"name": "proj", "kind": "local", "path": str(corpus)}]
    work = tmp_path / "default"
    write_params(work, sources)
    snakemake(work, "manifest")
    manifest = read_parquet(work / "data/manifest.parquet", schemas.MANIFEST)
    assert sorted(manifest.column("path").to_pylist()) == sorted(KEPT)
    rejects = [r for r in read_parquet(work / "data/rejects.parquet", schemas.REJECTS).to_pylist()
               if r["reason"] == "excluded"]
    assert {r["path"]: r["detail"] for r in rejects} == {p: f"manifest.exclude {pat}" for p, pat in EXCLUDED.items()}
    assert all(r["stage"] == "manifest" and r["bytes"] > 0 for r in rejects)
    metrics = json.loads((work / "reports/metrics/manifest.json").read_text())
    assert metrics["rejects_by_reason"]["excluded"] == len(EXCLUDED)
    by_pattern: dict[str, int] = {}
    for pattern in EXCLUDED.values():
        by_pattern[f"manifest.exclude {pattern}"] = by_pattern.get(f"manifest.exclude {pattern}", 0) + 1
    assert metrics["excluded_by_pattern"] == by_pattern
    assert metrics["files_by_language"] == {"python": len(KEPT)}  # the fixture's Java is gone

    # the user overrides the defaults: everything is code again
    work = tmp_path / "keep_all"
    write_params(work, sources, manifest__exclude=[])
    snakemake(work, "manifest")
    manifest = read_parquet(work / "data/manifest.parquet", schemas.MANIFEST)
    assert sorted(manifest.column("path").to_pylist()) == sorted(KEPT + list(EXCLUDED))
    assert json.loads((work / "reports/metrics/manifest.json").read_text())["excluded_by_pattern"] == {}
