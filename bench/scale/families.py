"""How every stage's cost grows with the corpus, every family on: whole Snakemake builds at 1x, 4x and 16x a
corpus of real Python and Java files, each job's CPU seconds and peak RSS, and the exponent b of CPU = a * files^b
per Snakemake rule.

The corpus at scale s holds s x `--python-files` Python files and s x `--java-files` Java files, all distinct
(by content) and real, from pinned local code only (nothing is downloaded; the default corpus's PyPI and npm
sources are left out, and so is JavaScript):
  py-stdlib  the running interpreter's standard library (.py; its tests, lib-dynload, ensurepip and site-packages
             left out, as the default's `builtin: stdlib` source leaves them)
  py-site    the .py files of this interpreter's site-packages (the project's .venv, pinned by requirements.lock),
             without tests (test/tests folders, test_*.py, *_test.py, conftest.py) and vendored copies (_vendor,
             vendor, vendored, third_party, extern folders)
  jdk-src    every module of the JDK's lib/src.zip (found as the `builtin: jdk` source finds it)
Files the manifest would drop are left out before counting (params.yaml manifest.exclude, files over
corpus.limits.max_file_bytes, empty or non-UTF-8 files), and of files with the same content only the first is
kept. Python files are taken in ONE seeded order over the standard library and site-packages together, so every
scale has the same mix (a stdlib-first order would make 1x mostly stdlib and 16x mostly site-packages, and the
exponent would measure the change of mix); test files come after all the others (tier 2), drawn only when a
scale asks for more files than the rest holds (the JSON counts them per scale). Java files: one seeded order over
all modules. The corpus at every scale is the first files of these orders, so each larger corpus holds the
smaller ones.

Each scale is its own project folder (own analysis caches: a smaller scale's cache would make a larger one look
cheaper) built by ONE `snakemake --cores N` of the default target (every family in params.yaml, the warehouse
and the report) with params.yaml overlaid (`--overlay` prints it): the three sources above; the zoo cut to one
trained model and its random twin (`--models`: code-mlm, a masked LM, which every family scores); every
family's inference capped at `--max-items` items per model (so the generation stages, not inference, grow with
the corpus); training on the params' fixed budget (training.data.max_train_bytes bytes, fixed steps); the
evaluation-size checks made warnings (small scales).
Every job records its own CPU seconds (user + system, its process pool's included) and peak RSS at exit
(bench/cost/_costhook, as bench.cost.run_cost); each record is matched to its Snakemake job through the job's
output paths in its arguments (Snakemake's log names every job's rule, inputs and outputs), and summed per rule
(`predict[family]`, ... for the rules with a family wildcard). Per stage and scale: jobs, CPU seconds, peak RSS
(the largest process of any of its jobs), rows of its Parquet outputs (per job the largest output, summed over
jobs); then b per stage by least squares of log CPU on log files over the scales (target: b <= 1.1).

The results JSON feeds `python -m bench.scale.paper_estimate` (CPU-hours, memory and SLURM node-hours of a
CodeSearchNet-sized build, docs/cluster.md). Run the measurement alone on the machine: on a shared one only the
CPU seconds compare. Each scale's data/, corpus and caches are removed once measured (its logs and params stay;
`--keep` keeps all).

Usage:
  python -m bench.scale.families --dir DIR --json out.json --md out.md          # 1x/4x/16x of 1,000 Py + 230 Java
  python -m bench.scale.families --python-files 125 --java-files 29 ...         # the same, the base cut by 8
  python -m bench.scale.families --table out.json                               # the Markdown table of a JSON
  python -m bench.scale.families --overlay                                      # the params overlay of one scale
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import math
import os
import re
import resource
import shutil
import subprocess
import sys
import sysconfig
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from bench import work_dir

REPO = Path(__file__).resolve().parents[2]
SNAKEMAKE = Path(sys.executable).parent / "snakemake"
HOOK = REPO / "bench" / "cost" / "_costhook"

STDLIB_SKIP_TOPS = ("site-packages", "lib-dynload", "ensurepip", "__pycache__")  # and config-*
TEST_DIRS = frozenset({"test", "tests", "idle_test"})
VENDOR_DIRS = frozenset({"_vendor", "vendor", "vendored", "_vendored", "third_party", "extern", "_extern",
                         "site-packages", "__pycache__", "node_modules"})
SOURCES = {"py-stdlib": "top_dir", "py-site": "top_dir", "jdk-src": "dir:4"}  # source -> repository mode
# one trained model and its random twin; a masked LM, the one kind every family scores (CodeSyntax leaves causal LMs
# out: their attention cannot look ahead from a head word to its dependent)
ZOO = ["code-mlm", "code-mlm-random"]


@dataclass(frozen=True)
class Entry:
    """One corpus file: its source, where it is read from (a file, or a member of `archive`), its path in the
    source, and its tier (1: code; 2: tests, drawn only past tier 1)."""
    source: str
    rel: str
    origin: str
    tier: int = 1
    archive: str | None = None


def seeded_key(seed: int, source: str, rel: str) -> str:
    return hashlib.sha256(f"{seed}:{source}:{rel}".encode()).hexdigest()


def is_test(rel: str) -> bool:
    parts = rel.split("/")
    name = parts[-1]
    return (any(p in TEST_DIRS for p in parts[:-1]) or name.startswith("test_") or name.endswith("_test.py")
            or name == "conftest.py")


def keeps(rel: str, data: bytes, exclude: list[str], max_bytes: int) -> bool:
    """A file the manifest keeps as code: not excluded (manifest.exclude, on the path and its folder tails), not
    over the size limit, not empty, UTF-8."""
    from pipeline.manifest.scan import excluded_by

    if len(data) > max_bytes or not data.strip() or excluded_by(rel, exclude):
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _distinct(candidates: list[tuple[str, Entry]], read, exclude: list[str], max_bytes: int) -> list[Entry]:
    """`candidates` (seeded key, entry) in key order, without the files the manifest drops and without repeated
    contents (the first in the order is kept)."""
    seen: set[str] = set()
    out = []
    for _, entry in sorted(candidates, key=lambda c: c[0]):
        data = read(entry)
        digest = hashlib.sha256(data).hexdigest()
        if digest in seen or not keeps(entry.rel, data, exclude, max_bytes):
            continue
        seen.add(digest)
        out.append(entry)
    return out


def python_pool(seed: int, stdlib: Path, site: Path, exclude: list[str], max_bytes: int) -> list[Entry]:
    """Every usable Python file of the standard library and site-packages: tier 1 (not tests, not vendored) in
    one seeded order over both, then tier 2 (tests) in its own seeded order; distinct contents."""
    tiers: dict[int, list[tuple[str, Entry]]] = {1: [], 2: []}
    for source, root in (("py-stdlib", stdlib), ("py-site", site)):
        for path in root.rglob("*.py"):
            rel = path.relative_to(root).as_posix()
            parts = rel.split("/")
            if any(p in VENDOR_DIRS for p in parts[:-1]):
                continue
            if source == "py-stdlib" and (parts[0] in STDLIB_SKIP_TOPS or parts[0].startswith("config-")):
                continue
            tier = 2 if is_test(rel) else 1
            tiers[tier].append((seeded_key(seed, source, rel), Entry(source, rel, str(path), tier)))
    read = lambda e: Path(e.origin).read_bytes()  # noqa: E731
    # contents repeated across tiers: the tier-1 copy wins (distinct over both tiers in tier order)
    ordered = sorted(tiers[1], key=lambda c: c[0]) + sorted(tiers[2], key=lambda c: c[0])
    return _distinct([(f"{i:09d}", e) for i, (_, e) in enumerate(ordered)], read, exclude, max_bytes)


def java_pool(seed: int, src_zip: Path, exclude: list[str], max_bytes: int) -> list[Entry]:
    """Every usable .java member of the JDK's src.zip (all modules), in a seeded order; distinct contents."""
    with zipfile.ZipFile(src_zip) as z:
        names = [i.filename for i in z.infolist() if not i.is_dir() and i.filename.endswith(".java")]
        candidates = [(seeded_key(seed, "jdk-src", n), Entry("jdk-src", n, n, 1, str(src_zip))) for n in names]
        return _distinct(candidates, lambda e: z.read(e.origin), exclude, max_bytes)


