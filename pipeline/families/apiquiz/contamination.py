"""apiquiz's part of the contamination results file (`python -m pipeline.report.contamination_results`, found through the
registry): how its `apiquiz_contamination*` views are counted, and its own figures (the libraries whose
first-seen-dated quizzes gain after the cutoff against before; the APIs whose label differs between their
definition date and the date of the code calling them)."""

from __future__ import annotations

COUNT_BY: tuple[str, ...] = ()  # columns the item counts are grouped by besides label, dated_by and date_basis
COUNT_WHERE = ""  # SQL restricting the counted items
TWIN_KEYS = ("protocol",)  # the keys of the `apiquiz_contamination_vs_twin` rows


def extra(con, model: str, have: set[str]) -> dict:
    """The figures only apiquiz has: `same_library` and `relabelled_apis` (keys of the results file's numbers)."""
    out: dict = {}
    if "apiquiz_contamination_same_library" in have:
        same = con.sql("SELECT * EXCLUDE (model) FROM apiquiz_contamination_same_library WHERE model = ? ORDER BY ALL",
                       params=[model])
        out["same_library"] = [dict(zip(same.columns, r)) for r in same.fetchall()]
    if "apiquiz_contamination" in have:
        rows = con.sql("""
            SELECT q.api, count(*) AS quizzes, c.label AS label_by_api, c.api_released::VARCHAR, c.api_date_basis,
                   contamination_label(c.basis, m.training_cutoff, c.context_released, NULL,
                                       date_basis := c.context_date_basis) AS label_by_context,
                   c.context_released::VARCHAR, c.context_date_basis
            FROM apiquiz_contamination c
            JOIN apiquiz_quizzes q USING (quiz_id)
            JOIN contamination_models m USING (model)
            WHERE c.model = ? AND c.basis = 'cutoff'
              AND contamination_label(c.basis, m.training_cutoff, c.context_released, NULL,
                                      date_basis := c.context_date_basis) <> c.label
            GROUP BY ALL ORDER BY quizzes DESC, q.api""", params=[model]).fetchall()
        out["relabelled_apis"] = [dict(zip(("api", "quizzes", "label_by_api", "api_released", "api_date_basis",
                                            "label_by_context", "context_released", "context_date_basis"), r))
                                  for r in rows]
    return out
