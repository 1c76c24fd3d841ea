"""How long a build takes on N idle cores, predicted from a measured build's per-job costs (issue 34).

A list-scheduling simulation of `snakemake --cores N`: the DAG (jobs, their threads and priorities, edges)
comes from a dry run of this checkout (`snakemake -n --forceall` and `--dag`), each job's cost from a build's
cost log (`bench.cost.run_cost`: one record per job process, CPU seconds of the process and its pool). On an idle
machine a 1-thread job's wall time is its CPU time; a job that declares 2 threads runs its CPU time over
`SPEEDUP[rule]` (measured on the 2-idle-core default, docs/scaling.md: training 417.1 CPU-s in 235.8 s, test
perplexity 87.4 in 64.2, ...). A job's threads must all be free for it to start (Snakemake's rule: a 2-thread
job waits for both cores), and at every free core the ready job with the highest (priority, then the order
the measured build started it in) that fits is started: Snakemake's MILP job selection maximises the summed
priority first, then the cores used; among equal ones the measured order stands in for its solver's choice.

Levers are applied to the measured costs, not re-measured:
- `--threads-1 RULE ...`: those rules' jobs, measured at 2 threads, run at 1, their CPU time times
  `--one-thread-cpu` (default 0.85, an assumption: a 2-thread torch job spends some CPU spinning and
  synchronising; 1.0 bounds it);
- `--scale OUTPUT_GLOB=FACTOR` / `--cost OUTPUT_GLOB=CPU_S`: a job's cost scaled or set (more items for one
  model: from its per-item cost);
- jobs the cost log lacks take the first matching glob of `--costs FILE.json` (bench/cost/schedule_costs_default.json:
  the default run's stage costs split over their jobs), else `--default-cost` CPU-s (the output counts both);
- `--split RULE=N`: the rule's job as N equal parts side by side (what a report split could gain at most);
- priorities are whatever this checkout's rules declare (`priority:`), or none with `--no-priorities`.

Usage:
  python -m bench.cost.schedule_sim --cost-log ../build0/logs/cost.jsonl --snakemake-log ../build0/.snakemake/log/X.log
  python -m bench.cost.schedule_sim ... --no-priorities --threads-1 train_model evaluate_model --json out.json
  python -m bench.cost.schedule_sim ... --params ../build0/params.yaml --no-priorities   # the measured build's own plan

The result: predicted wall seconds, the cores' idle seconds, the last jobs (the tail), and the critical path.
"""

from __future__ import annotations

import argparse
import fnmatch
import heapq
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SNAKEMAKE = Path(sys.executable).parent / "snakemake"

# CPU-s over wall-s of a job declaring 2 threads on 2 idle cores (docs/scaling.md, "The default run on 2 idle
# cores"): training 417.1 / 235.8, test perplexity 87.4 / 64.2, CodeSyntax labelling and stats 120.4 / 86.5;
# the process-pool stages (extract, identifiers, scan) like the labelling.
SPEEDUP = {"train_model": 1.77, "evaluate_model": 1.36}
DEFAULT_SPEEDUP = 1.39
JOB_OVERHEAD_S = 0.3  # Snakemake's own latency per job (scheduling, shell, preflight): wall, one core


@dataclass
class Job:
    jobid: int
    rule: str
    outputs: tuple[str, ...]
    threads: int = 1
    priority: float = 0
    cpu_s: float = 0.0
    measured: bool = False
    order: float = float("inf")  # when the measured build started it (rank); ties in the selection
    deps: set[int] = field(default_factory=set)

    @property
    def key(self) -> str:
        return self.outputs[0] if self.outputs else self.rule

    def wall_s(self) -> float:
        speed = min(self.threads, SPEEDUP.get(self.rule, DEFAULT_SPEEDUP)) if self.threads > 1 else 1.0
        return self.cpu_s / speed + JOB_OVERHEAD_S


def dry_run(project: Path, params: Path | None, extra: list[str]) -> tuple[str, str]:
    """The dry run's job listing and its DAG (dot), planned as if nothing were built (--forceall): in the project,
    or with `params` as params.yaml in an empty folder (nothing is written into the project)."""
    with tempfile.TemporaryDirectory() as tmp:
        where = project
        if params is not None:
            shutil.copy(params, Path(tmp) / "params.yaml")
            where = Path(tmp)
        base = [str(SNAKEMAKE), "--snakefile", str(project / "Snakefile"), "--directory", str(where), "-n",
                "--forceall", "--cores", "2", *extra]
        listing = subprocess.run(base, capture_output=True, text=True, check=True).stdout
        dot = subprocess.run([*base, "--dag"], capture_output=True, text=True, check=True).stdout
    return listing, dot


_JOB_HEAD = re.compile(r"^(?:local)?(?:rule|checkpoint) (\S+):$")