def make_corpus(dest: Path, python: list[Entry], java: list[Entry], n_python: int, n_java: int) -> dict:
    """The first `n_python` / `n_java` files of the pools under dest/<source>/<path>; returns what it holds."""
    for what, pool, n in (("Python", python, n_python), ("Java", java, n_java)):
        if n > len(pool):
            raise SystemExit(f"the local {what} pool holds {len(pool)} usable distinct files; the largest scale asks "
                             f"for {n} (lower --{what.lower()}-files or the largest of --scales)")
    if dest.exists():
        shutil.rmtree(dest)
    for source in SOURCES:  # every source's folder, also one a small scale draws no file for
        (dest / source).mkdir(parents=True)
    chosen = python[:n_python] + java[:n_java]
    archives: dict[str, zipfile.ZipFile] = {}
    digest = hashlib.sha256()
    size = collections.Counter()
    try:
        for e in chosen:
            if e.archive:
                z = archives.setdefault(e.archive, zipfile.ZipFile(e.archive))
                data = z.read(e.origin)
            else:
                data = Path(e.origin).read_bytes()
            target = dest / e.source / e.rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            size[e.source] += len(data)
            digest.update(f"{e.source}/{e.rel}\n".encode())
    finally:
        for z in archives.values():
            z.close()
    by_source = collections.Counter(e.source for e in chosen)
    return {"python_files": n_python, "java_files": n_java, "files": n_python + n_java,
            "python_test_files": sum(e.tier == 2 for e in python[:n_python]),
            "files_by_source": dict(sorted(by_source.items())), "bytes_by_source": dict(sorted(size.items())),
            "bytes": sum(size.values()), "list_sha256": digest.hexdigest()}


