"""apiquiz's headline rows for the verdicts (pipeline.report.verdicts), found by pipeline.report.headlines."""

from __future__ import annotations

from pipeline.report.headlines import _col, _mean_row, real_models, run_seed, twin_of
from pipeline.report.verdicts import Row


def rows(con, config) -> list[Row]:
    """P@1 of the `rank` protocol (every LM family ranks the candidates) over the call and import quizzes
    (the paper's Table III settings, pooled), leaking quizzes out, against chance (1 / candidates ranked, per quiz),
    the frequency baseline (the candidate called most often in the train split: apiquiz_frequency_baseline) and its
    twin on the same quizzes."""
    seed, rows = run_seed(config), []
    for model in real_models(con, "apiquiz_predictions"):
        items = con.sql(
            "SELECT (p.gold_rank = 1)::DOUBLE, 1.0 / p.n_ranked, (t.gold_rank = 1)::DOUBLE, f.p_at_1, p.quiz_id "
            "FROM apiquiz_predictions p JOIN apiquiz_quizzes q USING (quiz_id) "
            "JOIN apiquiz_frequency_baseline f USING (quiz_id) "
            "LEFT JOIN model_twins w ON w.model = p.model "
            "LEFT JOIN apiquiz_predictions t ON t.model = w.twin AND t.protocol = p.protocol "
            "  AND t.quiz_id = p.quiz_id AND t.status = 'ok' "
            "WHERE p.model = ? AND p.protocol = 'rank' AND p.status = 'ok' AND p.n_ranked > 1 "
            "  AND q.setting IN ('call', 'import') AND NOT coalesce(q.context_leak, false) "
            "ORDER BY p.quiz_id", params=[model]).fetchall()
        if items:
            rows.append(_mean_row("apiquiz", model, "P@1 (rank; call + import)", seed, _col(items, 0),
                                  _col(items, 2) if twin_of(con, model) else None, {"chance": _col(items, 1),
                                                                                      "frequency": _col(items, 3)},
                                  keys=[r[4] for r in items]))
    return rows
