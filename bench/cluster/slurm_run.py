"""The `.test` build through the SLURM profile on a one-node local cluster, against the same build run
locally (issue 26): exit status, byte-identical Parquet, CPU seconds of both, warnings.

    sudo bench/cluster/slurm_cluster.sh start            # once: installs SLURM from Debian's packages, starts it
    python -m bench.cluster.slurm_run --out bench/results/slurm_run.json

CPU seconds are user + system: locally, Snakemake and every job it waited for; on the cluster, the
submitting Snakemake (and its local rules) plus everything slurmd started (slurmstepd, each job's
jobstep Snakemake and its command), read from a cpuacct cgroup slurmd is moved into (cgroup v1; on a
machine without one the node's share is reported as null). Wall time is not compared: on a shared
machine it measures the neighbours.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench import work_dir

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CGROUP = Path("/sys/fs/cgroup/cpuacct")
TICKS = os.sysconf("SC_CLK_TCK")


def prepare(workdir: Path) -> Path:
    """A fresh copy of .test's inputs (params, fixture corpus, npm registry folder)."""
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    for name in ("params.yaml", "corpus", "npm"):
        src = REPO / ".test" / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, workdir / name)
    return workdir


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def snakemake(workdir: Path, *args: str, log: Path, repo: Path = REPO) -> tuple[int, float]:
    """Run Snakemake (repo's Snakefile) in workdir; its exit status and the CPU seconds it and its children used."""
    before = children_cpu()
    with open(log, "w") as out:
        rc = subprocess.run([str(BIN / "snakemake"), "--snakefile", str(repo / "Snakefile"), "--directory", str(workdir),
                             *args], stdout=out, stderr=subprocess.STDOUT).returncode
    return rc, children_cpu() - before


class NodeCpu:
    """CPU seconds of everything slurmd starts, from a cpuacct cgroup it is moved into."""

    def __init__(self):
        self.group = CGROUP / f"slurm_run_{os.getpid()}"
        pid = subprocess.run(["pgrep", "-x", "slurmd"], capture_output=True, text=True).stdout.split()
        self.ok = CGROUP.is_dir() and bool(pid)
        if self.ok:
            try:
                self.group.mkdir(exist_ok=True)
                (self.group / "cgroup.procs").write_text(pid[0])
            except OSError:
                self.ok = False

    def seconds(self) -> float | None:
        if not self.ok:
            return None
        stat = dict(line.split() for line in (self.group / "cpuacct.stat").read_text().splitlines())
        return (int(stat["user"]) + int(stat["system"])) / TICKS


def digests(workdir: Path) -> dict[str, str]:
    return {str(p.relative_to(workdir)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((workdir / "data").rglob("*.parquet")) if "cache" not in p.parts}


def warnings(log: Path) -> list[str]:
    return sorted({line.strip() for line in log.read_text(errors="replace").splitlines()
                   if "warn" in line.lower() or "no wall time" in line.lower()})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.cluster.slurm_run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", type=Path, help="two .test copies go here (default: a fresh temporary folder)")
    ap.add_argument("--jobs", type=int, default=8, help="SLURM jobs in flight")
    ap.add_argument("--cores", type=int, default=2, help="cores of the local run, and of one grouped submission (the node's)")
    ap.add_argument("--local-from", type=Path, help="reuse a finished local run's folder (and --local-cpu)")
    ap.add_argument("--local-cpu", type=float, help="its CPU seconds")
    ap.add_argument("--project", type=Path,
                    help="build this checkout's own params (e.g. the default: a fresh clone beside ../shared) through "
                         "the profile instead of a .test copy; compare with --local-from (a finished local build of "
                         "the same commit) and --local-cpu (its CPU seconds, e.g. bench.run_cost's total)")
    ap.add_argument("--out", type=Path, help="the JSON report (printed too)")
    args = ap.parse_args(argv)
    args.workdir = work_dir(args.workdir, "slurm-run")
    if not shutil.which("sbatch"):
        ap.error("no SLURM here: run `sudo bench/cluster/slurm_cluster.sh start` first")

    if args.project and not args.local_from:
        ap.error("--project needs --local-from and --local-cpu (a finished local build of the same commit)")
    if args.local_from:
        local_dir, local_rc, local_cpu = args.local_from, 0, args.local_cpu
    else:
        local_dir = prepare(args.workdir / "local")
        local_rc, local_cpu = snakemake(local_dir, "--cores", str(args.cores), log=args.workdir / "local.log")
    repo = args.project.resolve() if args.project else REPO
    cluster_dir = repo if args.project else prepare(args.workdir / "cluster")
    args.workdir.mkdir(parents=True, exist_ok=True)
    node = NodeCpu()
    node_before = node.seconds()
    started = time.time()
    cluster_rc, login_cpu = snakemake(
        cluster_dir, "--profile", str(repo / "profiles" / "slurm"), "--jobs", str(args.jobs), "--cores", str(args.cores),
        # a test cluster: no accounting database (sacct, sacctmgr): squeue and no account
        "--slurm-no-account", "--slurm-status-command", "squeue", log=args.workdir / "cluster.log", repo=repo)
    node_cpu = None if node_before is None else node.seconds() - node_before
    local, cluster = digests(local_dir), digests(cluster_dir)
    differ = sorted(k for k in local.keys() | cluster.keys() if local.get(k) != cluster.get(k))
    cluster_cpu = login_cpu + (node_cpu or 0.0)
    report = {
        "local": {"rc": local_rc, "cpu_s": local_cpu},
        "cluster": {"rc": cluster_rc, "cpu_s": round(cluster_cpu, 1), "login_cpu_s": round(login_cpu, 1),
                    "node_cpu_s": node_cpu, "wall_s": round(time.time() - started, 1),
                    "sbatch_jobs": (args.workdir / "cluster.log").read_text().count("submitted with SLURM jobid")},
        "cpu_ratio": round(cluster_cpu / local_cpu, 3) if local_cpu and node_cpu is not None else None,
        "parquet_files": len(local),
        "parquet_differ": differ,
        "warnings": warnings(args.workdir / "cluster.log"),
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return 0 if local_rc == cluster_rc == 0 and not differ and local else 1


if __name__ == "__main__":
    sys.exit(main())