def parse_jobs(listing: str) -> dict[int, Job]:
    """Jobs of a Snakemake job listing (a dry run's, or a build log's): rule, outputs, jobid, threads, priority."""
    jobs: dict[int, Job] = {}
    rule, fields = None, {}
    for line in listing.splitlines() + [""]:
        m = _JOB_HEAD.match(line.strip())
        if m or not line.strip() or line.startswith("["):
            if rule is not None and "jobid" in fields:
                jid = int(fields["jobid"])
                outs = tuple(o.strip() for o in fields.get("output", "").split(",") if o.strip())
                jobs[jid] = Job(jid, rule, outs, int(fields.get("threads", 1)), float(fields.get("priority", 0)))
            rule, fields = (m.group(1), {}) if m else (None, {})
            continue
        if rule is not None and ":" in line:
            k, _, v = line.strip().partition(":")
            fields[k.strip()] = v.strip()
    return jobs


def parse_edges(dot: str) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b in re.findall(r"^\s*(\d+)\s*->\s*(\d+)", dot, flags=re.M)]


def build_order(snakemake_log: Path) -> dict[str, int]:
    """Each job's first output -> the rank at which the measured build started it."""
    jobs = parse_jobs(snakemake_log.read_text())
    return {j.key: rank for rank, j in enumerate(jobs.values())}


def attach_costs(jobs: dict[int, Job], records: list[dict]) -> list[str]:
    """Each job's CPU-s: the records whose arguments name one of its outputs (the process and its pool). Returns
    the outputs of records no job claimed (a measured job this plan no longer has)."""
    by_path: dict[str, Job] = {}
    for j in jobs.values():
        for o in j.outputs:
            by_path[o.rstrip("/")] = j
    unclaimed = []
    for r in records:
        if r["module"].startswith("pipeline.preflight"):
            continue
        hit = None
        for a in r.get("args", []):
            if a.rstrip("/") in by_path:
                hit = by_path[a.rstrip("/")]
                break
        if hit is None:  # an output inside a JSON argument or an output folder's file
            text = " ".join(r.get("args", []))
            hit = next((j for p, j in by_path.items() if p in text), None)
        if hit is None:
            unclaimed.append(r["module"] + " " + " ".join(r.get("args", []))[:120])
            continue
        hit.cpu_s += r["cpu_s"] + r.get("children_cpu_s", 0.0)
        hit.measured = True
    return unclaimed


def split_jobs(jobs: dict[int, Job], rule: str, n: int) -> None:
    """Each job of `rule` becomes n equal parts with its dependencies; its dependants wait for all of them."""
    for j in [j for j in jobs.values() if j.rule == rule]:
        j.cpu_s /= n
        for k in range(1, n):
            part = Job(max(jobs) + 1, rule, tuple(f"{o}#part{k}" for o in j.outputs), j.threads, j.priority,
                       j.cpu_s, j.measured, j.order, set(j.deps))
            jobs[part.jobid] = part
            for other in jobs.values():
                if j.jobid in other.deps and other is not part:
                    other.deps.add(part.jobid)


def simulate(jobs: dict[int, Job], cores: int, use_priority: bool = True) -> dict:
    """Event-driven list scheduling; returns wall, busy and idle core-seconds, the finish times and the tail."""
    indeg = {j: len(job.deps) for j, job in jobs.items()}
    children: dict[int, list[int]] = {j: [] for j in jobs}
    for j, job in jobs.items():
        for d in job.deps:
            children[d].append(j)
    ready = [j for j, n in indeg.items() if n == 0]
    running: list[tuple[float, int]] = []
    free, t = cores, 0.0
    start, finish = {}, {}

    def rank(j: int):
        job = jobs[j]
        return (-(job.priority if use_priority else 0), job.order, j)

    while ready or running:
        ready.sort(key=rank)
        started = True
        while started:
            started = False
            for j in ready:
                need = min(jobs[j].threads, cores)
                if need <= free:
                    ready.remove(j)
                    free -= need
                    start[j] = t
                    heapq.heappush(running, (t + jobs[j].wall_s(), j))
                    started = True
                    break
        if not running:
            raise RuntimeError("no job can start: a job needs more cores than there are")
        t, j = heapq.heappop(running)
        free += min(jobs[j].threads, cores)
        finish[j] = t
        for c in children[j]:
            indeg[c] -= 1
            if indeg[c] == 0:
                ready.append(c)
    busy = sum(jobs[j].wall_s() * min(jobs[j].threads, cores) for j in jobs)
    wall = max(finish.values())
    tail = sorted(jobs, key=lambda j: -finish[j])[:8]
    return {"wall_s": round(wall, 1), "core_s_busy": round(busy, 1), "core_s_idle": round(wall * cores - busy, 1),
            "cpu_s": round(sum(j.cpu_s for j in jobs.values()), 1),
            "tail": [{"job": jobs[j].key, "rule": jobs[j].rule, "start": round(start[j], 1),
                      "end": round(finish[j], 1), "threads": jobs[j].threads} for j in tail],
            "start": start, "finish": finish}


def critical_path(jobs: dict[int, Job]) -> tuple[float, list[str]]:
    """The longest chain of job walls through the DAG (a lower bound on the wall time on any core count)."""
    memo: dict[int, tuple[float, list[int]]] = {}

    def longest(j: int):
        if j not in memo:
            best = max((longest(d) for d in jobs[j].deps), key=lambda x: x[0], default=(0.0, []))
            memo[j] = (best[0] + jobs[j].wall_s(), best[1] + [j])
        return memo[j]

    sys.setrecursionlimit(10000)
    total, path = max((longest(j) for j in jobs), key=lambda x: x[0])
    return round(total, 1), [jobs[j].key for j in path]


