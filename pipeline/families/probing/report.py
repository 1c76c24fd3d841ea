"""The probing section of the report. Headline (reports/index.md): the paper's Table 1 (CodeT5-base,
encoder and decoder, test error per task) with ours beside it (per enabled task one trained model chosen
on fold 0, n, 95% CI, its random twin paired, the baseline on all items, the detectable difference; cells
under report.min_n say `too few items`) and how the populations differ. Details (reports/probing.md): every
zoo model's row per task, the baselines, class balance, selectivity, each model's items, feature sizes and
the per-layer curves (reports/plots/probing_layers.csv: x = layer, y = error)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from pipeline.families.probing import RELEASE_PARSER
from pipeline.families.probing.paper import TABLE1_CODET5_BASE_DECODER, TABLE1_CODET5_BASE_ENCODER
from pipeline.report.common import (CHANCE, MAX_SERIES, Section, clip, detectable_difference, floored, fraction,
                                    interval, markdown_table, min_n, plt, save, score_cell, write_plot)

PER_SOURCE = ("probing's snippets by the source of their file, over the whole corpus (a seeded sample of its methods, "
              "cross-validated: not drawn from the test split)")
PAPER_ORDER = ("path_type", "depth", "declared", "dataflow", "variable_name", "misuse", "algorithm")  # Table 1
PAPER_PROBES = ("paper", "sgd", "lbfgs", "ridge")  # the release's SGD probe first, then the others


# CPU-s of section() on the default build (2026-12-02):
# the report runs the longest parts first (pipeline.report.build.section_weight)
SECTION_CPU_S = 6


def _interval(metric: str, lo, hi) -> str:
    """A 95% interval within the metric's range (an error within [0, 1], an MAE >= 0): the fit's bootstrap over test
    samples is inside it by construction; a fit written without per-sample errors falls back to a t interval over
    three folds (probing_headline.interval), which can reach past it and is clipped here."""
    top = math.inf if metric == "mae" else 1.0
    return f"[{_fmt(clip(lo, 0.0, top))}, {_fmt(clip(hi, 0.0, top))}]"


def _score(value, lo, hi, n, metric: str, floor: int) -> str:
    """`0.123 [0.1, 0.15]`, or `too few items (n = 12)` under the power floor (report.min_n)."""
    if floored(n, floor) or value is None:
        return score_cell(value, n, floor)
    return f"{_fmt(value)} {_interval(metric, lo, hi)}"


def enabled_tasks(config) -> list[tuple[str, str]]:
    """(task, language) of every task the params enable (controls apart), in Table 1's order, our variants after."""
    from pipeline.families.probing import fit_tasks, split

    tasks = [split(t)[::-1] for t in fit_tasks(config) if not t.endswith("-control")]
    order = {name: i for i, name in enumerate(PAPER_ORDER)}
    # a `*_release_parser` task right after its release task (the same definition on the release's grammar)
    return sorted(tasks, key=lambda t: (order.get(paper_task(t[0]), len(order)), paper_task(t[0]), t[0], t[1]))


def paper_task(name: str) -> str:
    """The Table 1 row a task stands for: a release task, or the same task labelled on the release's grammar."""
    return name.removesuffix(RELEASE_PARSER)


def model_rows(con) -> dict[tuple[str, str], list[dict]]:
    """(task, language) -> every probed model's row of probing_models, each with its random twin's paired
    comparison (probing_twin_diff: twin, n, diff, lo, hi, p) where the zoo gives it one."""
    cols = ["task", "model", "probe", "pooling", "layer", "metric", "mean", "ci_low", "ci_high", "n_test",
            "fold0_error", "fold0_n", "baseline_name", "baseline_score", "baseline_ci_low", "baseline_ci_high",
            "baseline_n", "vs_baseline", "vs_baseline_lo", "vs_baseline_hi", "vs_baseline_p", "control"]
    twins = {}
    for model, twin, language, task, probe, pooling, n, score, twin_score, diff, lo, hi, p in con.sql(
            "SELECT model, twin, language, task, probe, pooling, n, score, twin_score, diff, lo, hi, p_value "
            "FROM probing_twin_diff").fetchall():
        twins[(model, language, task, probe, pooling)] = {"twin": twin, "n": n, "score": score,
                                                          "twin_score": twin_score, "diff": diff, "lo": lo, "hi": hi,
                                                          "p": p}
    out: dict[tuple[str, str], list[dict]] = {}
    for row in con.sql(f"SELECT {', '.join(cols)} FROM probing_models WHERE NOT task LIKE '%-control' "
                       "ORDER BY task, control, model, probe").fetchall():
        r = dict(zip(cols, row))
        language, _, name = r["task"].partition("-")
        r["twin"] = twins.get((r["model"], language, name, r["probe"], r["pooling"]))
        out.setdefault((name, language), []).append(r)
    return out


