"""apirec's pieces that the Python points (generate.py), the Java points (java.py) and the query subset
(queries.py) share: the paper's point metadata (position, length bucket, library group, class), the n-gram
baseline and its ranking row. Both point builders import this module; neither imports the other's."""

from __future__ import annotations

import math
from collections import Counter, defaultdict

from pipeline.core import ids

START = "<s>"
CALL_KINDS = ("call", "method")


def api_class(fqn: str) -> str:
    return fqn.rsplit(".", 1)[0] if "." in fqn else fqn


def position(a: int, n: int, b: int, m: int) -> str:
    """The paper's Sec. 5.3: a-th line of an n-line function, b-th of its m APIs."""
    x, y = a / n, b / m
    if x < 0.25 and y < 0.25:
        return "front"
    if 0.25 < x < 0.75 and 0.25 < y < 0.75:
        return "middle"
    if x > 0.75 and y > 0.75:
        return "back"
    return "other"


def length_buckets(lengths: dict[tuple[str, str], int], share: float = 0.05) -> dict[tuple[str, str], str]:
    """Shortest `share` of the functions `short`, longest `long`, the rest `moderate` (ranked by LOC,
    ties in a stable hashed order)."""
    order = sorted(lengths, key=lambda k: (lengths[k], ids.stable_id(*k)))
    cut = math.ceil(share * len(order)) if order else 0
    out = {}
    for i, key in enumerate(order):
        out[key] = "short" if i < cut else "long" if i >= len(order) - cut else "moderate"
    return out


class NGram:
    """Most frequent next API given the previous API in the function, backed off to unigram counts."""

    def __init__(self, sequences: list[list[str]]):
        self.bigram: dict[str, Counter] = defaultdict(Counter)
        self.unigram: Counter = Counter()
        for seq in sequences:
            for prev, cur in zip([START] + seq[:-1], seq):
                self.bigram[prev][cur] += 1
                self.unigram[cur] += 1
        self.vocab = sorted(self.unigram, key=lambda a: (-self.unigram[a], a))

    def rank(self, previous: str | None) -> list[str]:
        """Every train API, best first."""
        counts = self.bigram.get(previous or START, Counter())
        head = sorted(counts, key=lambda a: (-counts[a], -self.unigram[a], a))
        seen = set(head)
        return head + [a for a in self.vocab if a not in seen]


def library_group(category: str, fqn: str, popular: tuple[str, ...]) -> str:
    """The paper's API kinds (Sec. 3): `stdlib`, `popular_third_party` (a third-party API whose top-level package
    is in `popular`, the paper's list of popular libraries), `other_third_party`, `user_defined`."""
    if category == "third_party":
        return "popular_third_party" if fqn.split(".", 1)[0] in popular else "other_third_party"
    return category


def ranking_row(point: dict, ranking: list[str], model: str, ranker: str, top_k: int) -> dict:
    gold, klass = point["api"], point["api_class"]
    rank = ranking.index(gold) + 1 if gold in ranking else None
    class_rank = next((i + 1 for i, a in enumerate(ranking) if api_class(a) == klass), None)
    return {"point_id": point["point_id"], "model": model, "ranker": ranker, "status": "ok", "gold_rank": rank,
            "class_rank": class_rank, "n_candidates": len(ranking), "gold_in_candidates": rank is not None,
            "top": ranking[:top_k], "gold_logprob": None}


def allocate(totals: dict[str, int], cap: int) -> dict[str, int]:
    """Each source's share of `cap` items, by its items before the cap `totals` (largest remainder), at least one
    each (when the cap allows: else one for each of the `cap` largest), never more than it has."""
    n = sum(totals.values())
    if not cap or n <= cap:
        return dict(totals)
    present = sorted((s for s, t in totals.items() if t > 0), key=lambda s: (-totals[s], s))
    if len(present) >= cap:
        return {s: int(s in present[:cap]) for s in totals}
    ideal = {s: totals[s] * cap / n for s in present}
    quota = {s: min(totals[s], max(1, int(ideal[s]))) for s in present}
    left = cap - sum(quota.values())
    while left > 0:  # the largest remainders first
        s = min((s for s in present if quota[s] < totals[s]), key=lambda s: (quota[s] - ideal[s], s))
        quota[s] += 1
        left -= 1
    while left < 0:  # the floors of one went over the cap: taken back where a source is furthest over its share
        s = min((s for s in present if quota[s] > 1), key=lambda s: (ideal[s] - quota[s], s))
        quota[s] -= 1
        left += 1
    return {s: quota.get(s, 0) for s in totals}
