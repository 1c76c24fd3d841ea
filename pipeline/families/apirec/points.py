"""apirec's pieces that the Python points (generate.py), the Java points (java.py) and the query subset
(queries.py) share: the paper's point metadata (position, length bucket, library group, class), the n-gram
baseline and its ranking row. Both point builders import this module; neither imports the other's."""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import pyarrow as pa

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


def count_bigrams(sequences) -> Counter:
    """(previous API, API) -> count over the sequences (`<s>` before each one's first API): everything the
    n-gram is, so counts of disjoint sets of functions (shards) add up to the counts of all of them."""
    counts: Counter = Counter()
    for seq in sequences:
        counts.update(zip([START] + seq[:-1], seq))
    return counts


NGRAM_COUNTS = pa.schema([("group", pa.string()), ("previous", pa.string()), ("api", pa.string()),
                          ("n", pa.int64())])  # a shard's bigram counts per group (a training domain; Java's: "")


def counts_table(groups: dict[str, Counter]) -> pa.Table:
    """Bigram counts per group as NGRAM_COUNTS rows, sorted (equal counts, equal bytes)."""
    rows = [{"group": g, "previous": p, "api": a, "n": n}
            for g in sorted(groups) for (p, a), n in sorted(groups[g].items()) if n]
    return pa.Table.from_pylist(rows, NGRAM_COUNTS)


def read_counts(tables: list[pa.Table]) -> dict[str, Counter]:
    """The shards' NGRAM_COUNTS summed per group: the counts of the whole corpus, exactly."""
    out: dict[str, Counter] = defaultdict(Counter)
    for table in tables:
        for g, p, a, n in zip(*(table.column(c).to_pylist() for c in ("group", "previous", "api", "n"))):
            out[g][(p, a)] += n
    return dict(out)


class NGram:
    """Most frequent next API given the previous API in the function, backed off to unigram counts."""

    def __init__(self, sequences: list[list[str]]):
        self._build(count_bigrams(sequences))

    @classmethod
    def from_counts(cls, counts: Counter) -> "NGram":
        """The n-gram of these bigram counts (count_bigrams; shards' counts summed): the same model, and
        rankings, as from the sequences themselves (every ranking is sorted by count, then name)."""
        ngram = cls.__new__(cls)
        ngram._build(counts)
        return ngram

    def _build(self, counts: Counter) -> None:
        self.bigram: dict[str, Counter] = defaultdict(Counter)
        self.unigram: Counter = Counter()
        for (prev, cur), n in sorted(counts.items()):
            if n:
                self.bigram[prev][cur] += n
                self.unigram[cur] += n
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