def choose(rows: list[dict], floor: int) -> dict | None:
    """The headline's model for one task, chosen on held-out data: among the trained (not random-control)
    models whose headline n AND fold 0 (the fold the choice reads) reach the power floor, the lowest error on fold 0,
    the fold its layer was chosen on (never the test folds' mean); the release's probe first where it ran. None when
    no model's fold 0 reaches the floor: a choice on fewer samples is noise (33 samples for SmolLM2 against 497 for
    code-clm on path type were measured), and the row says so (`why_not_chosen`)."""
    pool = [r for r in rows if not r["control"] and not floored(r["n_test"], floor)
            and not floored(r["fold0_n"], floor)]
    if not pool:
        return None
    rank = {p: i for i, p in enumerate(PAPER_PROBES)}
    # ties (an equal fold-0 error, compared to 9 decimals: the same error summed in another order differs in its
    # last bits) go to the model's name, then the probe's
    return min(pool, key=lambda r: (rank.get(r["probe"], len(rank)), round(r["fold0_error"], 9), r["model"],
                                    r["probe"]))


def detectable(row: dict) -> tuple[float | None, int | None]:
    """The smallest difference the row's n can detect, and that n: for an error rate the half-width of a 95% CI on
    a difference of two rates over the items paired with its twin, at the mean of the two observed errors (its own
    n and error without a twin); for an MAE the half-width of the paired twin CI observed (none without a twin)."""
    twin = row.get("twin")
    if row["metric"] == "mae":
        return ((twin["hi"] - twin["lo"]) / 2, twin["n"]) if twin and twin["lo"] is not None else (None, row["n_test"])
    if twin:
        return detectable_difference((twin["score"] + twin["twin_score"]) / 2, twin["n"]), twin["n"]
    return detectable_difference(row["mean"], row["n_test"]), row["n_test"]


def full_baselines(con) -> dict[tuple[str, str], tuple]:
    """(task, language) -> the family's majority (or linreg) baseline on the full labelled item set."""
    out = {}
    for task, probe, metric, mean, lo, hi, n in con.sql(
            "SELECT task, probe, metric, mean, ci_low, ci_high, n_test FROM probing_headline "
            "WHERE layer IS NULL AND model = probe AND probe IN ('majority', 'linreg') ORDER BY ALL").fetchall():
        language, _, name = task.partition("-")
        out.setdefault((name, language), (probe, metric, mean, lo, hi, n))
    return out


def why_no_row(con, config, name: str, language: str) -> str:
    """One line: why an enabled task has no fitted model."""
    samples = con.sql("SELECT count(*), count(DISTINCT \"group\") FROM probing_labels WHERE language = ? AND task = ? "
                      "AND (label IS NOT NULL OR target IS NOT NULL)", params=[language, name]).fetchall()[0]
    if not samples[0]:
        return "no samples (the generator made none from these snippets: see the task notes on the probing page)"
    folds = (config.get("probing", {}).get("fit") or {}).get("folds", 4)
    return (f"no model was fitted: {samples[0]} labelled samples in {samples[1]} snippets, too few for {folds} "
            f"folds with every fold and two classes in each train split (the fit's metrics say why per model)")


