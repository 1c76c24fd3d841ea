"""What the pipeline-trained models read: manifest files of one split, in a seeded order,
up to a byte cap, cut into fixed-length token blocks."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import torch

from pipeline import schemas
from pipeline.core.ids import stable_id
from pipeline.io import read_parquet
from pipeline.manifest import read_text


@dataclass(frozen=True)
class Selection:
    """The files a model learned from (or is scored on): recorded in its card, so "seen" is exact."""

    split: str
    file_ids: tuple[str, ...]
    locations: tuple[str, ...]
    encodings: tuple[str, ...]
    bytes: int

    def texts(self, root: str | Path = ".") -> Iterator[str]:
        for location, encoding in zip(self.locations, self.encodings):
            yield read_text({"location": location, "encoding": encoding}, root)

    def digest(self) -> str:
        """Content-free fingerprint of the selection: sha256 of its sorted file ids."""
        return stable_id(*sorted(self.file_ids), length=None, sep="\n")

    def describe(self, languages: list[str]) -> dict:
        return {"split": self.split, "languages": languages, "files": len(self.file_ids), "bytes": self.bytes,
                "file_ids_sha256": self.digest()}


def select_files(manifest: str | Path, split: str, languages: list[str], max_bytes: int, seed: int) -> Selection:
    """Non-duplicate files of `split` in the given languages, ordered by a seeded hash of their
    id (languages and repositories interleave) and kept while the total stays within `max_bytes`."""
    table = read_parquet(manifest, schemas.MANIFEST)
    mask = pc.and_(pc.and_(pc.equal(table["split"], split), pc.invert(table["duplicate"])),
                   pc.is_in(table["language"], value_set=pa.array(languages, pa.string())))
    rows = table.filter(mask).select(["file_id", "location", "encoding", "bytes"]).to_pylist()
    rows.sort(key=lambda r: stable_id(seed, r["file_id"], length=None))
    kept, total = [], 0
    for r in rows:
        if total + r["bytes"] > max_bytes:
            continue
        kept.append(r)
        total += r["bytes"]
    return Selection(split, tuple(r["file_id"] for r in kept), tuple(r["location"] for r in kept),
                     tuple(r["encoding"] for r in kept), total)


def token_stream(tokenizer, texts: Iterator[str], separator_id: int | None) -> list[int]:
    """All texts tokenized (no special tokens), each followed by the separator token if there is one."""
    ids: list[int] = []
    for text in texts:
        ids.extend(tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])  # whole files: no length warning
        if separator_id is not None:
            ids.append(separator_id)
    return ids


def blocks(ids: list[int], length: int, max_blocks: int | None = None, pad_id: int | None = None) -> torch.Tensor:
    """Consecutive non-overlapping blocks of `length` tokens (the ragged tail is dropped). With `pad_id`,
    a stream shorter than one block still gives one block, padded (a tiny corpus trains, it does not crash)."""
    if pad_id is not None and 0 < len(ids) < length:
        return torch.tensor([ids + [pad_id] * (length - len(ids))], dtype=torch.long)
    n = len(ids) // length
    if max_blocks is not None:
        n = min(n, max_blocks)
    return torch.tensor(ids[: n * length], dtype=torch.long).view(n, length)


def batch_order(n_blocks: int, batch_size: int, steps: int, seed: int) -> Iterator[list[int]]:
    """The block indices of each training step's batch: seeded permutations of the blocks, concatenated,
    cut into full batches (also when there are fewer blocks than a batch). The training loop draws its
    batches from here, and the card recomputes from here which blocks the model read."""
    gen = torch.Generator().manual_seed(seed)
    order: list[int] = []
    for _ in range(steps):
        while len(order) < batch_size:
            order.extend(torch.randperm(n_blocks, generator=gen).tolist())
        idx, order = order[:batch_size], order[batch_size:]
        yield idx


def _position(text: str, char: int) -> tuple[int, int]:
    """(1-based line, 0-based column in characters) of a character offset: the usages' convention."""
    return text.count("\n", 0, char) + 1, char - (text.rfind("\n", 0, char) + 1)


def read_ranges(tokenizer, selection: Selection, texts: Iterator[str], length: int, separator_id: int | None,
              blocks_read: set[int]) -> dict:
    """Exactly which text a model read: the selection's files tokenized as `token_stream` does, cut into
    blocks of `length` tokens as `blocks` does (the ragged tail dropped; a stream shorter than one block
    is one padded block), and, per file, the ranges of its tokens that lie in a block of `blocks_read`.
    Ranges are [start line, start column, end line, end column) in the decoded text (1-based lines,
    0-based character columns, as data/extract/usages.parquet places calls); `bytes` counts their UTF-8
    bytes. Files with no token read are left out of `files` (they were selected, never read)."""
    files, pos, total_bytes = [], 0, 0
    streamed: list[tuple[str, str, list[tuple[int, int]], int]] = []
    for file_id, text in zip(selection.file_ids, texts):
        offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True,
                            verbose=False)["offset_mapping"]
        streamed.append((file_id, text, offsets, pos))
        pos += len(offsets) + (separator_id is not None)
    usable = pos if 0 < pos < length else pos // length * length  # tokens inside a (possibly padded) block
    for file_id, text, offsets, start in streamed:
        ranges, run = [], None
        for j, (a, b) in enumerate(offsets):
            at = start + j
            if at < usable and at // length in blocks_read:
                run = [a, b] if run is None else [run[0], b]
            elif run is not None:
                ranges.append(run)
                run = None
        if run is not None:
            ranges.append(run)
        if ranges:
            n_bytes = sum(len(text[a:b].encode("utf-8")) for a, b in ranges)
            total_bytes += n_bytes
            files.append({"file_id": file_id, "bytes": n_bytes,
                          "ranges": [[*_position(text, a), *_position(text, b)] for a, b in ranges]})
    return {"block_length": length, "blocks": max(1, pos // length) if 0 < pos < length else pos // length,
            "blocks_read": len(blocks_read), "files": len(files), "bytes": total_bytes,
            "text": sorted(files, key=lambda f: f["file_id"])}
