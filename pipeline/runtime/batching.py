"""Shards and batches that do not change the results.

A row's shard is a hash of its stable id, so 1 or 4 shards give the same rows in total.
Batches are length-sorted, longest first (an out-of-memory shows up in the first batch,
not the last), and capped by a padded-token budget as well as a row count.
"""

from __future__ import annotations

from typing import Iterator, Sequence, TypeVar

from pipeline.core.ids import seeded_order_key, shard_of

__all__ = ["shard_of", "length_sorted_batches", "seeded_subset", "select_shard"]  # shard_of: from core.ids

T = TypeVar("T")


def length_sorted_batches(items: Sequence[T], lengths: Sequence[int], max_rows: int, token_budget: int) -> Iterator[list[T]]:
    """Group items into batches: longest first, at most `max_rows` rows and at most
    `token_budget` padded tokens (rows x longest row) per batch; a single over-budget row
    still gets a batch of its own."""
    order = sorted(range(len(items)), key=lambda i: (-lengths[i], i))
    batch: list[int] = []
    for i in order:
        longest = lengths[batch[0]] if batch else lengths[i]
        if batch and (len(batch) + 1 > max_rows or (len(batch) + 1) * longest > token_budget):
            yield [items[j] for j in batch]
            batch = []
        batch.append(i)
    if batch:
        yield [items[j] for j in batch]


def seeded_subset(ids: Sequence[str], cap: int, seed: int) -> set[str]:
    """The `cap` ids first in a seeded hash order (all ids when cap is 0): the same subset
    whatever the shard count, and stable when other ids are added."""
    if not cap or cap >= len(ids):
        return set(ids)
    return set(sorted(ids, key=lambda i: seeded_order_key(seed, i))[:cap])


def select_shard(ids: Sequence[str], shard: int, shards: int, cap: int, seed: int) -> list[bool]:
    """Which rows this shard scores: the seeded subset, split by a stable hash of the id."""
    keep = seeded_subset(ids, cap, seed)
    return [i in keep and shard_of(i, shards) == shard for i in ids]
