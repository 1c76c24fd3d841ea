"""codesyntax's headline rows for the verdicts (pipeline.report.verdicts), found by pipeline.report.headlines."""

from __future__ import annotations

import numpy as np

from pipeline.report.headlines import _col, _mean_row, real_models, run_seed, twin_of
from pipeline.report.verdicts import Row


def rows(con, config) -> list[Row]:
    """Top-1 (first token) of the best head per relation, chosen on dev and scored on test, averaged over
    relations (the resampling unit), per language: against its twin and every baseline (the offset and keyword
    baselines) on the same relations; the summary reads the strongest."""
    seed, rows = run_seed(config), []
    variant = ((config.get("codesyntax") or {}).get("inference") or {}).get("variant")
    base = "FROM codesyntax_relation_scores WHERE chosen_on = 'dev' AND metric = 'first' AND k = 1"
    if variant:
        base += f" AND variant = '{variant}'"
    baselines = [b for (b,) in con.sql("SELECT DISTINCT baseline FROM codesyntax_baselines ORDER BY 1").fetchall()]
    for language, model in con.sql(f"SELECT DISTINCT language, system {base} ORDER BY ALL").fetchall():
        if model in baselines or model not in real_models(con, "codesyntax_head_scores"):
            continue
        twin = twin_of(con, model)
        systems = [model, twin or "", *baselines]
        items = con.sql(f"PIVOT (SELECT relation, system, score {base} AND language = ? AND system IN "
                        f"({', '.join('?' * len(systems))})) ON system IN ({', '.join(repr(s) for s in systems)}) "
                        "USING first(score) ORDER BY relation", params=[language, *systems]).fetchall()
        if not items:
            continue
        cols = {s: _col(items, i + 1) for i, s in enumerate(systems)}
        rows.append(_mean_row("codesyntax", model, f"top-1 first token ({language})", seed, cols[model],
                              cols[twin] if twin else None,
                              {f"the {b} baseline": cols[b] for b in baselines if not np.isnan(cols[b]).all()}))
    return rows
