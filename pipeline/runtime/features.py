"""Per-layer pooled features: one vector per (item, layer) of a frozen model, for the families that read a
model's representations (SPEC.md: token = mean of its subtokens, pair = concatenation, snippet = mean of all
subtokens, an identifier's text mean-pooled, per layer).

A family describes what it wants as `FeatureRequest`s: an item id, the text to run, a kind and
character spans in that text. Requests that share a text are grouped, so every distinct text
runs through the model once; texts are batched length-sorted under the token budget
(pipeline.runtime.batching) under `torch.inference_mode`, and each batch's hidden states are
pooled on the spot: nothing per-token outlives its batch, only the pooled vectors are kept.

Kinds (every vector is computed in float32, stored as float16):

- `snippet`: mean of every non-special subtoken of the text (spans: none); `first` pooling takes
  the sequence's first token instead (CLS / <s> where the tokenizer adds one);
- `word`: mean of the subtokens of one character span;
- `span`: mean over the subtokens of one or more character ranges taken together (several
  words, or every occurrence of an identifier);
- `pair`: two character ranges, each pooled on its own, concatenated (2 x hidden size).

`first` pooling takes the first subtoken (in text order) of the range(s) instead of the mean. The table's
`pooling` column says which: `mean`, `first`, and for pairs `concat` (of means) or `concat-first`.

Subtokens of a span: the subtokens whose character offsets (fast tokenizer offset_mapping)
overlap it, special tokens excluded: for a single span exactly the subtokens that
`pipeline.runtime.align.align(offsets, [span], len(text))` gives word 0, so a span's vector
never depends on which other requests share its text.

Layers: 0 is the embedding output, 1..L the layers (`hidden_states` of the model). For an
encoder-decoder, `side` picks the encoder (default), the decoder, or both; the decoder gets the
same token sequence as its input (teacher forcing on the text itself: position i sees tokens
<= i and the whole encoder output). With `both`, layers 0..Le are the encoder's and Le+1..
Le+1+Ld the decoder's (its embedding output first); `FeatureResult.layer_names` spells every
number out ("encoder.0", ..., "decoder.3").

Texts longer than the model's max_length are truncated (special tokens kept); a request whose
characters reach into the cut-off part (a snippet of a truncated text always does), that covers no subtoken, or whose vector is not finite
in float16 is not produced but reported in `FeatureResult.failed` with its reason.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import torch

from pipeline import schemas
from pipeline.runtime.batching import length_sorted_batches
from pipeline.runtime.languages import Languages

KINDS = ("snippet", "word", "span", "pair")
# A text joins a batch only if it is at least this share of the batch's longest text: the linear layers,
# most of the cost, run on padding too (docs/scaling.md "ours vs peer": 0.8 measured best of 0.6-0.9).
FEATURES_MIN_FILL = 0.8
POOLINGS = ("mean", "first")
SIDES = ("encoder", "decoder", "both")
# how many character ranges each kind takes: (at least, at most)
_RANGES = {"snippet": (0, 0), "word": (1, 1), "span": (1, None), "pair": (2, 2)}


@dataclass(frozen=True)
class FeatureRequest:
    """One feature vector to compute: `spans` are [start, end) character ranges in `text`."""

    item_id: str
    text: str
    kind: str
    spans: tuple[tuple[int, int], ...] = ()
    pooling: str = "mean"
    language: str | None = None  # the text's: a model that marks it gets its code (PLBART's `</s> __java__`)

    def __post_init__(self) -> None:
        spans = tuple((int(a), int(b)) for a, b in self.spans)
        object.__setattr__(self, "spans", spans)
        if self.kind not in KINDS:
            raise ValueError(f"{self.item_id}: kind {self.kind!r} is not one of {KINDS}")
        if self.pooling not in POOLINGS:
            raise ValueError(f"{self.item_id}: pooling {self.pooling!r} is not one of {POOLINGS}")
        least, most = _RANGES[self.kind]
        if len(spans) < least or (most is not None and len(spans) > most):
            raise ValueError(f"{self.item_id}: a {self.kind} request takes {least}"
                             f"{'' if most == least else ' or more' if most is None else f'..{most}'} spans, not {len(spans)}")
        for a, b in spans:
            if not 0 <= a <= b <= len(self.text):
                raise ValueError(f"{self.item_id}: span ({a}, {b}) is not inside the text (length {len(self.text)})")

    @property
    def pooling_name(self) -> str:
        """The table's `pooling` value: mean / first, concat / concat-first for pairs."""
        if self.kind == "pair":
            return "concat" if self.pooling == "mean" else "concat-first"
        return self.pooling


