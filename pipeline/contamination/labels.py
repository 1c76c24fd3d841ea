"""Per model, how its contamination is known (the warehouse's `model_cutoffs`): `exact` for a pipeline-trained
model (its card records the text it read), `cutoff` for a pretrained model whose zoo entry states
`training_cutoff`, `unknown` otherwise; a random twin is labelled as its model is, so the two are compared on
the same items on each side. The labels themselves are SQL (pipeline/warehouse/sql/30_contamination.sql and each
family's sql/20_contamination.sql)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

LABELS = ("read", "not_read", "released_after_cutoff", "released_before_cutoff", "unknown")

MODEL_CUTOFFS = pa.schema([
    pa.field("model", pa.string(), nullable=False),  # zoo name
    pa.field("labelled_by", pa.string(), nullable=False),  # whose labels it takes: itself, or a random twin's model
    pa.field("training_cutoff", pa.date32(), nullable=True),  # the zoo entry's training_cutoff (pretrained models)
    pa.field("training_cutoff_source", pa.string(), nullable=True),  # where that date comes from
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
                     "training_cutoff": cutoff, "training_cutoff_source": e.get("training_cutoff_source")})
    return sorted(rows, key=lambda r: r["model"])


# The labels known before inference, so a zoo cap may draw by them (a model with training_cutoff; a trained
# model's read / not_read needs its training run, `unknown` has no date to draw by).
CUTOFF_LABELS = ("released_after_cutoff", "released_before_cutoff")

# One row per item a family labels (pipeline.contamination.dates): its date as the warehouse's labels read it.
ITEM_DATES = pa.schema([
    pa.field("item_id", pa.string(), nullable=False),  # the item's id in the family's items (quiz_id, point_id)
    pa.field("released", pa.date32(), nullable=True),  # its date (first pinned release of its code, else its file's)
    pa.field("date_basis", pa.string(), nullable=True),  # first_seen / release / none
])


def cutoff_label(released: dt.date | None, cutoff: dt.date) -> str:
    """A cutoff model's label of an item of this date, as the warehouse's `contamination_label` macro gives it for
    basis `cutoff` (pipeline/warehouse/sql/30_contamination.sql; tests/test_contamination.py checks the two agree
    on every item of a build)."""
    if released is None:
        return "unknown"
    return "released_after_cutoff" if released > cutoff else "released_before_cutoff"


def item_labels(dates: pa.Table, ids: list[str], cutoff: dt.date | str) -> list[str | None]:
    """Each id's label for a model with this cutoff, from a family's item dates (ITEM_DATES); None for an id the
    warehouse gives no label (not in the dates: e.g. a context-leaking nl quiz), which no draw by label takes."""
    cutoff = dt.date.fromisoformat(cutoff) if isinstance(cutoff, str) else cutoff
    released = dict(zip(dates.column("item_id").to_pylist(), dates.column("released").to_pylist()))
    return [cutoff_label(released[i], cutoff) if i in released else None for i in ids]
