"""bench/scale/families.py's parts that decide its figures, on hand-made inputs (no build): the corpus maker (real
files only, distinct, tests and vendored copies out or last, nested scales, the same order every time), the
exponent fit, the matching of cost records to Snakemake jobs, and paper_estimate's arithmetic."""

from __future__ import annotations

import json
import math
import zipfile
from pathlib import Path

import pytest

from bench.scale import families as F
from bench.scale import paper_estimate as P

EXCLUDE = ["__pycache__/*", "_vendor/*", "testdata/*"]


def tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.fixture
def roots(tmp_path):
    stdlib = tree(tmp_path / "lib", {
        **{f"pkg{i}/mod{i}.py": f"def f{i}():\n    return {i}\n" for i in range(6)},
        "json/copy.py": "def f0():\n    return 0\n",  # the same content as pkg0/mod0.py: kept once
        "test/test_x.py": "def test_x():\n    pass\n",  # a test: tier 2
        "site-packages/foreign.py": "x = 1\n",  # not the standard library's
        "lib-dynload/stub.py": "y = 2\n",
        "empty/__init__.py": "\n",  # empty: the manifest would not count it as code
    })
    site = tree(tmp_path / "site", {
        **{f"lib{i}/core.py": f"class C{i}:\n    pass\n" for i in range(8)},
        "lib0/_vendor/six.py": "six = 6\n",  # vendored
        "lib1/tests/test_core.py": "def test_core():\n    assert True\n",
        "lib2/testdata/sample.py": "z = 3\n",  # manifest.exclude
        "lib3/big.py": "b = '" + "x" * 500 + "'\n",  # over max_bytes
    })
    src_zip = tmp_path / "src.zip"
    with zipfile.ZipFile(src_zip, "w") as z:
        for i in range(7):
            z.writestr(f"java.base/java/util/C{i}.java", f"class C{i} {{ void m() {{}} }}\n")
        z.writestr("java.base/java/util/Dup.java", "class C0 { void m() {} }\n")  # the same as C0.java
        z.writestr("java.desktop/README.txt", "not java\n")
    return stdlib, site, src_zip


def pools(roots, seed=0):
    stdlib, site, src_zip = roots
    return F.python_pool(seed, stdlib, site, EXCLUDE, 200), F.java_pool(seed, src_zip, EXCLUDE, 200)


def test_the_pools_hold_distinct_real_code_tests_last(roots):
    python, java = pools(roots)
    rels = [(e.source, e.rel) for e in python]
    assert len({Path(e.origin).read_bytes() for e in python}) == len(python)  # distinct contents
    assert ("py-site", "lib0/_vendor/six.py") not in rels and ("py-site", "lib2/testdata/sample.py") not in rels
    assert ("py-site", "lib3/big.py") not in rels and ("py-stdlib", "empty/__init__.py") not in rels
    assert not any(rel.startswith(("site-packages/", "lib-dynload/")) for _, rel in rels)
    assert len([r for r in rels if r[1] in ("pkg0/mod0.py", "json/copy.py")]) == 1
    tiers = [e.tier for e in python]
    assert tiers == sorted(tiers) and tiers.count(2) == 2  # the two tests come after every other file
    assert {e.source for e in python if e.tier == 1} == {"py-stdlib", "py-site"}  # one order over both
    assert len(python) == 6 + 8 + 2 - 0 and len(java) == 7  # 6 stdlib (one copy dropped), 8 site, 2 tests; 7 Java


def test_the_pools_are_deterministic_and_seeded(roots):
    a, b = pools(roots), pools(roots)
    assert a == b
    other = pools(roots, seed=1)
    assert [e.rel for e in other[0]] != [e.rel for e in a[0]] or [e.rel for e in other[1]] != [e.rel for e in a[1]]
    assert sorted(e.rel for e in other[0]) == sorted(e.rel for e in a[0])  # the same files, another order


