"""The paper's baselines: offset (the token i after the head), keyword (the next occurrence
of a keyword after the head), top-k by greedily adding the value with the largest gain,
and combined (per relation and k, whichever of the two scored better where chosen)."""

from __future__ import annotations

import keyword
from dataclasses import dataclass

import numpy as np

# The release's Java keyword list (dashends/CodeSyntax evaluating_models/PL/topk_scores_baselines_java.py),
# in its order (ties go to the earlier keyword): the reserved words with the literals true, false, null
# and without `enum`. Python: keyword.kwlist (the release's list is Python 3.8's, the same 35 words).
JAVA_KEYWORDS = (
    "abstract assert boolean break byte case catch char class const continue default do double else extends "
    "false final finally float for goto if implements import instanceof int interface long native new null "
    "package private protected public return short static strictfp super switch synchronized this throw "
    "throws transient true try void volatile while").split()
# our earlier list (the JLS reserved words, `enum` in, the three literals out), kept as a named variant
JAVA_KEYWORDS_JLS = (
    "abstract assert boolean break byte case catch char class const continue default do double else enum "
    "extends final finally float for goto if implements import instanceof int interface long native new "
    "package private protected public return short static strictfp super switch synchronized this throw "
    "throws transient try void volatile while").split()
KEYWORDS = {"python": tuple(keyword.kwlist), "java": tuple(JAVA_KEYWORDS)}
METRICS = ("first", "last", "any")
MAX_OFFSET = 512


@dataclass(frozen=True)
class Edges:
    """Edges of one relation as arrays: head, dependent span, and which are on the dev side."""

    head: np.ndarray
    start: np.ndarray
    end: np.ndarray
    dev: np.ndarray  # bool
    keyword_next: np.ndarray  # (edges, keywords): index of the keyword's next occurrence after head, or -1


def window(edges: Edges, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Token positions whose prediction counts as a hit."""
    if metric == "first":
        return edges.start, edges.start
    if metric == "last":
        return edges.end, edges.end
    return edges.start, edges.end


@dataclass(frozen=True)
class Windows:
    """A relation's edges under one metric reduced to what the baselines read: each distinct (hit
    window relative to the head, keyword hits, dev side) once, with how many edges share it. The
    greedy choices and the scores are sums over edges, so weighting each distinct row by its count
    gives the per-edge results exactly (tests/test_baselines.py), in memory that grows with the
    distinct windows (a few percent of the edges), not with the corpus."""

    lo: np.ndarray  # int64: first hit offset (token - head)
    hi: np.ndarray  # int64: last hit offset
    kw_hit: np.ndarray  # bool (rows, keywords): the keyword's next occurrence after the head is in the window
    dev: np.ndarray  # bool
    count: np.ndarray  # int64: edges with this row


def edge_windows(edges: Edges, metric: str) -> Windows:
    """One row per edge (count 1), not yet compressed."""
    lo_abs, hi_abs = window(edges, metric)
    kw_hit = (edges.keyword_next >= lo_abs[:, None]) & (edges.keyword_next <= hi_abs[:, None])
    head = edges.head.astype(np.int64)
    return Windows(lo_abs - head, hi_abs - head, kw_hit, np.asarray(edges.dev, dtype=bool),
                   np.ones(len(head), dtype=np.int64))


def merge_windows(parts: list[Windows], n_keywords: int) -> Windows:
    """The distinct rows of `parts` with their counts summed (rows in a canonical order)."""
    if not parts:
        return Windows(*(np.zeros(0, dtype=np.int64),) * 2, np.zeros((0, n_keywords), dtype=bool),
                       np.zeros(0, dtype=bool), np.zeros(0, dtype=np.int64))
    lo, hi, dev, count = (np.concatenate([getattr(p, f) for p in parts]) for f in ("lo", "hi", "dev", "count"))
    if not len(lo):
        return merge_windows([], n_keywords)
    packed = np.packbits(np.concatenate([p.kw_hit for p in parts]).reshape(len(lo), n_keywords), axis=1)
    key = np.column_stack([lo.astype(np.int64), hi.astype(np.int64), dev.astype(np.int64), packed.astype(np.int64)])
    rows, inverse = np.unique(key, axis=0, return_inverse=True)
    total = np.zeros(len(rows), dtype=np.int64)
    np.add.at(total, inverse.reshape(-1), count)
    kw_hit = np.unpackbits(rows[:, 3:].astype(np.uint8), axis=1, count=n_keywords).astype(bool)
    return Windows(rows[:, 0].copy(), rows[:, 1].copy(), kw_hit, rows[:, 2].astype(bool), total)


@dataclass(frozen=True)
class Relation:
    """What the statistics and baselines need of one relation's edges, however many there are."""

    edges: int
    offset_sum: int  # sum over edges of dependent start - head (the mean offset's numerator)
    windows: dict[str, Windows]  # per metric


def summarize(edges: Edges, n_keywords: int) -> Relation:
    """The Relation of edges held in memory."""
    return Relation(len(edges.head), int((edges.start.astype(np.int64) - edges.head).sum()),
                    {m: merge_windows([edge_windows(edges, m)], n_keywords) for m in METRICS})