def headline(con, config=None) -> str:
    """Table 1's rows (every task the params enable, the release's definitions first) and its CodeT5-base columns,
    ours beside: per task one trained model chosen on held-out data (the lowest fold-0 error among those whose n
    reaches report.min_n), its test error over folds 1-3 with n and a 95% CI (a cell under the floor says `too few
    items`), its random twin paired on the items both read, the family's baseline on the full item set, and the
    smallest difference the n can detect. Every zoo model's row is on the probing page."""
    config = config or {}
    floor = min_n(config)
    rows = model_rows(con)
    base = full_baselines(con)
    tasks = enabled_tasks(config) if config.get("probing") else sorted(
        set(rows) | set(base), key=lambda t: (PAPER_ORDER.index(paper_task(t[0])) if paper_task(t[0]) in PAPER_ORDER
                                              else len(PAPER_ORDER), paper_task(t[0]), t))
    table, detect = [], []
    for name, language in tasks:
        paper = (f"{TABLE1_CODET5_BASE_ENCODER[paper_task(name)]:.3f}",
                 f"{TABLE1_CODET5_BASE_DECODER[paper_task(name)]:.3f}") \
            if paper_task(name) in TABLE1_CODET5_BASE_ENCODER else ("", "")
        best = choose(rows.get((name, language), []), floor)
        b = base.get((name, language))
        baseline = "" if b is None else f"{b[0]}: {_score(b[2], b[3], b[4], b[5], b[1], floor)}" + (
            "" if floored(b[5], floor) else f" (n = {b[5]})")
        if best is None:
            trained = [r for r in rows.get((name, language), []) if not r["control"]]
            why = (f"no model chosen: fold 0 (the held-out fold the choice reads) holds under {floor} samples for every "
                   f"trained model (largest: {max(r['fold0_n'] for r in trained)}); each model's row, with its "
                   "baseline, is on the probing page" if trained
                   else why_no_row(con, config, name, language) if config.get("probing") else "no model was fitted")
            table.append((f"{name} ({language})", *paper, why, "", "", "", baseline, "", ""))
            continue
        # ours beside the release's probe: ridge on the same model and items, at its own fold-0 layer
        ours = next((r for r in rows.get((name, language), []) if r["model"] == best["model"] and r["probe"] == "ridge"
                     and best["probe"] != "ridge"), None)
        beside = "" if ours is None else (
            f"{_score(ours['mean'], ours['ci_low'], ours['ci_high'], ours['n_test'], ours['metric'], floor)} "
            f"(layer {ours['layer']})")
        twin = best["twin"]
        vs = "" if twin is None else (
            f"{twin['twin']}: {score_cell(None, twin['n'], floor)}" if floored(twin["n"], floor) else
            f"{twin['twin']}: {fraction(twin['diff'])} {interval(twin['lo'], twin['hi'])} (n = {twin['n']})")
        dd, dn = detectable(best)
        if dd is not None and best["metric"] != "mae":  # error rates only: an MAE is in other units
            detect.append((dd, f"{name} ({language})"))
        table.append((f"{name} ({language})", *paper,
                      f"{best['model']} ({best['probe']}, layer {best['layer']}; fold 0 n = {best['fold0_n']})",
                      best["n_test"], _score(best["mean"], best["ci_low"], best["ci_high"], best["n_test"],
                                             best["metric"], floor),
                      beside, baseline, vs, "" if dd is None else f"{dd:.3f} (n = {dn})"))
    table.append(("readability", "", "", "not run: its rated dataset is not in this workspace", "", "", "", "", "",
                  ""))
    return "\n".join([
        "Paper Table 1 (test error, 1 - accuracy; MAE for AST depth; CodeT5-base, encoder and decoder side) with "
        "ours beside it, one row per task the params enable. **Which model:** per task one trained model, chosen "
        "on held-out data: the lowest error on fold 0 (the fold each model's layer is chosen on) among the models "
        "whose n and whose fold 0 both reach the power floor (none chosen where no fold 0 does), never the lowest of "
        "the test scores; every zoo model's row is on the "
        "probing page. Each model is fitted and scored on its own items (every labelled sample it has features for "
        "in every layer), so a capped model never shrinks another's test set. **n** = the distinct test samples "
        "the error is over (folds 1-3; each sample is tested in one fold); error = mean over those samples with a "
        f"95% percentile bootstrap interval over them (10,000 replicates; never clipped). A cell over fewer than {floor} samples "
        "(`report.min_n`) prints `too few items` instead of a score. **vs random twin**: the model minus its "
        "random-weights twin, paired on the test samples both read (negative: the trained weights help), 95% "
        "paired-bootstrap CI, n = those samples. **Baseline**: the majority class (linreg on token count for "
        "depth) on the full labelled item set and the same folds. **Detectable difference**: the smallest "
        "difference the row's n can tell from zero (half-width of a 95% CI on a difference of two error rates at "
        "the mean of the model's and its twin's errors over the paired n; for the MAE of depth, the paired twin CI's "
        "half-width). **Labels:** a plain row is the release's definition on today's tree-sitter-java; a "
        "`*_release_parser` row is the same definition on the parser the release ran on (py-tree-sitter 0.19.0 with "
        "tree-sitter-java ac14b4b, 2022-05), which parses a bare method as a declaration, an ERROR and a block: the labels the paper's Table 1 "
        "was trained on (path type and depth differ for ~90% of tokens / methods). **Probe:** the release's probe "
        "(`paper`: its estimator per task, on the raw features: SGD with log loss grid-searched by a 5-fold split for "
        "token and edge tasks, LogisticRegressionCV for snippet tasks, RidgeCV for depth; layer chosen on fold 0, "
        "mean of folds 1-3) where the fit ran it (`probing.fit.probe` / `also_probes`), else the named one; "
        "**ridge (ours)** beside it: our ridge probe (standardised features, alpha by a grouped inner split) on the "
        "same model and items, at its own fold-0 layer."
        + ("" if any(r["probe"] == "paper" for rs in rows.values() for r in rs) else
           " **This run fitted no `paper` probe** (`probing.fit`): every row is our ridge, not the release's probe "
           "(on the default run the release's probe would cost ~1,500 CPU s more; pipeline/families/probing/README.md).")
        + "\n",
        markdown_table(["task (language)", "paper: CodeT5-base encoder", "paper: decoder",
                        "ours: model (probe, layer), chosen on fold 0", "n", "ours: error [95% CI]",
                        "ridge (ours), same model [95% CI]",
                        "baseline on all items [95% CI]", "vs random twin: difference [95% CI]",
                        "detectable difference"], table),
        *([f"\n**Power:** at these n the smallest difference in error rate a row can tell from zero runs from "
           f"{min(detect)[0]:.3f} ({min(detect)[1]}) to {max(detect)[0]:.3f} ({max(detect)[1]}); a smaller gap "
           "between two models, or between ours and the paper's, is not evidence either way."] if detect else []),
        "\n**How the populations differ:** the paper probes 220M-parameter pretrained models on Ahmad et al.'s 10k "
        "Java test functions; ours are our zoo's small models on JDK methods of at most 1000 characters from this "
        "corpus (far fewer samples, see n), so expect far higher errors. Both are comment-free (ours: comments "
        "removed before labelling, unless `probing.keep_comments`).\n"])


