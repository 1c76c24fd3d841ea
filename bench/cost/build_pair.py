"""The default build timed against a control build of an earlier commit, the same day, one after the other, each
alone on the machine: the README's build time and the speed bound's figure (docs/benchmarks.md, "The default run").

For each commit: a fresh clone beside this checkout's `../shared` (the given data), `make install` (not timed),
then `/usr/bin/time -v make run` (timed): Snakemake's own "Elapsed time" (the build), the whole command's wall,
user and system CPU seconds (Snakemake, every job and `python -m pipeline.adopt` where the commit has it) and
peak RSS of the largest process; and from the Snakemake log, the jobs and the job-seconds per rule (a job's wall
from its start line to its "Finished" line) and the last jobs (the tail). The ratio head / control of the build's
wall is the figure; the control says how fast the machine was that day (a machine's speed moves 1.2-1.4x between
days here). Time nothing else on the machine meanwhile: every wall time is then meaningless.

Usage:
  python -m bench.cost.build_pair --head HEAD --control cb7f68a --workdir DIR_BESIDE_SHARED \
      --out docs/results/default_run.json
  python -m bench.cost.build_pair --from-logs HEAD_LOG CONTROL_LOG --head-commit X --control-commit Y --out FILE
      (the figures from the two `/usr/bin/time -v make run` logs of builds already made)
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STAMP = re.compile(r"^\[(\w{3} \w{3}\s+\d+ [\d:]+ \d{4})\]$")


def log_jobs(text: str) -> dict[int, dict]:
    """Every job of one Snakemake log (its console output, or `.snakemake/log/*.snakemake.log`): {jobid: {rule,
    wildcards (a dict), start, end (None: not finished)}}, times from the log's stamps."""
    ts, rule, job, out = None, None, None, {}
    for line in text.splitlines():
        m = STAMP.match(line)
        if m:
            ts = dt.datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
            continue
        m = re.match(r"^(local)?rule (\w+):", line)
        if m:
            rule = m.group(2)
            continue
        m = re.match(r"^\s+jobid: (\d+)", line)
        if m and rule:
            job = int(m.group(1))
            out[job] = {"rule": rule, "wildcards": {}, "start": ts, "end": None}
            rule = None
            continue
        m = re.match(r"^\s+wildcards: (.*)", line)
        if m and job in out and not out[job]["wildcards"]:
            out[job]["wildcards"] = dict(kv.split("=", 1) for kv in m.group(1).split(", "))
            continue
        m = re.match(r"^Finished jobid: (\d+)", line)
        if m and int(m.group(1)) in out:
            out[int(m.group(1))]["end"] = ts
    return out


