"""Embed each distinct IdBench identifier with one zoo model, per layer.

The identifier text is given as it is (the paper: "we provide all identifiers as they are ...,
without pre-processing or tokenizing"), as a `snippet` feature request: the mean of its non-special
subtokens (`mean`, default) and/or the sequence's first token (`first`: CLS / <s> where the
tokenizer adds one), per layer (pipeline.runtime.features). Encoder-decoders are embedded on the
encoder side. The cosine of each pair is computed in the warehouse (view idbench_model_cosine).
An identifier the model cannot embed (no subtoken, non-finite) is logged and simply has no row:
its pairs count as not covered by that model.
"""

from __future__ import annotations

import logging

import pyarrow as pa

from pipeline.families.idbench import schemas
from pipeline.io import read_parquet
from pipeline.runtime.features import FeatureRequest, pooled_features

log = logging.getLogger("pipeline.families.idbench.infer")


def predict(ctx) -> pa.Table:
    p = ctx.params["inference"]
    ids = read_parquet(ctx.inputs["identifiers"], schemas.IDENTIFIERS)
    mine = ids.filter(ctx.select(ids.column("identifier_id").to_pylist(), p["max_items"]))
    rows = mine.select(["identifier_id", "text", "language"]).to_pylist()
    tables = []
    side = "encoder" if ctx.loaded.entry.model_family == "encoder-decoder" else None
    for pooling in p["poolings"]:
        # the identifiers' language (javascript): a model with language codes reads `</s>` and its code after them
        requests = [FeatureRequest(r["identifier_id"], r["text"], "snippet", pooling=pooling, language=r["language"])
                    for r in rows]
        result = pooled_features(ctx.loaded, requests, ctx.token_budget, side=side)
        for item, reason in result.failed.items():
            log.warning("%s: %s (%s pooling) not embedded: %s", ctx.description, item, pooling, reason)
        tables.append(result.table.cast(schemas.PREDICTIONS))
    table = pa.concat_tables(tables) if tables else schemas.PREDICTIONS.empty_table()
    log.info("%s: %d identifiers, %d rows", ctx.description, len(rows), table.num_rows)
    return table.sort_by([("item_id", "ascending"), ("pooling", "ascending"), ("layer", "ascending")])