def layer_curves(con) -> list[tuple]:
    """(task, model, probe, layer, error) per layer: the mean over the folds; for a probe fitted on fold 0 only at
    the layers not chosen (`paper_layers: selected`, Table 1's protocol), fold 0's error at every layer, so one
    curve never mixes a 4-fold mean with single folds."""
    return con.sql("""
        WITH l AS (SELECT task, model, probe, layer, avg(error) AS error, avg(error) FILTER (WHERE fold = 0) AS fold0,
                          count(*) AS folds
                   FROM probing_fits WHERE layer IS NOT NULL GROUP BY task, model, probe, layer),
             c AS (SELECT task, model, probe, min(folds) = max(folds) AS whole FROM l GROUP BY task, model, probe)
        SELECT task, model, probe, layer AS x, CASE WHEN whole THEN error ELSE fold0 END AS y
        FROM l JOIN c USING (task, model, probe) ORDER BY ALL""").fetchall()


def _fmt(v):
    return None if v is None else round(float(v), 3)


def feature_bytes(con) -> list[tuple]:
    """Per model: samples, layers, bytes of its feature files per 1,000 samples, and what per-token dumps would take."""
    out = []
    rows = con.sql("""
        WITH f AS (SELECT model, item_id, count(*) AS layers, min(len(vector)) AS width, min(pooling) AS pooling
                   FROM probing_predictions GROUP BY model, item_id)
        SELECT f.model, count(*) AS samples, max(f.layers) AS layers,
               sum(f.layers * (CASE WHEN f.pooling LIKE 'concat%' THEN f.width / 2 ELSE f.width END)
                   * l.n_tokens * 4) AS dump
        FROM f JOIN probing_labels l USING (item_id) GROUP BY f.model ORDER BY f.model""").fetchall()
    for model, samples, layers, dump in rows:
        size = sum(p.stat().st_size for p in Path("data/predictions/probing").glob(f"*/{model}/*.parquet"))
        if not samples or not size:
            continue
        out.append((model, samples, layers, round(size / samples * 1000 / 1e6, 2), round(dump / samples * 1000 / 1e6, 1),
                    f"{dump / size:.0f}x"))
    return out


ONE_CLASS = 0.9  # a task at least this much one class says so in a line of its own


def class_balance(con, floor: int = 0) -> tuple[list[tuple], list[str]]:
    """Per classification task, on the full labelled item set: samples, classes, the majority class and its
    share, the majority baseline's error on all items (mean of folds 1-3, 95% CI, n = test samples over folds
    1-3) beside the probe chosen on fold 0 (`choose`: never the lowest test error) with its error and n; and one
    line per task that is >= 90% one class."""
    rows = con.sql("""
        WITH k AS (
            SELECT l.language || '-' || l.task AS task, l.label FROM probing_labels l WHERE l.label IS NOT NULL
        ), c AS (SELECT task, label, count(*) AS n FROM k GROUP BY ALL),
        r AS (SELECT *, row_number() OVER (PARTITION BY task ORDER BY n DESC, label) AS rank,
                     sum(n) OVER (PARTITION BY task) AS total, count(*) OVER (PARTITION BY task) AS classes FROM c),
        maj AS (SELECT task, mean, ci_low, ci_high, n_test FROM probing_headline
                WHERE model = 'majority' AND probe = 'majority')
        SELECT r.task, r.total, r.classes, r.label, r.n / r.total AS share, maj.mean, maj.ci_low, maj.ci_high, maj.n_test
        FROM r LEFT JOIN maj USING (task)
        WHERE r.rank = 1 ORDER BY r.task""").fetchall()
    models = model_rows(con)
    table, lines = [], []
    for task, total, classes, label, share, m, mlo, mhi, mn in rows:
        language, _, name = task.partition("-")
        best = choose(models.get((name, language), []), floor)
        table.append((task, total, classes, label, f"{share:.1%}",
                      None if m is None else f"{_fmt(m)} [{_fmt(mlo)}, {_fmt(mhi)}]", mn,
                      None if best is None else f"{best['model']} ({best['probe']})",
                      None if best is None else f"{_fmt(best['mean'])} [{_fmt(best['ci_low'])}, {_fmt(best['ci_high'])}]",
                      None if best is None else best["n_test"]))
        if share >= ONE_CLASS:
            beat = f"the majority baseline's error {_fmt(m)} (n = {mn})" if m is not None else \
                f"an error of {_fmt(1 - share)} (always `{label}`)"
            lines.append(f"- **{task} is {share:.1%} one class** (`{label}`, {total} samples): "
                         f"a probe must beat {beat}, not chance.")
    return table, lines