def test_each_larger_corpus_holds_the_smaller(roots, tmp_path):
    python, java = pools(roots)
    listing = {}
    for scale in (1, 2, 4):
        dest = tmp_path / f"corpus-x{scale}"
        made = F.make_corpus(dest, python, java, 3 * scale if scale < 4 else len(python), scale + 1)
        files = {p.relative_to(dest).as_posix(): p.read_bytes() for p in dest.rglob("*") if p.is_file()}
        assert len(files) == made["files"] == made["python_files"] + made["java_files"]
        assert len(set(files.values())) == len(files)  # distinct
        assert {d.name for d in dest.iterdir()} == set(F.SOURCES)  # every source's folder, also an empty one
        listing[scale] = files
    assert listing[1].items() <= listing[2].items() <= listing[4].items()
    assert made["python_test_files"] == 2  # the whole pool: its tests too
    again = F.make_corpus(tmp_path / "again", python, java, 6, 3)
    assert again["list_sha256"] == F.make_corpus(tmp_path / "corpus-x2", python, java, 6, 3)["list_sha256"]
    with pytest.raises(SystemExit, match="pool holds 7 usable distinct files"):
        F.make_corpus(tmp_path / "too-many", python, java, 2, 8)


def test_the_exponent_fit():
    xs = [100, 400, 1600]
    fit = F.fit_power(xs, [3 * x ** 1.2 for x in xs])
    assert fit["b"] == pytest.approx(1.2, abs=1e-3) and fit["a"] == pytest.approx(3) and fit["r2"] == pytest.approx(1)
    assert F.fit_power(xs, [7.0, 7.0, 7.0])["b"] == 0  # a fixed cost
    noisy = F.fit_power(xs, [10, 42, 150])  # log-log least squares by hand
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in (10, 42, 150)]
    mx, my = sum(lx) / 3, sum(ly) / 3
    b = sum((a - mx) * (c - my) for a, c in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)
    assert noisy["b"] == pytest.approx(b, abs=1e-3) and 0.9 < noisy["r2"] < 1
    assert F.fit_power([100], [5]) is None and F.fit_power([100, 100], [5, 6]) is None
    assert F.fit_power(xs, [None, 0, 4]) is None  # a stage missing at a scale


LOG = """Select jobs to execute...
[Sat Nov 28 12:50:51 2026]
rule extract:
    input: data/manifest.parquet
    output: data/extract/usages.parquet, data/extract/imports.parquet
    log: logs/extract.log
    jobid: 5
    reason: Missing output files
    resources: tmpdir=/tmp
[Sat Nov 28 12:50:54 2026]
Finished jobid: 5 (Rule: extract)
localrule predict:
    input: data/families/apiquiz/quizzes.parquet, data/models/m
    output: data/predictions/apiquiz/all/m/0.parquet
    jobid: 9
    wildcards: family=apiquiz, subset=all, model=m, shard=0
rule apiquiz:
    input: data/extract/usages.parquet, data/extract/imports.parquet
    output: data/families/apiquiz/quizzes.parquet
    jobid: 7
"""


def test_records_are_matched_to_their_jobs():
    jobs = F.parse_jobs(LOG)
    assert [(j.rule, j.jobid, j.stage) for j in jobs] == [("extract", "5", "extract"), ("predict", "9", "predict[apiquiz]"),
                                                         ("apiquiz", "7", "apiquiz")]
    records = [
        {"module": "pipeline.extract.build", "args": ["--manifest", "data/manifest.parquet", "--usages",
         "data/extract/usages.parquet", "--imports", "data/extract/imports.parquet"], "cpu_s": 4.0, "wall_s": 3.0,
         "peak_rss_mb": 300.0},
        # the consumer names its producer's outputs too: it is still the consumer's record
        {"module": "pipeline.families.apiquiz.generate", "args": ["--usages", "data/extract/usages.parquet",
         "--imports", "data/extract/imports.parquet", "--out", "data/families/apiquiz/quizzes.parquet"],
         "cpu_s": 2.0, "wall_s": 2.0, "peak_rss_mb": 500.0},
        {"module": "pipeline.runtime.predict", "args": ["--out", "data/predictions/apiquiz/all/m/0.parquet"],
         "cpu_s": 1.5, "wall_s": 1.0, "peak_rss_mb": 900.0},
        {"module": "pipeline.preflight", "args": ["--python", "3.11.7"], "cpu_s": 0.1, "wall_s": 0.0, "peak_rss_mb": 15.0},
        {"module": "pipeline.preflight", "args": ["--python", "3.11.7"], "cpu_s": 0.1, "wall_s": 0.0, "peak_rss_mb": 14.0},
        {"module": "pipeline.report.build", "args": ["--out", "elsewhere"], "cpu_s": 1.0, "wall_s": 1.0, "peak_rss_mb": 1.0},
    ]
    stages = F.attribute(records, jobs)
    assert stages["extract"] == {"jobs": 1, "cpu_s": 4.0, "wall_s": 3.0, "peak_rss_mb": 300.0}
    assert stages["apiquiz"]["cpu_s"] == 2.0 and stages["predict[apiquiz]"]["peak_rss_mb"] == 900.0
    assert stages["preflight (one per job)"] == {"jobs": 2, "cpu_s": 0.2, "wall_s": 0.0, "peak_rss_mb": 15.0}
    assert stages["unmatched: report"]["jobs"] == 1


