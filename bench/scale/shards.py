"""What sharding the corpus stages costs: real Snakemake runs of scan, extract, identifiers,
CodeSyntax labelling and the family generations that read files (apirec's points with their jedi
baseline, probing's methods) with every stage in 1 and in N shards (issue 26 item 5), on the bench
corpus of bench/scale/scaling.py (the running interpreter's standard library, the first `--files` .py files
in a seeded order, one repository per top-level package).

Each run gets its own project folder and its own analysis caches (a shared extract or identifiers
cache would make the second run look cheaper). Per stage: CPU seconds of Snakemake and every job it
ran (RUSAGE_CHILDREN; a CPU second is a CPU second on a shared machine, wall time is not), jobs run,
and after both runs the stage's outputs compared byte for byte. The overhead of N shards is the CPU
they cost over one job: N more Snakemake job starts and process pools, each shard reading the whole
manifest, and the merge.

Usage: python -m bench.scale.shards [--files 400] [--shards 4] [--dir DIR]
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import yaml

from bench import work_dir
from bench.scale.scaling import REPO, make_corpus, measured, overlay, snakemake_args

STAGES = {  # stage -> (params block, targets, outputs compared)
    "scan": ("manifest", ["data/manifest.parquet"],
             ["data/manifest.parquet", "data/rejects.parquet", "reports/metrics/manifest.json"]),
    "extract": ("extract", ["data/extract/usages.parquet"],
                [f"data/extract/{t}.parquet" for t in ("usages", "imports", "inventory", "rejects")]
                + ["reports/metrics/extract.json"]),
    "identifiers": ("identifiers", ["data/identifiers/sequences.parquet"],
                    ["data/identifiers/sequences.parquet", "data/identifiers/rejects.parquet",
                     "reports/metrics/identifiers.json"]),
    "codesyntax": ("codesyntax", ["data/families/codesyntax/plain/python/samples.parquet"],
                   [f"data/families/codesyntax/plain/python/{t}" for t in
                    ("samples.parquet", "relations.parquet", "rejects.parquet", "summary.json")]),
    "apirec": ("apirec", ["data/families/apirec/points.parquet"],
               [f"data/families/apirec/{t}" for t in ("points.parquet", "baselines.parquet", "points.json")]),
    "probing": ("probing", ["data/families/probing/python/summary.json"],
                [f"data/families/probing/python/{t}" for t in
                 ("summary.json", "samples.parquet", "depth/labels.parquet", "path_type/control.parquet")]),
}


def project_params(corpus: Path, project: Path, shards: int) -> dict:
    params = overlay(corpus, project / "cache")
    # bench.scale.scaling's overlay empties `datasets`, which idbench.dataset must name; none is fetched here
    params["datasets"] = yaml.safe_load((REPO / "params.yaml").read_text())["datasets"]
    params["apirec"]["domains"] = {}  # they name the default sources (pipeline.config.check_references)
    params["identifiers"]["cache_dir"] = str(project / "cache" / "identifiers")
    params["identifiers"]["languages"] = ["python"]
    params["families"] = [*params["families"], "apirec", "probing"]
    # the corpus is Python; the algorithm task reads a dataset, not the corpus
    params["probing"].update(languages=["python"], tasks=[t for t in params["probing"]["tasks"] if t != "algorithm"])
    for block, _, _ in STAGES.values():
        params[block]["shards"] = shards
    return params


def run(project: Path, corpus: Path, shards: int) -> dict[str, dict]:
    if project.exists():
        shutil.rmtree(project)
    project.mkdir(parents=True)
    (project / "params.yaml").write_text(yaml.safe_dump(project_params(corpus, project, shards), sort_keys=False))
    out = {}
    for stage, (_, targets, _) in STAGES.items():
        out[stage] = measured(project, stage, snakemake_args(project, *targets))
        print(f"  {stage:11s} {out[stage]['cpu']:7.1f} CPU-s {out[stage]['wall']:7.1f} s wall "
              f"{out[stage]['rss_mb']:6.0f} MB peak {out[stage]['jobs']:3d} jobs", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.scale.shards", description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=400, help="standard-library files in the corpus")
    ap.add_argument("--shards", type=int, default=4, help="shards of the sharded run (the other has 1)")
    ap.add_argument("--seed", type=int, default=0, help="orders the standard library's files")
    ap.add_argument("--dir", type=Path, help="corpus and projects go here (default: a fresh temporary folder)")
    args = ap.parse_args(argv)
    args.dir = work_dir(args.dir, "shards")
    corpus = args.dir / "corpus"
    make_corpus(corpus, args.files, args.seed)
    size = sum(p.stat().st_size for p in corpus.rglob("*.py")) / 2**20
    print(f"corpus: {args.files} standard-library files, {size:.1f} MB", flush=True)
    results, projects = {}, {}
    for n in (1, args.shards):
        print(f"{n} shard(s):", flush=True)
        projects[n] = args.dir / f"project-{n}"
        results[n] = run(projects[n], corpus, n)
    a, b = results[1], results[args.shards]
    print(f"\n{'stage':11s} {'CPU 1':>8s} {f'CPU {args.shards}':>8s} {'ratio':>6s} {'jobs':>9s}  outputs")
    same_all = True
    for stage, (_, _, outputs) in STAGES.items():
        same = all((projects[1] / o).read_bytes() == (projects[args.shards] / o).read_bytes() for o in outputs)
        same_all &= same
        print(f"{stage:11s} {a[stage]['cpu']:8.1f} {b[stage]['cpu']:8.1f} {b[stage]['cpu'] / a[stage]['cpu']:5.2f}x "
              f"{a[stage]['jobs']:3d} -> {b[stage]['jobs']:3d}  {'byte-identical' if same else 'DIFFER'}")
    total_a, total_b = sum(m["cpu"] for m in a.values()), sum(m["cpu"] for m in b.values())
    print(f"{'all':11s} {total_a:8.1f} {total_b:8.1f} {total_b / total_a:5.2f}x")
    return 0 if same_all else 1


if __name__ == "__main__":
    sys.exit(main())
