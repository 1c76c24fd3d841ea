"""codesyntax's headline rows for the verdicts (pipeline.report.verdicts), found by pipeline.report.headlines."""

from __future__ import annotations

import numpy as np

from pipeline.metrics.bootstrap import cell_seed, macro_ratio_tests
from pipeline.report.headlines import TWIN, real_models, run_seed, twin_of
from pipeline.report.verdicts import Comparison, Row

# The model's per test function and relation counts: the edges of the relation in the function (first token,
# top-1) and those the model's best head of that relation (chosen on dev) finds; from the inference's per-sample
# rows, the test side of the inference's seeded subset (codesyntax.inference.max_items).
SAMPLE_HITS = """
SELECT p.sample_id, p.relation, p.hits, p.total
FROM codesyntax_predictions p
JOIN codesyntax_best_heads b
  ON b.model = p.model AND b.language = p.language AND b.variant = p.variant AND b.relation = p.relation
 AND b.metric = p.metric AND b.k = p.k AND b.layer = p.layer AND b.head = p.head
WHERE p.sample_id IS NOT NULL AND b.chosen_on = 'dev' AND p.metric = 'first' AND p.k = 1
  AND p.model = ? AND p.language = ? AND p.variant = ?
"""


def _matrix(con, model: str, language: str, variant: str, samples: list[str], relations: list[str]):
    """(hits, edges) as (functions x relations) arrays in the given orders (0 where a function has none)."""
    si = {s: i for i, s in enumerate(samples)}
    ri = {r: j for j, r in enumerate(relations)}
    hits = np.zeros((len(samples), len(relations)))
    edges = np.zeros((len(samples), len(relations)))
    for sample, relation, h, total in con.sql(SAMPLE_HITS, params=[model, language, variant]).fetchall():
        if sample in si and relation in ri:
            hits[si[sample], ri[relation]] += h
            edges[si[sample], ri[relation]] += total
    return hits, edges


def rows(con, config) -> list[Row]:
    """Top-1 (first token) of the best head per relation, chosen on dev and scored on the test functions of the
    inference's subset, averaged over relations (the paper's statistic), per language. The resampling unit is the
    test function (n: functions, each with all its edges), so the CI holds the sampling noise of the edges within a
    relation, which a bootstrap over relations leaves out. Against its twin paired on the same functions; against
    each baseline (offset, keyword, combined), whose per-relation rates are scored on every test function of the
    language (about 58x the model's edges on the default) and held fixed over the same relations."""
    seed, out = run_seed(config), []
    variant = ((config.get("codesyntax") or {}).get("inference") or {}).get("variant") or "plain"
    models = set(real_models(con, "codesyntax_head_scores"))
    for language, model in con.sql("SELECT DISTINCT language, model FROM codesyntax_best_heads WHERE chosen_on = 'dev' "
                                   "AND metric = 'first' AND k = 1 AND variant = ? ORDER BY ALL",
                                   params=[variant]).fetchall():
        if model not in models:
            continue
        twin = twin_of(con, model)
        relations = [r for (r,) in con.sql(
            "SELECT DISTINCT relation FROM codesyntax_best_heads WHERE chosen_on = 'dev' AND metric = 'first' "
            "AND k = 1 AND model = ? AND language = ? AND variant = ? ORDER BY 1",
            params=[model, language, variant]).fetchall()]
        samples = [s for (s,) in con.sql(
            "SELECT DISTINCT sample_id FROM codesyntax_predictions WHERE sample_id IS NOT NULL AND model = ? "
            "AND language = ? AND variant = ? ORDER BY 1", params=[model, language, variant]).fetchall()]
        if not relations or not samples:
            continue
        hits, edges = _matrix(con, model, language, variant, samples, relations)
        others: dict = {}
        if twin:
            twin_hits, twin_edges = _matrix(con, twin, language, variant, samples, relations)
            if twin_edges.sum() > 0:
                others[TWIN] = (twin_hits, twin_edges)
        rates = {}
        for baseline, relation, h, total in con.sql(
                "SELECT baseline, relation, hits, total FROM codesyntax_baselines WHERE chosen_on = 'dev' "
                "AND metric = 'first' AND k = 1 AND language = ? AND variant = ? AND total > 0 ORDER BY ALL",
                params=[language, variant]).fetchall():
            rates.setdefault(f"the {baseline} baseline", {})[relation] = h / total
        for name, by_relation in rates.items():
            others[name] = np.array([by_relation.get(r, np.nan) for r in relations])
        metric = f"top-1 first token ({language})"
        tests = {name: macro_ratio_tests(hits, edges, {name: ref}, cell_seed(seed, "codesyntax", model, metric,
                                                                             "twin" if name == TWIN else name))[name]
                 for name, ref in others.items()}
        score = float(np.mean([h / e for h, e in zip(hits.sum(axis=0), edges.sum(axis=0)) if e > 0]))
        out.append(Row("codesyntax", model, metric, score, len(samples),
                       Comparison(TWIN, tests[TWIN]) if TWIN in tests else None,
                       tuple(Comparison(name, t) for name, t in tests.items() if name != TWIN)))
    return out