@dataclass(frozen=True)
class FeatureResult:
    """The FEATURES table (rows ordered by item_id, layer), the requests not produced with
    their reasons, and what each layer number means."""

    table: pa.Table
    failed: Mapping[str, str] = field(default_factory=dict)
    layer_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class PooledVectors:
    """The float32 vectors before they become a table."""

    vectors: dict[str, np.ndarray]  # item_id -> [len(layers), dim]
    failed: dict[str, str]  # item_id -> reason
    layer_names: tuple[str, ...]  # what every layer number of the model means
    layers: tuple[int, ...]  # the layer numbers kept, the rows of each vector


@dataclass(frozen=True)
class Encoded:
    """A text tokenized for one model, truncated to its max_length."""

    ids: list[int]
    starts: np.ndarray  # character offsets of each subtoken
    ends: np.ndarray
    content: np.ndarray  # bool: not a special token
    cut_at: int | None  # characters from here on were truncated away (None: nothing was)


def encode(tokenizer, texts: Sequence[str], max_length: int) -> list[Encoded]:
    """Tokenize with offsets; a sequence over `max_length` keeps its leading and trailing special
    tokens and the first subtokens of the text that fit."""
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError("pooled features need a fast tokenizer (character offsets)")
    if not texts:
        return []
    enc = tokenizer(list(texts), return_offsets_mapping=True, return_special_tokens_mask=True, verbose=False)
    out = []
    for ids, offsets, special in zip(enc["input_ids"], enc["offset_mapping"], enc["special_tokens_mask"]):
        offs = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
        special = np.asarray(special, dtype=bool)
        cut_at = None
        n = len(ids)
        if n > max_length:
            lead = int(np.argmin(special)) if not special.all() else n
            trail = int(np.argmin(special[::-1])) if not special.all() else 0
            keep = max(max_length - lead - trail, 0)
            dropped = next((t for t in range(lead + keep, n - trail) if offs[t, 1] > offs[t, 0]), None)
            cut_at = None if dropped is None else int(offs[dropped, 0])
            idx = list(range(lead + keep)) + list(range(n - trail, n))
            ids = [ids[t] for t in idx]
            offs, special = offs[idx], special[idx]
        out.append(Encoded(list(ids), offs[:, 0].copy(), offs[:, 1].copy(), ~special, cut_at))
    return out


def span_subtokens(e: Encoded, a: int, b: int) -> np.ndarray:
    """Positions of the non-special subtokens overlapping characters [a, b)."""
    if b <= a:
        return np.zeros(0, dtype=np.int64)
    hit = e.content & (e.ends > e.starts) & (e.starts < b) & (e.ends > a)
    return np.nonzero(hit)[0]


def _weights(r: FeatureRequest, e: Encoded) -> tuple[list[np.ndarray], str | None]:
    """Pooling weights over the text's subtokens: one row per pooled part (two for a pair),
    or the reason the request cannot be produced."""
    n = len(e.ids)
    if r.kind == "snippet":
        if e.cut_at is not None:
            return [], f"truncated: the text is longer than the model's max_length (characters from {e.cut_at} on cut)"
        parts = [np.nonzero(e.content)[0]] if r.pooling == "mean" else [np.arange(min(n, 1))]
    else:
        for a, b in r.spans:
            if e.cut_at is not None and b > e.cut_at:
                return [], f"truncated: span ({a}, {b}) reaches past the model's max_length (characters from {e.cut_at} on cut)"
        ranges = [r.spans] if r.kind in ("word", "span") else [(s,) for s in r.spans]
        parts = [np.unique(np.concatenate([span_subtokens(e, a, b) for a, b in rs])) for rs in ranges]
        if r.pooling == "first":
            parts = [p[:1] for p in parts]
    rows = []
    for p in parts:
        if not p.size:
            return [], f"no_subtokens: {r.kind} {list(r.spans) or 'text'} covers no (non-special) subtoken"
        w = np.zeros(n, dtype=np.float32)
        w[p] = 1.0 / p.size
        rows.append(w)
    return rows, None


def layer_names(loaded, side: str | None = None) -> tuple[str, ...]:
    """What each layer number means for this model and side."""
    cfg = loaded.model.config
    if loaded.model_family != "encoder-decoder":
        if side not in (None, "encoder"):
            raise ValueError(f"{loaded.name} is a {loaded.model_family}: side {side!r} applies to encoder-decoders only")
        return ("embeddings",) + tuple(f"layer.{i}" for i in range(1, cfg.num_hidden_layers + 1))
    side = side or "encoder"
    if side not in SIDES:
        raise ValueError(f"side {side!r} is not one of {SIDES}")
    enc_layers = getattr(cfg, "encoder_layers", None) or cfg.num_layers
    dec_layers = getattr(cfg, "decoder_layers", None) or getattr(cfg, "num_decoder_layers", None) or enc_layers
    names: tuple[str, ...] = ()
    if side in ("encoder", "both"):
        names += tuple(f"encoder.{i}" for i in range(enc_layers + 1))
    if side in ("decoder", "both"):
        names += tuple(f"decoder.{i}" for i in range(dec_layers + 1))
    return names


