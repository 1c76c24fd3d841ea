"""Family generation in shards (issue 26 item 5): the per-file part of a family's generation split over N
jobs by the hash of each file's (source, path) (`pipeline.core.shards`), the global step once, and the
merge gives the bytes of one job (points, baselines, metrics). The fixture is tests/test_shards.py's
(`.test`'s corpus plus a jsonl-style dump with ties on (repository, path))."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_shards import N, _same, manifest, sources  # noqa: F401 (module-scoped fixtures)


@pytest.fixture(scope="module")
def extracted(manifest, tmp_path_factory) -> Path:  # noqa: F811
    """The fixture's extraction, one job (the stem of its tables)."""
    from pipeline.extract.build import main

    stem = tmp_path_factory.mktemp("extract") / "x"
    args = ["--manifest", str(manifest), "--workers", "1", "--timeout-s", "30", "--max-file-bytes", "1200",
            "--per-repository-sources", "dump"]
    outs = [a for t in ("usages", "imports", "inventory", "rejects") for a in (f"--{t}", f"{stem}.{t}.parquet")]
    assert main(args + outs + ["--metrics", f"{stem}.json"]) == 0
    return stem


@pytest.mark.parametrize("max_points,ide_max_points", [(0, 0), (9, 4)])
def test_apirec_shards_merge_to_the_one_job_bytes(manifest, extracted, tmp_path, max_points, ide_max_points):  # noqa: F811
    """Scan parts, the global select, jedi parts and the merge (Java added there) against one job: without a
    cap and jedi on every point, and with both seeded caps (a shard's own cap must hold the global one's)."""
    from pipeline.families.apirec.generate import main

    common = ["--usages", f"{extracted}.usages.parquet", "--imports", f"{extracted}.imports.parquet",
              "--inventory", f"{extracted}.inventory.parquet", "--manifest", str(manifest),
              "--domains", "fixture=general", "dump=web", "--default-domain", "general", "--eval-split", "test",
              "--max-points", str(max_points), "--candidates", "5", "--top-k", "5", "--seed", "3",
              "--ide-max-points", str(ide_max_points), "--ide-typed-chars", "1", "--cross-domain",
              "--java-max-points", "0", "--per-repository-sources", "dump"]

    def outputs(stem):
        return ["--points", f"{stem}.points.parquet", "--baselines", f"{stem}.baselines.parquet",
                "--metrics", f"{stem}.json"]

    assert main(common + outputs(tmp_path / "one")) == 0
    for k in range(N):
        assert main(common + ["--shard", str(k), "--shards", str(N), "--scan-part", str(tmp_path / f"scan{k}.json")]) == 0
    assert main(common + ["--select", *[str(tmp_path / f"scan{k}.json") for k in range(N)],
                          "--selected", str(tmp_path / "selected.json")]) == 0
    for k in range(N):
        assert main(common + ["--shard", str(k), "--shards", str(N), "--selected", str(tmp_path / "selected.json"),
                              "--ide-part", str(tmp_path / f"jedi{k}.json")]) == 0
    assert main(common + ["--merge", *[str(tmp_path / f"jedi{k}.json") for k in range(N)],
                          "--selected", str(tmp_path / "selected.json")] + outputs(tmp_path / "merged")) == 0
    _same(tmp_path / "one", tmp_path / "merged", [".points.parquet", ".baselines.parquet", ".json"])
    stats = json.loads((tmp_path / "one.json").read_text())
    assert stats["points_all"] >= 15 and stats["ide_points"] > 0, stats
    if max_points:
        assert stats["points"] == max_points and stats["ide_points"] == ide_max_points
    scanned = [json.loads((tmp_path / f"scan{k}.json").read_text())["points_all"] for k in range(N)]
    jedi = [json.loads((tmp_path / f"jedi{k}.json").read_text())["ide_points"] for k in range(N)]
    assert sum(1 for s in scanned if s) > 1 and sum(jedi) == stats["ide_points"], (scanned, jedi)
    # every point ranked by jedi: spread over shards. A capped subset's spread is not fixed here: the fixture's
    # file ids hash its (absolute, per-run) temporary root, so which 4 points are drawn changes from run to run
    assert max_points or sum(1 for j in jedi if j) > 1, jedi


def test_apirec_shard_arguments(manifest, extracted, tmp_path):  # noqa: F811
    from pipeline.families.apirec.generate import main

    common = ["--usages", f"{extracted}.usages.parquet", "--imports", f"{extracted}.imports.parquet",
              "--manifest", str(manifest), "--default-domain", "general", "--eval-split", "test", "--max-points", "0",
              "--candidates", "5", "--top-k", "5", "--seed", "3"]
    for bad in (["--shards", "4", "--shard", "1", "--points", "p", "--baselines", "b", "--metrics", "m"],
                ["--scan-part", "x.json"], ["--merge", "j.json", "--points", "p", "--baselines", "b", "--metrics", "m"],
                []):
        with pytest.raises(SystemExit):
            main(common + bad)


