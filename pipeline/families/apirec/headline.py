"""apirec's headline rows for the verdicts (pipeline.report.verdicts), found by pipeline.report.headlines."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from pipeline.report.headlines import _col, _mean_row, real_models, run_seed, twin_of
from pipeline.report.verdicts import Row


SUMMARY_RANKER = "rerank_ngram"  # the headline's LM ranking (the others: the family's page)
BASELINES = {"ngram": "the n-gram", "jedi": "jedi"}


def rows(con, config) -> list[Row]:
    """Method-level SR@10 on the code benchmark (every language; a point a ranking could not score is a miss),
    against its twin and against the n-gram and jedi on the same points."""
    seed, rows = run_seed(config), []
    lms = con.sql("SELECT DISTINCT model, ranker FROM apirec_point_scores WHERE benchmark = 'code' AND k = 10 "
                  "AND ranker NOT IN ('ngram', 'ngram_domain', 'ide', 'bm25') ORDER BY ALL").fetchall()
    real = set(real_models(con, "apirec_point_scores"))
    for model, ranker in lms:
        if model not in real:
            continue
        twin = twin_of(con, model)
        items = con.sql(
            "SELECT a.sr_method::DOUBLE, t.sr_method::DOUBLE, g.sr_method::DOUBLE, j.sr_method::DOUBLE, a.point_id "
            "FROM apirec_point_scores a "
            "LEFT JOIN apirec_point_scores t ON t.model = ? AND t.ranker = a.ranker AND t.benchmark = a.benchmark "
            "  AND t.point_id = a.point_id AND t.k = a.k "
            "LEFT JOIN apirec_point_scores g ON g.ranker = 'ngram' AND g.benchmark = a.benchmark "
            "  AND g.point_id = a.point_id AND g.k = a.k "
            "LEFT JOIN apirec_point_scores j ON j.model = 'jedi' AND j.ranker = 'ide' AND j.benchmark = a.benchmark "
            "  AND j.point_id = a.point_id AND j.k = a.k "
            "WHERE a.model = ? AND a.ranker = ? AND a.benchmark = 'code' AND a.k = 10 ORDER BY a.point_id",
            params=[twin or "", model, ranker]).fetchall()
        if items:
            row = _mean_row("apirec", model, f"SR@10 (method, code; {ranker})", seed, _col(items, 0),
                            _col(items, 1) if twin else None,
                            {name: _col(items, i) for i, name in ((2, BASELINES["ngram"]),
                                                                   (3, BASELINES["jedi"]))
                             if not np.isnan(_col(items, i)).all()}, keys=[r[4] for r in items])
            rows.append(replace(row, summary=ranker == SUMMARY_RANKER))
    return rows
