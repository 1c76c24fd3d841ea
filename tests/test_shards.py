"""Corpus stages in shards (issue 26 item 5): scan, extract and CodeSyntax labelling split over N jobs
by the hash of each file's (source, path) (`pipeline.core.shards`) and merged into the bytes of one
job, rejects and metrics included; files that tie on a stage's sort key (a jsonl dump's many
`setup.py`, the same repository and path twice) are in the fixture."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
import yaml

from pipeline import schemas
from pipeline.core import shards as sharding
from pipeline.core.ids import shard_of
from pipeline.io import read_parquet, write_parquet

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / ".test" / "corpus"
N = 4

# a jsonl-like source: materialised files with origins; ties on (repository, path) and on path alone
DUMP = [
    ("octo/a", "setup.py", "from setuptools import setup\nsetup(name='a')\n"),
    ("octo/b", "setup.py", "import os\n\ndef read(p):\n    return open(os.path.join('x', p)).read()\n"),
    ("octo/c", "setup.py", "def f(:\n"),
    ("octo/a", "pkg/core.py", "def run(x):\n    return x + 1\n\n__all__ = ['run']\n"),
    ("octo/a", "pkg/__init__.py", "from .core import *\nrun(1)\n"),
    ("octo/a", "pkg/use.py", "from pkg import *\nimport json\n\ndef g(y):\n    return json.dumps(run(y))\n"),
    ("octo/a", "pkg/use.py", "def h(z):\n    return [z for _ in range(3)]\n"),  # same repository and path
    ("octo/d", "Main.java", "class Main { int f(int x) { return x + 1; } }\n"),
    ("octo/e", "Main.java", "class Main { void g() { int y = 2; y++; } }\n"),
    ("octo/e", "big.py", "x = 1\n" * 300),  # scanned, too large for extract (--max-file-bytes 1200)
    ("octo/f", "lib/dup.py", "def dup(a):\n    return a\n"),
    ("octo/g", "lib/dup.py", "def dup(a):\n    return a\n"),  # same bytes: a duplicate
]


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, dict]:
    """Two sources: `.test`'s corpus (a folder, one repository per top folder) and a dump with origins."""
    root = tmp_path_factory.mktemp("shards")
    tree = root / "corpus" / "fixture"
    shutil.copytree(CORPUS, tree)
    (tree / "repo00" / "bad\x01name.py").write_text("x = 1\n")  # a bad_name reject
    (tree / "repo02" / "README.txt").write_text("notes\n")  # not_source
    dump = root / "corpus" / "dump"
    dump.mkdir(parents=True)
    rows = []
    for i, (repo, path, text) in enumerate(DUMP):
        ext = "." + path.rsplit(".", 1)[1]
        location = f"{i:08d}{ext}"
        (dump / location).write_text(text)
        rows.append({"location": location, "repository": repo, "path": path,
                     "language": "java" if ext == ".java" else "python"})
    origins = root / "dump.origins.parquet"
    write_parquet(pa.Table.from_pylist(rows, schemas.ORIGINS), origins, schemas.ORIGINS)
    return {"fixture": {"root": tree, "repository": "top_dir", "origins": None},
            "dump": {"root": dump, "repository": "dump", "origins": origins}}


def _same(a: Path, b: Path, suffixes: list[str]) -> None:
    for suffix in suffixes:
        assert Path(f"{a}{suffix}").read_bytes() == Path(f"{b}{suffix}").read_bytes(), suffix


def _scan(name: str, spec: dict, stem: Path, *extra: str) -> None:
    from pipeline.manifest.scan import main

    args = ["--name", name, "--root", str(spec["root"]), "--repository", spec["repository"],
            "--languages", '["python", "java"]', "--max-file-bytes", "2000", "--exclude", '["repo01/*"]']
    if spec["origins"]:
        args += ["--origins", str(spec["origins"])]
    assert main(args + list(extra) + ["--out", f"{stem}.parquet", "--rejects", f"{stem}.rejects.parquet"]) == 0


