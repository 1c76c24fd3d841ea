"""What a CodeSearchNet-sized build would cost, from a measured scaling run: CPU-hours, memory per job, SLURM
node-hours and the shard counts that keep every job under an hour on one node, per stage (docs/cluster.md,
"The path to paper scale").

Input: the results JSON of `python -m bench.scale.families` (CPU seconds, peak RSS and jobs per Snakemake rule
at each scale, the fitted exponents, the corpus's files and functions). The arithmetic, per stage:
  files      = functions / (functions per file: measured at the largest scale, or --functions-per-file)
  CPU        = CPU at the largest scale x (files / its files)^b, b the stage's fitted CPU exponent (at least 0;
               a stage measured at one scale only is taken as linear and marked)
  memory/job = peak RSS at the largest scale x (files per job / its files per job)^d, d the peak-RSS exponent
               (at least 0, at most 1): the largest process of a job (a job with a pool of W workers holds W more,
               each at most this)
  shards     = a shardable stage (the params' `shards` of scan, extract, identifiers, CodeSyntax labelling, apirec,
               probing and inference) whose job would run over `--margin` x `--job-hours` on one core is split
               into ceil(CPU per job / that) shards; any other stage over it is marked (it cannot be split). A stage
               whose every shard repeats a global step (SHARD_REPEATS: that share r of one job's CPU, measured) takes
               ceil((1 - r) CPU / (limit - r CPU)) shards, and its CPU grows by r CPU per added shard
  node-hours = each job's wall (its CPU on one core) over the jobs one node runs side by side: min(cores,
               node memory / memory per job)
plus, on SLURM, two Snakemake starts per job (~1.1 CPU s each, docs/cluster.md) on top. Inference is extrapolated
as measured: at the bench's fixed `--max-items` per model (the zoo and the items scored at paper scale are a
separate choice, on GPUs: docs/gpu_validation.md).

Usage:
  python -m bench.scale.paper_estimate results.json                       # the section, printed
  python -m bench.scale.paper_estimate results.json --write docs/cluster.md   # replace it in the file
  python -m bench.scale.paper_estimate results.json --functions 2000000 --node-cores 32 --node-mem-gb 128
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

START, END = "<!-- paper-estimate:start -->", "<!-- paper-estimate:end -->"
# rule -> the params key of its shard count (docs/cluster.md, "Corpus stages in shards", "Family generation in shards")
SHARDABLE = {
    "scan_source": "manifest.shards", "extract": "extract.shards", "identifiers": "identifiers.shards",
    "codesyntax_label": "codesyntax.shards", "apirec_points": "apirec.shards", "apirec_queries": "apirec.shards",
    "probing_generate_java": "probing.shards", "probing_generate_python": "probing.shards",
    "predict": "inference.shards", "apiquiz": "apiquiz.shards",
}
# rule -> the share of one job's CPU that each of its shards repeats (a global step every shard runs); a stage not
# named repeats nothing. apiquiz: every shard builds every API and the candidate pools, ~14 CPU s measured at 4,520
# files and on the default corpus (mostly fixed: the stdlib's names read, the tokenizer imported); grown linearly
# with the files to ~120,000 it is ~370 CPU s, 13% of the job's extrapolated ~2,900 (docs/cluster.md)
SHARD_REPEATS = {"apiquiz": 0.15}
TARGET_B = 1.1  # the target for every stage's CPU exponent
SNAKEMAKE_STARTS_CPU_S = 2.2  # per SLURM job: the submission's Snakemake and srun's (docs/cluster.md)


def rule_of(stage: str) -> str:
    return stage.split("[", 1)[0]


def pooled_fits(runs: list[dict]) -> dict:
    """Per stage: b in CPU = a x files^b fitted over every build of every run (`families.measured`: repeats
    included) that measured the stage."""
    from bench.scale.families import fit_power, measured

    points: dict[str, list[tuple[int, float]]] = {}
    for run in runs:
        for scale, build in measured(run):
            for stage, row in build["stages"].items():
                if row.get("cpu_s"):
                    points.setdefault(stage, []).append((run["corpus"][scale]["files"], row["cpu_s"]))
    return {stage: fit_power([f for f, _ in pts], [c for _, c in pts]) for stage, pts in points.items()}


def estimate(results: dict, functions: int = 2_000_000, functions_per_file: float | None = None,
             node_cores: int = 32, node_mem_gb: float = 128, job_hours: float = 1.0, margin: float = 0.75,
             pool: list[dict] | None = None) -> dict:
    """The paper-scale figures of every stage of `results` (a bench.scale.families JSON). `pool`: other runs of
    the same base and seed (`--targets`: a few stages built again); the stages they measured get their CPU exponent
    fitted over every build of `results` and of those runs (run-to-run noise averaged, not picked)."""
    from bench.scale.families import fits as fit_all, measured

    fits = dict(results.get("fits") or fit_all(results))
    replaced: dict[str, dict] = {}
    if pool:
        for run in pool:
            for key in ("base", "seed"):
                if run.get(key) != results.get(key):
                    raise SystemExit(f"--pool: a run differs from the results in {key} ({run.get(key)!r} against "
                                     f"{results.get(key)!r}): its corpora are others")
        pooled = pooled_fits([results, *pool])
        stages = {st for run in pool for _, build in measured(run) for st in build["stages"]}
        for stage in sorted(stages & set(fits)):
            if pooled.get(stage):
                fits[stage] = {**fits[stage], "cpu_vs_files": pooled[stage]}
                replaced[stage] = pooled[stage]
    top = str(max(results["scales"]))
    build, corpus = results["builds"][top], results["corpus"][top]
    measured_fpf = sum(build["functions"].values()) / corpus["files"] if build.get("functions") else None
    fpf = functions_per_file or measured_fpf
    if not fpf:
        raise SystemExit("the results hold no function count (CodeSyntax's summaries): give --functions-per-file")
    files = round(functions / fpf)
    ratio = files / corpus["files"]
    limit = job_hours * 3600 * margin
    stages, params = {}, {}
    for stage, row in build["stages"].items():
        if stage.startswith(("preflight", "unmatched")) or not row.get("jobs"):
            continue
        fit = (fits.get(stage) or {}).get("cpu_vs_files")
        b = 1.0 if fit is None else max(fit["b"], 0.0)
        rss_fit = (fits.get(stage) or {}).get("rss_vs_files")
        d = 0.0 if rss_fit is None else min(max(rss_fit["b"], 0.0), 1.0)
        cpu = row["cpu_s"] * ratio ** b
        jobs = row["jobs"]
        per_job = cpu / jobs
        rule = rule_of(stage)
        shards, over = None, False
        repeat = SHARD_REPEATS.get(rule, 0.0) * per_job  # what each shard of the job repeats
        if per_job > limit:
            if rule in SHARDABLE and repeat < limit:
                shards = math.ceil((per_job - repeat) / (limit - repeat))
                key = SHARDABLE[rule]
                params[key] = max(params.get(key, 1), shards)
                cpu = jobs * (per_job + repeat * (shards - 1))
            else:
                over = True
        n = jobs * (shards or 1)
        mem = row["peak_rss_mb"] * (ratio / (shards or 1)) ** d if ratio / (shards or 1) > 1 else row["peak_rss_mb"]
        side_by_side = max(1, min(node_cores, int(node_mem_gb * 1024 // max(mem, 1))))
        wall_h = cpu / n / 3600
        stages[stage] = {
            "b": None if fit is None else fit["b"], "b_assumed": fit is None, "b_pooled": stage in replaced,
            "rss_exponent": d,
            "r2": None if fit is None or fit["points"] < 3 else fit["r2"],
            "cpu_s_measured": row["cpu_s"], "cpu_h": cpu / 3600, "peak_rss_mb_measured": row["peak_rss_mb"],
            "mem_mb": mem, "jobs_measured": jobs, "shards": shards, "jobs": n, "job_wall_h": wall_h,
            "over_hour": over and wall_h > job_hours, "over_margin": over, "side_by_side": side_by_side,
            "node_h": n * wall_h / side_by_side, "shard_param": SHARDABLE.get(rule),
        }
    jobs = sum(s["jobs"] for s in stages.values())
    overhead_h = jobs * SNAKEMAKE_STARTS_CPU_S / 3600
    return {
        "source": {"scales": results["scales"], "base": results.get("base"), "max_items": results.get("max_items"),
                   "models": results.get("models"), "largest_scale_files": corpus["files"],
                   "largest_scale_functions": build.get("functions"), "placeholder": results.get("placeholder")},
        "functions": functions, "functions_per_file": fpf, "functions_per_file_measured": measured_fpf,
        "files": files, "extrapolation": ratio, "node_cores": node_cores, "node_mem_gb": node_mem_gb,
        "job_hours": job_hours, "margin": margin, "stages": stages, "shard_params": dict(sorted(params.items())),
        "cpu_h": sum(s["cpu_h"] for s in stages.values()) + overhead_h, "snakemake_overhead_h": overhead_h,
        "node_h": sum(s["node_h"] for s in stages.values()) + overhead_h / node_cores,
        "node_h_floor": (sum(s["cpu_h"] for s in stages.values()) + overhead_h) / node_cores,
        "jobs": jobs, "max_mem_mb": max((s["mem_mb"] for s in stages.values()), default=0),
        "longest_job_h": max((s["job_wall_h"] for s in stages.values()), default=0),
    }


def count(n) -> str:
    return "?" if n is None else f"{n:,}"


def markdown(est: dict, results_name: str = "results.json", placeholder: str | None = None) -> str:
    src = est["source"]
    base = src.get("base") or {}
    lines = [START, "", "### The paper-scale estimate", ""]
    if placeholder:
        lines += [f"**Placeholder: {placeholder}** Replace this section with the real measurement's (the commands "
                  "above); every figure in it comes from that run.", ""]
    lines += [
        f"Regenerate: `python -m bench.scale.paper_estimate {results_name}"
        + (f" --pool {est['pooled_from']}" if est.get("pooled_from") else "")
        + " --write docs/cluster.md` (the "
        "arithmetic: the script's docstring). Input: `python -m bench.scale.families` at scales "
        f"{', '.join(f'x{s}' for s in src['scales'])} of {count(base.get('python_files'))} Python + "
        f"{count(base.get('java_files'))} Java files, inference capped at {src.get('max_items')} items per model "
        f"({', '.join(src.get('models') or [])})."
        + (f" † b fitted over every build of this run and of {est['pooled_from']} (the same stages built again "
           "alone: run-to-run noise averaged, docs/cluster.md)." if est.get("pooled_from") else ""),
        "",
        f"**{est['functions']:,} functions** at {est['functions_per_file']:.1f} functions per file ("
        + ("given" if est["functions_per_file"] != est["functions_per_file_measured"] else "measured")
        + f"; the largest scale: {src['largest_scale_files']:,} files, "
        + ", ".join(f"{k} {v:,}" for k, v in sorted((src.get('largest_scale_functions') or {}).items()))
        + f" functions) = **{est['files']:,} files**, {est['extrapolation']:,.1f}x the largest measured corpus. "
        f"One node: {est['node_cores']} cores, {est['node_mem_gb']:g} GB; a job runs on one core; every job is kept "
        "under "
        f"{est['margin']:.0%} of {est['job_hours']:g} h.",
        "",
        "| stage (rule) | b | CPU s measured | CPU-hours | peak RSS MB measured | memory per job MB | jobs (shards) | "
        "wall per job h | node-hours |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    rows = sorted(est["stages"].items(), key=lambda kv: -kv[1]["cpu_h"])
    for stage, s in rows:
        b = "- (linear assumed)" if s["b_assumed"] else (
            f"{s['b']:.2f}" + ("" if s["r2"] is None else f" (r² {s['r2']:.2f})"))
        b = f"**{b}**" if not s["b_assumed"] and s["b"] > TARGET_B else b
        b += " †" if s.get("b_pooled") else ""
        jobs = f"{s['jobs']:,}" + (f" ({s['shard_param']} = {s['shards']})" if s["shards"] else "")
        flag = " **over the limit: not shardable**" if s["over_margin"] else ""
        lines.append(f"| {stage} | {b} | {s['cpu_s_measured']:,.1f} | {s['cpu_h']:,.2f} | "
                     f"{s['peak_rss_mb_measured']:,.0f} | {s['mem_mb']:,.0f} | {jobs} | {s['job_wall_h']:.2f}{flag} | "
                     f"{s['node_h']:,.2f} |")
    lines.append(f"| Snakemake starts on SLURM ({SNAKEMAKE_STARTS_CPU_S} CPU s x {est['jobs']:,} jobs) | | | "
                 f"{est['snakemake_overhead_h']:,.2f} | | | | | |")
    lines.append(f"| **total** | | | **{est['cpu_h']:,.1f}** | | **{est['max_mem_mb']:,.0f}** (largest) | "
                 f"{est['jobs']:,} | {est['longest_job_h']:.2f} (longest) | **{est['node_h']:,.1f}** |")
    over = [st for st, s in est["stages"].items() if s["over_margin"]]
    steep = [st for st, s in est["stages"].items() if not s["b_assumed"] and s["b"] > TARGET_B]
    shards = ", ".join(f"`{k}: {v}`" for k, v in est["shard_params"].items()) or "none (every job fits as it is)"
    lines += [
        "",
        f"Shard counts: {shards}. Node-hours: {est['node_h']:,.1f} with jobs packed per node by cores and memory "
        f"(the floor, CPU-hours over {est['node_cores']} cores: {est['node_h_floor']:,.1f}). "
        + (f"Over the limit and not shardable: {', '.join(over)}." if over else
           "No stage that cannot shard runs over the limit."),
        "",
        f"Read with care: the figures extrapolate {est['extrapolation']:,.1f}x beyond the largest measured corpus, so "
        "they are as good as the exponents over that range"
        + (f"; over b = {TARGET_B} (bold), the growth is steeper than linear at the measured scales: "
           f"{', '.join(steep)}." if steep else "; every stage's b is at most " + f"{TARGET_B}."),
        "",
        END,
    ]
    return "\n".join(lines)


def write_section(doc: Path, text: str) -> None:
    """Replace the section between the markers in `doc` (or append it)."""
    body = doc.read_text()
    if START in body and END in body:
        head, rest = body.split(START, 1)
        body = head + text + rest.split(END, 1)[1]
    else:
        body = body.rstrip("\n") + "\n\n" + text + "\n"
    doc.write_text(body)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.scale.paper_estimate", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", type=Path, nargs="?", help="a results JSON of python -m bench.scale.families --json")
    ap.add_argument("--functions", type=int, default=2_000_000,
                    help="functions of the target corpus (default 2,000,000: CodeSearchNet's size)")
    ap.add_argument("--functions-per-file", type=float, default=None,
                    help="instead of the measured figure (the default corpus: ~20.4, docs/cluster.md)")
    ap.add_argument("--node-cores", type=int, default=32, help="cores of one node (default 32)")
    ap.add_argument("--node-mem-gb", type=float, default=128, help="memory of one node, GB (default 128)")
    ap.add_argument("--job-hours", type=float, default=1.0, help="the most a job may run (default 1 h)")
    ap.add_argument("--margin", type=float, default=0.75,
                    help="keep each job under this share of --job-hours (default 0.75)")
    ap.add_argument("--pool", type=Path, nargs="+", default=None, metavar="JSON",
                    help="other results JSONs of the same base and seed (bench.scale.families --targets: a few stages "
                    "built again): the stages they measured get b fitted over every build of the results and of "
                    "these (marked †)")
    ap.add_argument("--placeholder", default=None, help="mark the section as a placeholder, saying why")
    ap.add_argument("--write", type=Path, default=None, help="replace the section in this Markdown file")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args(argv)
    if args.results is None:
        raise SystemExit("give a results JSON of `python -m bench.scale.families --json out.json` (bench/README.md)")
    results = json.loads(args.results.read_text())
    pool = [json.loads(p.read_text()) for p in args.pool] if args.pool else None
    est = estimate(results, args.functions, args.functions_per_file, args.node_cores, args.node_mem_gb,
                   args.job_hours, args.margin, pool)
    est["pooled_from"] = " ".join(map(str, args.pool)) if args.pool else None
    text = markdown(est, str(args.results), args.placeholder)
    print(text)
    if args.write:
        write_section(args.write, text)
        print(f"written: {args.write}")
    if args.json:
        args.json.write_text(json.dumps(est, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
