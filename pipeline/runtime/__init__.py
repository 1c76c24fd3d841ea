"""The shared inference runtime every benchmark family runs on: model loading (pipeline.models),
the shard runner, seeded subsets and hash sharding, length-sorted batching under a token budget,
log-likelihood scoring primitives, word/subtoken alignment and per-layer pooled features."""
