"""The probing inference task: every sample of the subset (one language and task) as a pooled
feature request (word/span = mean of its subtokens, snippet = mean of all subtokens), per layer,
float16 (pipeline.runtime.features). Samples that fail (truncated, no subtoken) are left out of
the table; the fit stage then drops them for every model."""

from pipeline.families.probing.schemas import SAMPLES
from pipeline.io import read_parquet
from pipeline.runtime.features import FeatureRequest, pooled_features


def predict(ctx):
    samples = read_parquet(ctx.inputs["samples"], SAMPLES)
    mine = samples.filter(ctx.select(samples.column("item_id").to_pylist(), ctx.params["inference"]["max_items"]))
    requests = [FeatureRequest(r["item_id"], r["text"], r["kind"], tuple(zip(r["starts"], r["ends"])))
                for r in mine.to_pylist()]
    return pooled_features(ctx.loaded, requests, ctx.token_budget).table
