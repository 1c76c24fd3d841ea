"""Training-recipe sweep for the pipeline-trained models (issue 16): which architecture, data and steps
make a trained model beat its random twin, and at what cost.

Each recipe (a JSON list: name, objective mlm | causal | seq2seq, `params` overriding params.yaml's
`training.model` plus that objective's `training.objectives` block, `data` overriding `training.data`,
optional `vocab` to train its own BPE of that size, `twin: true` to also make and score its random twin)
is trained with the pipeline's own commands (`python -m pipeline.models.train`, and
`pipeline.models.tokenizer_train` for `vocab`), then scored with `python -m pipeline.runtime.predict` on
the CodeSyntax samples (both languages, `--codesyntax-items` samples each; masked LMs and
encoder-decoders) and the apiquiz quizzes (params.yaml's apiquiz inference block), exactly as the DAG's
`predict` rule runs them, one shard. Needs a default run's data (`snakemake data/tokenizer
codesyntax apiquiz`). Recipes run side by side (`--parallel`): on a GPU machine (`--device cuda`) a
sweep of a dozen small recipes takes a few minutes; on 2 CPU cores run one or two.

    python -m bench.gpu.recipe_sweep run --recipes bench/gpu/recipes/h100_sweep.json --out SWEEP --device cuda
    python -m bench.gpu.recipe_sweep table SWEEP                # the results table (Markdown)

The table mirrors the warehouse views: CodeSyntax top-1 (first token) averaged over relations, the best
head per relation chosen on dev (ties to the lowest layer, then head) and scored on test, as
`codesyntax_best_heads`; against the twin of the same architecture, the 95% CI of the difference is a
paired percentile bootstrap over relations (2000 replicates, seed 0). apiquiz P@1 per ranking protocol,
and the masked LM's fill_mask P@10 on its single-token quizzes. docs/model_recipes.md holds the H100
sweep of 2026-11-22.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import yaml

from pipeline.models.entries import objective_params

ENTRY = {
    "mlm": {"name": "code-mlm", "source": "trained:mlm", "family": "masked-lm"},
    "causal": {"name": "code-clm", "source": "trained:causal", "family": "causal-lm"},
    "seq2seq": {"name": "code-t5", "source": "trained:seq2seq", "family": "encoder-decoder"},
}
ARCH_KEYS = ("layers", "hidden_size", "heads", "intermediate_size", "seq_length", "mlm_architecture")


def _sh(cmd: list[str], log: Path) -> int:
    started = time.perf_counter()
    with open(log, "w") as err:
        rc = subprocess.run(cmd, stderr=err, stdout=subprocess.DEVNULL).returncode
    print(f"rc={rc} {time.perf_counter() - started:6.1f}s {log}", flush=True)
    if rc:
        print(log.read_text()[-1500:], file=sys.stderr, flush=True)
    return rc


def _tasks(config: dict, objective: str, items: int) -> list[tuple[str, str, dict, dict]]:
    tasks = []
    if objective != "causal":
        for lang in ("python", "java"):
            root = f"data/families/codesyntax/plain/{lang}"
            tasks.append(("codesyntax", lang, {"relations": f"{root}/relations.parquet", "samples": f"{root}/samples.parquet"},
                          {"inference": {"max_items": items, "variant": "plain"}, "ks": [1, 3, 10, 20]}))
    tasks.append(("apiquiz", "all", {"quizzes": "data/families/apiquiz/quizzes.parquet"},
                  {"inference": config["apiquiz"]["inference"]}))
    return tasks


def run_recipe(recipe: dict, config: dict, out: Path, device: str, items: int, threads: int) -> None:
    name, objective = recipe["name"], recipe["objective"]
    folder, models = out / name, out / name / "models"
    (folder / "pred").mkdir(parents=True, exist_ok=True)
    training = config["training"]
    params = {**objective_params(training["model"], training.get("objectives"), objective), **recipe.get("params", {})}
    data = {**training["data"], **recipe.get("data", {})}
    (folder / "recipe.json").write_text(json.dumps({**recipe, "resolved": {"params": params, "data": data}}, indent=1))
    seq = int(params["seq_length"])
    entry = {**ENTRY[objective], "max_length": seq, "batch_size": 128}
    twin = {"name": entry["name"] + "-random", "source": "random:" + entry["name"]}
    zoo = json.dumps([entry, twin])
    tokenizer = "data/tokenizer"
    if recipe.get("vocab"):
        tokenizer = str(folder / "tokenizer")
        if _sh([sys.executable, "-m", "pipeline.models.tokenizer_train", "--manifest", "data/manifest.parquet",
                "--data", json.dumps(data), "--tokenizer", json.dumps({**training["tokenizer"], "vocab_size": recipe["vocab"]}),
                "--seed", str(config["seed"]), "--out", tokenizer], folder / "tokenizer.log"):
            return
    if _sh([sys.executable, "-m", "pipeline.models.train", "train", "--zoo", zoo, "--name", entry["name"],
            "--manifest", "data/manifest.parquet", "--tokenizer", tokenizer, "--data", json.dumps(data),
            "--params", json.dumps(params), "--seed", str(config["seed"]), "--threads", str(threads), "--device", device,
            "--out", str(models / entry["name"]), "--figure", str(folder / "loss.png")], folder / "train.log"):
        return
    for f in ("training.json", "card.json"):
        (folder / f).write_bytes((models / entry["name"] / f).read_bytes())
    names = [entry["name"]]
    if recipe.get("twin"):
        if _sh([sys.executable, "-m", "pipeline.models.train", "random", "--zoo", zoo, "--name", twin["name"],
                "--seed", str(config["seed"]), "--models-dir", str(models), "--out", str(models / twin["name"])],
               folder / "twin.log") == 0:
            names.append(twin["name"])
    for model in names:
        for family, subset, inputs, fparams in _tasks(config, objective, items):
            _sh([sys.executable, "-m", "pipeline.runtime.predict", "--family", family, "--subset", subset,
                 "--inputs", json.dumps(inputs), "--params", json.dumps(fparams), "--model", model, "--zoo", zoo,
                 "--models-dir", str(models), "--shard", "0", "--shards", "1", "--seed", str(config["seed"]),
                 "--token-budget", str(config["inference"]["token_budget"]), "--device", device, "--dtype", "float32",
                 "--threads", str(threads), "--out", str(folder / "pred" / f"{family}_{subset}_{model}.parquet")],
                folder / f"predict_{family}_{subset}_{model}.log")


# --- the table -----------------------------------------------------------------------------------------

def codesyntax_best(path: Path, chosen_on: str = "dev") -> dict[str, dict[str, float]]:
    """{language: {relation: test top-1 of the head chosen on `chosen_on`}} (first token, k=1)."""
    import pandas as pd

    d = pd.read_parquet(path)
    d = d[(d.metric == "first") & (d.k == 1) & (d.total > 0)].copy()
    d["score"] = d.hits / d.total
    out: dict[str, dict[str, float]] = {}
    for lang, g in d.groupby("language"):
        pick = g[g.eval_split == chosen_on].sort_values(["relation", "score", "layer", "head"],
                                                        ascending=[True, False, True, True]).groupby("relation").head(1)
        test = pick[["relation", "layer", "head"]].merge(g[g.eval_split == "test"], on=["relation", "layer", "head"])
        out[lang] = dict(zip(test.relation, test.score))
    return out


def paired_ci(a: dict[str, float], b: dict[str, float], reps: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    keys = sorted(set(a) & set(b))
    diff = np.array([a[k] - b[k] for k in keys])
    rng = np.random.default_rng(seed)
    boot = diff[rng.integers(0, len(diff), (reps, len(diff)))].mean(1)
    return 100 * diff.mean(), 100 * np.percentile(boot, 2.5), 100 * np.percentile(boot, 97.5)


def apiquiz_scores(path: Path) -> dict[str, float]:
    import pandas as pd

    d = pd.read_parquet(path)
    d = d[d.status == "ok"]
    out = {p: 100 * float((g.gold_rank == 1).mean()) for p, g in d.groupby("protocol") if p != "fill_mask"}
    fill = d[d.protocol == "fill_mask"]
    if len(fill):
        out["fill_mask P@10"] = 100 * float((fill.gold_rank <= 10).mean())
    return out


def summarise(folder: Path) -> dict | None:
    if not (folder / "recipe.json").exists() or not (folder / "training.json").exists():
        return None
    recipe = json.loads((folder / "recipe.json").read_text())
    curve = json.loads((folder / "training.json").read_text())
    p = recipe["resolved"]["params"]
    model = ENTRY[recipe["objective"]]["name"]
    row = {"recipe": recipe["name"], "objective": recipe["objective"], "model": model,
           "arch": tuple(p.get(k, "roberta" if k == "mlm_architecture" else None) for k in ARCH_KEYS) + (recipe.get("vocab"),),
           "size": f"{p['layers']}x{p['hidden_size']}/{p['heads']}h" + (f" v{recipe['vocab']}" if recipe.get("vocab") else ""),
           "pre_ln": p.get("mlm_architecture", "roberta") == "roberta-prelayernorm" if recipe["objective"] == "mlm" else None,
           "tokens": p["steps"] * p["batch_size"] * p["seq_length"], "steps": p["steps"], "batch": p["batch_size"],
           "lr": p["learning_rate"], "mask": p["mlm_probability"] if recipe["objective"] == "mlm" else None,
           "valid_loss": curve["valid_loss"][-1] if curve["valid_loss"] else None, "seconds": curve["seconds"],
           "device": curve["device"], "models": {}}
    for name in (model, model + "-random"):
        cs = {}
        for lang in ("python", "java"):
            f = folder / "pred" / f"codesyntax_{lang}_{name}.parquet"
            if f.exists():
                cs[lang] = {"dev": codesyntax_best(f, "dev").get(lang, {}), "test": codesyntax_best(f, "test").get(lang, {})}
        aq = folder / "pred" / f"apiquiz_all_{name}.parquet"
        if cs or aq.exists():
            row["models"][name] = {"codesyntax": cs, "apiquiz": apiquiz_scores(aq) if aq.exists() else {}}
    return row


def table(folders: list[Path]) -> str:
    rows = [r for f in folders for d in sorted(Path(f).iterdir()) if d.is_dir() for r in [summarise(d)] if r]
    twins = {}
    for r in rows:  # a twin depends on the architecture only: any recipe's twin of the same shape serves
        twin = r["models"].get(r["model"] + "-random")
        if twin:
            twins.setdefault((r["objective"], r["arch"]), twin)
    lines = ["| recipe | model | size | pre-LN | steps x batch | tokens | lr | mask | valid loss | train s (device) "
             "| CodeSyntax python dev-chosen top-1 (twin) [diff 95% CI] | java (twin) [diff 95% CI] "
             "| apiquiz P@1 rank / rank_mean / rank_pmi (twin) | fill_mask P@10 (twin) |",
             "|" + "---|" * 14]

    def fmt(x, spec=".2f"):
        return "" if x is None else format(x, spec)

    for r in sorted(rows, key=lambda r: (r["objective"], r["tokens"], r["recipe"])):
        m, t = r["models"].get(r["model"], {}), twins.get((r["objective"], r["arch"]), {})
        cs_cells = []
        for lang in ("python", "java"):
            a, b = m.get("codesyntax", {}).get(lang, {}).get("dev"), t.get("codesyntax", {}).get(lang, {}).get("dev")
            if not a:
                cs_cells.append("")
                continue
            cell = f"{100 * np.mean(list(a.values())):.1f}"
            if b:
                d, lo, hi = paired_ci(a, b)
                cell += f" ({100 * np.mean(list(b.values())):.1f}) [{d:+.1f}, {lo:+.1f} to {hi:+.1f}]" + (" **beats**" if lo > 0 else "")
            cs_cells.append(cell)
        aq, taq = m.get("apiquiz", {}), t.get("apiquiz", {})
        ranks = " / ".join(fmt(aq.get(p), ".1f") for p in ("rank", "rank_mean", "rank_pmi"))
        if taq:
            ranks += " (" + " / ".join(fmt(taq.get(p), ".1f") for p in ("rank", "rank_mean", "rank_pmi")) + ")"
        fill = fmt(aq.get("fill_mask P@10"), ".1f") + (f" ({fmt(taq.get('fill_mask P@10'), '.1f')})" if taq.get("fill_mask P@10") is not None else "")
        lines.append(f"| {r['recipe']} | {r['model']} | {r['size']} | {'' if r['pre_ln'] is None else ('yes' if r['pre_ln'] else 'no')} "
                     f"| {r['steps']} x {r['batch']} | {r['tokens'] / 1e6:.1f}M | {r['lr']:g} | {fmt(r['mask'], 'g')} "
                     f"| {fmt(r['valid_loss'])} | {r['seconds']:.0f} ({r['device']}) | {cs_cells[0]} | {cs_cells[1]} | {ranks} | {fill} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.gpu.recipe_sweep", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="train and score every recipe of a JSON list")
    r.add_argument("--recipes", required=True, type=Path, help="JSON list of recipes (bench/gpu/recipes/*.json)")
    r.add_argument("--out", required=True, type=Path)
    r.add_argument("--params", default=Path("params.yaml"), type=Path)
    r.add_argument("--device", default="auto", help="cpu, cuda, auto")
    r.add_argument("--parallel", type=int, default=1, help="recipes side by side")
    r.add_argument("--threads", type=int, default=2, help="torch CPU threads per command")
    r.add_argument("--codesyntax-items", type=int, default=600, help="CodeSyntax samples per language")
    r.add_argument("--only", nargs="*", help="recipe names to run (default: all)")
    t = sub.add_parser("table", help="the Markdown results table of one or more sweep folders")
    t.add_argument("folders", nargs="+", type=Path)
    if argv == [] or (argv is None and len(sys.argv) == 1):  # `python -m bench` runs every bench with no arguments: this one needs a recipe list and a device
        ap.print_help()
        print("\nrecipe_sweep: nothing run (give `run --recipes ...`; results of the H100 sweep: docs/model_recipes.md)")
        return 0
    args = ap.parse_args(argv)
    if args.command == "table":
        print(table(args.folders))
        return 0
    config = yaml.safe_load(args.params.read_text())
    recipes = [x for x in json.loads(args.recipes.read_text()) if not args.only or x["name"] in args.only]
    missing = [p for p in ("data/manifest.parquet", "data/tokenizer", "data/families/apiquiz/quizzes.parquet",
                           "data/families/codesyntax/plain/python/samples.parquet") if not Path(p).exists()]
    if missing:
        raise SystemExit(f"missing {missing}: run `snakemake --cores 2 data/tokenizer codesyntax apiquiz` first")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    started = time.perf_counter()
    with ThreadPoolExecutor(args.parallel) as ex:
        list(ex.map(lambda x: run_recipe(x, config, args.out, args.device, args.codesyntax_items, args.threads), recipes))
    print(f"sweep: {len(recipes)} recipes in {time.perf_counter() - started:.0f} s")
    print(table([args.out]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