def model_table(con, floor: int) -> list[tuple]:
    """Every zoo model's row per task (controls apart): its probe's test error with n and CI (floored), the fold-0
    error its layer and the headline's model are chosen on, the baseline on the same model's items, and its
    random twin paired on the items both read."""
    out = []
    fitted = model_rows(con)
    unfitted = not_fitted(con, fitted)
    for key in sorted(set(fitted) | set(unfitted), key=lambda k: (
            PAPER_ORDER.index(k[0]) if k[0] in PAPER_ORDER else len(PAPER_ORDER), k)):
        name, language = key
        for r in fitted.get(key, []):
            twin = r["twin"]
            base = "" if r["baseline_name"] is None else (
                f"{r['baseline_name']}: {_score(r['baseline_score'], r['baseline_ci_low'], r['baseline_ci_high'], r['baseline_n'], r['metric'], floor)}"
                + ("" if floored(r["baseline_n"], floor) else f" (n = {r['baseline_n']})")
                + ("" if r["vs_baseline"] is None or floored(r["n_test"], floor) else
                   f"; probe - baseline {fraction(r['vs_baseline'])} {interval(r['vs_baseline_lo'], r['vs_baseline_hi'])}"
                   f", p {fraction(r['vs_baseline_p'])}"))
            diff = "" if twin is None else (score_cell(None, twin["n"], floor) if floored(twin["n"], floor)
                                            else f"{fraction(twin['diff'])} {interval(twin['lo'], twin['hi'])}")
            out.append((f"{name} ({language})", r["model"] + (" (random control)" if r["control"] else ""), r["probe"],
                        r["layer"], r["n_test"], _score(r["mean"], r["ci_low"], r["ci_high"], r["n_test"], r["metric"],
                                                        floor),
                        f"{_fmt(r['fold0_error'])} (n = {r['fold0_n']})", base,
                        "" if twin is None else twin["twin"], "" if twin is None else twin["n"], diff,
                        "" if twin is None or floored(twin["n"], floor) else fraction(twin["p"])))
        for model, control, have, labelled in unfitted.get(key, []):
            out.append((f"{name} ({language})", model + (" (random control)" if control else ""), "", "", "",
                        f"not fitted: features for {have} of the task's {labelled} labelled samples, too few to fill "
                        "every fold (with 2 classes and 3 snippets in each train split)", "", "", "", "", "", ""))
    return out


def not_fitted(con, fitted: dict) -> dict[tuple[str, str], list[tuple]]:
    """(task, language) -> (model, control, labelled items it has features for, labelled items) of every model in
    the item record (probing_fit_items) without a probe row for a task that has labels (its fit skipped it)."""
    rows = con.sql("""
        SELECT l.task, l.language, f.model, f.model IN (SELECT twin FROM model_twins) AS control,
               count(*) FILTER (WHERE f.kept) AS have, count(*) AS labelled
        FROM probing_labels l JOIN probing_fit_items f ON f.item_id = l.item_id AND f.subset = l.language
        WHERE l.label IS NOT NULL OR l.target IS NOT NULL
        GROUP BY ALL ORDER BY ALL""").fetchall()
    done = {(k, r["model"]) for k, rs in fitted.items() for r in rs}
    out: dict[tuple[str, str], list[tuple]] = {}
    for task, language, model, control, have, labelled in rows:
        if ((task, language), model) not in done:
            out.setdefault((task, language), []).append((model, control, have, labelled))
    return out


