"""The cost of a whole build, stage by stage (issue 28 item 5): CPU seconds, wall seconds and peak RSS of
every job, training and inference included, and of the build as a whole.

Runs `snakemake --cores N` in a project folder with PIPELINE_COST_LOG set, so every job
(`python -m pipeline.<module>`) appends its own record at exit (bench/_costhook/sitecustomize.py: user + system CPU of the
process and of its process pool, wall, peak RSS). Jobs are summed per stage (the module they run); the
build's total CPU is Snakemake's and all its children's (`resource.RUSAGE_CHILDREN`), so the difference is
Snakemake's own planning and bookkeeping. Time a build alone: on a shared machine read CPU seconds only.

Usage:
  python -m bench.run_cost                         # the .test configuration, built into a temporary folder
  python -m bench.run_cost --project . --cores 2   # the default run in this checkout (`make run`: ~20 min)
  python -m bench.run_cost --project DIR --json out.json
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SNAKEMAKE = Path(sys.executable).parent / "snakemake"

# module -> the stage it belongs to in the table (anything else is named by its module)
STAGES = {
    "pipeline.corpus.fetch": "fetch sources", "pipeline.datasets.fetch": "fetch datasets",
    "pipeline.manifest.scan": "scan", "pipeline.extract.build": "extract", "pipeline.manifest.build": "manifest",
    "pipeline.manifest.evaluation": "evaluation-size check", "pipeline.identifiers.build": "identifiers",
    "pipeline.models.tokenizer_train": "train tokenizer", "pipeline.models.train": "train models",
    "pipeline.models.evaluate": "evaluate models", "pipeline.models.cards": "model cards",
    "pipeline.models.gguf": "convert GGUF", "pipeline.runtime.predict": "inference (predict)",
    "pipeline.fit": "fit probes", "pipeline.fit.index": "fit probes", "pipeline.fit.items": "fit probes",
    "pipeline.preflight": "preflight (one per job)", "pipeline.warehouse.build": "warehouse",
    "pipeline.report.build": "report",
}


def stage_of(module: str) -> str:
    module = module.removesuffix(".__main__")  # `python -m pipeline.fit` runs pipeline.fit.__main__
    if module in STAGES:
        return STAGES[module]
    parts = module.split(".")
    if len(parts) >= 3 and parts[1] == "families":
        return f"{parts[2]}: {'.'.join(parts[3:]) or 'main'}"
    return module.removeprefix("pipeline.")


def summarise(records: list[dict]) -> list[dict]:
    by = collections.defaultdict(lambda: {"jobs": 0, "cpu_s": 0.0, "wall_s": 0.0, "peak_rss_mb": 0.0})
    for r in records:
        row = by[stage_of(r["module"])]
        row["jobs"] += 1
        row["cpu_s"] += r["cpu_s"]
        row["wall_s"] += r["wall_s"]
        row["peak_rss_mb"] = max(row["peak_rss_mb"], r["peak_rss_mb"])
    rows = [{"stage": k, **{f: round(v, 1) if isinstance(v, float) else v for f, v in d.items()}}
            for k, d in by.items()]
    return sorted(rows, key=lambda r: (-r["cpu_s"], r["stage"]))


def table(rows: list[dict], total_cpu: float, total_wall: float) -> str:
    jobs_cpu = sum(r["cpu_s"] for r in rows)
    out = ["| stage | jobs | CPU s | share of CPU | job wall s (summed) | peak RSS MB |", "|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['stage']} | {r['jobs']} | {r['cpu_s']:,.1f} | {r['cpu_s'] / total_cpu:.3f} | "
                   f"{r['wall_s']:,.1f} | {r['peak_rss_mb']:,.0f} |")
    out.append(f"| Snakemake itself (planning, bookkeeping, local rules without a pipeline module) | | "
               f"{total_cpu - jobs_cpu:,.1f} | {(total_cpu - jobs_cpu) / total_cpu:.3f} | | |")
    out.append(f"| **whole build** | {sum(r['jobs'] for r in rows)} | **{total_cpu:,.1f}** | 1.000 | "
               f"**{total_wall:,.1f} wall** | |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.run_cost", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--project", type=Path, default=None,
                    help="the project folder to build (its params.yaml); default: .test in a temporary folder")
    ap.add_argument("--cores", default="2")
    ap.add_argument("--json", type=Path, default=None, help="also write the records and the table here")
    ap.add_argument("snakemake_args", nargs="*", help="more arguments for snakemake (after --)")
    args = ap.parse_args(argv)
    tmp = None
    project, extra = args.project, list(args.snakemake_args)
    if project is None:
        tmp = Path(tempfile.mkdtemp(prefix="cost-"))
        project = tmp / "project"
        shutil.copytree(REPO / ".test", project)
        extra = ["--configfile", str(project / "params.yaml"), *extra]
    project = project.resolve()
    log = project / "logs" / "cost.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.unlink(missing_ok=True)
    hook = str(REPO / "bench" / "_costhook")  # sitecustomize.py: every Python process of the build logs its cost
    env = {**os.environ, "PIPELINE_COST_LOG": str(log),
           "PYTHONPATH": os.pathsep.join([hook, *filter(None, [os.environ.get("PYTHONPATH")])])}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    res = subprocess.run([str(SNAKEMAKE), "--snakefile", str(REPO / "Snakefile"), "--directory", str(project),
                          "--cores", args.cores, *extra], env=env)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    total_cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []
    # Snakemake itself imports the pipeline (the Snakefile does): its own record and those of any Snakemake
    # subprocess are the build, not a stage
    records = [r for r in records if r["module"].startswith("pipeline.")]
    rows = summarise(records)
    text = table(rows, total_cpu, wall)
    print(f"snakemake exit {res.returncode}; {len(records)} job processes (the preflight counted apart); {os.cpu_count()} cores on the machine, "
          f"load average at the end {os.getloadavg()[0]:.1f}")
    print(text)
    if args.json:
        from pipeline.io import write_json

        write_json({"exit": res.returncode, "wall_s": round(wall, 1), "cpu_s": round(total_cpu, 1),
                               "stages": rows, "records": records}, args.json)
    if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)
    return res.returncode


if __name__ == "__main__":
    sys.exit(main())
