"""Shards and batches that do not change the results.

A row's shard is a hash of its stable id, so 1 or 4 shards give the same rows in total.
Batches are length-sorted, longest first (an out-of-memory shows up in the first batch,
not the last), and capped by a padded-token budget as well as a row count.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Hashable, Iterator, Mapping, Sequence, TypeVar

from pipeline.core.ids import seeded_order_key, shard_of

__all__ = ["shard_of", "length_sorted_batches", "seeded_subset", "stratified_subset", "capped_subset", "select_shard"]  # shard_of: from core.ids

T = TypeVar("T")


def length_sorted_batches(items: Sequence[T], lengths: Sequence[int], max_rows: int, token_budget: int,
                          min_fill: float = 0.0) -> Iterator[list[T]]:
    """Group items into batches: longest first, at most `max_rows` rows and at most
    `token_budget` padded tokens (rows x longest row) per batch; a single over-budget row
    still gets a batch of its own. `min_fill` > 0: a row shorter than that share of its batch's
    longest row starts a new batch (every row is then at least that full: less padding, more calls)."""
    order = sorted(range(len(items)), key=lambda i: (-lengths[i], i))
    batch: list[int] = []
    for i in order:
        longest = lengths[batch[0]] if batch else lengths[i]
        if batch and (len(batch) + 1 > max_rows or (len(batch) + 1) * longest > token_budget
                      or lengths[i] < min_fill * longest):
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


def stratified_subset(ids: Sequence[str], strata: Sequence[Hashable], cap: int, floor: int, seed: int) -> set[str]:
    """`cap` ids drawn per stratum (all ids when cap is 0 or covers them): first every stratum gets
    `floor` ids (all of a smaller one), then the rest of `cap` is shared in proportion to what each
    stratum has left (largest remainders, ties by stratum). Within a stratum the ids come first in a
    seeded hash order, so the subset does not depend on shards and is stable when other ids are added.
    When floors alone pass `cap` (many strata), the floors win: the subset is larger than `cap`."""
    if not cap or cap >= len(ids):
        return set(ids)
    members: dict[Hashable, list[str]] = defaultdict(list)
    for i, s in zip(ids, strata):
        members[s].append(i)
    keys = sorted(members, key=repr)
    take = {k: min(floor, len(members[k])) for k in keys}
    left = cap - sum(take.values())
    spare = {k: len(members[k]) - take[k] for k in keys}
    total = sum(spare.values())
    if left > 0 and total:
        shares = {k: left * spare[k] / total for k in keys}
        extra = {k: int(shares[k]) for k in keys}
        order = sorted(keys, key=lambda k: (-(shares[k] - extra[k]), repr(k)))
        for k in order[: left - sum(extra.values())]:
            extra[k] += 1
        for k in keys:
            take[k] += min(extra[k], spare[k])
    out: set[str] = set()
    for k in keys:
        out.update(sorted(members[k], key=lambda i: seeded_order_key(seed, i))[: take[k]])
    return out


def capped_subset(ids: Sequence[str], keys: Sequence[str], caps: Mapping[str, int], seed: int,
                  strata: Sequence[Hashable] | None = None, floor: int = 0) -> set[str]:
    """`caps[k]` ids of each key k that `caps` names (all of a smaller one), none of the other keys: within a
    key a seeded subset, stratified by `strata` with `floor` when given (stratified_subset). Like every draw
    here, it depends on the ids alone, never on shards, and is stable when other ids are added."""
    members: dict[str, list[int]] = defaultdict(list)
    for n, k in enumerate(keys):
        if k in caps:
            members[k].append(n)
    out: set[str] = set()
    for k, rows in members.items():
        part = [ids[n] for n in rows]
        out |= (seeded_subset(part, caps[k], seed) if strata is None
                else stratified_subset(part, [strata[n] for n in rows], caps[k], floor, seed))
    return out


def select_shard(ids: Sequence[str], shard: int, shards: int, cap: int, seed: int,
                 strata: Sequence[Hashable] | None = None, floor: int = 0,
                 caps: Mapping[str, int] | None = None, keys: Sequence[str] | None = None) -> list[bool]:
    """Which rows this shard scores: the seeded subset (stratified when `strata` is given; per key when
    `caps` and `keys` are given: capped_subset), split by a stable hash of the id."""
    if caps is not None:
        if keys is None:
            raise ValueError("select_shard: caps per key need each row's key")
        keep = capped_subset(ids, keys, caps, seed, strata, floor)
    else:
        keep = seeded_subset(ids, cap, seed) if strata is None else stratified_subset(ids, strata, cap, floor, seed)
    return [i in keep and shard_of(i, shards) == shard for i in ids]


def padded(rows: list[list[int]], pad: int, device) -> tuple["torch.Tensor", "torch.Tensor"]:
    """A batch of token id rows as (ids, attention mask) tensors on `device`, right-padded with `pad`."""
    import torch

    width = max(len(r) for r in rows)
    # one tensor from the padded lists (a tensor per row was 6% of a small masked LM's scoring)
    ids = torch.tensor([list(r) + [pad] * (width - len(r)) for r in rows], dtype=torch.long)
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows], dtype=torch.long)
    return ids.to(device), mask.to(device)


def common_prefix(rows: list[list[int]]) -> int:
    """Tokens every row starts with, leaving each row at least one of its own."""
    n = min(len(r) for r in rows) - 1
    first = rows[0]
    for r in rows[1:]:
        k = 0
        while k < n and r[k] == first[k]:
            k += 1
        n = k
    return max(n, 0)