def pools(seed: int) -> tuple[list[Entry], list[Entry], dict]:
    from pipeline.corpus.fetch import find_jdk_src_zip, jdk_version

    params = yaml.safe_load((REPO / "params.yaml").read_text())
    exclude, max_bytes = params["manifest"]["exclude"], params["corpus"]["limits"]["max_file_bytes"]
    stdlib, site = Path(sysconfig.get_paths()["stdlib"]), Path(sysconfig.get_paths()["purelib"])
    src_zip = find_jdk_src_zip()
    if src_zip is None:
        raise SystemExit("no JDK src.zip (JAVA_HOME, the javac on PATH, /usr/lib/jvm): install a JDK with sources")
    python, java = python_pool(seed, stdlib, site, exclude, max_bytes), java_pool(seed, src_zip, exclude, max_bytes)
    lock = REPO / "requirements.lock"
    info = {"python": sys.version.split()[0],  # site-packages: inside the checkout when it is the project's .venv
            "site_packages": os.path.relpath(site, REPO) if site.is_relative_to(REPO) else str(site),
            "requirements_lock_sha256": hashlib.sha256(lock.read_bytes()).hexdigest() if lock.exists() else None,
            "jdk_src_zip": str(src_zip), "java_version": jdk_version(src_zip),
            "jdk_src_zip_sha256": hashlib.sha256(src_zip.read_bytes()).hexdigest(),
            "python_pool": len(python), "python_pool_tier1": sum(e.tier == 1 for e in python),
            "java_pool": len(java)}
    return python, java, info