def item_record(con) -> list[tuple]:
    """Per subset and model (probing_fit_items): the items it has features for in every layer, the labelled items
    it lacks and the most frequent reason."""
    return con.sql("""
        SELECT subset, model, count(*) FILTER (WHERE kept) AS kept,
               count(*) FILTER (WHERE NOT kept AND reason <> 'no label') AS lacks,
               mode(reason) FILTER (WHERE NOT kept AND reason <> 'no label') AS reason
        FROM probing_fit_items GROUP BY ALL ORDER BY ALL""").fetchall()


def empty_tasks(con, config, root: Path = Path("data/families/probing")) -> list[str]:
    """One line per configured task with no sample in a language that has samples (a language with
    none has its own note), with the reason its generator's summary gives (the release's class rule)."""
    from pipeline.families.probing import language_tasks, subsets

    have = dict(con.sql("SELECT language || '-' || task, count(*) FROM probing_labels GROUP BY ALL").fetchall())
    lines = []
    for lang in subsets(config):
        if not any(k.startswith(f"{lang}-") for k in have):
            continue
        try:
            tasks = json.loads((root / lang / "summary.json").read_text())["tasks"]
        except (OSError, ValueError, KeyError):
            tasks = {}
        for task in language_tasks(config, lang):
            if have.get(f"{lang}-{task}"):
                continue
            rule = tasks.get(task, {}).get("class_rule")
            why = (f"the release's class rule kept no class: {rule['labels_before']} labels, none among the "
                   f"{rule['max_classes']} most frequent with {rule['min_class_samples']} samples "
                   f"({rule['dropped_samples']} samples dropped); raise `probing.max_snippets` (on JDK methods, "
                   "4,000 give variable name its 15 classes) or lower `probing.min_class_samples`"
                   if rule else "its generator made no sample from these snippets")
            lines.append(f"- **{lang}-{task} has no samples**: {why}.")
    return lines


def twins(con) -> list[str]:
    """Each model against its random twin on the same test samples (view probing_twin_diff)."""
    rows = con.sql("SELECT model, twin, language, task, probe, metric, layer, twin_layer, n, score, twin_score, diff, "
                   "lo, hi, p_value FROM probing_twin_diff WHERE NOT task LIKE '%-control' "
                   "ORDER BY model, language, task, probe").fetchall()
    if not rows:
        return ["\nModel vs its random twin: no model of this run has a twin with per-sample errors "
                "(`random:<model>` in the zoo; fits written before the fit stage kept them: rerun it).\n"]
    return ["\nModel vs its random twin, paired (same architecture and tokenizer, random weights; view "
            "`probing_twin_diff`): each at its own layer chosen on fold 0, the mean error over the test samples of "
            "folds 1-3 both were tested on (1 - accuracy; MAE for AST depth; a sample mean, so it can differ from "
            "the table above, a mean of fold means, in the 3rd decimal), the difference model - twin (negative: "
            "the trained weights help), its 95% CI and two-sided p from a paired Poisson bootstrap over the samples "
            "(1000 replicates, seeded by the run's seed; a snippet's samples resampled independently):\n",
            markdown_table(["model", "twin", "language", "task", "probe", "metric", "layer", "twin layer", "n", "error",
                            "twin error", "difference", "95% CI", "p"],
                           [(m, t, lang, task, probe, metric, layer, tl, n, fraction(a), fraction(b), fraction(d),
                             interval(lo, hi), fraction(p))
                            for m, t, lang, task, probe, metric, layer, tl, n, a, b, d, lo, hi, p in rows])]


