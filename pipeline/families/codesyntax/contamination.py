"""codesyntax's part of the contamination results file (`python -m pipeline.report.contamination_results`, found through
the registry): how its `codesyntax_contamination*` views are counted (the test split's samples, per language)."""

from __future__ import annotations

COUNT_BY = ("language",)  # columns the item counts are grouped by besides label, dated_by and date_basis
COUNT_WHERE = "eval_split = 'test'"  # SQL restricting the counted items
TWIN_KEYS = ("chosen_on", "language")  # the keys of the `codesyntax_contamination_vs_twin` rows
