"""Per model, how its contamination is known (the warehouse's `model_cutoffs`): `exact` for a pipeline-trained
model (its card records the text it read), `cutoff` for a pretrained model whose zoo entry states
`training_cutoff`, `unknown` otherwise; a random twin is labelled as its model is, so the two are compared on
the same items on each side. The labels themselves are SQL (pipeline/warehouse/sql/30_contamination.sql and each
family's sql/20_contamination.sql)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

MODEL_CUTOFFS = pa.schema([
    pa.field("model", pa.string(), nullable=False),  # zoo name
    pa.field("labelled_by", pa.string(), nullable=False),  # whose labels it takes: itself, or a random twin's model
    pa.field("training_cutoff", pa.date32(), nullable=True),  # the zoo entry's training_cutoff (pretrained models)
    pa.field("training_cutoff_source", pa.string(), nullable=True),  # where that date comes from
    # data (the training data's stated cutoff) / release (the weights' release: an upper bound on the cutoff)
    pa.field("training_cutoff_kind", pa.string(), nullable=True),
])


def cutoff_rows(zoo: list[dict]) -> list[dict]:
    """One row per zoo entry: whose labels it takes (a twin: its model's) and its stated cutoff."""
    rows = []
    for e in zoo:
        source = str(e.get("source", ""))
        cutoff = e.get("training_cutoff")
        if isinstance(cutoff, str):
            cutoff = dt.date.fromisoformat(cutoff)
        rows.append({"model": e["name"], "labelled_by": source[len("random:"):] if source.startswith("random:") else e["name"],
                     "training_cutoff": cutoff, "training_cutoff_source": e.get("training_cutoff_source"),
                     "training_cutoff_kind": e.get("training_cutoff_kind")})
    return sorted(rows, key=lambda r: r["model"])
