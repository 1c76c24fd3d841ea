"""The probing section of the report. Headline (reports/index.md): the paper's Table 1 (CodeT5-base,
encoder and decoder, test error per task) with ours beside it (our lowest-error model and the majority
baseline, n, 95% CI) and how the populations differ. Details (reports/probing.md): every task and model,
the baselines, class balance, selectivity, feature sizes and the per-layer curves
(reports/plots/probing_layers.csv: x = layer, y = error)."""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.families.probing.paper import TABLE1_CODET5_BASE_DECODER, TABLE1_CODET5_BASE_ENCODER
from pipeline.report.common import Section, fraction, interval, markdown_table, write_plot

PAPER_ORDER = ("path_type", "depth", "declared", "dataflow", "variable_name", "misuse", "algorithm")  # Table 1
PAPER_PROBES = ("paper", "sgd", "lbfgs", "ridge")  # the release's SGD probe first, then the others


def _interval(metric: str, lo, hi) -> str:
    """A 95% interval clipped to the metric's range (an error within [0, 1], an MAE >= 0): a t interval over
    three folds can reach past it."""
    lo, hi = max(0.0, float(lo)), float(hi)
    if metric != "mae":
        hi = min(1.0, hi)
    return f"[{_fmt(lo)}, {_fmt(hi)}]"


def headline(con) -> str:
    """Table 1's rows (the release's task definitions) and its CodeT5-base columns, ours beside: per task the
    probed model with the lowest mean test error (layer chosen on fold 0; the release's probe where it ran),
    with n and a 95% CI over folds 1-3, and the majority baseline on the same items."""
    rows = con.sql("SELECT task, model, probe, layer, metric, n_test, mean, ci_low, ci_high FROM probing_headline "
                   "WHERE NOT task LIKE '%-control' ORDER BY ALL").fetchall()
    by_task: dict[str, dict] = {}
    for task, model, probe, layer, metric, n, mean, lo, hi in rows:
        language, _, name = task.partition("-")
        if name not in TABLE1_CODET5_BASE_ENCODER or mean is None:
            continue
        entry = by_task.setdefault((name, language), {})
        if model == "majority":
            entry["majority"] = (mean, lo, hi, n, metric)
        elif layer is not None and probe in PAPER_PROBES:
            rank = PAPER_PROBES.index(probe)
            best = entry.get("best")
            if best is None or (rank, mean, model) < (best[0], best[2], best[1]):
                entry["best"] = (rank, model, mean, lo, hi, n, metric, probe, layer)
    table = []
    for (name, language), entry in sorted(by_task.items(), key=lambda kv: (PAPER_ORDER.index(kv[0][0]), kv[0][1])):
        best, maj = entry.get("best"), entry.get("majority")
        table.append((f"{name} ({language})", f"{TABLE1_CODET5_BASE_ENCODER[name]:.3f}",
                      f"{TABLE1_CODET5_BASE_DECODER[name]:.3f}",
                      "" if best is None else f"{best[1]} ({best[7]}, layer {best[8]})",
                      "" if best is None else f"{_fmt(best[2])} {_interval(best[6], best[3], best[4])}",
                      "" if best is None else best[5],
                      "" if maj is None else f"{_fmt(maj[0])} {_interval(maj[4], maj[1], maj[2])}"))
    table.append(("readability", "", "", "not run: its rated dataset is not in this workspace", "", "", ""))
    return "\n".join([
        "Paper Table 1 (test error, 1 - accuracy; MAE for AST depth; CodeT5-base, encoder and decoder side) with "
        "ours beside it: per task our probed model with the lowest mean error (the release's SGD probe where it "
        "ran, else the first of lbfgs / ridge; the layer chosen on fold 0), mean of folds 1-3 with a 95% t "
        "interval (clipped to the metric's range), n = test samples, and the majority baseline on the same items.\n",
        markdown_table(["task (language)", "paper: CodeT5-base encoder", "paper: decoder", "ours: model (probe, layer)",
                        "ours: error [95% CI]", "n", "majority baseline [95% CI]"], table),
        "\n**How the populations differ:** the paper probes 220M-parameter pretrained models on Ahmad et al.'s 10k "
        "Java test functions; ours are our zoo's small models on JDK methods of at most 1000 characters from this "
        "corpus (far fewer samples, see n), so expect far higher errors; the lowest of several models is an "
        "optimistic pick (every model is on the page).\n"])


def _fmt(v):
    return None if v is None else round(float(v), 3)


