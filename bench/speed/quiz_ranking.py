"""apiquiz candidate ranking: ours (all candidates of many quizzes in length-sorted batches under a
token budget) against a per-candidate unbatched loop, same quizzes, same model, one run; then the
cost of all three ranking protocols (the no-context pass of `rank_pmi`) against the sum alone.

Usage: python -m bench.speed.quiz_ranking [--model code-mlm code-clm code-t5] [--quizzes 40]
(needs the default build: `snakemake models apiquiz --cores 2`).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch


def unbatched_score(loaded, family: str, prefix: str, fill: str, suffix: str) -> float:
    """The baseline: one completed text (and, for a masked LM, every masked copy) through the model alone."""
    from pipeline.runtime.encode import encode, with_bos

    tok = loaded.tokenizer
    e = encode(tok, prefix, fill, suffix)
    if family == "masked-lm":
        total = 0.0
        for pos in e.span:
            ids = list(e.ids)
            ids[pos] = tok.mask_token_id
            logits = loaded(input_ids=torch.tensor([ids])).logits[0, pos].float()
            total += float(torch.log_softmax(logits, -1)[e.ids[pos]])
        return total
    if family == "encoder-decoder":  # the source through the encoder again for every candidate
        from pipeline.runtime.plan import candidate_jobs
        from pipeline.runtime.scorer import Scorer

        (src, tgt), = candidate_jobs(Scorer(loaded, 8192), family, prefix, [fill], suffix)[0]
        logits = loaded(input_ids=torch.tensor([src]), labels=torch.tensor([tgt])).logits.float()
        return float(torch.log_softmax(logits, -1)[0].gather(-1, torch.tensor(tgt)[:, None]).sum())
    ids = torch.tensor([with_bos(tok, e.ids)])
    logp = torch.log_softmax(loaded(input_ids=ids).logits.float(), -1)
    return float(logp[0, :-1].gather(-1, ids[0, 1:, None]).sum())


def unbatched(loaded, family: str, quizzes) -> list[int]:
    """Every candidate of every quiz scored alone (unbatched_score)."""
    from pipeline.runtime.protocols import rank_of

    ranks = []
    for q in quizzes:
        scores = [unbatched_score(loaded, family, q.prefix, c, q.suffix) for c in q.candidates]
        ranks.append(rank_of(scores, list(q.candidates), q.candidates.index(q.answer))[0])
    return ranks


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", nargs="+", default=["code-mlm", "code-clm"])
    ap.add_argument("--quizzes", type=int, default=40)
    args = ap.parse_args(argv)
    import pyarrow.parquet as pq
    import yaml

    from pipeline.families.apiquiz.infer import Quiz, rank_candidates
    from pipeline.runtime.scorer import Scorer
    from pipeline.runtime.batching import seeded_subset
    from pipeline.models.entries import parse_zoo
    from pipeline.models.zoo import load_model

    torch.set_num_threads(1)
    table = pq.read_table("data/families/apiquiz/quizzes.parquet", columns=["quiz_id", "prefix", "answer", "suffix", "candidates"])
    keep = seeded_subset(table.column("quiz_id").to_pylist(), args.quizzes, 1)
    quizzes = [Quiz(r["quiz_id"], r["prefix"], r["answer"], r["suffix"], tuple(r["candidates"]))
               for r in table.to_pylist() if r["quiz_id"] in keep]
    zoo = parse_zoo(yaml.safe_load(Path("params.yaml").read_text())["models"]["zoo"])
    print(f"{'model':10s} {'variant':12s} {'quizzes/s':>9s} {'speed-up':>8s}  same ranks")
    for name in args.model:
        loaded = load_model(zoo[name], device="cpu")
        start = time.perf_counter()
        base = unbatched(loaded, zoo[name].model_family, quizzes)
        t_base = time.perf_counter() - start
        start = time.perf_counter()
        rows = rank_candidates(Scorer(loaded, 8192), zoo[name].model_family, quizzes, name, 20, ("rank",))
        t_ours = time.perf_counter() - start
        ours = [r["gold_rank"] for r in sorted(rows, key=lambda r: [q.quiz_id for q in quizzes].index(r["quiz_id"]))]
        print(f"{name:10s} {'unbatched':12s} {len(quizzes) / t_base:9.2f} {1.0:7.1f}x")
        print(f"{name:10s} {'ours':12s} {len(quizzes) / t_ours:9.2f} {t_base / t_ours:7.1f}x  {ours == base}")
        # every ranking protocol (sum, per-token mean, PMI): the same pass plus the no-context pass over
        # the distinct candidates, cached per model; the ratio is against `ours` (the sum alone) above
        start = time.perf_counter()
        rank_candidates(Scorer(loaded, 8192), zoo[name].model_family, quizzes, name, 20)
        t_all = time.perf_counter() - start
        print(f"{name:10s} {'+mean,+pmi':12s} {len(quizzes) / t_all:9.2f} {t_base / t_all:7.1f}x  "
              f"({t_all / t_ours:.2f}x the time of the sum alone)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