def results(cpu16: float, b: float, rss: float = 500.0, jobs: int = 1) -> dict:
    """A results JSON of two scales where one stage costs cpu16 CPU s at x16 and grows as files^b."""
    files = {"1": 1000, "16": 16000}
    stage = lambda s: {"jobs": jobs, "cpu_s": cpu16 * (files[s] / 16000) ** b, "wall_s": 1.0, "peak_rss_mb": rss}  # noqa: E731
    return {"scales": [1, 16], "corpus": {s: {"files": n, "python_files": n, "java_files": 0} for s, n in files.items()},
            "builds": {s: {"cpu_s": 2 * stage(s)["cpu_s"], "functions": {"python": 20 * files[s]}, "jobs": jobs,
                           "stages": {"extract": stage(s), "report": {**stage(s), "cpu_s": 100.0}}} for s in files},
            "max_items": 50, "models": ["m"], "cores": 2}


def test_paper_estimate_arithmetic():
    res = results(cpu16=16000 * 0.05, b=1.0)  # 50 ms a file at x16, linear
    res["fits"] = F.fits(res)
    est = P.estimate(res, functions=2_000_000, node_cores=32, node_mem_gb=128, job_hours=1.0, margin=0.75)
    assert est["files"] == 100_000  # 20 functions a file
    row = est["stages"]["extract"]
    assert row["cpu_h"] == pytest.approx(100_000 * 0.05 / 3600, rel=1e-6)  # linear: 5,000 CPU s
    assert row["shards"] == math.ceil(5000 / (0.75 * 3600))  # each shard under 45 minutes of one core
    assert est["stages"]["report"]["cpu_h"] == pytest.approx(100 / 3600)  # fixed stays fixed
    assert est["stages"]["report"]["shards"] is None and not est["stages"]["report"]["over_hour"]
    slow = P.estimate({**results(cpu16=3000, b=1.0), "fits": None}, functions=2_000_000, node_cores=32,
                      node_mem_gb=128, job_hours=1.0, margin=0.75)
    assert slow["stages"]["report"]["over_hour"] is False and slow["stages"]["extract"]["shards"] == 7
    text = P.markdown(est)
    assert "| extract |" in text and "100,000 files" in text


def test_paper_estimate_shards_a_stage_whose_shards_repeat_a_global_step(monkeypatch):
    """A shard that repeats a share r of one job (apiquiz's APIs and pools) needs more shards, and each added
    shard adds r of the job's CPU; a stage whose repeated share alone is over the limit cannot be split."""
    res = results(cpu16=16000 * 0.05, b=1.0)
    for build in res["builds"].values():
        build["stages"]["apiquiz"] = build["stages"].pop("extract")
    limit = 0.75 * 3600
    monkeypatch.setitem(P.SHARD_REPEATS, "apiquiz", 0.0)
    plain = P.estimate(res)["stages"]["apiquiz"]
    monkeypatch.setitem(P.SHARD_REPEATS, "apiquiz", 0.1)
    row = P.estimate(res)["stages"]["apiquiz"]
    per_job = 5000.0
    assert plain["shards"] == math.ceil(per_job / limit) == 2
    assert row["shards"] == math.ceil(0.9 * per_job / (limit - 0.1 * per_job)) == 3
    assert row["cpu_h"] * 3600 == pytest.approx(per_job * (1 + 0.1 * 2))
    assert row["job_wall_h"] * 3600 == pytest.approx(per_job * 1.2 / 3) and row["job_wall_h"] * 3600 < limit
    monkeypatch.setitem(P.SHARD_REPEATS, "apiquiz", 0.6)
    assert P.estimate(res)["stages"]["apiquiz"]["over_margin"]


