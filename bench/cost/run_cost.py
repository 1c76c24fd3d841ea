"""The cost of a whole build, stage by stage (issue 28 item 5): CPU seconds, wall seconds and peak RSS of
every job, training and inference included, and of the build as a whole.

Runs `snakemake --cores N` in a project folder with PIPELINE_COST_LOG set, so every job
(`python -m pipeline.<module>`) appends its own record at exit (bench/cost/_costhook/sitecustomize.py: user + system CPU of the
process and of its process pool, wall, peak RSS). Jobs are summed per stage (the module they run); the
build's total CPU is Snakemake's and all its children's (`resource.RUSAGE_CHILDREN`). What the records do not
hold is split in two: Snakemake's own process (planning, scheduling, job bookkeeping, its metadata; read from
/proc/<pid>/stat while it runs, on Linux) and the rest, processes no record covers (each job's shell, the
jobs' interpreter teardown after their record, a Snakemake subprocess per `run:` job). Time a build alone: on
a shared machine read CPU seconds only.

Usage:
  python -m bench.cost.run_cost                         # the .test configuration, built into a temporary folder
  python -m bench.cost.run_cost --project . --cores 2   # the default run in this checkout (`make run`: ~20 min)
  python -m bench.cost.run_cost --project DIR --json out.json
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
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
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


class SelfCPU:
    """The CPU seconds (user + system) of one process alone, not its children's: polled from /proc/<pid>/stat
    until it exits (the last reading, at most `every` seconds before its end). None where /proc is missing."""

    def __init__(self, pid: int, every: float = 0.2):
        self.path, self.every, self.cpu_s = Path(f"/proc/{pid}/stat"), every, None
        self._tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def read(self) -> float | None:
        try:
            fields = self.path.read_text().rsplit(")", 1)[1].split()  # after "pid (comm)": state is field 3
        except (OSError, IndexError):
            return None
        return (int(fields[11]) + int(fields[12])) / self._tick  # utime, stime: fields 14 and 15

    def _poll(self) -> None:
        while (value := self.read()) is not None:
            self.cpu_s = value
            time.sleep(self.every)

    def result(self) -> float | None:
        self._thread.join(timeout=5)
        return None if self.cpu_s is None else round(self.cpu_s, 1)


def table(rows: list[dict], total_cpu: float, total_wall: float, snakemake_cpu: float | None = None) -> str:
    jobs_cpu = sum(r["cpu_s"] for r in rows)
    out = ["| stage | jobs | CPU s | share of CPU | job wall s (summed) | peak RSS MB |", "|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['stage']} | {r['jobs']} | {r['cpu_s']:,.1f} | {r['cpu_s'] / total_cpu:.3f} | "
                   f"{r['wall_s']:,.1f} | {r['peak_rss_mb']:,.0f} |")
    out.append(f"| Snakemake itself (planning, bookkeeping, local rules without a pipeline module) | | "
               f"{total_cpu - jobs_cpu:,.1f} | {(total_cpu - jobs_cpu) / total_cpu:.3f} | | |")
    if snakemake_cpu is not None:
        rest = total_cpu - jobs_cpu - snakemake_cpu
        out.append(f"| - of which Snakemake's own process | | {snakemake_cpu:,.1f} | {snakemake_cpu / total_cpu:.3f} | | |")
        out.append(f"| - of which processes no record covers (shells, jobs' teardown after their record, "
                   f"`run:` jobs' Snakemake) | | {rest:,.1f} | {rest / total_cpu:.3f} | | |")
    out.append(f"| **whole build** | {sum(r['jobs'] for r in rows)} | **{total_cpu:,.1f}** | 1.000 | "
               f"**{total_wall:,.1f} wall** | |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.cost.run_cost", description=__doc__,
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
    hook = str(REPO / "bench" / "cost" / "_costhook")  # sitecustomize.py: every Python process of the build logs its cost
    env = {**os.environ, "PIPELINE_COST_LOG": str(log),
           "PYTHONPATH": os.pathsep.join([hook, *filter(None, [os.environ.get("PYTHONPATH")])])}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.Popen([str(SNAKEMAKE), "--snakefile", str(REPO / "Snakefile"), "--directory", str(project),
                             "--cores", args.cores, *extra], env=env)
    own = SelfCPU(proc.pid)
    proc.wait()
    res = proc
    wall = time.monotonic() - start
    snakemake_cpu = own.result()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    total_cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []
    # Snakemake itself imports the pipeline (the Snakefile does): its own record and those of any Snakemake
    # subprocess are the build, not a stage
    records = [r for r in records if r["module"].startswith("pipeline.")]
    rows = summarise(records)
    text = table(rows, total_cpu, wall, snakemake_cpu)
    print(f"snakemake exit {res.returncode}; {len(records)} job processes (the preflight counted apart); {os.cpu_count()} cores on the machine, "
          f"load average at the end {os.getloadavg()[0]:.1f}")
    print(text)
    if args.json:
        from pipeline.io import write_json

        write_json({"exit": res.returncode, "wall_s": round(wall, 1), "cpu_s": round(total_cpu, 1),
                    "snakemake_process_cpu_s": snakemake_cpu, "stages": rows, "records": records}, args.json)
    if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)
    return res.returncode


if __name__ == "__main__":
    sys.exit(main())
