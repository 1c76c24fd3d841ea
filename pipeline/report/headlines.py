"""Each family's headline rows for the verdicts (pipeline.report.verdicts): per real model (not a random twin),
the per-item values of its headline metric, of its twin's and of each baseline's on the same items, paired by
pipeline.metrics.bootstrap with 10,000 replicates seeded per cell (cell_seed(run seed, family, model, metric)).
One function per family, registered in FAMILIES; a family without one has no summary row."""

from __future__ import annotations

import logging

from collections.abc import Callable
from dataclasses import replace

import duckdb
import numpy as np

from pipeline.metrics.bootstrap import cell_seed, paired_mean_test, paired_spearman_tests
from pipeline.report.common import run_seed
from pipeline.report.verdicts import Comparison, Row

TWIN = "its twin"
log = logging.getLogger("pipeline.report.headlines")
FAILED: dict[str, str] = {}  # family -> why its rows could not be computed (the summary says so)


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


APIREC_SUMMARY_RANKER = "rerank_ngram"  # the headline's LM ranking (the others: the family's page)
APIREC_BASELINES = {"ngram": "the n-gram", "jedi": "jedi"}


def apirec(con, config) -> list[Row]:
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
            "SELECT a.sr_method::DOUBLE, t.sr_method::DOUBLE, g.sr_method::DOUBLE, j.sr_method::DOUBLE "
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
                            {name: _col(items, i) for i, name in ((2, APIREC_BASELINES["ngram"]),
                                                                   (3, APIREC_BASELINES["jedi"]))
                             if not np.isnan(_col(items, i)).all()})
            rows.append(replace(row, summary=ranker == APIREC_SUMMARY_RANKER))
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


IDBENCH_SIZE = "large"  # the headline's benchmark (pipeline.families.idbench.report.HEADLINE_SIZE)
IDBENCH_SUMMARY_GOLD = "relatedness"  # the gold score the summary prints (the others: the family's page)
IDBENCH_BASELINES = {"LV": "the LV baseline", "NW": "the NW baseline"}  # the string baselines (ours, kind string)


def idbench(con, config) -> list[Row]:
    """Spearman's rho with the gold score per gold score, large benchmark, comparable pairs: the model's pair
    scores at the layer chosen on the other folds (idbench_held_out_scores), against its twin's (chosen the same
    way on its own scores) and against LV and NW, on the pairs all of them scored; the summary reads the
    stronger string baseline and prints relatedness (every gold score is on the page). One query: the held-out
    view is computed once."""
    seed, rows = run_seed(config), []
    real = set(real_models(con, "idbench_held_out_scores"))
    strings = [s for s in IDBENCH_BASELINES
               if con.sql("SELECT count(*) FROM idbench_judged WHERE system = ? AND kind = 'string'",
                          params=[s]).fetchall()[0][0]]
    joins = "".join(
        f"LEFT JOIN idbench_judged s{i} ON s{i}.system = '{name}' AND s{i}.kind = 'string' AND s{i}.size = m.size "
        f"AND s{i}.gold = m.gold AND s{i}.pair_set = 'comparable' AND s{i}.pair_id = m.pair_id "
        for i, name in enumerate(strings))
    items = con.sql(
        "WITH h AS MATERIALIZED (SELECT model, size, gold, pair_id, x, value FROM idbench_held_out_scores "
        "WHERE size = ?) "
        f"SELECT m.model, m.gold, w.twin, m.x, m.value, t.x{''.join(f', s{i}.score' for i in range(len(strings)))} "
        "FROM h m LEFT JOIN model_twins w ON w.model = m.model "
        "LEFT JOIN h t ON t.model = w.twin AND t.gold = m.gold AND t.pair_id = m.pair_id "
        f"{joins}ORDER BY m.model, m.gold, m.pair_id", params=[IDBENCH_SIZE]).fetchall()
    groups: dict[tuple, list] = {}
    for r in items:
        groups.setdefault((r[0], r[1], r[2]), []).append(r[3:])
    for (model, gold, twin), group in groups.items():
        if model not in real:
            continue
        others = {IDBENCH_BASELINES[name]: _col(group, 3 + i) for i, name in enumerate(strings)}
        if twin:
            others[TWIN] = _col(group, 2)
        metric = f"rho, {gold} ({IDBENCH_SIZE})"
        tests = paired_spearman_tests(_col(group, 0), others, _col(group, 1),
                                      cell_seed(seed, "idbench", model, metric))
        first = next(iter(tests.values()), None)
        rows.append(Row("idbench", model, metric, None if first is None else first.a,
                        0 if first is None else first.n,
                        Comparison(TWIN, tests[TWIN]) if twin else None,
                        tuple(Comparison(name, tests[name]) for name in others if name != TWIN),
                        summary=gold == IDBENCH_SUMMARY_GOLD))
    return rows