@pytest.fixture(scope="module")
def manifest(sources, tmp_path_factory) -> Path:
    """The manifest of both sources, scanned in one job each."""
    from pipeline.manifest.build import build

    root = tmp_path_factory.mktemp("manifest")
    for name, spec in sources.items():
        _scan(name, spec, root / name)
    table, _ = build([read_parquet(root / f"{n}.parquet", schemas.SCANNED) for n in sources], 1,
                     {"train": 0.6, "valid": 0.2, "test": 0.2})
    write_parquet(table, root / "manifest.parquet", schemas.MANIFEST)
    return root / "manifest.parquet"


def test_shard_key_and_arguments():
    assert sharding.in_shard("s", "a.py", 0, 1)
    owners = [[k for k in range(N) if sharding.in_shard("s", f"f{i}.py", k, N)] for i in range(40)]
    assert all(len(o) == 1 for o in owners) and len({o[0] for o in owners}) == N  # a partition, all shards used
    assert shard_of(sharding.key_of("s", "a.py"), N) == [k for k in range(N) if sharding.in_shard("s", "a.py", k, N)][0]
    from pipeline.manifest.scan import main

    for bad in (["--shard", "4", "--shards", "4"], ["--shards", "0"], ["--shards", "2", "--merge", "x.parquet"]):
        with pytest.raises(SystemExit):
            main(["--name", "s", "--root", ".", "--repository", "s", "--languages", "[]", "--max-file-bytes", "1",
                  "--out", "o", "--rejects", "r", *bad])


def test_scan_shards_merge_to_the_one_job_bytes(sources, tmp_path):
    for name, spec in sources.items():
        _scan(name, spec, tmp_path / f"{name}-one")
        for k in range(N):
            _scan(name, spec, tmp_path / f"{name}-part{k}", "--shard", str(k), "--shards", str(N))
        sizes = [read_parquet(tmp_path / f"{name}-part{k}.parquet", schemas.SCANNED).num_rows for k in range(N)]
        assert sum(1 for s in sizes if s) > 1, sizes
        parts = [str(tmp_path / f"{name}-part{k}.parquet") for k in range(N)]
        _scan(name, spec, tmp_path / f"{name}-merged", "--merge", *parts)
        _same(tmp_path / f"{name}-one", tmp_path / f"{name}-merged", [".parquet", ".rejects.parquet"])
    rejects = read_parquet(tmp_path / "fixture-one.rejects.parquet", schemas.REJECTS).column("reason").to_pylist()
    assert {"bad_name", "excluded", "not_source"} <= set(rejects)
    dump = read_parquet(tmp_path / "dump-one.parquet", schemas.SCANNED).to_pylist()
    assert sum(1 for r in dump if (r["repository"], r["path"]) == ("octo/a", "pkg/use.py")) == 2


def test_extract_shards_merge_to_the_one_job_bytes(manifest, tmp_path):
    from pipeline.extract.build import main

    common = ["--manifest", str(manifest), "--workers", "1", "--timeout-s", "30", "--max-file-bytes", "1200",
              "--per-repository-sources", "dump"]

    def outputs(stem):
        return [a for t in ("usages", "imports", "inventory", "rejects") for a in (f"--{t}", f"{stem}.{t}.parquet")] + [
            "--metrics", f"{stem}.json"]

    assert main(common + outputs(tmp_path / "one")) == 0
    for k in range(N):
        assert main(common + ["--shard", str(k), "--shards", str(N)] + outputs(tmp_path / f"part{k}")) == 0
    parts = [str(tmp_path / f"part{k}.json") for k in range(N)]
    assert main(common + ["--merge", *parts] + outputs(tmp_path / "merged")) == 0
    _same(tmp_path / "one", tmp_path / "merged",
          [".usages.parquet", ".imports.parquet", ".inventory.parquet", ".rejects.parquet", ".json"])
    metrics = json.loads((tmp_path / "one.json").read_text())
    assert metrics["rejects"] >= 2 and metrics["usages"] > 50 and metrics["inventory"] > 10, metrics
    assert sum(json.loads(Path(p).read_text())["python_files"] > 0 for p in parts) > 1
    # the star import resolved in a shard whose files do not hold the module it names
    usages = read_parquet(tmp_path / "merged.usages.parquet", schemas.USAGES).to_pylist()
    assert any(u["path"] == "pkg/use.py" and u["fqn"] == "pkg.core.run" for u in usages)
    with pytest.raises(ValueError, match="give every shard"):
        main(common + ["--merge", *parts[1:]] + outputs(tmp_path / "short"))