def section(con, figures: Path, link: str, config, plots: Path | None = None) -> Section:
    rows = con.sql("SELECT task, model, probe, layer, metric, n_test, mean, ci_low, ci_high FROM probing_headline "
                   "ORDER BY task, probe IN ('ridge', 'lbfgs', 'sgd', 'paper') DESC, model, probe").fetchall()
    body = []
    for task, model, probe, layer, metric, n, mean, lo, hi in rows:
        paper = TABLE1_CODET5_BASE_ENCODER.get(task.split("-", 1)[1].replace("-control", ""))
        body.append((task, model, probe, layer, metric, n, _fmt(mean), f"[{_fmt(lo)}, {_fmt(hi)}]",
                     None if task.endswith("-control") else paper))
    # each model's most selective layer; ties (to 9 decimals) to the lowest layer
    key = "{'s': round(selectivity, 9), 'layer': -layer}"
    sel = con.sql(f"SELECT task, model, arg_max(layer, {key}), max(selectivity), arg_max(ci_low, {key}), "
                  f"arg_max(ci_high, {key}), arg_max(samples, {key}), arg_max(folds, {key}) "
                  "FROM probing_selectivity GROUP BY task, model ORDER BY task, model").fetchall()
    counts = con.sql("SELECT language || '-' || task AS task, count(*) AS samples, count(DISTINCT \"group\") AS snippets "
                     "FROM probing_labels GROUP BY ALL ORDER BY ALL").fetchall()
    floor = min_n(config or {})
    balance = class_balance(con, floor)
    empty = empty_tasks(con, config)
    out = ["Linear probes (the fit stage: 4 folds grouped by source file (`probing.fit.group_by`), layer chosen on "
           "fold 0, mean over the test samples of folds 1-3 with a 95% bootstrap interval over them) on frozen "
           "per-layer pooled features. Metric: test error (1 - accuracy), MAE for "
           "AST depth. `paper`: CodeT5-base encoder in the paper's Table 1 (Java, a 220M model; our zoo is tiny, "
           "so expect far higher errors; our methods are JDK methods <= 1000 characters, the paper's Ahmad et al.'s "
           "10k Java test functions). Task names without a suffix are the release's definitions; `*_ours`, `*_every`, "
           "`*_last_def`, `*_declared`, `*_any_leaf` are our variants (no paper figure). `probe`: `ridge` is the "
           "fast default for exploration, `paper` the release's SGD probe (the paper-comparable one). Baselines "
           "have no layer. `n`: the distinct test samples the mean is over (folds 1-3). Each model is fitted on "
           "its own items (every labelled sample it has features for in every layer); the folds are assigned on "
           "all labelled samples, so a sample two models read is in the same fold for both.\n",
           "**Readability (the paper's eighth task) is absent from every table below:** its 200-snippet "
           "human-rated dataset (Scalabrino et al. 2018) is not in this workspace, so the task is off and no number "
           "for it is reported or faked (pipeline/families/probing/README.md).\n",
           f"\nEvery zoo model per task (the headline's model is chosen from these on fold 0): each on its own items; "
           f"`n` = distinct test samples of folds 1-3; error = their mean, 95% percentile bootstrap interval over them "
           f"(10,000 replicates), `too few items` under report.min_n = {floor}; `fold 0` = the error on the fold the "
           "layer is chosen on (with its n); `baseline` = the majority class (linreg on token count for depth) on the "
           "same model's items and test samples, with its n, and the probe minus it paired on those samples (95% "
           "bootstrap interval, p); `twin` = its random-weights twin, paired on the test samples both read (`paired n`), "
           "difference model - twin with a 95% paired-bootstrap CI and p:\n",
           markdown_table(["task (language)", "model", "probe", "layer", "n", "error [95% CI]", "fold 0",
                           "baseline [95% CI]", "twin", "paired n", "difference [95% CI]", "p"],
                          model_table(con, floor)),
           "\nEvery row of `probing_headline` (probes, the baselines on each model's items under the model's name, "
           "the family's baselines on all items under their own; 95% bootstrap intervals over the test samples):\n",
           markdown_table(["task", "model", "probe", "layer", "metric", "n", "mean", "95% CI", "paper"], body),
           *twins(con),
           "\nSamples per task:\n", markdown_table(["task", "samples", "snippets"], counts),
           "\nClass balance (classification tasks, on all labelled items): the majority class's share and the "
           "majority baseline on all items beside the probe chosen on fold 0 (mean of folds 1-3, 95% CI; `n`: test "
           "samples over folds 1-3). "
           "A task that is mostly one class is only as informative as its margin over the majority baseline:\n",
           markdown_table(["task", "samples", "classes", "majority class", "share", "majority baseline",
                           "n (baseline)", "best probe", "error", "n (probe)"], balance[0]),
           *(["", *balance[1]] if balance[1] else []),
           *(["", *empty] if empty else []),
           "\nControl-task selectivity (Hewitt & Liang: control error - task error at the layer where it is "
           "largest; mean over the folds, 95% t interval of the per-fold paired differences; `samples`: the "
           "task's items, each tested once). Positive: the probe reads more than the word type; near 0 or "
           "negative: it does no better on the real task than on random labels per word type (too few samples "
           "per word type, or a representation that only encodes the word):\n",
           markdown_table(["task", "model", "layer", "selectivity", "95% CI", "samples", "folds"],
                          [(t, m, a, _fmt(s), f"[{_fmt(lo)}, {_fmt(hi)}]", n, k)
                           for t, m, a, s, lo, hi, n, k in sel]),
           "\nFeatures on disk (float16 Parquet, all shards) against per-token float32 hidden-state dumps of the same "
           "samples (every layer x tokens x hidden size x 4 bytes; tokens counted as the snippet's code tokens, "
           "fewer than the model's subtokens, so the dump figure is a lower bound):\n",
           markdown_table(["model", "samples", "layers", "features MB / 1,000", "dump MB / 1,000 (at least)", "ratio"],
                          feature_bytes(con)),
           "\nEach model's items (view `probing_fit_items`): the labelled samples it has features for in every "
           "layer (its fit uses exactly these; no model's gaps shrink another's), those it lacks and the most "
           "frequent reason (a capped model reads only its `max_items` subset):\n",
           markdown_table(["subset", "model", "items with features", "labelled items it lacks", "reason"],
                          item_record(con)),
           ]
    if plots is not None:
        write_plot(plots / "probing_layers.csv", ["task", "model", "probe", "x", "y"], layer_curves(con))
    return Section("Probing pretrained models of source code (Table 1)", headline(con, config), "\n".join(out) + "\n")


