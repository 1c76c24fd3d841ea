"""Adopt a Snakemake build into DVC so that neither tool has anything to do: `python -m pipeline.adopt`.

After `snakemake` (or `make run`) built the workspace, `dvc commit -f` records every stage's deps and outs in
dvc.lock without running anything. It also rewrites the cached outs from DVC's cache, so they get new
mtimes, while the one uncached out (the metric reports/metrics/scores.json) keeps its old one: Snakemake
then finds the report older than its inputs and plans it again. So this runs `dvc commit -f` and then
`snakemake --touch` over the same targets, which runs no job and gives every output an mtime after its
inputs', in DAG order. DVC compares content, so it stays up to date (docs/dvc.md, "The flows").
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path


def tool(name: str) -> str:
    """The tool beside this interpreter (the project's .venv), else the one on PATH."""
    here = Path(sys.executable).with_name(name)
    found = str(here) if here.exists() else shutil.which(name)
    if not found:
        raise SystemExit(f"adopt: `{name}` not found beside {sys.executable} nor on PATH: run `make install`")
    return found


def run(cmd: list[str], cwd: Path) -> None:
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if res.returncode != 0:
        lines = [line.strip() for line in (res.stderr + res.stdout).splitlines() if line.strip()]
        why = next((line for line in lines if line.startswith(("ERROR", "Error", "MissingInputException"))),
                   lines[-1] if lines else "")
        raise SystemExit(f"adopt: `{Path(cmd[0]).name} {' '.join(cmd[1:3])}` failed in {cwd}: {why}")


def snakemake_targets(project: Path, stages: list[str]) -> list[str]:
    """The Snakemake targets the stages' commands build (`snakemake <targets> --cores all`; every stage when none)."""
    import yaml

    defined = (yaml.safe_load((project / "dvc.yaml").read_text()) or {}).get("stages") or {}
    unknown = [s for s in stages if s not in defined]
    if unknown:
        raise SystemExit(f"adopt: no stage {', '.join(unknown)} in {project / 'dvc.yaml'} "
                         f"(stages: {', '.join(defined)})")
    targets: list[str] = []
    for name in stages or list(defined):
        words = defined[name]["cmd"].split()
        targets += [w for w in words[1:words.index("--cores")] if w not in targets]
    return targets


def adopt(project: Path, stages: list[str]) -> None:
    targets = snakemake_targets(project, stages)
    run([tool("dvc"), "commit", "--force", *stages], project)
    run([tool("snakemake"), "--touch", "--cores", "1", *targets], project)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.adopt", description=__doc__.split("\n\n")[0])
    ap.add_argument("stages", nargs="*", help="the dvc.yaml stages to adopt (default: every stage)")
    ap.add_argument("--project", type=Path, default=Path.cwd(), help="the project folder (default: here)")
    args = ap.parse_args(argv)
    adopt(args.project, args.stages)
    print("adopted: `dvc status` and `snakemake -n` have nothing to do")
    return 0


if __name__ == "__main__":
    sys.exit(main())
