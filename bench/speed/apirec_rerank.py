"""apirec candidate re-ranking against a per-candidate unbatched loop, same points, same model, one run:
`batched` (every candidate of many points in length-sorted batches under a token budget, full
logits) and `ours` (batched, plus: a causal LM runs each point's shared context once with the KV
cache and only the candidates' own tokens after it; a masked LM applies its head at the masked
positions only).

Usage: python -m bench.speed.apirec_rerank [--project .] [--model code-mlm code-clm] [--points 40] [--candidates 10]
(needs a build with models and apirec: `snakemake models apirec --cores 2`; on the tiny configuration:
`--project .test --model tiny-mlm tiny-clm`).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch


def unbatched(loaded, family: str, points) -> list[int | None]:
    """Every candidate (and, for a masked LM, every masked copy) through the model alone."""
    from bench.speed.quiz_ranking import unbatched_score
    from pipeline.families.apirec.infer import SUFFIX, fit_context
    from pipeline.runtime.protocols import rank_of

    tok, ranks = loaded.tokenizer, []
    for p in points:
        prefix = fit_context(tok, p.context, p.texts, loaded.entry.max_length)
        scores = [unbatched_score(loaded, family, prefix, text, SUFFIX) for text in p.texts]
        names = list(p.candidates)
        _, order = rank_of(scores, names, 0)
        ranked = [names[i] for i in order]
        ranks.append(ranked.index(p.api) + 1 if p.api in ranked else None)
    return ranks


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--project", type=Path, default=Path("."))
    ap.add_argument("--model", nargs="+", default=["code-mlm", "code-clm"])
    ap.add_argument("--points", type=int, default=40)
    ap.add_argument("--candidates", type=int, default=10)
    args = ap.parse_args(argv)
    import pyarrow.parquet as pq
    import yaml

    from pipeline.families.apirec.infer import Point, rerank
    from pipeline.models.entries import parse_zoo
    from pipeline.models.zoo import load_model
    from pipeline.runtime.batching import seeded_subset
    from pipeline.runtime.scorer import Scorer

    os.chdir(args.project)
    torch.set_num_threads(1)
    table = pq.read_table("data/families/apirec/points.parquet",
                          columns=["point_id", "context", "api", "candidates", "candidate_texts"])
    keep = seeded_subset(table.column("point_id").to_pylist(), args.points, 1)
    points = [Point(r["point_id"], r["context"], r["api"], tuple(r["candidates"][: args.candidates]),
                    tuple(r["candidate_texts"][: args.candidates]))
              for r in table.to_pylist() if r["point_id"] in keep and r["candidates"]]
    zoo = parse_zoo(yaml.safe_load(Path("params.yaml").read_text())["models"]["zoo"])
    print(f"{len(points)} points, up to {args.candidates} candidates each")
    print(f"{'model':10s} {'variant':12s} {'points/s':>9s} {'speed-up':>8s}  same ranks")
    for name in args.model:
        loaded = load_model(zoo[name], device="cpu", models_dir=Path("data/models"))
        start = time.perf_counter()
        base = unbatched(loaded, zoo[name].model_family, points)
        t_base = time.perf_counter() - start
        print(f"{name:10s} {'unbatched':12s} {len(points) / t_base:9.2f} {1.0:7.1f}x")
        order = {p.point_id: i for i, p in enumerate(points)}
        # before: batches of whole completed texts (full logits); ours: the causal prefix through the
        # KV cache once per point, the masked LM's head at the masked positions only
        for variant, scorer in (("batched", Scorer(loaded, 8192, prefix_cache=False, head_only=False)),
                                ("ours", Scorer(loaded, 8192))):
            start = time.perf_counter()
            rows = rerank(scorer, zoo[name].model_family, points, name, ("rank",))  # the summed protocol only
            t = time.perf_counter() - start
            ours = [r["gold_rank"] for r in sorted(rows, key=lambda r: order[r["point_id"]])]
            print(f"{name:10s} {variant:12s} {len(points) / t:9.2f} {t_base / t:7.1f}x  {ours == base}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