def overlay(corpus: Path, cache: Path, max_items: int, models: list[str], train_steps: int | None = None) -> dict:
    """The project's params.yaml: the repository's, with the local sources, the small zoo and the inference caps."""
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["corpus"]["cache_dir"] = str(cache)
    params["corpus"]["sources"] = [{"name": name, "kind": "local", "path": str(corpus / name), "repository": mode}
                                   for name, mode in SOURCES.items()]
    params["manifest"]["languages"] = ["python", "java"]
    params["manifest"]["evaluation"].update(allow_small=True, allow_unevaluated=True)  # small scales: warnings
    params["extract"]["cache_dir"] = str(cache / "extract")
    params["identifiers"]["cache_dir"] = str(cache / "identifiers")
    params["identifiers"]["languages"] = ["python", "java"]
    params["idbench"]["embeddings"]["languages"] = ["python", "java"]
    params["apirec"]["domains"] = {}  # they name the default's sources (pipeline.config.check_references)
    zoo = {e["name"]: e for e in params["models"]["zoo"]}
    missing = [m for m in models if m not in zoo]
    if missing:
        raise SystemExit(f"--models {' '.join(missing)}: not in params.yaml's zoo ({', '.join(zoo)})")
    params["models"]["zoo"] = [zoo[m] for m in models]
    params["inference"]["models"] = []
    # every family's inference: a fixed number of items per model, whatever the corpus
    params["apiquiz"]["inference"].update(max_items=max_items, min_per_stratum=0)
    params["apirec"]["inference"].update(max_items=max_items, query_max_items=max_items)
    params["codesyntax"]["inference"]["max_items"] = max_items
    params["idbench"]["inference"]["max_items"] = max_items
    params["probing"]["inference"]["max_items"] = max_items
    if train_steps is not None:  # a validation run's shortcut: the measurement keeps the params' steps
        params["training"]["model"]["steps"] = train_steps
        for block in params["training"].get("objectives", {}).values():
            block.pop("steps", None)
        model = params["training"]["model"]
        model["warmup_steps"] = min(model["warmup_steps"], train_steps // 10)
        params["training"]["model"]["eval_every"] = max(1, train_steps // 2)
    return params


# --- a build, its Snakemake log and its cost records ---------------------------------------------------------

@dataclass
class Job:
    rule: str
    jobid: str
    inputs: list[str]
    outputs: list[str]
    wildcards: dict[str, str]

    @property
    def stage(self) -> str:
        return f"{self.rule}[{self.wildcards['family']}]" if "family" in self.wildcards else self.rule


RULE_LINE = re.compile(r"^(?:local)?(?:rule|checkpoint) (\S+):$")


def parse_jobs(log: str) -> list[Job]:
    """Every job Snakemake started, from its log: the `rule X:` block's input, output, wildcards and jobid."""
    jobs, current = [], None
    for line in log.splitlines():
        m = RULE_LINE.match(line)
        if m:
            current = Job(m.group(1), "", [], [], {})
            jobs.append(current)
            continue
        if current is None or not line.startswith("    "):
            current = None if line and not line.startswith(" ") else current
            continue
        key, _, value = line.strip().partition(": ")
        if key == "input":
            current.inputs = value.split(", ")
        elif key == "output":
            current.outputs = value.split(", ")
        elif key == "jobid":
            current.jobid = value
        elif key == "wildcards":
            current.wildcards = dict(kv.split("=", 1) for kv in value.split(", ") if "=" in kv)
    return [j for j in jobs if j.jobid]


def job_of(record: dict, jobs: list[Job], by_output: dict[str, list[Job]]) -> Job | None:
    """The job whose process wrote `record`: among the jobs with an output in its arguments, the one whose outputs
    are no other candidate's inputs (a consumer's arguments name its producers' outputs as its inputs)."""
    args = set(record.get("args", []))
    candidates = {id(j): j for a in args for j in by_output.get(a, [])}
    if len(candidates) <= 1:
        return next(iter(candidates.values()), None)
    inputs = {i for j in candidates.values() for i in j.inputs}
    own = [j for j in candidates.values() if not set(j.outputs) & inputs]
    return own[0] if len(own) == 1 else None


def attribute(records: list[dict], jobs: list[Job]) -> dict[str, dict]:
    """Per stage: jobs, CPU seconds, summed job wall seconds, peak RSS (the largest process of any job)."""
    from bench.cost.run_cost import stage_of

    by_output: dict[str, list[Job]] = collections.defaultdict(list)
    for j in jobs:
        for o in j.outputs:
            by_output[o].append(j)
    out: dict[str, dict] = collections.defaultdict(lambda: {"jobs": 0, "cpu_s": 0.0, "wall_s": 0.0, "peak_rss_mb": 0.0})
    for r in records:
        module = r["module"].removesuffix(".__main__")
        job = None if module == "pipeline.preflight" else job_of(r, jobs, by_output)
        stage = "preflight (one per job)" if module == "pipeline.preflight" else (
            job.stage if job else f"unmatched: {stage_of(module)}")
        row = out[stage]
        row["jobs"] += 1
        row["cpu_s"] += r["cpu_s"]
        row["wall_s"] += r["wall_s"]
        row["peak_rss_mb"] = max(row["peak_rss_mb"], r["peak_rss_mb"])
    return {k: {f: round(v, 2) if isinstance(v, float) else v for f, v in d.items()} for k, d in out.items()}


def parquet_rows(project: Path, jobs: list[Job]) -> dict[str, dict]:
    """Per stage: the rows of its jobs' Parquet outputs (per job the largest, summed over jobs) and that output."""
    import pyarrow.parquet as pq

    out: dict[str, dict] = {}
    for j in jobs:
        sizes = []
        for o in j.outputs:
            path = project / o
            if o.endswith(".parquet") and path.is_file():
                sizes.append((pq.ParquetFile(path).metadata.num_rows, o))
        if sizes:
            rows, name = max(sizes)
            row = out.setdefault(j.stage, {"rows": 0, "output": name})
            row["rows"] += rows
    return out


def functions(project: Path) -> dict[str, int]:
    """Functions per language in the build: CodeSyntax's labelled functions and its too-long rejects (plain)."""
    out = {}
    for summary in sorted((project / "data/families/codesyntax/plain").glob("*/summary.json")):
        s = json.loads(summary.read_text())
        out[s["language"]] = s["functions_labelled"] + s["rejects"]
    return out


def manifest_files(project: Path) -> dict[str, int]:
    import pyarrow.parquet as pq

    path = project / "data/manifest.parquet"
    if not path.is_file():
        return {}
    languages = pq.read_table(path, columns=["language"]).column("language").to_pylist()
    return dict(sorted(collections.Counter(languages).items()))


def build(project: Path, params: dict, cores: int, targets: list[str] | None = None) -> dict:
    """One Snakemake run of the default target (or of `targets` and what they need) in `project`, every job's cost
    recorded; what it measured."""
    if project.exists():
        shutil.rmtree(project)
    (project / "logs").mkdir(parents=True)
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    cost_log, snake_log = project / "logs" / "cost.jsonl", project / "logs" / "snakemake.log"
    env = {**os.environ, "PIPELINE_COST_LOG": str(cost_log),
           "PYTHONPATH": os.pathsep.join([str(HOOK), *filter(None, [os.environ.get("PYTHONPATH")])])}
    from bench.cost.run_cost import SelfCPU

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    with snake_log.open("w") as log:
        proc = subprocess.Popen([str(SNAKEMAKE), "--snakefile", str(REPO / "Snakefile"), "--directory", str(project),
                                 "--configfile", str(project / "params.yaml"), "--cores", str(cores),
                                 *(targets or [])],
                                env=env, stdout=log, stderr=subprocess.STDOUT)
        own = SelfCPU(proc.pid)
        rc = proc.wait()
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    text = snake_log.read_text(errors="replace")
    if rc:
        raise SystemExit(f"the build in {project} failed (exit {rc}); the end of {snake_log}:\n{text[-4000:]}")
    records = [json.loads(line) for line in cost_log.read_text().splitlines() if line.strip()]
    records = [r for r in records if r["module"].startswith("pipeline.")]  # Snakemake's own processes are the build
    jobs = parse_jobs(text)
    stages = attribute(records, jobs)
    for stage, rows in parquet_rows(project, jobs).items():
        stages.setdefault(stage, {"jobs": 0, "cpu_s": 0.0, "wall_s": 0.0, "peak_rss_mb": 0.0}).update(rows)
    total = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    recorded = sum(r["cpu_s"] for r in records)
    snakemake_cpu = own.result()
    return {"wall_s": round(wall, 1), "cpu_s": round(total, 1), "jobs": len(jobs),
            "snakemake_process_cpu_s": snakemake_cpu, "unrecorded_cpu_s": round(total - recorded, 1),
            "manifest_files": manifest_files(project), "functions": functions(project),
            "stages": dict(sorted(stages.items()))}


# --- the fit and the table ------------------------------------------------------------------------------------

def fit_power(xs: list[float], ys: list[float]) -> dict | None:
    """y = a * x^b by least squares on (log x, log y); None with fewer than two positive points. `r2` on the logs
    (1.0 for two points)."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x and y and x > 0 and y > 0]
    if len(pts) < 2 or len({p[0] for p in pts}) < 2:
        return None
    n = len(pts)
    mx, my = sum(p[0] for p in pts) / n, sum(p[1] for p in pts) / n
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    b = sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx
    a = math.exp(my - b * mx)
    ss = sum((p[1] - my) ** 2 for p in pts)
    res = sum((p[1] - (my + b * (p[0] - mx))) ** 2 for p in pts)
    return {"a": a, "b": round(b, 3), "r2": round(1 - res / ss, 4) if ss > 0 else 1.0, "points": n}


def measured(results: dict) -> list[tuple[str, dict]]:
    """Every build of the results as (scale, build): one per scale, and the repeats `merge` kept (a scale built
    again by a later run: the fits use them all, so a build's run-to-run noise is averaged, not picked)."""
    scales = [str(s) for s in results["scales"]]
    return [(s, b) for s in scales for b in [results["builds"][s], *results.get("repeats", {}).get(s, [])]]


def fits(results: dict) -> dict:
    """Per stage: the CPU exponent over files (and over functions) and the peak-RSS exponent over files, fitted
    over every build (`measured`)."""
    builds = measured(results)
    files = [results["corpus"][s]["files"] for s, _ in builds]
    fns = [sum(b["functions"].values()) or None for _, b in builds]
    out = {}
    for stage in sorted({st for _, b in builds for st in b["stages"]}):
        rows = [b["stages"].get(stage, {}) for _, b in builds]
        cpu = [r.get("cpu_s") for r in rows]
        out[stage] = {"cpu_vs_files": fit_power(files, cpu), "cpu_vs_functions": fit_power(fns, cpu),
                      "rss_vs_files": fit_power(files, [r.get("peak_rss_mb") for r in rows])}
    totals = [b["cpu_s"] for _, b in builds]
    out["(whole build)"] = {"cpu_vs_files": fit_power(files, totals), "cpu_vs_functions": fit_power(fns, totals),
                            "rss_vs_files": None}
    return out


def table(results: dict, target: float = 1.1) -> str:
    scales = [str(s) for s in results["scales"]]
    builds, corpus = results["builds"], results["corpus"]
    head = " / ".join(f"x{s}" for s in scales)
    lines = [
        f"Corpus files (Python + Java) {head}: " + " / ".join(f"{corpus[s]['files']:,}" for s in scales)
        + "; functions: " + " / ".join(f"{sum(builds[s]['functions'].values()):,}" for s in scales)
        + "; whole build CPU s: " + " / ".join(f"{builds[s]['cpu_s']:,.1f}" for s in scales)
        + "; wall s: " + " / ".join(f"{builds[s]['wall_s']:,.1f}" for s in scales) + ".",
        "",
        f"| stage (rule) | jobs {head} | CPU s {head} | b (CPU ~ files^b) | peak RSS MB {head} | rows {head} "
        "| main output |",
        "|---|---|---|---|---|---|---|",
    ]
    f = results["fits"]

    def order(stage):  # biggest at the largest scale first; the bookkeeping last
        last = builds[scales[-1]]["stages"].get(stage, {})
        return (stage.startswith(("preflight", "unmatched")), -last.get("cpu_s", 0.0), stage)

    for stage in sorted({st for s in scales for st in builds[s]["stages"]}, key=order):
        rows = [builds[s]["stages"].get(stage, {}) for s in scales]
        fit = f.get(stage, {}).get("cpu_vs_files")
        b = "-" if fit is None else (f"**{fit['b']:.2f}**" if fit["b"] > target else f"{fit['b']:.2f}")
        cell = lambda key, fmt: " / ".join(fmt(r[key]) if key in r else "-" for r in rows)  # noqa: E731
        output = next((r["output"] for r in reversed(rows) if "output" in r), "")
        lines.append(f"| {stage} | {cell('jobs', str)} | {cell('cpu_s', lambda v: f'{v:,.1f}')} | {b} | "
                     f"{cell('peak_rss_mb', lambda v: f'{v:,.0f}')} | {cell('rows', lambda v: f'{v:,}')} | "
                     f"{output.rsplit('/', 1)[-1] if output else ''} |")
    unrecorded = " / ".join(f"{builds[s]['unrecorded_cpu_s']:,.1f}" for s in scales)
    whole = f.get("(whole build)", {}).get("cpu_vs_files")
    jobs = " / ".join(str(builds[s]["jobs"]) for s in scales)
    cpu = " / ".join(f"{builds[s]['cpu_s']:,.1f}" for s in scales)
    peak = " / ".join(f"{max((r.get('peak_rss_mb', 0) for r in builds[s]['stages'].values()), default=0):,.0f}"
                      for s in scales)
    lines.append(f"| Snakemake itself, shells, `run:` rules (in no job's record) | | {unrecorded} | | | | |")
    lines.append(f"| **whole build** | {jobs} | {cpu} | {'-' if whole is None else format(whole['b'], '.2f')} | "
                 f"{peak} | | |")
    over = [st for st, v in f.items() if v.get("cpu_vs_files") and v["cpu_vs_files"]["b"] > target
            and not st.startswith(("preflight", "unmatched", "("))]
    lines += ["", f"Stages over b = {target}: " + (", ".join(over) if over else "none") + "."]
    repeats = results.get("repeats") or {}
    if repeats:
        stages = sorted({st for s in scales for st in builds[s]["stages"]}, key=order)[:4]
        lines += ["", "Built more than once (the table shows the latest build; every b is fitted over all "
                  f"{len(measured(results))} builds, so the run-to-run noise is averaged, not picked). CPU s of "
                  "each build, earlier ones first:", ""]
        for s, earlier in repeats.items():
            every = [*earlier, builds[s]]
            lines.append(f"- x{s}: whole build " + " / ".join(f"{b['cpu_s']:,.1f}" for b in every) + "; "
                         + "; ".join(f"{st} " + " / ".join(f"{b['stages'].get(st, {}).get('cpu_s', 0):,.1f}"
                                                             for b in every) for st in stages))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.scale.families", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python-files", type=int, default=1000, help="Python files of the 1x corpus (default 1000)")
    ap.add_argument("--java-files", type=int, default=230, help="Java files of the 1x corpus (default 230)")
    ap.add_argument("--scales", type=int, nargs="+", default=[1, 4, 16], help="corpus multiples (default 1 4 16)")
    ap.add_argument("--max-items", type=int, default=50,
                    help="items per model in every family's inference (default 50)")
    ap.add_argument("--models", nargs="+", default=ZOO,
                    help=f"zoo entries of params.yaml to keep (default {' '.join(ZOO)})")
    ap.add_argument("--train-steps", type=int, default=None,
                    help="training steps of every trained model (default: params.yaml's; fewer only to validate "
                    "the bench)")
    ap.add_argument("--cores", type=int, default=2, help="snakemake --cores (default 2)")
    ap.add_argument("--seed", type=int, default=0, help="orders the pools' files (default 0)")
    ap.add_argument("--dir", type=Path, help="corpora and projects go here (default: a fresh temporary folder)")
    ap.add_argument("--json", type=Path, help="write the results here (the input of bench.scale.paper_estimate)")
    ap.add_argument("--md", type=Path, help="write the Markdown table here")
    ap.add_argument("--targets", nargs="+", metavar="PATH",
                    help="build these outputs (and what they need) instead of the default target: a few stages' "
                    "exponents in a fraction of the time (e.g. data/extract/usages.parquet)")
    ap.add_argument("--keep", action="store_true", help="keep each scale's project and corpus (default: the data/ of "
                    "a measured scale is removed once measured, its logs kept)")
    ap.add_argument("--table", type=Path, metavar="JSON", help="print the Markdown table of a results JSON and exit")
    ap.add_argument("--overlay", action="store_true", help="print the params overlay of one scale and exit")
    ap.add_argument("--merge", type=Path, nargs="+", metavar="JSON",
                    help="merge results JSONs of runs with one base, seed and overlay (their scales together: the "
                    "corpora nest, so a later run may add a scale), fit, and write --json / --md")
    args = ap.parse_args(argv)
    if args.table:
        results = json.loads(args.table.read_text())
        print(table(results))
        return 0
    if args.merge:
        merged = merge([json.loads(p.read_text()) for p in args.merge])
        save(merged, args, None, complete=True)  # what was measured; each run's argv says what it asked
        print(table(merged))
        return 0
    args.dir = work_dir(args.dir, "families")
    if args.overlay:
        print(yaml.safe_dump(overlay(args.dir / "corpus-x1", args.dir / "cache-x1", args.max_items, args.models,
                                     args.train_steps), sort_keys=False))
        return 0
    started = time.monotonic()
    python, java, info = pools(args.seed)
    top = max(args.scales)
    print(f"pools: {info['python_pool']} Python files ({info['python_pool_tier1']} not tests), "
          f"{info['java_pool']} Java files; x{top} takes {args.python_files * top} and {args.java_files * top}",
          flush=True)
    results = {"bench": "scale.families", "argv": portable(sys.argv[1:] if argv is None else argv),
               "base": {"python_files": args.python_files, "java_files": args.java_files},
               "scales": sorted(args.scales), "max_items": args.max_items, "models": args.models,
               "train_steps": args.train_steps, "cores": args.cores, "seed": args.seed, "pools": info,
               "targets": args.targets or "default",
               "machine": {"cpus": os.cpu_count(), "load_average_start": os.getloadavg()[0]},
               "corpus": {}, "builds": {}}
    for scale in sorted(args.scales):
        corpus = args.dir / f"corpus-x{scale}"
        made = make_corpus(corpus, python, java, args.python_files * scale, args.java_files * scale)
        results["corpus"][str(scale)] = made
        print(f"x{scale}: {made['python_files']} Python ({made['python_test_files']} tests) + "
              f"{made['java_files']} Java files, {made['bytes'] / 2**20:.1f} MB", flush=True)
        project = args.dir / f"project-x{scale}"
        params = overlay(corpus, args.dir / f"cache-x{scale}", args.max_items, args.models, args.train_steps)
        measured = build(project, params, args.cores, args.targets)
        results["builds"][str(scale)] = measured
        print(f"  {measured['jobs']} jobs, {measured['cpu_s']:,.1f} CPU s, {measured['wall_s']:,.1f} s wall, "
              f"functions {measured['functions']}", flush=True)
        for stage, row in sorted(measured["stages"].items(), key=lambda kv: -kv[1]["cpu_s"])[:8]:
            print(f"    {stage:34s} {row['cpu_s']:8.1f} CPU s {row['peak_rss_mb']:7.0f} MB {row['jobs']:3d} jobs",
                  flush=True)
        if not args.keep:
            for folder in (project / "data", project / ".snakemake", corpus, args.dir / f"cache-x{scale}"):
                shutil.rmtree(folder, ignore_errors=True)
        # the scales measured so far, written after each (a stopped run keeps them; "complete" says which)
        save({**results, "scales": sorted(int(s) for s in results["builds"])}, args, started,
             complete=len(results["builds"]) == len(args.scales))
    return 0


def portable(argv: list[str]) -> list[str]:
    """The command line as the results JSON keeps it (committed under docs/results): a path inside the checkout
    relative to it, any other absolute path (the work folder) as its last part only."""
    out = []
    for a in argv:
        path = Path(a)
        if path.is_absolute():
            a = path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else f"<{path.name}>"
        out.append(a)
    return out


SAME_RUN = ("base", "max_items", "models", "train_steps", "seed", "targets")  # what runs must share to be merged


DEFAULTS = {"targets": "default"}  # a key older results JSONs lack: its value then


def merge(runs: list[dict]) -> dict:
    """Results of several runs as one: every scale each run measured (a later run's wins), the runs' keys
    SAME_RUN equal (else ValueError: their corpora or overlays differ), the runs' argv and machines kept."""
    first = runs[0]
    for key in SAME_RUN:
        if any(r.get(key, DEFAULTS.get(key)) != first.get(key, DEFAULTS.get(key)) for r in runs[1:]):
            raise ValueError(f"the runs differ in {key}: " + ", ".join(repr(r.get(key)) for r in runs))
    out = {**first, "argv": portable(first.get("argv") or []), "corpus": {}, "builds": {},
           "runs": [{"argv": portable(r.get("argv") or []), "machine": r.get("machine"),
                                                          "scales": r.get("scales")} for r in runs]}
    out["repeats"] = {}
    for r in runs:
        for s, earlier in r.get("repeats", {}).items():
            out["repeats"].setdefault(s, []).extend(earlier)
        for s in r["builds"]:
            if s in out["builds"]:  # built again: the later build is shown, the earlier kept for the fits
                out["repeats"].setdefault(s, []).append(out["builds"][s])
            out["corpus"][s], out["builds"][s] = r["corpus"][s], r["builds"][s]
    out["repeats"] = {s: v for s, v in sorted(out["repeats"].items(), key=lambda kv: int(kv[0]))}
    out["scales"] = sorted(int(s) for s in out["builds"])
    out["bench_wall_s"] = sum(r.get("bench_wall_s", 0) for r in runs)
    return out


def save(results: dict, args, started: float | None, complete: bool) -> None:
    """Fits, table and files of the scales in results["scales"]."""
    results["fits"] = fits(results) if len(results["scales"]) >= 2 else {}
    results["complete"] = complete
    if started is not None:  # a merge keeps its runs' own
        results["machine"]["load_average_end"] = os.getloadavg()[0]
        results["bench_wall_s"] = round(time.monotonic() - started, 1)
    text = table(results)
    if complete:
        print("\n" + text)
    for path, body in ((args.json, json.dumps(results, indent=1, sort_keys=True)), (args.md, text)):
        if path:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(path.suffix + ".tmp")
            tmp.write_text(body + "\n")
            tmp.replace(path)
    if complete and args.json:
        print(f"results: {args.json}")


if __name__ == "__main__":
    sys.exit(main())
