"""Each family's headline rows for the verdicts (pipeline.report.verdicts): per real model (not a random twin),
the per-item values of its headline metric, of its twin's and of each baseline's on the same items, paired by
pipeline.metrics.bootstrap with 10,000 replicates seeded per cell (cell_seed(run seed, family, model, metric)).
One function per family, registered in FAMILIES; a family without one has no summary row."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pipeline.metrics.bootstrap import cell_seed, paired_mean_test, paired_spearman_tests
from pipeline.report.common import run_seed
from pipeline.report.verdicts import Comparison, Row

TWIN = "its twin"


def real_models(con, table: str, column: str = "model") -> list[str]:
    """The models with rows in `table` that are no random twin (models.random), sorted."""
    models = [m for (m,) in con.sql(f"SELECT DISTINCT {column} FROM {table} ORDER BY 1").fetchall()]
    random = {m for (m,) in con.sql("SELECT name FROM models WHERE coalesce(random, false)").fetchall()}
    return [m for m in models if m not in random]


def twin_of(con, model: str) -> str | None:
    rows = con.sql("SELECT twin FROM model_twins WHERE model = ?", params=[model]).fetchall()
    return rows[0][0] if rows else None


def _col(rows, i) -> np.ndarray:
    return np.array([np.nan if r[i] is None else float(r[i]) for r in rows], dtype=np.float64)


def _mean_row(family: str, model: str, metric: str, seed: int, a: np.ndarray, twin: np.ndarray | None,
              baselines: dict[str, np.ndarray], lower_is_better: bool = False) -> Row:
    """A row from per-item values: a (the model's), its twin's (NaN where the twin has none) and each
    baseline's on the same items; every comparison a paired mean test seeded by its cell."""
    ok = ~np.isnan(a)
    return Row(family, model, metric, float(a[ok].mean()) if ok.any() else None, int(ok.sum()),
               None if twin is None else Comparison(TWIN, paired_mean_test(
                   a, twin, cell_seed(seed, family, model, metric, "twin"))),
               tuple(Comparison(name, paired_mean_test(a, b, cell_seed(seed, family, model, metric, name)))
                     for name, b in baselines.items()),
               lower_is_better)


def apiquiz(con, config) -> list[Row]:
    """P@1 of the `rank` protocol (every LM family ranks the candidates) over the call and import quizzes
    (the paper's Table III settings, pooled), leaking quizzes out, against chance (1 / candidates ranked, per quiz)
    and its twin on the same quizzes."""
    seed, rows = run_seed(config), []
    for model in real_models(con, "apiquiz_predictions"):
        items = con.sql(
            "SELECT (p.gold_rank = 1)::DOUBLE, 1.0 / p.n_ranked, (t.gold_rank = 1)::DOUBLE "
            "FROM apiquiz_predictions p JOIN apiquiz_quizzes q USING (quiz_id) "
            "LEFT JOIN model_twins w ON w.model = p.model "
            "LEFT JOIN apiquiz_predictions t ON t.model = w.twin AND t.protocol = p.protocol "
            "  AND t.quiz_id = p.quiz_id AND t.status = 'ok' "
            "WHERE p.model = ? AND p.protocol = 'rank' AND p.status = 'ok' AND p.n_ranked > 1 "
            "  AND q.setting IN ('call', 'import') AND NOT coalesce(q.context_leak, false) "
            "ORDER BY p.quiz_id", params=[model]).fetchall()
        if items:
            rows.append(_mean_row("apiquiz", model, "P@1 (rank; call + import)", seed, _col(items, 0),
                                  _col(items, 2) if twin_of(con, model) else None, {"chance": _col(items, 1)}))
    return rows


APIREC_BASELINES = {"ngram": "the n-gram", "jedi": "jedi"}


def apirec(con, config) -> list[Row]:
    """Method-level SR@10 on the code benchmark (every language; a point a ranking could not score is a miss),
    against its twin and against the n-gram and jedi on the same points."""
    seed, rows = run_seed(config), []
    lms = con.sql("SELECT DISTINCT model, ranker FROM apirec_point_scores WHERE benchmark = 'code' AND k = 10 "
                  f"AND ranker NOT IN ('ngram', 'ngram_domain', 'jedi', 'bm25') ORDER BY ALL").fetchall()
    real = set(real_models(con, "apirec_point_scores"))
    for model, ranker in lms:
        if model not in real:
            continue
        twin = twin_of(con, model)
        items = con.sql(
            "SELECT a.sr_method::DOUBLE, t.sr_method::DOUBLE, g.sr_method::DOUBLE, j.sr_method::DOUBLE "
            "FROM apirec_point_scores a "
            "LEFT JOIN apirec_point_scores t ON t.model = ? AND t.ranker = a.ranker AND t.benchmark = a.benchmark "
            "  AND t.point_id = a.point_id AND t.k = a.k "
            "LEFT JOIN apirec_point_scores g ON g.ranker = 'ngram' AND g.benchmark = a.benchmark "
            "  AND g.point_id = a.point_id AND g.k = a.k "
            "LEFT JOIN apirec_point_scores j ON j.ranker = 'jedi' AND j.benchmark = a.benchmark "
            "  AND j.point_id = a.point_id AND j.k = a.k "
            "WHERE a.model = ? AND a.ranker = ? AND a.benchmark = 'code' AND a.k = 10 ORDER BY a.point_id",
            params=[twin or "", model, ranker]).fetchall()
        if items:
            rows.append(_mean_row("apirec", model if ranker in ("lm", model) else f"{model} ({ranker})",
                                  "SR@10 (method, code)", seed, _col(items, 0), _col(items, 1) if twin else None,
                                  {name: _col(items, i) for i, name in ((2, APIREC_BASELINES["ngram"]),
                                                                         (3, APIREC_BASELINES["jedi"]))
                                   if not np.isnan(_col(items, i)).all()}))
    return rows


def codesyntax(con, config) -> list[Row]:
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


FAMILIES: dict[str, Callable] = {"apiquiz": apiquiz, "apirec": apirec, "codesyntax": codesyntax}


def rows(con, config, families: list[str]) -> list[Row]:
    """Every headline row of the enabled `families` (in their order), families without a function left out."""
    out: list[Row] = []
    for name in families:
        if name in FAMILIES:
            out += FAMILIES[name](con, config)
    return out