def test_paper_estimate_pools_the_builds_of_other_runs():
    """--pool: runs of the same base and seed that built some stages again; those stages' b is fitted over every
    build of the results and of the pooled runs (marked in the table), the others keep theirs; another base is
    refused (its corpora are others)."""
    res = {**results(cpu16=800.0, b=1.3), "base": {"python_files": 1000}, "seed": 0}
    again = {**results(cpu16=800.0, b=0.7), "base": {"python_files": 1000}, "seed": 0}
    del again["builds"]["1"]["stages"]["report"], again["builds"]["16"]["stages"]["report"]
    est = P.estimate(res, pool=[again])
    assert est["stages"]["extract"]["b"] == pytest.approx(1.0, abs=0.01) and est["stages"]["extract"]["b_pooled"]
    assert est["stages"]["report"]["b"] == pytest.approx(0.0, abs=1e-9) and not est["stages"]["report"]["b_pooled"]
    assert est["stages"]["extract"]["cpu_s_measured"] == pytest.approx(800.0)  # the CPU is still the results'
    est["pooled_from"] = "again.json"
    assert "| extract | 1.00 (r² " in P.markdown(est) and "--pool again.json" in P.markdown(est)
    with pytest.raises(SystemExit, match="differs from the results in base"):
        P.estimate(res, pool=[{**again, "base": {"python_files": 900}}])


def test_runs_merge_by_scale_and_refuse_another_base(tmp_path):
    """A later run may add a scale to an earlier one (the corpora nest): the merge holds both, fits over all,
    and refuses runs whose base, seed or overlay differ; a run stopped after some scales says it is incomplete."""
    def run(scales, files, cpu, base=1000):
        return {"base": {"python_files": base, "java_files": 230}, "max_items": 50, "models": ["m"],
                "train_steps": None, "seed": 0, "scales": scales, "argv": [], "machine": {}, "bench_wall_s": 10.0,
                "corpus": {str(s): {"files": f} for s, f in zip(scales, files)},
                "builds": {str(s): {"functions": {"python": f * 20}, "cpu_s": c, "wall_s": c, "jobs": 3,
                                    "unrecorded_cpu_s": 1.0,
                                    "stages": {"extract": {"jobs": 1, "cpu_s": c, "peak_rss_mb": 100, "rows": f}}}
                           for s, f, c in zip(scales, files, cpu)}}

    merged = F.merge([run([1, 4], [100, 400], [10.0, 40.0]), run([8], [800], [80.0])])
    assert merged["scales"] == [1, 4, 8] and merged["bench_wall_s"] == 20.0 and len(merged["runs"]) == 2
    out = tmp_path / "m.json"
    import argparse

    F.save(merged, argparse.Namespace(json=out, md=tmp_path / "m.md"), None, complete=True)
    got = json.loads(out.read_text())
    assert got["fits"]["extract"]["cpu_vs_files"]["b"] == pytest.approx(1.0) and got["complete"]
    assert "x1 / x4 / x8" in (tmp_path / "m.md").read_text()
    with pytest.raises(ValueError, match="differ in base"):
        F.merge([run([1], [100], [10.0]), run([8], [800], [80.0], base=500)])
    with pytest.raises(ValueError, match="differ in targets"):  # a partial build's stages are not a whole build's
        F.merge([run([1], [100], [10.0]), {**run([8], [800], [80.0]), "targets": ["data/extract/usages.parquet"]}])
    assert F.merge([run([1], [100], [10.0]), {**run([8], [800], [80.0]), "targets": "default"}])["scales"] == [1, 8]