def _probing_items(con, task: str, model: str, probe: str, pooling: str) -> dict[str, tuple[int, float]]:
    """{item: (fold, error)} of a probe's selected layer on every fold (fold 0 too: it trains the baseline)."""
    out = {}
    for fold, items, errors in con.sql(
            "SELECT fold, test_items, test_errors FROM probing_fits WHERE task = ? AND model = ? AND probe = ? "
            "AND pooling = ? AND selected AND layer IS NOT NULL AND test_items IS NOT NULL ORDER BY fold",
            params=[task, model, probe, pooling]).fetchall():
        out.update({i: (int(fold), float(e)) for i, e in zip(items, errors)})
    return out


def _baseline_errors(labels: dict[str, tuple], folds: dict[str, int], regression: bool) -> dict[str, float]:
    """Each test item's error (folds 1..K-1) of the paper's baseline trained on the other folds' items: the
    majority class (classification), or a least-squares line on the sample's token count (regression)."""
    out = {}
    for k in sorted({f for f in folds.values() if f > 0}):
        train = [labels[i] for i, f in folds.items() if f != k and i in labels]
        test = [i for i, f in folds.items() if f == k and i in labels]
        if not train:
            continue
        if regression:
            x = np.array([t[2] for t in train], dtype=float)
            y = np.array([t[1] for t in train], dtype=float)
            slope, icept = np.polyfit(x, y, 1) if len(set(x)) > 1 else (0.0, float(y.mean()))
            out.update({i: abs(slope * labels[i][2] + icept - labels[i][1]) for i in test})
        else:
            counts: dict = {}
            for t in train:
                counts[t[0]] = counts.get(t[0], 0) + 1
            majority = min(counts, key=lambda c: (-counts[c], str(c)))
            out.update({i: float(labels[i][0] != majority) for i in test})
    return out


def probing(con, config) -> list[Row]:
    """Per task, each real model's probe (the probe and pooling with the lowest fold-0 error, as the headline
    chooses) at its layer chosen on fold 0: its per-sample test error (folds 1..K-1) against its twin's (same probe
    and pooling, its own chosen layer) and against the paper's baseline trained on the same folds of the same
    items (majority class; linreg on the token count for a regression task). Lower is better. The summary prints,
    per task, the model the headline chooses (lowest fold-0 error among the real models whose fold 0 holds at least
    report.min_n samples, as probing_headline chooses: a choice on fewer is noise; none then)."""
    seed, rows = run_seed(config), []
    min_n = int((config.get("report") or {}).get("min_n", 100))
    real = set(real_models(con, "probing_models"))
    chosen = con.sql("SELECT task, model, probe, pooling, metric, fold0_error, fold0_n FROM probing_models "
                     "WHERE NOT control ORDER BY task, model, fold0_error, probe").fetchall()
    best: dict[tuple, tuple] = {}
    for task, model, probe, pooling, metric, err, fold0_n in chosen:
        if model in real:
            best.setdefault((task, model), (probe, pooling, metric, err, fold0_n))
    headline = {}
    for (task, model), (_, _, _, err, fold0_n) in sorted(best.items()):
        if err is not None and (fold0_n or 0) >= min_n and (task not in headline or err < headline[task][1]):
            headline[task] = (model, err)
    for (task, model), (probe, pooling, metric, _, _) in sorted(best.items()):
        lang, _, name = task.partition("-")
        labels = {i: (lab, tgt, ntok) for i, lab, tgt, ntok in con.sql(
            "SELECT item_id, label, target::DOUBLE, n_tokens::DOUBLE FROM probing_labels WHERE language = ? AND task = ?",
            params=[lang, name]).fetchall()}
        mine = _probing_items(con, task, model, probe, pooling)
        test = sorted(i for i, (f, _) in mine.items() if f > 0)
        if not test:
            continue
        twin = twin_of(con, model)
        theirs = _probing_items(con, task, twin, probe, pooling) if twin else {}
        regression = metric == "mae"
        base = _baseline_errors(labels, {i: f for i, (f, _) in mine.items()}, regression)
        a = np.array([mine[i][1] for i in test])
        b = np.array([theirs[i][1] if i in theirs and theirs[i][0] > 0 else np.nan for i in test])
        c = np.array([base.get(i, np.nan) for i in test])
        name_base = "linreg on length" if regression else "the majority class"
        row = _mean_row("probing", model, f"{task} {'MAE' if regression else 'error'}", seed, a,
                        b if twin else None, {name_base: c}, lower_is_better=True)
        rows.append(replace(row, summary=headline.get(task, (None,))[0] == model))
    return rows


FAMILIES: dict[str, Callable] = {"apiquiz": apiquiz, "apirec": apirec, "idbench": idbench, "probing": probing,
                                 "codesyntax": codesyntax}


def rows(con, config, families: list[str]) -> list[Row]:
    """Every headline row of the enabled `families` (in their order), families without a function left out."""
    out: list[Row] = []
    FAILED.clear()
    for name in families:
        if name in FAMILIES:
            try:
                out += FAMILIES[name](con, config)
            except duckdb.Error as e:  # a warehouse without the family's tables (an older build): said, not hidden
                log.warning("%s: no headline rows for the summary: %s", name, e)
                FAILED[name] = str(e).split("\n")[0]
    return out