def layers_by_task(con, figures: Path, link: str) -> str:
    """reports/figures/report/probing_layers_by_task.png: one panel per task, the test error (MAE for a regression
    task) per layer of each real model's probe (the probe and pooling with its lowest fold-0 error), its random
    twin's with the same probe and pooling (dashed, same colour), and the paper's baseline on the task's items
    (majority class, or linreg on length; grey dotted). Markdown linking it, or "" without curves."""
    chosen = con.sql(
        "SELECT task, model, arg_min(probe, {'e': round(fold0_error, 9), 'p': probe}) AS probe, "
        "arg_min(pooling, {'e': round(fold0_error, 9), 'p': probe}) AS pooling FROM probing_models "
        "WHERE NOT control GROUP BY task, model ORDER BY task, model").fetchall()
    if not chosen:
        return ""
    twins = dict(con.sql("SELECT model, twin FROM model_twins").fetchall())
    curves: dict[tuple, list] = {}
    for task, model, probe, pooling, layer, error in con.sql(
            "SELECT task, model, probe, pooling, layer, error FROM probing_layers ORDER BY ALL").fetchall():
        curves.setdefault((task, model, probe, pooling), []).append((layer, error))
    baselines = {task: (probe, mean) for task, probe, mean in con.sql(
        "SELECT task, probe, mean FROM probing_headline WHERE layer IS NULL AND model = probe "
        "AND probe IN ('majority', 'linreg') ORDER BY task, probe").fetchall()}
    metrics = dict(con.sql("SELECT task, any_value(metric) FROM probing_headline GROUP BY task").fetchall())
    # a panel holds at most (MAX_SERIES - 1) // 2 models (each with its twin, and the baseline): a task with more
    # real models gets a panel per group of them, in model order
    per_panel = max(1, (MAX_SERIES - 1) // 2)
    panels = []
    for task in sorted({c[0] for c in chosen}):
        models = [(m, p, pool) for t, m, p, pool in chosen if t == task]
        parts = math.ceil(len(models) / per_panel)
        panels += [(task, models[i * per_panel:(i + 1) * per_panel], f" ({i + 1}/{parts})" if parts > 1 else "")
                   for i in range(parts)]
    tasks = [p[0] for p in panels]
    cols = min(4, len(tasks))
    rows = math.ceil(len(tasks) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols + 1.5, 2.7 * rows), squeeze=False)
    for ax, (task, models, part) in zip(axes.flat, panels):
        for i, (model, probe, pooling) in enumerate(models):
            colour = f"C{i % 10}"
            for name, style, label in ((model, "-", model), (twins.get(model), "--", f"{model} twin")):
                pts = curves.get((task, name, probe, pooling)) if name else None
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=2.5, color=colour,
                            linestyle=style, label=label)
        if task in baselines:
            probe, mean = baselines[task]
            ax.axhline(mean, zorder=1, label=f"baseline: {'majority class' if probe == 'majority' else 'linreg on length'}",
                       **{**CHANCE, "linestyle": ":", "color": "#444444"})
        ax.set_title(task + part, fontsize=8)
        ax.set_xlabel("layer")
        ax.set_ylabel("MAE" if metrics.get(task) == "mae" else "error")
        ax.legend(fontsize=5, loc="best")
    for ax in list(axes.flat)[len(tasks):]:
        ax.set_visible(False)
    fig.suptitle("probing: test error per layer per task (each real model's probe; its random twin dashed; the "
                 "task's baseline dotted)", fontsize=10)
    save(fig, figures / "probing_layers_by_task.png")
    return ("\n### Error by layer\n\nPer task, the test error (MAE for depth) at every layer of each real model's "
            "probe, its random twin's (dashed) and the paper's baseline (dotted):\n\n"
            f"![probing: error per layer per task]({link}/probing_layers_by_task.png)\n")


def extra_figures(con, figures: Path, link: str) -> str:
    """Figures the report (pipeline.report.build) appends to this page after its notes: the error per layer per task."""
    return layers_by_task(con, figures, link)