def _hidden_states(loaded, ids: torch.Tensor, mask: torch.Tensor, side: str | None) -> list[torch.Tensor]:
    """Every hidden state of one batch, [batch, tokens, dim] each, in layer-number order."""
    model = loaded.model
    if loaded.model_family != "encoder-decoder":
        base = getattr(model, "base_model", model)  # no LM head: logits are never computed
        return list(base(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states)
    side = side or "encoder"
    enc = model.get_encoder()(input_ids=ids, attention_mask=mask, output_hidden_states=True)
    hs = list(enc.hidden_states) if side in ("encoder", "both") else []
    if side in ("decoder", "both"):
        dec = model.get_decoder()(input_ids=ids, attention_mask=mask, encoder_hidden_states=enc.last_hidden_state,
                                  encoder_attention_mask=mask, output_hidden_states=True)
        hs += list(dec.hidden_states)
    return hs


def pooled_vectors(loaded, requests: Iterable[FeatureRequest], token_budget: int,
                   layers: Sequence[int] | None = None, side: str | None = None,
                   ) -> PooledVectors:
    """The float32 vectors, failures and layer names; `pooled_features` makes them a table."""
    requests = list(requests)
    names = layer_names(loaded, side)
    keep = tuple(range(len(names))) if layers is None else tuple(sorted(set(int(x) for x in layers)))
    if not keep or keep[0] < 0 or keep[-1] >= len(names):
        raise ValueError(f"layers {layers} are not within 0..{len(names) - 1} for {loaded.name}")
    by_text: dict[tuple[str, str | None], list[FeatureRequest]] = defaultdict(list)
    seen: set[str] = set()
    for r in requests:
        if r.item_id in seen:
            raise ValueError(f"two feature requests have item_id {r.item_id!r}")
        seen.add(r.item_id)
        by_text[(r.text, r.language)].append(r)
    texts = list(by_text)
    # each language's texts through the tokenizer with its suffix (pipeline.runtime.languages; one group for
    # every model without language codes)
    encs: list[Encoded] = [None] * len(texts)  # type: ignore[list-item]
    languages = Languages(loaded.tokenizer)
    for language in sorted({lang for _, lang in texts}, key=lambda x: (x is not None, x or "")):
        which = [t for t, (_, lang) in enumerate(texts) if lang == language]
        tok = languages.tokenizer(language)
        for t, e in zip(which, encode(tok, [texts[t][0] for t in which], loaded.entry.max_length)):
            encs[t] = e

    failed: dict[str, str] = {}
    plans: dict[int, list[tuple[FeatureRequest, list[np.ndarray]]]] = {}
    for t, e in enumerate(encs):
        for r in by_text[texts[t]]:
            rows, reason = _weights(r, e)
            if reason:
                failed[r.item_id] = reason
            else:
                plans.setdefault(t, []).append((r, rows))

    tok = loaded.tokenizer
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    vectors: dict[str, np.ndarray] = {}
    todo = sorted(plans)
    with torch.inference_mode():
        for batch in length_sorted_batches(todo, [len(encs[t].ids) for t in todo], loaded.entry.batch_size, token_budget,
                                           FEATURES_MIN_FILL):
            width = max(len(encs[t].ids) for t in batch)
            ids = torch.full((len(batch), width), pad, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for j, t in enumerate(batch):
                n = len(encs[t].ids)
                ids[j, :n] = torch.tensor(encs[t].ids)
                mask[j, :n] = 1
            hs = _hidden_states(loaded, ids.to(loaded.device), mask.to(loaded.device), side)
            if len(hs) != len(names):
                raise RuntimeError(f"{loaded.name} returned {len(hs)} hidden states, expected {len(names)}: {names}")
            for j, t in enumerate(batch):
                n = len(encs[t].ids)
                h = torch.stack([hs[k][j, :n] for k in keep]).float()  # [layers, n, dim], one text, on the device
                reqs = plans[t]
                w = torch.from_numpy(np.stack([row for _, rows in reqs for row in rows])).to(h.device)  # [parts, n]
                pooled = torch.einsum("pn,lnd->lpd", w, h).cpu().numpy()
                at = 0
                for r, rows in reqs:
                    v = pooled[:, at: at + len(rows)].reshape(len(keep), -1)  # a pair's parts side by side
                    at += len(rows)
                    if not np.isfinite(v).all() or not np.isfinite(v.astype(np.float16)).all():
                        failed[r.item_id] = "non_finite: the vector is not finite in float16"
                    else:
                        vectors[r.item_id] = v
            del hs
    return PooledVectors(vectors, failed, names, keep)


def pooled_features(loaded, requests: Iterable[FeatureRequest], token_budget: int,
                    layers: Sequence[int] | None = None, side: str | None = None) -> FeatureResult:
    """Run `loaded` (a pipeline.models.zoo.LoadedModel) once per distinct text of `requests` and
    pool every layer's hidden states: a FEATURES table with one row per (item_id, layer), ordered
    by (item_id, layer), vectors float16 (computed in float32). `layers`: the layer numbers to
    keep (all by default); `side`: encoder (default) / decoder / both for encoder-decoders."""
    requests = list(requests)
    pooled = pooled_vectors(loaded, requests, token_budget, layers, side)
    pooling = {r.item_id: r.pooling_name for r in requests}
    table = features_table(loaded.name, pooled.vectors, pooling, pooled.layers)
    return FeatureResult(table, dict(sorted(pooled.failed.items())), pooled.layer_names)


def features_table(model: str, vectors: Mapping[str, np.ndarray], pooling: Mapping[str, str],
                   layers: Sequence[int]) -> pa.Table:
    """The FEATURES table of float32 vectors {item_id: [len(layers), dim]}: rows ordered by
    (item_id, layer), vectors cast to float16."""
    items = sorted(vectors)
    n_layers = len(layers)
    flat = [np.asarray(vectors[i], dtype=np.float32).astype(np.float16) for i in items]
    if any(v.shape[0] != n_layers for v in flat):
        raise ValueError(f"every vector needs one row per layer ({n_layers})")
    dims = np.repeat([v.shape[1] for v in flat], n_layers).astype(np.int64)
    offsets = np.zeros(len(dims) + 1, dtype=np.int64)
    np.cumsum(dims, out=offsets[1:])
    values = pa.array(np.concatenate([v.reshape(-1) for v in flat]) if flat else np.zeros(0, np.float16))
    return pa.table({
        "item_id": pa.array([i for i in items for _ in range(n_layers)], type=pa.string()),
        "model": pa.array([model] * (len(items) * n_layers), type=pa.string()),
        "layer": pa.array(np.tile(np.asarray(layers, dtype=np.int16), len(items)), type=pa.int16()),
        "pooling": pa.array([pooling[i] for i in items for _ in range(n_layers)], type=pa.string()),
        "vector": pa.LargeListArray.from_arrays(pa.array(offsets), values).cast(pa.list_(pa.float16())),
    }).cast(schemas.FEATURES)


def read_layer(paths: str | Path | Sequence[str | Path], layer: int, pooling: str | None = None,
               model: str | None = None, batch_rows: int = 8192) -> tuple[list[str], np.ndarray]:
    """One layer of one or more FEATURES files: (item ids sorted, float32 [items, dim]).
    Reads record batch by record batch, so memory is one batch plus the layer's vectors.
    `pooling` / `model` select when a file holds several; mixed ones without a choice fail."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    ids: list[str] = []
    chunks: list[np.ndarray] = []
    seen_pooling, seen_model, dims = set(), set(), set()
    for path in paths:
        for rb in pq.ParquetFile(path).iter_batches(batch_size=batch_rows):
            keep = pc.equal(rb.column("layer"), layer)
            if pooling is not None:
                keep = pc.and_(keep, pc.equal(rb.column("pooling"), pooling))
            if model is not None:
                keep = pc.and_(keep, pc.equal(rb.column("model"), model))
            rb = rb.filter(keep)
            if not rb.num_rows:
                continue
            seen_pooling.update(pc.unique(rb.column("pooling")).to_pylist())
            seen_model.update(pc.unique(rb.column("model")).to_pylist())
            vec = rb.column("vector")
            dims.update(pc.unique(pc.list_value_length(vec)).to_pylist())
            if len(dims) > 1:
                raise ValueError(f"{path}: layer {layer} mixes vector sizes {sorted(dims)}; choose a pooling")
            d = dims.pop()
            dims.add(d)
            chunks.append(vec.flatten().to_numpy(zero_copy_only=False).astype(np.float32).reshape(-1, d))
            ids.extend(rb.column("item_id").to_pylist())
    if len(seen_pooling) > 1 or len(seen_model) > 1:
        raise ValueError(f"layer {layer} mixes poolings {sorted(seen_pooling)} / models {sorted(seen_model)}; choose one")
    if not ids:
        return [], np.zeros((0, 0), dtype=np.float32)
    x = np.concatenate(chunks)
    order = np.argsort(np.asarray(ids, dtype=object), kind="stable")
    ids = [ids[i] for i in order]
    if len(set(ids)) != len(ids):
        raise ValueError(f"layer {layer}: an item_id appears twice across {list(map(str, paths))}")
    return ids, x[order]
