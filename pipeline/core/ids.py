"""Stable ids and seeded hashes: one place for every sha256 the pipeline derives ids, splits,
orders and seeds from.

All functions hash the UTF-8 text of `sep.join(str(p) for p in parts)`, so a call site that
used to write `sha256(f"{seed}\\0{name}".encode())` now writes `digest(seed, name)`, with the
same bytes. Call sites differ in their separator ("\\0" for ids and splits, ":" for seeded
orders); keep each one's separator, or every id, split and order it produces moves.

Content hashes (of file bytes, of code for cache keys) are not ids and stay `hashlib` calls.
"""

from __future__ import annotations

import hashlib
import random
import re

__all__ = ["digest", "stable_id", "unit_float", "seeded_order_key", "seeded_rng", "shard_of"]

_HEX_PREFIX = re.compile(r"[0-9a-fA-F]{1,12}")


def _text(parts: tuple[object, ...], sep: str) -> bytes:
    return sep.join(map(str, parts)).encode()


def digest(*parts: object, sep: str = "\0") -> bytes:
    """sha256 of the parts (each `str()`-ed) joined by `sep`: 32 bytes."""
    return hashlib.sha256(_text(parts, sep)).digest()


def stable_id(*parts: object, length: int | None = 16, sep: str = "\0") -> str:
    """Hex sha256 of the parts joined by `sep`, cut to `length` characters (None: all 64)."""
    h = hashlib.sha256(_text(parts, sep)).hexdigest()
    return h if length is None else h[:length]


def unit_float(*parts: object, sep: str = "\0") -> float:
    """A uniform number in [0, 1) from the parts: the first 8 digest bytes over 2**64."""
    return int.from_bytes(digest(*parts, sep=sep)[:8], "big") / 2**64


def seeded_order_key(seed: object, *parts: object, sep: str = ":") -> bytes:
    """Sort key for a seeded order of items (`sorted(xs, key=lambda x: seeded_order_key(seed, x))`):
    each item's place depends on the seed and the item only, so a subset taken from the front is
    stable when other items are added."""
    return digest(seed, *parts, sep=sep)


def seeded_rng(seed: object, *parts: object, sep: str = "\0") -> random.Random:
    """A `random.Random` seeded from the first 8 digest bytes of (seed, *parts): one stream per
    item, unchanged when other items change."""
    return random.Random(int.from_bytes(digest(seed, *parts, sep=sep)[:8], "big"))


def shard_of(item_id: str, shards: int) -> int:
    """Stable shard in [0, shards) of any string id.

    Ids whose first 12 characters (or all of a shorter id) are hex digits keep the historical
    assignment `int(item_id[:12], 16) % shards`, so existing shard files do not move; any other
    id is hashed first (the first 12 hex digits of its sha256). 1 or N shards partition the ids.
    """
    if shards < 1:
        raise ValueError(f"shards must be >= 1, got {shards}")
    prefix = item_id[:12]
    if not _HEX_PREFIX.fullmatch(prefix):
        prefix = stable_id(item_id, length=12)
    return int(prefix, 16) % shards
