"""apirec's part of the contamination results file (`python -m pipeline.report.contamination_results`, found through the
registry): how its `apirec_contamination*` views are counted."""

from __future__ import annotations

COUNT_BY = ("benchmark",)  # columns the item counts are grouped by besides label, dated_by and date_basis
COUNT_WHERE = ""  # SQL restricting the counted items
TWIN_KEYS = ("ranker", "benchmark", "metric")  # the keys of the `apirec_contamination_vs_twin` rows