@pytest.mark.parametrize("language,max_snippets", [("java", 0), ("python", 0), ("python", 5)])
def test_probing_shards_merge_to_the_one_job_bytes(manifest, tmp_path, language, max_snippets):  # noqa: F811
    """Each shard's methods (under its own seeded cap), then the merge: the cap over all shards and the tasks,
    every label, control and summary byte-identical to one job's."""
    from pipeline.families.probing.generate import main

    common = ["corpus", "--manifest", str(manifest), "--language", language, "--tasks", "path_type", "depth",
              "declared", "dataflow", "variable_name", "misuse", "declared_every", "path_type_ours",
              "--classes", "5", "--min-class-samples", "1", "--max-chars", "600", "--max-snippets", str(max_snippets),
              "--max-samples", "40", "--seed", "3"]
    assert main(common + ["--out", str(tmp_path / "one"), "--summary", str(tmp_path / "one" / "summary.json")]) == 0
    parts = [str(tmp_path / f"part{k}.json") for k in range(N)]
    for k in range(N):
        assert main(common + ["--shard", str(k), "--shards", str(N), "--summary", parts[k]]) == 0
    assert main(common + ["--merge", *parts, "--out", str(tmp_path / "merged"),
                          "--summary", str(tmp_path / "merged" / "summary.json")]) == 0
    files = sorted(p.relative_to(tmp_path / "one") for p in (tmp_path / "one").rglob("*") if p.is_file())
    assert len(files) > 8
    for rel in files:
        assert (tmp_path / "one" / rel).read_bytes() == (tmp_path / "merged" / rel).read_bytes(), rel
    summary = json.loads((tmp_path / "one" / "summary.json").read_text())
    assert summary["snippets_found"] > 3 and summary["snippets"] == (max_snippets or summary["snippets_found"])
    found = [json.loads(Path(p).read_text())["snippets_found"] for p in parts]
    assert sum(1 for f in found if f) > 1, found


def test_plans_family_shard_jobs_and_none_with_one_shard(tmp_path):
    """apirec: N scan shards, one select, N jedi shards and the merge; probing: N shards per language and its
    generate job; with 1 shard the families plan no shard job."""
    import re
    import subprocess
    import sys

    import yaml

    from tests.test_shards import REPO

    config = yaml.safe_load((REPO / ".test" / "params.yaml").read_text())
    config["families"] = [*config["families"], "probing"]
    config["probing"]["languages"] = ["java", "python"]
    plans = {}
    for name in ("corpus", "npm"):  # the local inputs .test names (planning checks they exist)
        (tmp_path / name).symlink_to(REPO / ".test" / name)
    for n in (1, N):
        config["apirec"]["shards"] = config["probing"]["shards"] = n
        (tmp_path / f"params{n}.yaml").write_text(yaml.safe_dump(config))
        res = subprocess.run([str(Path(sys.executable).parent / "snakemake"), "--snakefile", str(REPO / "Snakefile"),
                              "--directory", str(tmp_path), "--configfile", str(tmp_path / f"params{n}.yaml"), "-n",
                              "--cores", "1", "--forceall", "data/families/apirec/points.parquet",
                              "data/families/probing/java/summary.json", "data/families/probing/python/summary.json"],
                             capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
        plans[n] = res.stdout
    expected = [("apirec_points_scan_shard", N), ("apirec_points_select", 1), ("apirec_points_jedi_shard", N),
                ("apirec_points", 1)]
    for language in ("java", "python"):
        expected += [(f"probing_generate_{language}_shard", N), (f"probing_generate_{language}", 1)]
    for rule, count in expected:
        assert re.search(rf"^{rule}\s+{count}$", plans[N], re.M), rule
    for rule in ("apirec_points", "probing_generate_java", "probing_generate_python"):
        assert re.search(rf"^{rule}\s+1$", plans[1], re.M), rule
    assert not re.search(r"^\w+_(shard|select)\s+\d+$", plans[1], re.M)


@pytest.mark.slow
def test_apirec_on_dot_test_one_vs_four_shards_through_snakemake(tmp_path):
    """.test's apirec points built by Snakemake with apirec.shards 1 and 4 (jedi on every point): the
    same bytes, and the 4-shard build ran 2N + 2 jobs for them."""
    import re

    import yaml

    from tests.conftest import make_project, snakemake

    outputs = [f"data/families/apirec/{t}" for t in ("points.parquet", "baselines.parquet", "points.json")]
    built = {}
    for n in (1, N):
        root = make_project(tmp_path / f"apirec{n}")
        params = yaml.safe_load((root / "params.yaml").read_text())
        params["apirec"].update(shards=n, ide_max_points=0)
        (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        res = snakemake(root, outputs[0])
        built[n] = root
        log = res.stdout + res.stderr
        assert bool(re.search(rf"^apirec_points_jedi_shard\s+{N}$", log, re.M)) == (n > 1)
    for rel in outputs:
        assert (built[1] / rel).read_bytes() == (built[N] / rel).read_bytes(), rel
    assert json.loads((built[1] / outputs[2]).read_text())["ide_points"] > 10
