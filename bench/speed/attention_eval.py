"""CodeSyntax attention evaluation: ours against a straightforward one, same samples, same model,
one run.

The straightforward evaluator runs each sample alone (batch 1), moves every attention tensor to
numpy and keeps them all, then scores the edges from the kept arrays. Ours batches
length-sorted samples and reduces each batch's attentions to hit counts at once (only the rows
of head words). Each variant runs in its own process so peak memory (max RSS) is its own.

Usage: python -m bench.speed.attention_eval [--model minilm] [--samples 64 128]
(needs the default build: `snakemake models codesyntax --cores 2`).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np


def load(model_name: str, n: int):
    import pyarrow.parquet as pq
    import yaml

    from pipeline.families.codesyntax.infer import load_samples
    from pipeline.models.entries import parse_zoo
    from pipeline.models.zoo import load_model

    params = yaml.safe_load(Path("params.yaml").read_text())
    entry = parse_zoo(params["models"]["zoo"])[model_name]
    loaded = load_model(entry, attentions=True, device="cpu")
    samples = load_samples(pq.read_table("data/families/codesyntax/plain/python/samples.parquet"),
                           pq.read_table("data/families/codesyntax/plain/python/relations.parquet"), 0, 1, n, 1)
    return loaded, samples


def straightforward(loaded, samples) -> dict:
    """Batch 1, every attention tensor to numpy and kept, then scored with numpy."""
    from pipeline.families.codesyntax.infer import KS
    from pipeline.runtime.align import align

    kept = []
    for s in samples:
        enc = loaded.tokenizer(s.code, return_offsets_mapping=True, truncation=True, max_length=loaded.entry.max_length,
                               return_tensors="pt")
        offsets = enc.pop("offset_mapping")[0].tolist()
        out = loaded(**enc, output_attentions=True)
        kept.append((s, offsets, [a[0].numpy().copy() for a in out.attentions]))
    hits = {}
    for s, offsets, atts in kept:
        owner = align(offsets, s.words, len(s.code))
        for rel, head, dep, _ in s.edges:
            sub_h = np.nonzero(owner == head)[0]
            if not sub_h.size or not (owner == dep).any():
                continue
            for layer, att in enumerate(atts):
                for h in range(att.shape[0]):
                    row = att[h, sub_h].mean(0)
                    scores = np.full(len(s.words), -1.0)
                    for w in range(len(s.words)):
                        if w != head and (owner == w).any():
                            scores[w] = row[owner == w].sum()
                    rank = int((scores > scores[dep]).sum())
                    for k in KS:
                        hits[(rel, layer, h, k)] = hits.get((rel, layer, h, k), 0) + (rank < k)
    return hits


def ours(loaded, samples) -> dict:
    from pipeline.families.codesyntax.infer import AttentionEvaluator

    ev = AttentionEvaluator(loaded, 8192)
    ev.run(samples, "bench")
    return {k: v for k, v in ev.hits.items()}


def child(variant: str, model: str, n: int) -> None:
    import torch

    torch.set_num_threads(1)
    loaded, samples = load(model, n)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    (straightforward if variant == "straightforward" else ours)(loaded, samples)
    elapsed = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"seconds": elapsed, "samples": len(samples), "peak_mib": peak / 1024,
                      "growth_mib": (peak - rss0) / 1024}))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--samples", type=int, nargs="+", default=[64, 128])
    ap.add_argument("--child", nargs=2, metavar=("VARIANT", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child[0], args.model, int(args.child[1]))
        return 0
    print(f"{'samples':>7s} {'variant':16s} {'fn/s':>7s} {'peak MiB':>9s} {'growth MiB':>10s} {'speed-up':>8s}")
    for n in args.samples:
        res = {}
        for variant in ("straightforward", "ours"):
            out = subprocess.run([sys.executable, "-m", "bench.speed.attention_eval", "--model", args.model, "--child",
                                  variant, str(n)], capture_output=True, text=True, check=True)
            res[variant] = json.loads(out.stdout.strip().splitlines()[-1])
        base = res["straightforward"]["samples"] / res["straightforward"]["seconds"]
        for variant, r in res.items():
            rate = r["samples"] / r["seconds"]
            print(f"{n:7d} {variant:16s} {rate:7.1f} {r['peak_mib']:9.0f} {r['growth_mib']:10.0f} {rate / base:7.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
