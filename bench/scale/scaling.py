"""How the pipeline's cost grows with the corpus: real Snakemake runs at 1x, 4x and 16x a base corpus.

Issue 14 item 1 (SPEC: "cost linear in corpus size"). The corpus at each scale is made of real,
distinct files: the running interpreter's standard library, its .py files ordered by a seeded hash
of their path, the first `base x scale` of them copied (folders kept, one repository per top-level
package), so every larger corpus contains the smaller ones and no file is duplicated (duplicates
are analysed once and would fake the result). Each scale gets its own project folder with a params
overlay of the repository's params.yaml (`--overlay` shows it), and the stages run one Snakemake
invocation each, in DAG order:

  manifest      fetch + scan + manifest of the corpus
  extract       libcst API extraction
  codesyntax    CodeSyntax labelling of every Python function (plain variant)
  baselines     CodeSyntax offset/keyword baselines and statistics over every edge
  apiquiz       API quizzes from the extraction
  inference     CodeSyntax attention of one model on a FIXED-size subset (cost should stay flat)
  warehouse     the DuckDB warehouse over every table

Per stage and scale: wall time, CPU time (the stage's processes: Snakemake and its jobs), peak RSS
(the largest process of the stage), bytes written under data/, jobs run; per scale: DAG planning
time (`snakemake -n` of the whole target list on the built project) and the no-op rerun. The slope
of each stage is its cost at the largest scale over its cost at 1x, beside the corpus ratio (16x
corpus: target <= 17x time; <= 2x peak memory for the streaming stages).

Usage: python -m bench.scale.scaling [--base 100] [--scales 1 4 16] [--dir DIR] [--plot docs/results/scaling.png]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from bench import work_dir

REPO = Path(__file__).resolve().parents[2]
SNAKEMAKE = Path(sys.executable).parent / "snakemake"

STAGES = {  # stage -> Snakemake targets (files or rules), run in this order
    "manifest": ["data/manifest.parquet"],
    "extract": ["data/extract/usages.parquet"],
    "codesyntax": ["data/families/codesyntax/plain/python/samples.parquet"],
    "baselines": ["data/families/codesyntax/plain/python/stats.json"],
    "apiquiz": ["apiquiz"],
    "inference": ["data/predictions/codesyntax/python/minilm/0.parquet"],
    "warehouse": ["data/warehouse.duckdb"],
}
STREAMING = ("manifest", "extract", "codesyntax", "baselines", "apiquiz", "warehouse")

# Runs a command and prints the resources of its whole process tree as JSON (RUSAGE_CHILDREN covers
# every descendant that was waited for: Snakemake and each of its jobs).
MEASURE = """
import json, resource, subprocess, sys, time
start = time.perf_counter()
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=open(sys.argv[0] + '.log', 'w')).returncode
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": rc, "wall": time.perf_counter() - start, "cpu": u.ru_utime + u.ru_stime, "rss_mb": u.ru_maxrss / 1024}))
"""


@dataclass(frozen=True)
class Measure:
    wall: float
    cpu: float
    rss_mb: float
    out_mb: float
    jobs: int


def stdlib_files(seed: int) -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    files = [p for p in root.rglob("*.py") if "site-packages" not in p.parts and "__pycache__" not in p.parts]
    return sorted(files, key=lambda p: hashlib.sha256(f"{seed}:{p.relative_to(root)}".encode()).hexdigest()), root


def make_corpus(dest: Path, n: int, seed: int) -> int:
    files, root = stdlib_files(seed)
    if n > len(files):
        raise SystemExit(f"the standard library has {len(files)} .py files; --base x max(--scales) asks for {n}")
    if dest.exists():
        shutil.rmtree(dest)
    for f in files[:n]:
        target = dest / f.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, target)
    return n


def overlay(corpus: Path, cache: Path) -> dict:
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["families"] = ["apiquiz", "codesyntax"]
    params["corpus"]["cache_dir"] = str(cache)
    params["corpus"]["sources"] = [{"name": "stdlib-sample", "kind": "local", "path": str(corpus), "repository": "top_dir"}]
    params["manifest"]["languages"] = ["python"]
    params["codesyntax"].update(languages=["python"], variants=["plain"])
    params["codesyntax"]["inference"]["max_items"] = 100  # fixed: inference cost should not grow with the corpus
    params["extract"]["cache_dir"] = str(cache / "extract")
    params["models"]["zoo"] = [e for e in params["models"]["zoo"] if e["name"] == "minilm"]  # no training here
    params["inference"].update(models=["minilm"], shards=1)
    params["datasets"] = []
    return params


def data_bytes(project: Path) -> int:
    data = project / "data"
    return sum(p.stat().st_size for p in data.rglob("*") if p.is_file() and "cache" not in p.parts) if data.exists() else 0


def snakemake_args(project: Path, *args: str) -> list[str]:
    return [str(SNAKEMAKE), "--snakefile", str(REPO / "Snakefile"), "--directory", str(project),
            "--configfile", str(project / "params.yaml"), "--cores", "2", *args]


def measured(project: Path, stage: str, args: list[str]) -> dict:
    script = project / f".measure-{stage}.py"
    script.write_text(MEASURE)
    res = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, check=True)
    out = json.loads(res.stdout.strip().splitlines()[-1])
    log = Path(str(script) + ".log").read_text()
    if out["rc"]:
        raise SystemExit(f"stage {stage} failed in {project}:\n{log[-3000:]}")
    steps = re.findall(r"(\d+) of (\d+) steps", log)
    out["jobs"] = int(steps[-1][1]) if steps else 0
    return out


def run_scale(project: Path, corpus: Path, cache: Path) -> tuple[dict[str, Measure], float, float]:
    if project.exists():
        shutil.rmtree(project)
    project.mkdir(parents=True)
    (project / "params.yaml").write_text(yaml.safe_dump(overlay(corpus, cache), sort_keys=False))
    stages = {}
    for stage, targets in STAGES.items():
        before = data_bytes(project)
        m = measured(project, stage, snakemake_args(project, *targets))
        stages[stage] = Measure(m["wall"], m["cpu"], m["rss_mb"], (data_bytes(project) - before) / 2**20, m["jobs"])
        print(f"  {stage:11s} {m['wall']:7.1f} s wall {m['cpu']:7.1f} s CPU {m['rss_mb']:7.0f} MB peak "
              f"{stages[stage].out_mb:7.1f} MB out {m['jobs']:4d} jobs", flush=True)
    every = [t for ts in STAGES.values() for t in ts]
    start = time.perf_counter()
    subprocess.run(snakemake_args(project, "-n", *every), capture_output=True, check=True)
    plan = time.perf_counter() - start
    start = time.perf_counter()
    res = subprocess.run(snakemake_args(project, *every), capture_output=True, text=True, check=True)
    noop = time.perf_counter() - start
    if "Nothing to be done" not in res.stdout + res.stderr:
        print("  warning: the rerun was not a no-op", flush=True)
    return stages, plan, noop


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.scale.scaling", description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", type=int, default=100, help="files of the 1x corpus")
    ap.add_argument("--scales", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--seed", type=int, default=0, help="orders the standard library's files")
    ap.add_argument("--dir", type=Path, help="corpora and projects go here (default: a fresh temporary folder)")
    ap.add_argument("--plot", type=Path, help="write a PNG of cost against corpus size")
    ap.add_argument("--overlay", action="store_true", help="print the params overlay of one scale and exit")
    args = ap.parse_args(argv)
    args.dir = work_dir(args.dir, "scaling")
    if args.overlay:
        print(yaml.safe_dump(overlay(args.dir / "corpus-x1", args.dir / "cache"), sort_keys=False))
        return 0
    results = {}
    for scale in args.scales:
        corpus = args.dir / f"corpus-x{scale}"
        n = make_corpus(corpus, args.base * scale, args.seed)
        print(f"x{scale}: {n} files, {sum(p.stat().st_size for p in corpus.rglob('*.py')) / 2**20:.1f} MB", flush=True)
        # a cache per scale: a smaller scale's extract cache would make the larger one look cheaper
        results[scale] = run_scale(args.dir / f"project-x{scale}", corpus, args.dir / f"cache-x{scale}")
        stages, plan, noop = results[scale]
        print(f"  DAG planning {plan:.1f} s, no-op rerun {noop:.1f} s", flush=True)

    lo, hi = min(args.scales), max(args.scales)
    ratio = hi / lo
    print(f"\nslope x{hi} / x{lo} (corpus {ratio:.0f}x; target: time <= {ratio + 1:.0f}x, streaming peak RSS <= 2x)")
    print(f"{'stage':11s} {'wall':>7s} {'CPU':>7s} {'RSS':>6s} {'out':>7s}")
    for stage in STAGES:
        a, b = results[lo][0][stage], results[hi][0][stage]
        flag = "" if b.rss_mb <= 2 * a.rss_mb or stage not in STREAMING else "  (memory grows)"
        print(f"{stage:11s} {b.wall / a.wall:6.1f}x {b.cpu / a.cpu:6.1f}x {b.rss_mb / a.rss_mb:5.2f}x "
              f"{b.out_mb / max(a.out_mb, 1e-9):6.1f}x{flag}")
    print(f"{'no-op':11s} {results[hi][2] / results[lo][2]:6.1f}x   ({results[hi][2]:.1f} s at x{hi})")
    # issue 14 item 5: the labelling rate of the real stage (Snakemake and job start-up included)
    print("\ncodesyntax labelling rate (functions over the stage's CPU seconds, i.e. per core when cores are not shared;"
          " and over wall x 2 cores)")
    for scale in args.scales:
        m = results[scale][0]["codesyntax"]
        summary = json.loads((args.dir / f"project-x{scale}" / "data/families/codesyntax/plain/python/summary.json").read_text())
        n = summary["functions_labelled"]
        print(f"  x{scale:<3d} {n:6d} functions  {n / m.cpu:6.0f} fn per CPU-s  {n / m.wall / 2:6.0f} fn/s per core (wall)")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
        xs = [args.base * s for s in args.scales]
        for stage in STAGES:
            ax1.plot(xs, [results[s][0][stage].cpu for s in args.scales], marker="o", label=stage)
            ax2.plot(xs, [results[s][0][stage].rss_mb for s in args.scales], marker="o", label=stage)
        ax1.plot(xs, [results[lo][0]["extract"].cpu * s / lo for s in args.scales], "k--", lw=0.8, label="linear (extract)")
        for ax, title in ((ax1, "CPU seconds"), (ax2, "peak RSS (MB)")):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("corpus files")
            ax.set_title(title)
        ax1.legend(fontsize=7)
        fig.tight_layout()
        args.plot.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(args.plot, dpi=110)
        print(f"plot: {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