def parse_log(text: str) -> dict:
    """The figures of one `/usr/bin/time -v make run` log (Snakemake's console output with time's report after)."""
    lines = text.splitlines()
    found = log_jobs(text)
    start = {j: r["start"] for j, r in found.items()}
    rules = {j: r["rule"] for j, r in found.items()}
    end = {j: r["end"] for j, r in found.items() if r["end"] is not None}

    def value(pattern: str, cast=float):
        found = [re.search(pattern, ln) for ln in lines]
        found = [f for f in found if f]
        return cast(found[-1].group(1)) if found else None

    def seconds(text: str | None) -> float | None:
        if text is None:
            return None
        parts = [float(p) for p in text.split(":")]
        return sum(p * 60 ** i for i, p in enumerate(reversed(parts)))

    elapsed = seconds(value(r"^Elapsed time: ([\d:.]+)", str))
    t0 = min(start.values()) if start else None
    per_rule: dict = collections.Counter()
    jobs: dict = collections.Counter()
    tail = []
    for job, stop in end.items():
        if job in start:
            per_rule[rules[job]] += (stop - start[job]).total_seconds()
            jobs[rules[job]] += 1
            tail.append(((start[job] - t0).total_seconds(), (stop - t0).total_seconds(), rules[job]))
    tail.sort(key=lambda r: r[1])
    user, system = value(r"User time \(seconds\): ([\d.]+)"), value(r"System time \(seconds\): ([\d.]+)")
    return {
        "snakemake_elapsed_s": elapsed,
        "command_wall_s": seconds(value(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", str)),
        "user_cpu_s": user, "system_cpu_s": system,
        "cpu_s": None if user is None or system is None else round(user + system, 2),
        "peak_rss_mb": None if value(r"Maximum resident set size \(kbytes\): (\d+)") is None
        else round(value(r"Maximum resident set size \(kbytes\): (\d+)") / 1024),
        "jobs": sum(jobs.values()),
        "job_seconds_by_rule": {r: int(s) for r, s in per_rule.most_common()},
        "tail": [{"start_s": int(a), "end_s": int(b), "rule": r} for a, b, r in tail[-8:]],
    }


def build(commit: str, workdir: Path, name: str) -> str:
    """Clone this repository at `commit` into workdir/name, install (untimed), then time `make run`; the log."""
    folder = workdir / name
    subprocess.run(["git", "clone", "-q", str(REPO), str(folder)], check=True)
    subprocess.run(["git", "checkout", "-q", commit], cwd=folder, check=True)
    subprocess.run(["make", "install"], cwd=folder, check=True, stdout=subprocess.DEVNULL)
    done = subprocess.run(["/usr/bin/time", "-v", "make", "run"], cwd=folder, capture_output=True, text=True)
    log = done.stdout + done.stderr
    (workdir / f"{name}.log").write_text(log)
    if done.returncode:
        raise SystemExit(f"make run of {commit} failed (exit {done.returncode}); log: {workdir / f'{name}.log'}")
    return log


def result(head: dict, control: dict, head_commit: str, control_commit: str, how: str) -> dict:
    ratio = (head["snakemake_elapsed_s"] / control["snakemake_elapsed_s"]
             if head["snakemake_elapsed_s"] and control["snakemake_elapsed_s"] else None)
    return {"command": how, "date": dt.date.today().isoformat(),
            "head": {"commit": head_commit, **head}, "control": {"commit": control_commit, **control},
            "wall_ratio_head_over_control": None if ratio is None else round(ratio, 3),
            "cpu_ratio_head_over_control": round(head["cpu_s"] / control["cpu_s"], 3)
            if head["cpu_s"] and control["cpu_s"] else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.cost.build_pair", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--head", default="HEAD", help="the commit measured (default HEAD)")
    ap.add_argument("--control", help="the earlier commit built beside it")
    ap.add_argument("--workdir", type=Path, help="where the two clones go: a folder beside a `shared` folder (the data)")
    ap.add_argument("--from-logs", nargs=2, metavar=("HEAD_LOG", "CONTROL_LOG"), type=Path,
                    help="read two `/usr/bin/time -v make run` logs instead of building")
    ap.add_argument("--head-commit", help="with --from-logs: the commit of the first log")
    ap.add_argument("--control-commit", help="with --from-logs: the commit of the second log")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    if args.from_logs:
        head, control = (parse_log(p.read_text(errors="replace")) for p in args.from_logs)
        out = result(head, control, args.head_commit or "?", args.control_commit or "?",
                     "each commit: a fresh clone, `make install`, then `/usr/bin/time -v make run` alone; "
                     "`python -m bench.cost.build_pair --from-logs HEAD_LOG CONTROL_LOG` read the two logs")
    else:
        if not args.control or not args.workdir:
            ap.error("--control and --workdir are needed to build (or --from-logs)")
        head_commit = subprocess.run(["git", "rev-parse", "--short", args.head], cwd=REPO, capture_output=True,
                                     text=True, check=True).stdout.strip()
        head = parse_log(build(head_commit, args.workdir, "head"))
        control = parse_log(build(args.control, args.workdir, "control"))
        out = result(head, control, head_commit, args.control,
                     f"python -m bench.cost.build_pair --head {head_commit} --control {args.control} --workdir DIR "
                     f"--out {args.out}")
    args.out.write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")
    print(f"head {out['head']['snakemake_elapsed_s']:.0f} s, control {out['control']['snakemake_elapsed_s']:.0f} s: "
          f"{out['wall_ratio_head_over_control']}x the wall, {out['cpu_ratio_head_over_control']}x the CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