def load(project: Path, params: Path | None, cost_log: Path, snakemake_log: Path | None,
         extra: list[str]) -> tuple[dict[int, Job], list[str]]:
    listing, dot = dry_run(project, params, extra)
    jobs = parse_jobs(listing)
    for a, b in parse_edges(dot):  # dot edges: dependency -> dependant
        if a in jobs and b in jobs:
            jobs[b].deps.add(a)
    records = [json.loads(line) for line in cost_log.read_text().splitlines() if line.strip()]
    unclaimed = attach_costs(jobs, records)
    if snakemake_log is not None:
        order = build_order(snakemake_log)
        for j in jobs.values():
            j.order = order.get(j.key, float("inf"))
    return jobs, unclaimed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.cost.schedule_sim", description=__doc__.split("\n\n")[0])
    ap.add_argument("--project", type=Path, default=REPO, help="the checkout whose DAG is planned (default: this one)")
    ap.add_argument("--cost-log", type=Path, required=True, help="a build's cost log (bench.cost.run_cost: logs/cost.jsonl)")
    ap.add_argument("--snakemake-log", type=Path, help="that build's Snakemake log: its start order breaks ties")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--no-priorities", action="store_true", help="ignore the rules' priorities")
    ap.add_argument("--threads-1", nargs="*", default=[], metavar="RULE", help="rules run at 1 thread")
    ap.add_argument("--one-thread-cpu", type=float, default=0.85,
                    help="CPU at 1 thread over CPU at 2 threads of a --threads-1 rule (default 0.85)")
    ap.add_argument("--scale", nargs="*", default=[], metavar="GLOB=FACTOR", help="scale matching jobs' costs")
    ap.add_argument("--default-cost", type=float, default=1.0, help="CPU-s of a planned job the log does not hold")
    ap.add_argument("--costs", type=Path, help="JSON {output glob: CPU-s} for jobs the cost log lacks (first match)")
    ap.add_argument("--cost", nargs="*", default=[], metavar="GLOB=CPU_S",
                    help="set matching jobs' CPU-s (a job the measured build lacks, or a new cost per item)")
    ap.add_argument("--set-priority", nargs="*", default=[], metavar="RULE_OR_GLOB=N",
                    help="override priorities (a rule name, or a glob over outputs)")
    ap.add_argument("--split", nargs="*", default=[], metavar="RULE=N",
                    help="run a rule's job as N equal parts side by side (a split report's upper bound)")
    ap.add_argument("--params", type=Path, help="plan with this params.yaml (in an empty folder) instead of the project's")
    ap.add_argument("--config", nargs="*", default=[], help="Snakemake --config overrides for the plan")
    ap.add_argument("--json", type=Path, help="write the result here")
    args = ap.parse_args(argv)
    extra = ["--config", *args.config] if args.config else []
    jobs, unclaimed = load(args.project, args.params, args.cost_log, args.snakemake_log, extra)
    unmeasured = [j.key for j in jobs.values() if not j.measured and j.rule not in ("all",)]
    table = {k: v for k, v in json.loads(args.costs.read_text()).items() if not k.startswith("_")} if args.costs else {}
    estimated = 0
    for j in jobs.values():
        if not j.measured:
            match = next((v for g, v in table.items() if any(fnmatch.fnmatch(o, g) for o in j.outputs)), None)
            j.cpu_s = args.default_cost if match is None else float(match)
            estimated += match is not None
        if j.rule in args.threads_1:  # measured at 2 threads, run at 1 (whatever the plan says)
            j.cpu_s *= args.one_thread_cpu
            j.threads = 1
        for spec in args.cost:
            glob, _, value = spec.rpartition("=")
            if any(fnmatch.fnmatch(o, glob) for o in j.outputs):
                j.cpu_s, j.measured = float(value), True
        for spec in args.scale:
            glob, _, factor = spec.rpartition("=")
            if any(fnmatch.fnmatch(o, glob) for o in j.outputs):
                j.cpu_s *= float(factor)
        for spec in args.set_priority:
            what, _, value = spec.rpartition("=")
            if j.rule == what or any(fnmatch.fnmatch(o, what) for o in j.outputs):
                j.priority = float(value)
    for spec in args.split:
        rule, _, n = spec.rpartition("=")
        split_jobs(jobs, rule, int(n))
    result = simulate(jobs, args.cores, not args.no_priorities)
    cp, path = critical_path(jobs)
    out = {k: v for k, v in result.items() if k not in ("start", "finish")}
    out.update({"jobs": len(jobs), "critical_path_s": cp, "critical_path": path[-6:],
                "unmeasured_jobs": len(unmeasured), "estimated_from_table": estimated,
                "unclaimed_records": len(unclaimed)})
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps({**out, "unmeasured": unmeasured, "unclaimed": unclaimed}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
