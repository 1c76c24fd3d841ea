"""IdBench: Spearman's rho of a zoo model's cosines computed in float32 (as the warehouse did) against float64 (as it
does now), per layer, on a built run's own vectors.

The vectors are the predict stage's (float16 features widened to float32, `idbench` predictions); the cosine of each
pair is DuckDB's `list_cosine_similarity` on FLOAT[] (before) and on DOUBLE[] (now, `idbench_model_cosine`), and rho
the metric library's Spearman (average ranks, float64) against each gold score on every rated pair both sides of
which the model embedded, per benchmark size. Ties: float32 cosines of near-identical vectors collide more often,
and a tie takes the mean rank, so the rank order itself moves, not only the last digits.

Usage: python -m bench.fidelity.idbench_float64 --pairs data/families/idbench/pairs.parquet
           --predictions data/predictions/idbench/all/<model>/0.parquet [...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import duckdb

from pipeline.metrics.correlation import spearman

GOLDS = ("relatedness", "similarity", "contextual_similarity")


def cosines(con, pairs: Path, predictions: list[Path], kind: str):
    files = ", ".join(f"'{p}'" for p in predictions)
    return con.sql(f"""
        WITH pr AS (SELECT * FROM read_parquet([{files}])),
             p AS (SELECT DISTINCT pair_id, id1_id, id2_id FROM read_parquet('{pairs}'))
        SELECT a.model, a.layer, a.pooling, p.pair_id,
               list_cosine_similarity(a.vector::{kind}[], b.vector::{kind}[])::DOUBLE AS score
        FROM p JOIN pr a ON a.item_id = p.id1_id JOIN pr b ON b.item_id = p.id2_id
             AND a.model = b.model AND a.layer = b.layer AND a.pooling = b.pooling""").fetchall()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=Path, required=True, help="idbench's pairs.parquet (gold scores per size)")
    ap.add_argument("--predictions", type=Path, nargs="+", required=True, help="idbench predictions parquet files")
    args = ap.parse_args(argv)
    con = duckdb.connect()
    gold = {}
    for size, pid, *values in con.sql(f"SELECT size, pair_id, {', '.join(GOLDS)} FROM read_parquet('{args.pairs}')"
                                      ).fetchall():
        for g, v in zip(GOLDS, values):
            if v is not None:
                gold.setdefault((size, g), {})[pid] = v
    scores = {}
    for kind in ("FLOAT", "DOUBLE"):
        for model, layer, pooling, pid, s in cosines(con, args.pairs, args.predictions, kind):
            scores.setdefault((model, layer, pooling), {}).setdefault(kind, {})[pid] = s
    print("| model | layer | pooling | max abs(rho float64 - rho float32) | at (size, gold) | rho float32 | rho float64 | n |")
    print("|---|---|---|---|---|---|---|---|")
    overall = 0.0
    for (model, layer, pooling), by in sorted(scores.items()):
        worst = None
        for (size, g), ref in sorted(gold.items()):
            ids = sorted(p for p in ref if by["DOUBLE"].get(p) is not None)
            r32 = spearman([by["FLOAT"][p] for p in ids], [ref[p] for p in ids])
            r64 = spearman([by["DOUBLE"][p] for p in ids], [ref[p] for p in ids])
            d = abs(r64.rho - r32.rho)
            if d == d and (worst is None or d > worst[0]):
                worst = (d, size, g, r32.rho, r64.rho, r64.n)
        if worst:
            overall = max(overall, worst[0])
            d, size, g, a, b, n = worst
            print(f"| {model} | {layer} | {pooling} | {d:.4f} | {size}, {g} | {a:.4f} | {b:.4f} | {n} |")
    print(f"\nlargest change over every layer, size and gold score: {overall:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
