"""The probing family's tables."""

import pyarrow as pa

from pipeline.schemas import PROBE_LABELS

SAMPLES = pa.schema([
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("task", pa.string(), nullable=False),  # the probing task the sample belongs to
    pa.field("group", pa.string(), nullable=False),  # the snippet id (folds never split a group)
    pa.field("text", pa.string(), nullable=False),  # what the model reads
    pa.field("kind", pa.string(), nullable=False),  # FeatureRequest kind: snippet / word / span / pair
    pa.field("starts", pa.list_(pa.int32()), nullable=False),  # character spans in text
    pa.field("ends", pa.list_(pa.int32()), nullable=False),
    pa.field("word", pa.string(), nullable=True),  # the token or name the sample is about
    # the corpus source of the snippet's file (the manifest's `source`; an algorithm submission: its dataset,
    # ALGORITHM_SOURCE): what the evaluation check counts snippets per source by
    pa.field("source", pa.string(), nullable=False),
])
ALGORITHM_SOURCE = "algo-1671A"  # the source of the algorithm task's samples (the dataset, not the corpus)

# PROBE_LABELS plus the token count (depth baseline), the word type (control tasks) and the sample's source file
# (`file`: the manifest's file_id of its snippet; an algorithm submission is its own file), what the fit's folds are
# grouped by (probing.fit.group_by: file), so every method of one file sits on one side of a split
LABELS = pa.schema(list(PROBE_LABELS) + [pa.field("n_tokens", pa.float64(), nullable=False),
                                         pa.field("word", pa.string(), nullable=True),
                                         # the source file (its manifest file_id) the fit's folds group by
                                         pa.field("file", pa.string(), nullable=False)])
