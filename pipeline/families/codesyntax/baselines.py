"""The paper's baselines: offset (the token i after the head), keyword (the next occurrence
of a keyword after the head), top-k by greedily adding the value with the largest gain,
and combined (per relation and k, whichever of the two scored better where chosen)."""

from __future__ import annotations

import keyword
from dataclasses import dataclass

import numpy as np

JAVA_KEYWORDS = (
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


def greedy_offsets(lo: np.ndarray, hi: np.ndarray, k: int) -> list[int]:
    """k offsets, each the one covering most edges not yet covered (ties: the smaller offset)."""
    chosen: list[int] = []
    covered = np.zeros(len(lo), dtype=bool)
    for _ in range(k):
        live = ~covered & (lo <= MAX_OFFSET)
        diff = np.zeros(MAX_OFFSET + 2, dtype=np.int64)
        np.add.at(diff, lo[live], 1)
        np.add.at(diff, np.minimum(hi[live], MAX_OFFSET) + 1, -1)
        gain = np.cumsum(diff)[: MAX_OFFSET + 1]
        gain[chosen] = -1
        best = int(np.argmax(gain))
        chosen.append(best)
        covered |= (lo <= best) & (best <= hi)
    return chosen


def greedy_keywords(hit: np.ndarray, k: int) -> list[int]:
    """k keyword columns of `hit` (edges x keywords), greedily by uncovered edges hit."""
    chosen: list[int] = []
    covered = np.zeros(hit.shape[0], dtype=bool)
    for _ in range(min(k, hit.shape[1])):
        gain = hit[~covered].sum(axis=0).astype(np.int64)
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
    """Every baseline, metric and k for one relation; values chosen on `chosen_on`, scored on test."""
    test = ~edges.dev
    pick = edges.dev if chosen_on == "dev" else test
    out: list[Score] = []
    for metric in METRICS:
        lo_abs, hi_abs = window(edges, metric)
        lo, hi = lo_abs - edges.head, hi_abs - edges.head
        kw_hit = (edges.keyword_next >= lo_abs[:, None]) & (edges.keyword_next <= hi_abs[:, None])
        top = max(ks)
        offsets = greedy_offsets(lo[pick], hi[pick], top) if pick.any() else []
        kws = greedy_keywords(kw_hit[pick], top) if pick.any() else []
        for k in ks:
            off_hit = offset_hits(lo, hi, offsets[:k])
            kw_k = kw_hit[:, kws[:k]].any(axis=1) if kws else np.zeros(len(lo), dtype=bool)
            scores = {
                "offset": Score("offset", metric, k, [f"offset={o}" for o in offsets[:k]], int(off_hit[test].sum()),
                                int(test.sum()), int(off_hit[pick].sum()), int(pick.sum())),
                "keyword": Score("keyword", metric, k, [f"keyword={keywords[j]}" for j in kws[:k]],
                                 int(kw_k[test].sum()), int(test.sum()), int(kw_k[pick].sum()), int(pick.sum())),
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
