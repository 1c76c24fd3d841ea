"""A no-op rebuild and DAG planning with the family registry, against Snakemake's own start-up.

Every run reads params.yaml, validates it against the composed schema (the central one plus each
family's fragment), imports the registry and plans the DAG; on a built project nothing runs. The
baseline, measured in the same run, is `snakemake --version` (interpreter and Snakemake start-up)
and a dry run of the bare spine target (`snakemake manifest -n`). Target: a no-op of the whole
DAG under 5 s.

Usage: python -m bench.cost.noop_rebuild [--project DIR] [--repeat 3]
(DIR: a built project, e.g. the repository itself after `make run`; without one, the .test
configuration is built into a temporary folder first, which takes about three minutes).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SNAKEMAKE = Path(sys.executable).parent / "snakemake"


def timed(args: list[str], project: Path, repeat: int) -> tuple[float, str]:
    times, out = [], ""
    for _ in range(repeat):
        start = time.perf_counter()
        res = subprocess.run([str(SNAKEMAKE), "--snakefile", str(REPO / "Snakefile"), "--directory", str(project),
                              *args], capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        out = res.stdout + res.stderr
        if res.returncode:
            raise SystemExit(f"snakemake {' '.join(args)} failed:\n{out[-2000:]}")
    return statistics.median(times), out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.cost.noop_rebuild", description=__doc__.splitlines()[0])
    ap.add_argument("--project", type=Path, default=None, help="a built project folder (default: build .test)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    tmp = None
    project = args.project
    if project is None:
        tmp = Path(tempfile.mkdtemp(prefix="noop-"))
        project = tmp / "project"
        shutil.copytree(REPO / ".test" / "corpus", project / "corpus")
        shutil.copy(REPO / ".test" / "params.yaml", project / "params.yaml")
        print("building .test into", project, flush=True)
        subprocess.run([str(SNAKEMAKE), "--snakefile", str(REPO / "Snakefile"), "--directory", str(project),
                        "--configfile", str(project / "params.yaml"), "--cores", "2", "--quiet"], check=True,
                       capture_output=True)
    config = ["--configfile", str(project / "params.yaml")]
    version, _ = timed(["--version"], project, args.repeat)
    spine, _ = timed(["manifest", "-n", "--cores", "2", *config], project, args.repeat)
    noop, out = timed(["--cores", "2", *config], project, args.repeat)
    nothing = "Nothing to be done" in out
    print(f"{'what':42s} {'median s':>9s} {'x start-up':>11s}")
    for what, t in (("snakemake --version (start-up)", version), ("dry run of the spine (manifest -n)", spine),
                    ("no-op rebuild of everything", noop)):
        print(f"{what:42s} {t:9.2f} {t / version:11.2f}")
    print(f"no-op reports nothing to do: {nothing}; target < 5 s: {'met' if noop < 5 and nothing else 'MISSED'}")
    if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
