"""Rank APIBench-Q queries with one encoder-only model, for one shard: query -> API by embedding
similarity (the `query` subset of apirec; the shared pooled-features runtime).

Each query text and each candidate API's document (queries.py: the FQN split into words, then the
docstring after its first sentence) is embedded by mean pooling of the last layer's subtokens
(pipeline.runtime.features, `snippet` requests); candidates are ranked by cosine similarity,
rounded (scoring.SCORE_DECIMALS) and tied by FQN. The pool is BM25's top `inference.candidates` per
query (`inference.query_pool: bm25`, ranker `embed_bm25`; a gold outside it has no rank) or every
API of the universe (`universe`, ranker `embed_universe`). Texts are cut at a token boundary to
`inference.query_tokens` (and the model's max_length; the document's tail goes), so every text gets a vector.
`gold_logprob` holds the gold's cosine.
"""

from __future__ import annotations

import logging

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.families.apirec import schemas
from pipeline.families.apirec.generate import api_class
from pipeline.io import read_parquet
from pipeline.runtime.features import FeatureRequest, layer_names, pooled_vectors
from pipeline.runtime.protocols import rank_of

log = logging.getLogger("pipeline.families.apirec.infer_query")

TOP_K = 10


def clip(tok, text: str, max_length: int) -> str:
    """The longest head of `text` (at a token boundary) that fits with the special tokens."""
    offsets = tok(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    keep = max_length - 2
    return text if len(offsets) <= keep else text[: offsets[keep - 1][1]]


def embed(loaded, texts: dict[str, str], token_budget: int, max_tokens: int = 0) -> dict[str, np.ndarray]:
    """Unit-length last-layer mean-pooled vectors by key; keys whose text gives none are left out.
    Texts are cut to `max_tokens` (0: the model's max_length), special tokens included."""
    tok = loaded.tokenizer
    width = min(max_tokens, loaded.entry.max_length) if max_tokens else loaded.entry.max_length
    last = len(layer_names(loaded)) - 1
    reqs = [FeatureRequest(key, clip(tok, text, width), "snippet") for key, text in texts.items() if text.strip()]
    pooled = pooled_vectors(loaded, reqs, token_budget, layers=[last])
    out = {}
    for key, v in pooled.vectors.items():
        norm = float(np.linalg.norm(v[0]))
        if norm > 0:
            out[key] = v[0] / norm
    return out


def rank_queries(loaded, queries: list[dict], docs: dict[str, str], pool: str, token_budget: int,
                 candidates: int = 0, max_tokens: int = 0) -> list[dict]:
    """One ranking row (PREDICTIONS) per query; `candidates`: BM25's top N re-ranked (0: all stored)."""
    model = loaded.entry.name
    universe = sorted(docs)
    queries = [{**q, "candidates": q["candidates"][:candidates] if candidates else q["candidates"]} for q in queries]
    needed = universe if pool == "universe" else sorted({c for q in queries for c in q["candidates"]})
    vectors = embed(loaded, {**{"d:" + f: docs[f] for f in needed}, **{"q:" + q["query_id"]: q["text"] for q in queries}},
                    token_budget, max_tokens)
    rows = []
    for q in queries:
        names = [f for f in (universe if pool == "universe" else q["candidates"]) if "d:" + f in vectors]
        base = {"point_id": q["query_id"], "model": model, "ranker": f"embed_{pool}", "gold_rank": None,
                "class_rank": None, "n_candidates": len(names), "gold_in_candidates": q["api"] in names, "top": [],
                "gold_logprob": None}
        qv = vectors.get("q:" + q["query_id"])
        if qv is None or not names:
            rows.append({**base, "status": "no_vector"})
            continue
        scores = (np.stack([vectors["d:" + f] for f in names]) @ qv).astype(np.float64).tolist()
        _, order = rank_of(scores, names, 0)
        ranked = [names[i] for i in order]
        klass = api_class(q["api"])
        rows.append({**base, "status": "ok", "gold_rank": ranked.index(q["api"]) + 1 if q["api"] in ranked else None,
                     "class_rank": next((i + 1 for i, a in enumerate(ranked) if api_class(a) == klass), None),
                     "top": ranked[:TOP_K],
                     "gold_logprob": round(scores[names.index(q["api"])], 6) if q["api"] in names else None})
    return rows


def predict(ctx) -> pa.Table:
    """The shared runner's entry point (pipeline.runtime.predict), subset `query`."""
    p = ctx.params["inference"]
    queries = read_parquet(ctx.inputs["queries"], schemas.QUERIES)
    docs = read_parquet(ctx.inputs["api_docs"], schemas.API_DOCS)
    mine = queries.filter(ctx.select(queries.column("query_id").to_pylist(), p["query_max_items"]))
    items = mine.select(["query_id", "text", "api", "candidates"]).to_pylist()
    text = dict(zip(docs.column("fqn").to_pylist(), docs.column("text").to_pylist()))
    rows = rank_queries(ctx.loaded, items, text, p["query_pool"], ctx.token_budget, p["candidates"], p["query_tokens"])
    table = pa.Table.from_pylist(rows, schemas.PREDICTIONS).sort_by("point_id")
    ok = pc.sum(pc.equal(table.column("status"), "ok")).as_py() or 0
    log.info("%s: %d queries, %d ranked", ctx.description, table.num_rows, ok)
    return table