def feature_bytes(con) -> list[tuple]:
    """Per model: samples, layers, bytes of its feature files per 1,000 samples, and what per-token dumps would take."""
    out = []
    rows = con.sql("""
        WITH f AS (SELECT model, item_id, count(*) AS layers, any_value(len(vector)) AS width, any_value(pooling) AS pooling
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


def class_balance(con) -> tuple[list[tuple], list[str]]:
    """Per classification task, on the fit's common item set (all labelled items where it has no
    row): samples, classes, the majority class and its share, the majority baseline's error and the
    best probe's (mean of folds 1-3, 95% CI, n = test samples over folds 1-3); and one line per task
    that is >= 90% one class."""
    rows = con.sql("""
        WITH k AS (
            SELECT l.language || '-' || l.task AS task, l.label
            FROM probing_labels l LEFT JOIN probing_fit_items f ON f.item_id = l.item_id AND f.subset = l.language
            WHERE l.label IS NOT NULL AND coalesce(f.kept, true)
        ), c AS (SELECT task, label, count(*) AS n FROM k GROUP BY ALL),
        r AS (SELECT *, row_number() OVER (PARTITION BY task ORDER BY n DESC, label) AS rank,
                     sum(n) OVER (PARTITION BY task) AS total, count(*) OVER (PARTITION BY task) AS classes FROM c),
        maj AS (SELECT task, mean, ci_low, ci_high, n_test FROM probing_headline WHERE model = 'majority'),
        best AS (SELECT task, arg_min(model || ' (' || probe || ')', mean) AS who, min(mean) AS mean,
                        arg_min(ci_low, mean) AS ci_low, arg_min(ci_high, mean) AS ci_high,
                        arg_min(n_test, mean) AS n_test
                 FROM probing_headline WHERE layer IS NOT NULL GROUP BY task)
        SELECT r.task, r.total, r.classes, r.label, r.n / r.total AS share,
               maj.mean, maj.ci_low, maj.ci_high, maj.n_test,
               best.who, best.mean, best.ci_low, best.ci_high, best.n_test
        FROM r LEFT JOIN maj USING (task) LEFT JOIN best USING (task)
        WHERE r.rank = 1 ORDER BY r.task""").fetchall()
    table, lines = [], []
    for task, total, classes, label, share, m, mlo, mhi, mn, who, b, blo, bhi, bn in rows:
        table.append((task, total, classes, label, f"{share:.1%}",
                      None if m is None else f"{_fmt(m)} [{_fmt(mlo)}, {_fmt(mhi)}]", mn,
                      who, None if b is None else f"{_fmt(b)} [{_fmt(blo)}, {_fmt(bhi)}]", bn))
        if share >= ONE_CLASS:
            beat = f"the majority baseline's error {_fmt(m)} (n = {mn})" if m is not None else \
                f"an error of {_fmt(1 - share)} (always `{label}`)"
            lines.append(f"- **{task} is {share:.1%} one class** (`{label}`, {total} samples): "
                         f"a probe must beat {beat}, not chance.")
    return table, lines


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
                   "ORDER BY task, probe IN ('ridge', 'lbfgs', 'sgd', 'paper') DESC, model").fetchall()
    body = []
    for task, model, probe, layer, metric, n, mean, lo, hi in rows:
        paper = TABLE1_CODET5_BASE_ENCODER.get(task.split("-", 1)[1].replace("-control", ""))
        body.append((task, model, probe, layer, metric, n, _fmt(mean), f"[{_fmt(lo)}, {_fmt(hi)}]",
                     None if task.endswith("-control") else paper))
    sel = con.sql("SELECT task, model, arg_max(layer, selectivity), max(selectivity), arg_max(ci_low, selectivity), "
                  "arg_max(ci_high, selectivity), arg_max(samples, selectivity), arg_max(folds, selectivity) "
                  "FROM probing_selectivity GROUP BY task, model ORDER BY task, model").fetchall()
    counts = con.sql("SELECT language || '-' || task AS task, count(*) AS samples, count(DISTINCT \"group\") AS snippets "
                     "FROM probing_labels GROUP BY ALL ORDER BY ALL").fetchall()
    balance = class_balance(con)
    empty = empty_tasks(con, config)
    out = ["Linear probes (the fit stage: 4 folds grouped by snippet, layer chosen on fold 0, mean of folds 1-3 "
           "with a 95% t interval) on frozen per-layer pooled features. Metric: test error (1 - accuracy), MAE for "
           "AST depth. `paper`: CodeT5-base encoder in the paper's Table 1 (Java, a 220M model; our zoo is tiny, "
           "so expect far higher errors; our methods are JDK methods <= 1000 characters, the paper's Ahmad et al.'s "
           "10k Java test functions). Task names without a suffix are the release's definitions; `*_ours`, `*_every`, "
           "`*_last_def`, `*_declared`, `*_any_leaf` are our variants (no paper figure). `probe`: `ridge` is the "
           "fast default for exploration, `paper` the release's SGD probe (the paper-comparable one). Baselines "
           "have no layer. `n`: test samples the mean is over (folds 1-3).\n",
           "**Readability (the paper's eighth task) is absent from every table below:** its 200-snippet "
           "human-rated dataset (Scalabrino et al. 2018) is not in this workspace, so the task is off and no number "
           "for it is reported or faked (pipeline/families/probing/README.md).\n",
           markdown_table(["task", "model", "probe", "layer", "metric", "n", "mean", "95% CI", "paper"], body),
           *twins(con),
           "\nSamples per task:\n", markdown_table(["task", "samples", "snippets"], counts),
           "\nClass balance (classification tasks, on the common item set): the majority class's share and the "
           "majority baseline beside the best probe (mean of folds 1-3, 95% CI; `n`: test samples over folds 1-3). "
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
           "\nCommon item set (the same samples for every model and baseline): "
           + (", ".join(f"{k} {n}" for k, n in con.sql(
               "SELECT CASE WHEN kept THEN 'kept' ELSE 'dropped' END, count(*) FROM probing_fit_items "
               "GROUP BY ALL ORDER BY 1 DESC").fetchall()) or "empty") + ".\n",
           ]
    curve = con.sql("SELECT task, model, layer AS x, error AS y FROM probing_layers ORDER BY ALL").fetchall()
    if plots is not None:
        write_plot(plots / "probing_layers.csv", ["task", "model", "x", "y"], curve)
    return Section("Probing pretrained models of source code (Table 1)", headline(con), "\n".join(out) + "\n")
