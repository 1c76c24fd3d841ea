"""The probing inference task: every sample of one language, all tasks together (tasks share
snippets: every distinct text runs through the model once), as a pooled feature request
(word/span = mean of its subtokens, pair = concatenation of two means, snippet = mean of all
subtokens), per layer, float16 (pipeline.runtime.features). An encoder-decoder gives both sides
(`side: both`: encoder layers, then the decoder's, teacher-forced on the same text). Samples that
fail (truncated, no subtoken) are left out of the table; that model's fit leaves them out (and
pipeline.fit.items records why), no other model's."""

from pipeline.families.probing.schemas import SAMPLES
from pipeline.io import read_parquet
from pipeline.runtime.features import FeatureRequest, pooled_features


def predict(ctx):
    samples = read_parquet(ctx.inputs["samples"], SAMPLES)
    mine = samples.filter(ctx.select(samples.column("item_id").to_pylist(), ctx.params["inference"]["max_items"],
                                     keys=samples.column("task").to_pylist()))  # a zoo cap per task draws per task
    # the subset is the samples' language: PLBART reads `</s> __java__` / `__python__` after them
    requests = [FeatureRequest(r["item_id"], r["text"], r["kind"], tuple(zip(r["starts"], r["ends"])),
                               language=ctx.subset) for r in mine.to_pylist()]
    side = "both" if ctx.loaded.model_family == "encoder-decoder" else None
    return pooled_features(ctx.loaded, requests, ctx.token_budget, side=side).table