@pytest.mark.parametrize("language,cap", [("python", 0), ("python", 7), ("java", 0)])
def test_codesyntax_shards_merge_to_the_one_job_bytes(manifest, tmp_path, language, cap):
    from pipeline.families.codesyntax.label import main

    common = ["--manifest", str(manifest), "--language", language, "--variant", "plain", "--max-tokens", "512",
              "--max-samples", str(cap), "--dev-fraction", "0.5", "--seed", "3", "--workers", "1"]

    def outputs(stem):
        return [a for t in ("samples", "relations", "rejects") for a in (f"--{t}", f"{stem}.{t}.parquet")] + [
            "--summary", f"{stem}.json"]

    assert main(common + outputs(tmp_path / "one")) == 0
    for k in range(N):
        assert main(common + ["--shard", str(k), "--shards", str(N)] + outputs(tmp_path / f"part{k}")) == 0
    parts = [str(tmp_path / f"part{k}.json") for k in range(N)]
    assert main(common + ["--merge", *parts] + outputs(tmp_path / "merged")) == 0
    _same(tmp_path / "one", tmp_path / "merged", [".samples.parquet", ".relations.parquet", ".rejects.parquet", ".json"])
    summary = json.loads((tmp_path / "one.json").read_text())
    assert summary["samples"] > 5 and (summary["dropped_by_cap"] > 0) == bool(cap), summary
    if language == "python":
        assert summary["rejects"] >= 1


def test_more_shards_than_files_leaves_empty_parts_that_merge(tmp_path):
    """8 shards over 2 files: six empty parts (an empty scan, extraction and labelling) merge like the rest."""
    from pipeline.extract.build import main as extract
    from pipeline.families.codesyntax.label import main as label
    from pipeline.manifest.build import build
    from pipeline.manifest.scan import main as scan

    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.py").write_text("import os\ndef f(x):\n    return os.path.join(x)\n")
    (corpus / "b.py").write_text("def g(y):\n    return y\n")
    n = 8

    def one_vs_shards(run, outputs, suffixes, part_suffix):
        run(outputs(tmp_path / "one"))
        for k in range(n):
            run(["--shard", str(k), "--shards", str(n)] + outputs(tmp_path / f"part{k}"))
        run(["--merge", *[str(tmp_path / f"part{k}{part_suffix}") for k in range(n)]] + outputs(tmp_path / "merged"))
        _same(tmp_path / "one", tmp_path / "merged", suffixes)

    one_vs_shards(lambda a: scan(["--name", "s", "--root", str(corpus), "--repository", "s", "--languages", '["python"]',
                                  "--max-file-bytes", "9999", *a]),
                  lambda stem: ["--out", f"{stem}.parquet", "--rejects", f"{stem}.rejects.parquet"],
                  [".parquet", ".rejects.parquet"], ".parquet")
    table, _ = build([read_parquet(tmp_path / "one.parquet", schemas.SCANNED)], 1, {"train": 0.6, "valid": 0.2, "test": 0.2})
    write_parquet(table, tmp_path / "manifest.parquet", schemas.MANIFEST)
    one_vs_shards(lambda a: extract(["--manifest", str(tmp_path / "manifest.parquet"), "--timeout-s", "30",
                                     "--max-file-bytes", "9999", *a]),
                  lambda stem: [a for t in ("usages", "imports", "inventory", "rejects")
                                for a in (f"--{t}", f"{stem}.{t}.parquet")] + ["--metrics", f"{stem}.json"],
                  [".usages.parquet", ".imports.parquet", ".inventory.parquet", ".rejects.parquet", ".json"], ".json")
    assert sorted(json.loads((tmp_path / f"part{k}.json").read_text())["python_files"] for k in range(n)) == [0] * 6 + [1, 1]
    one_vs_shards(lambda a: label(["--manifest", str(tmp_path / "manifest.parquet"), "--language", "python", "--variant",
                                   "plain", "--max-tokens", "512", "--max-samples", "1", "--dev-fraction", "0.5",
                                   "--seed", "1", *a]),
                  lambda stem: [a for t in ("samples", "relations", "rejects") for a in (f"--{t}", f"{stem}.{t}.parquet")]
                  + ["--summary", f"{stem}.json"],
                  [".samples.parquet", ".relations.parquet", ".rejects.parquet", ".json"], ".json")