def greedy_offsets(lo: np.ndarray, hi: np.ndarray, k: int, weight: np.ndarray | None = None) -> list[int]:
    """k offsets, each the one covering most (weight of) edges not yet covered (ties: the smaller offset)."""
    w = np.ones(len(lo), dtype=np.int64) if weight is None else np.asarray(weight, dtype=np.int64)
    chosen: list[int] = []
    covered = np.zeros(len(lo), dtype=bool)
    for _ in range(k):
        live = ~covered & (lo <= MAX_OFFSET)
        diff = np.zeros(MAX_OFFSET + 2, dtype=np.int64)
        np.add.at(diff, lo[live], w[live])
        np.add.at(diff, np.minimum(hi[live], MAX_OFFSET) + 1, -w[live])
        gain = np.cumsum(diff)[: MAX_OFFSET + 1]
        gain[chosen] = -1
        best = int(np.argmax(gain))
        chosen.append(best)
        covered |= (lo <= best) & (best <= hi)
    return chosen


def greedy_keywords(hit: np.ndarray, k: int, weight: np.ndarray | None = None) -> list[int]:
    """k keyword columns of `hit` (edges x keywords), greedily by (weight of) uncovered edges hit."""
    w = np.ones(hit.shape[0], dtype=np.int64) if weight is None else np.asarray(weight, dtype=np.int64)
    chosen: list[int] = []
    covered = np.zeros(hit.shape[0], dtype=bool)
    for _ in range(min(k, hit.shape[1])):
        gain = w[~covered] @ hit[~covered].astype(np.int64)
        gain[chosen] = -1
        best = int(np.argmax(gain))
        chosen.append(best)
        covered |= hit[:, best]
    return chosen


def offset_hits(lo: np.ndarray, hi: np.ndarray, offsets: list[int]) -> np.ndarray:
    hit = np.zeros(len(lo), dtype=bool)
    for o in offsets:
        hit |= (lo <= o) & (o <= hi)
    return hit


@dataclass(frozen=True)
class Score:
    baseline: str
    metric: str
    k: int
    chosen: list[str]
    hits: int
    total: int
    choice_hits: int  # on the split the values were chosen on, for `combined`
    choice_total: int


def score_relation(edges: Edges, keywords: tuple[str, ...], ks: list[int], chosen_on: str) -> list[Score]:
    """Every baseline, metric and k for one relation's edges (see `score_windows`)."""
    return score_windows({m: merge_windows([edge_windows(edges, m)], len(keywords)) for m in METRICS},
                         keywords, ks, chosen_on)


def score_windows(windows: dict[str, Windows], keywords: tuple[str, ...], ks: list[int],
                  chosen_on: str) -> list[Score]:
    """Every baseline, metric and k for one relation (its windows per metric); values chosen on
    `chosen_on`, scored on test. Each row weighs as many edges as it stands for."""
    out: list[Score] = []
    for metric in METRICS:
        w = windows[metric]
        lo, hi, kw_hit, n = w.lo, w.hi, w.kw_hit, w.count
        test = ~w.dev
        pick = w.dev if chosen_on == "dev" else test
        top = max(ks)
        offsets = greedy_offsets(lo[pick], hi[pick], top, n[pick]) if pick.any() else []
        kws = greedy_keywords(kw_hit[pick], top, n[pick]) if pick.any() else []
        n_test, n_pick = int(n[test].sum()), int(n[pick].sum())
        for k in ks:
            off_hit = offset_hits(lo, hi, offsets[:k])
            kw_k = kw_hit[:, kws[:k]].any(axis=1) if kws else np.zeros(len(lo), dtype=bool)
            scores = {
                "offset": Score("offset", metric, k, [f"offset={o}" for o in offsets[:k]], int(n[off_hit & test].sum()),
                                n_test, int(n[off_hit & pick].sum()), n_pick),
                "keyword": Score("keyword", metric, k, [f"keyword={keywords[j]}" for j in kws[:k]],
                                 int(n[kw_k & test].sum()), n_test, int(n[kw_k & pick].sum()), n_pick),
            }
            better = max(scores.values(), key=lambda s: (s.choice_hits, s.baseline == "offset"))
            out.extend(scores.values())
            out.append(Score("combined", metric, k, better.chosen, better.hits, better.total,
                             better.choice_hits, better.choice_total))
    return out


def next_keyword_positions(tokens: list[str], heads: np.ndarray, keywords: tuple[str, ...]) -> np.ndarray:
    """(edges, keywords): first index > head holding the keyword, -1 if none."""
    out = np.full((len(heads), len(keywords)), -1, dtype=np.int64)
    array = np.array(tokens, dtype=object)
    for j, kw in enumerate(keywords):
        positions = np.flatnonzero(array == kw)
        if positions.size:
            i = np.searchsorted(positions, heads, side="right")
            found = i < positions.size
            out[found, j] = positions[i[found]]
    return out
