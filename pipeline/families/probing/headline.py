"""probing's headline rows for the verdicts (pipeline.report.verdicts), found by pipeline.report.headlines."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from pipeline.report.headlines import _mean_row, real_models, run_seed, twin_of
from pipeline.report.verdicts import Row


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


def summary_task(config) -> str | None:
    """The task every real model's summary row is on: the first enabled task of the first language (the default:
    java-path_type, the paper's Table 1 first row, whose 2,000-sample cap puts every model's test folds over the
    floor). One task for every model, so the summary picks no model and no task by its test score; every other task
    is on the family's page."""
    probing = config.get("probing") or {}
    languages, tasks = probing.get("languages") or [], probing.get("tasks") or []
    return f"{languages[0]}-{tasks[0]}" if languages and tasks else None


def rows(con, config) -> list[Row]:
    """Per task, each real model's probe (the probe and pooling with the lowest fold-0 error, as the headline
    chooses) at its layer chosen on fold 0: its per-sample test error (folds 1..K-1) against its twin's (same probe
    and pooling, its own chosen layer) and against the paper's baseline trained on the same folds of the same
    items (majority class; linreg on the token count for a regression task). Lower is better. The summary prints
    every real model on one task (`summary_task`); a control task (Hewitt & Liang's, selectivity) is on the page
    only."""
    seed, rows = run_seed(config), []
    real = set(real_models(con, "probing_models"))
    chosen = con.sql("SELECT task, model, probe, pooling, metric, fold0_error, fold0_n FROM probing_models "
                     "WHERE NOT control ORDER BY task, model, fold0_error, probe").fetchall()
    best: dict[tuple, tuple] = {}
    for task, model, probe, pooling, metric, err, fold0_n in chosen:
        if model in real:
            best.setdefault((task, model), (probe, pooling, metric, err, fold0_n))
    first = summary_task(config)
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
                        b if twin else None, {name_base: c} if labels else {}, lower_is_better=True, keys=test)
        rows.append(replace(row, summary=task == first))
    return rows
