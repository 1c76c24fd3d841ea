"""Python twins of the ranking macros in macros.sql (same definitions, same numbers).

Per-item functions: they take one value (or one list) per item and return a float64 array of
per-item scores; average it (np.mean) for the metric, as SQL does with avg().

- gold_rank: 1-based rank of the single gold answer; None or NaN when it was not ranked.
- rels: per item a sequence of relevance grades in rank order (None = nothing returned).
- ideal: per item the grades of every relevant item that exists for the query.
- n_relevant: per item the number of items with grade >= min_grade that exist.
- k: cutoff (None = no cutoff); min_grade: relevant means grade >= min_grade.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np


def _ranks(gold_rank: Iterable) -> np.ndarray:
    """Ranks as float64 with NaN for missing ones."""
    return np.array([np.nan if r is None else float(r) for r in gold_rank], dtype=np.float64)


def _hit(ranks: np.ndarray, k: int | None) -> np.ndarray:
    ok = ~np.isnan(ranks)
    if k is not None:
        ok &= np.where(ok, ranks, np.inf) <= k
    return ok


def success_at_k(gold_rank: Iterable, k: int | None) -> np.ndarray:
    """1 if the gold is in the top k, else 0 (missing rank: 0). Mean = P@k (INK) = SR@k (APIBench)."""
    return _hit(_ranks(gold_rank), k).astype(np.float64)


def reciprocal_rank(gold_rank: Iterable, k: int | None = None) -> np.ndarray:
    """1/gold_rank if the gold is in the top k (k None: no cutoff), else 0. Mean = MRR@k."""
    r = _ranks(gold_rank)
    hit = _hit(r, k)
    out = np.zeros(len(r), dtype=np.float64)
    out[hit] = 1.0 / r[hit]
    return out


def first_rank(rels: Sequence[int] | None, min_grade: int = 1) -> int | None:
    """The 1-based rank of the first item with grade >= min_grade in ONE graded list, or None."""
    for i, g in enumerate(rels or (), start=1):
        if g is not None and g >= min_grade:
            return i
    return None


def _top_k(rels: Sequence[int] | None, k: int | None) -> list:
    rels = list(rels or ())
    return rels if k is None else rels[: max(int(k), 0)]


def _sum_precision_at_hits(rels, k, min_grade) -> tuple[float, int]:
    total, hits = 0.0, 0
    for i, g in enumerate(_top_k(rels, k), start=1):
        if g is not None and g >= min_grade:
            hits += 1
            total += hits / i
    return total, hits


def _dcg(grades: Sequence, k: int | None) -> float:
    """Gain = grade (a negative grade or None gains 0, as in trec_eval), discount log2(rank + 1)."""
    return math.fsum(0.0 if g is None else max(g, 0) / math.log2(i + 1)
                     for i, g in enumerate(_top_k(grades, k), start=1))


def ap_at_k_standard(rels: Iterable, k: int | None, n_relevant: Iterable, min_grade: int = 1) -> np.ndarray:
    """trec_eval map_cut: sum of precision@i over relevant ranks i <= k, divided by n_relevant
    (every relevant item of the query); 0 when n_relevant is 0 or None."""
    out = []
    for r, n in zip(rels, n_relevant, strict=True):
        s, _ = _sum_precision_at_hits(r, k, min_grade)
        out.append(s / n if n else 0.0)
    return np.array(out, dtype=np.float64)


def ap_at_k_apibench(rels: Iterable, k: int | None, min_grade: int = 1) -> np.ndarray:
    """APIBench's MAP@k per item: the same sum divided by m, the relevant items found within
    the top k (0 when m = 0)."""
    out = []
    for r in rels:
        s, m = _sum_precision_at_hits(r, k, min_grade)
        out.append(s / m if m else 0.0)
    return np.array(out, dtype=np.float64)


def ndcg_at_k_standard(rels: Iterable, k: int | None, ideal: Iterable) -> np.ndarray:
    """trec_eval ndcg_cut: DCG@k (gain = grade, a negative one 0, discount log2(rank + 1)) over IDCG@k of
    the ideal grades sorted descending; 0 when IDCG is 0, NaN when ideal is None."""
    out = []
    for r, ide in zip(rels, ideal, strict=True):
        if ide is None:
            out.append(np.nan)
            continue
        idcg = _dcg(sorted(ide, reverse=True), k)
        out.append(_dcg(r, k) / idcg if idcg > 0 else 0.0)
    return np.array(out, dtype=np.float64)


def ndcg_at_k_apibench(rels: Iterable, k: int | None) -> np.ndarray:
    """APIBench's NDCG@k as its Tables 6-7 imply: IDCG@k = the best DCG@k of the WHOLE returned list
    re-sorted by grade ("re-arranging the order of current results"), so an exact API returned below k
    still lowers NDCG@k (BIKER: NDCG@1 .27 < class SR@1 .33). 0 when the list has no gain."""
    out = []
    for r in rels:
        idcg = _dcg(sorted(_top_k(r, None), reverse=True), k)
        out.append(_dcg(r, k) / idcg if idcg > 0 else 0.0)
    return np.array(out, dtype=np.float64)


def ndcg_at_k_apibench_topk(rels: Iterable, k: int | None) -> np.ndarray:
    """A looser reading of APIBench's NDCG@k: IDCG from the returned TOP K only, re-sorted (forces
    NDCG@1 = class-level SR@1 under 2/1 grades, which Table 6 contradicts)."""
    out = []
    for r in rels:
        top = _top_k(r, k)
        idcg = _dcg(sorted(top, reverse=True), k)
        out.append(_dcg(top, k) / idcg if idcg > 0 else 0.0)
    return np.array(out, dtype=np.float64)


def is_error(pred: Iterable, gold: Iterable) -> np.ndarray:
    """1 where the prediction differs from the gold (a None prediction is an error)."""
    return np.array([0.0 if (p is None and g is None) or (p is not None and p == g) else 1.0
                     for p, g in zip(pred, gold, strict=True)], dtype=np.float64)


def abs_error(pred: Iterable, gold: Iterable) -> np.ndarray:
    """|pred - gold| per item, NaN where either is missing."""
    p = np.array([np.nan if v is None else v for v in pred], dtype=np.float64)
    g = np.array([np.nan if v is None else v for v in gold], dtype=np.float64)
    if p.shape != g.shape:
        raise ValueError("pred and gold differ in length")
    return np.abs(p - g)


def error_rate(pred: Iterable, gold: Iterable) -> float:
    """1 - accuracy (NaN for no items)."""
    e = is_error(pred, gold)
    return float(e.mean()) if len(e) else math.nan


def mae(pred: Iterable, gold: Iterable) -> float:
    """Mean absolute error over the items where both are present (NaN if none)."""
    e = abs_error(pred, gold)
    e = e[~np.isnan(e)]
    return float(e.mean()) if len(e) else math.nan