def _plan(tmp_path: Path, **shards: int) -> str:
    config = yaml.safe_load((REPO / ".test" / "params.yaml").read_text())
    for stage, n in shards.items():
        config[stage]["shards"] = n
    tmp_path.mkdir()
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(config))
    for name in ("corpus", "npm"):  # the local inputs .test names (planning checks they exist)
        (tmp_path / name).symlink_to(REPO / ".test" / name)
    res = subprocess.run([str(Path(sys.executable).parent / "snakemake"), "--snakefile", str(REPO / "Snakefile"),
                          "--directory", str(tmp_path), "-n", "--cores", "1", "--forceall",
                          "data/extract/usages.parquet", "data/families/codesyntax/plain/python/samples.parquet"],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return res.stdout


def test_plans_n_shard_jobs_and_one_merge_and_none_with_one_shard(tmp_path):
    sharded = _plan(tmp_path / "n", manifest=N, extract=N, codesyntax=N)
    sources = int(re.search(r"\bscan_source\s+(\d+)\b", sharded).group(1))
    assert re.search(rf"\bscan_source_shard\s+{N * sources}\b", sharded)
    assert re.search(rf"\bextract_shard\s+{N}\b", sharded) and re.search(r"\bextract\s+1\b", sharded)
    assert re.search(rf"\bcodesyntax_label_shard\s+{N}\b", sharded)
    one = _plan(tmp_path / "one")
    assert "_shard " not in one and not re.search(r"_shard\s+\d", one)


CORPUS_OUTPUTS = ["data/manifest.parquet", "data/rejects.parquet", "reports/metrics/manifest.json",
                  "data/extract/usages.parquet", "data/extract/imports.parquet", "data/extract/inventory.parquet",
                  "data/extract/rejects.parquet", "reports/metrics/extract.json",
                  "data/identifiers/sequences.parquet", "data/identifiers/rejects.parquet",
                  "reports/metrics/identifiers.json"] + [
    f"data/families/codesyntax/plain/{lang}/{t}" for lang in ("python", "java")
    for t in ("samples.parquet", "relations.parquet", "rejects.parquet", "summary.json")]


@pytest.mark.slow
def test_corpus_stages_on_dot_test_one_vs_four_shards(tmp_path):
    """.test's corpus stages built by Snakemake with every corpus stage in 1 and in 4 shards: the same
    bytes (the scanned parts, the manifest, extract, identifiers and the CodeSyntax labels; rejects and
    metrics included)."""
    from tests.conftest import make_project, snakemake

    targets = [t for t in CORPUS_OUTPUTS if not t.startswith("reports/")]
    built = {}
    for n in (1, N):
        root = make_project(tmp_path / f"shards{n}")
        params = yaml.safe_load((root / "params.yaml").read_text())
        for stage in ("manifest", "extract", "identifiers", "codesyntax"):
            params[stage]["shards"] = n
        (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        res = snakemake(root, *targets)
        built[n] = root
        jobs = re.findall(r"^(\w+_shard)\s+(\d+)$", res.stdout + res.stderr, re.M)
        assert bool(jobs) == (n > 1), jobs
    parts = sorted(p.relative_to(built[1]) for p in (built[1] / "data" / "manifest" / "parts").iterdir())
    assert parts
    for rel in [*CORPUS_OUTPUTS, *map(str, parts)]:
        assert (built[1] / rel).read_bytes() == (built[N] / rel).read_bytes(), rel
    for stage in ("extract", "identifiers"):
        assert len(list((built[N] / "data" / stage / "shards").glob("*.json"))) == N
