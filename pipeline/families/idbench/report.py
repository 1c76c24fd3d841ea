"""The idbench section of the report. Headline (reports/index.md): the paper's Spearman correlations
(Figure 2's bars, recomputed from the release's per-pair scores, large benchmark) with ours beside them, n,
95% bootstrap CIs and how the populations differ. Details (reports/idbench.md): every size, the models per
layer, the paired tests, the embeddings, the ensembles, coverage and the new pairs."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from pipeline.families.idbench import paper, schemas
from pipeline.families.idbench.stats import (TWIN_PAIRS_SQL, cv_layer_spearman, held_out_difference,
                                             held_out_twin_diff, paired_spearman, spearman_ci, twin_diff)
from pipeline.report.common import (TOO_FEW, TWIN_ROWS, Section, detectable, floored, markdown_table, min_n, plt, save,
                                     write_plot)

SIZES = schemas.SIZES
GOLDS = schemas.GOLDS


# CPU-s of section() on the default build (2026-12-02; its held-out-layer CIs 59 of them):
# the report runs the longest parts first (pipeline.report.build.section_weight)
SECTION_CPU_S = 85


def _fmt(v, digits: int = 2) -> str:
    return "" if v is None or v != v else f"{v:.{digits}f}"


PAPER_TECHNIQUES = ("LV", "NW", "FT-cbow", "FT-SG", "w2v-SG", "w2v-cbow", "Path-based")  # Figure 2's bars
HEADLINE_SIZE = "large"  # the paper's largest benchmark (its ensemble gains are on it)


def headline(con, judged: dict, held_out: dict, replicates: int, seed: int, twins: dict | None = None,
             floor: int = 0, page_rows: list | None = None) -> str:
    """Figure 2 as a table (large benchmark, comparable pairs): per technique and gold score, the paper's rho
    (the release's own per-pair scores, as its bars) beside ours (the same technique computed or trained
    here), with n and a 95% bootstrap CI; then each model of our zoo at its held-out layer (no paper bar), and
    each model minus its random twin, each at its own held-out layer (`twins`: _held_out_twins). A cell over
    fewer than `floor` pairs (`report.min_n`) prints its n, not a rho. `page_rows` (a list) gets (TWIN_ROWS,
    row) for each twin's own row that a `model - twin` row reads: the first read leaves those to the page."""
    twins = twins or {}
    paired = {t for _, t, size, _ in twins if size == HEADLINE_SIZE}  # the twins a `model - twin` row reads
    rho = {(system, gold): (n, r) for system, gold, n, r in con.sql(
        "SELECT system, gold, n, rho FROM idbench_spearman WHERE pair_set = 'comparable' AND size = ? "
        "AND kind IN ('release', 'string', 'embedding')", params=[HEADLINE_SIZE]).fetchall()}

    def ours(system: str, gold: str) -> tuple:
        n, r = rho.get((system, gold), (None, None))
        if r is None or r != r:
            return ("", "")
        if floored(n, floor):
            return (f"{TOO_FEW} (n = {n})", n)
        if (system, HEADLINE_SIZE, gold) in judged and replicates:
            x, y = judged[(system, HEADLINE_SIZE, gold)]
            ci = spearman_ci(x, y, replicates, seed, key=f"{system}/{HEADLINE_SIZE}/{gold}")
            return (f"{_fmt(r)} [{_fmt(ci.lo)}, {_fmt(ci.hi)}]", n)
        return (_fmt(r), n)

    rows = []
    for t in PAPER_TECHNIQUES:
        cells = []
        for gold in GOLDS:
            cells += [_fmt(rho.get((f"release:{t}", gold), (0, None))[1]), *ours(t, gold)]
        rows.append((t, *cells))
    for model in sorted({s for s, size, _ in held_out if size == HEADLINE_SIZE}):
        cells = []
        for gold in GOLDS:
            h = held_out.get((model, HEADLINE_SIZE, gold))
            cells += ["", *(("", "") if h is None else (f"{TOO_FEW} (n = {h.n})", h.n) if floored(h.n, floor) else (
                f"{_fmt(h.rho)} [{_fmt(h.lo)}, {_fmt(h.hi)}]" if replicates else _fmt(h.rho), h.n))]
        rows.append((f"ours: {model} (held-out layer)", *cells))
        if page_rows is not None and model in paired:
            page_rows.append((TWIN_ROWS, rows[-1]))
    detect = []
    for model, twin in sorted({(m, t) for m, t, size, _ in twins if size == HEADLINE_SIZE}):
        cells = []
        for gold in GOLDS:
            t = twins.get((model, twin, HEADLINE_SIZE, gold))
            if t is None:
                cells += ["", "", ""]
            elif floored(t.n, floor):
                cells += ["", f"{TOO_FEW} (n = {t.n})", t.n]
            else:
                ci = f" [{_fmt(t.lo, 3)}, {_fmt(t.hi, 3)}]" if replicates and t.lo == t.lo else ""
                cells += ["", f"{t.diff:+.3f}{ci}, p = {_fmt(t.p_value, 3)}", t.n]
            if t is not None and detectable(t.lo, t.hi) is not None:
                detect.append(f"{model}, {gold} ±{detectable(t.lo, t.hi):.3f} (n = {t.n})")
        rows.append((f"ours: {model} - {twin} (each at its own held-out layer)", *cells))
    columns = ["technique"] + [c for g in ("relatedness", "similarity", "contextual") for c in
                               (f"{g}: paper", f"{g}: ours [95% CI]", "n")]
    trained = con.sql("SELECT count(*), max(files) FROM idbench_embedding_models").fetchall()[0]
    corpus = (f"trained here on the identifier sequences of {trained[1]} files of this corpus" if trained[0]
              else "not trained in this run (params `idbench.embeddings.enabled`), so those rows are empty")
    return "\n".join([
        f"Paper Figure 2 (Spearman's rho with the developers' gold scores, {HEADLINE_SIZE} benchmark, the pairs "
        "all five release embeddings scored) with ours beside it: `paper` is the release's own per-pair scores, "
        "rho recomputed here (they reproduce the paper's text but one bar, release w2v-cbow, relatedness, large); "
        f"`ours` the same technique computed or trained here, with a 95% CI ({replicates} bootstrap replicates of "
        "the pairs) and n = pairs scored."
        + (f" A cell over fewer than {floor} pairs (`report.min_n`) prints its n, not a rho." if floor else "") + "\n",
        markdown_table(columns, rows),
        f"\n**How the populations differ:** the pairs and gold scores are IdBench's own (the same pairs on both "
        f"sides); the paper's embeddings were trained on a large JavaScript corpus, ours are {corpus}; LV and NW are "
        "the same algorithms on the same pairs. Path-based embeddings need the release's path contexts and are not "
        "rebuilt. Our models (mean-pooled hidden states, the layer chosen on held-out folds) have no paper bar.\n",
        *([f"\n**Model vs its random twin:** the `-` rows are the model's rho minus its twin's, each at ITS OWN layer "
           f"chosen on held-out pairs ({HEADLINE_SIZE}, the pairs both scored; the same folds as the model's own row), "
           f"with a paired bootstrap ({replicates} resamples of the pairs, both layer choices redone inside every "
           "resample, seeded from the run seed and the cell) and its two-sided p. The smallest difference these "
           "pairs can detect (the paired CI's half-width): " + "; ".join(detect) + ".\n"] if detect else [])])


def section(con, figures: Path, link: str, config, plots: Path | None = None) -> Section:
    block = config.get("idbench", {}) if isinstance(config, dict) else {}
    replicates = int(block.get("bootstrap_replicates", 0))
    folds = int(block.get("layer_folds", 5))
    seed = int(config.get("seed", 0)) if isinstance(config, dict) else 0
    out = ["Spearman's rho (average ranks, on floats; sizes never pooled) between each technique's score and "
           "the developers' gold scores, on the paper-comparable pair set (pairs all five release embeddings "
           "scored). `LV`, `NW`: computed here exactly as the release; `FT-cbow`, `FT-SG`, `w2v-SG`, `w2v-cbow` "
           "(kind `embedding`): gensim trained here on the corpus's identifier sequences; `release:*`: the "
           "release's own per-pair scores (its JavaScript-trained FastText, word2vec and path-based embeddings), "
           "rho recomputed here: they reproduce the paper's text everywhere but one bar (release w2v-cbow, "
           "relatedness, large: .37, below the text's \"between 41% and 74%\"); `ensemble:*`: the SVR ensembles, "
           f"leave-one-out. A model (mean pooling) has two rows: `held-out layer`, each of {folds} seeded folds of "
           "the pairs scored at the layer with the best rho on the other folds (the layers chosen per fold in "
           "brackets; the CI reruns the choice on every resample), and `@L (oracle)`, the layer best on all the "
           f"pairs (optimistic: chosen on what it is scored on). 95% CIs: {replicates} bootstrap replicates of "
           "the pairs.\n"]

    counts = con.sql("SELECT size, gold, pair_set, count(*) FROM idbench_gold "
                     "CROSS JOIN (VALUES ('comparable'), ('all_rated')) t(pair_set) "
                     "WHERE pair_set = 'all_rated' OR comparable GROUP BY ALL").fetchall()
    c = {(s, g, p): n for s, g, p, n in counts}
    out += ["Pairs per set (the paper's comparable set: 154 / 228 / 266 relatedness and similarity, "
            "100 / 130 / 160 contextual similarity):\n",
            markdown_table(["gold", *[f"{s} comparable" for s in SIZES], *[f"{s} all rated" for s in SIZES]],
                           [(g, *[c.get((s, g, "comparable"), 0) for s in SIZES],
                             *[c.get((s, g, "all_rated"), 0) for s in SIZES]) for g in GOLDS])]

    repro = con.sql("SELECT s.technique, count(*), count(*) FILTER (WHERE s.score = CASE s.technique "
                    "WHEN 'LV' THEN p.lv ELSE p.nw END) FROM idbench_scores s JOIN idbench_pairs p USING (pair_id) "
                    "GROUP BY ALL ORDER BY ALL").fetchall()
    if repro:
        out.append("\nString techniques against the release's columns (every pair of every size, at 2 decimals): "
                   + "; ".join(f"{t}: {eq}/{n} equal" for t, n, eq in repro) + ".\n")

    head = con.sql("SELECT system, kind, layer, size, gold, n, rated, rho FROM idbench_headline").fetchall()
    judged = defaultdict(lambda: ([], []))
    if head and replicates:
        rows = con.sql("SELECT j.system, j.size, j.gold, j.pair_id, j.score, j.value FROM idbench_judged j "
                       "LEFT JOIN idbench_headline h ON h.system = j.system AND h.size = j.size AND h.gold = j.gold "
                       "WHERE j.pair_set = 'comparable' AND (j.kind <> 'model' OR "
                       "(j.pooling = 'mean' AND j.layer = h.layer)) ORDER BY j.pair_id").fetchall()
        for system, size, gold, _, score, value in rows:
            judged[(system, size, gold)][0].append(score)
            judged[(system, size, gold)][1].append(value)
    scored = _layer_scores(con)
    held_out = _held_out_layers(con, replicates, seed, folds, scored)
    twins = _held_out_twins(con, replicates, seed, folds, (HEADLINE_SIZE,), scored, held_out)
    table = []
    for gold in GOLDS:
        for system, kind, layer, size, g, n, rated, rho in sorted(
                (r for r in head if r[4] == gold), key=lambda r: (r[1] != "string", r[1] != "release", r[0], SIZES.index(r[3]))):
            ci = ""
            if (system, size, gold) in judged and kind != "model":
                x, y = judged[(system, size, gold)]
                r = spearman_ci(x, y, replicates, seed, key=f"{system}/{size}/{gold}")
                ci = f"[{_fmt(r.lo)}, {_fmt(r.hi)}]"
            if kind == "model" and (system, size, gold) in held_out:
                h = held_out[(system, size, gold)]
                table.append((gold, size, f"{system} held-out layer {list(h.layers)}", kind, h.n, rated, _fmt(h.rho),
                              f"[{_fmt(h.lo)}, {_fmt(h.hi)}]" if replicates else ""))
            table.append((gold, size, system + (f" @{layer} (oracle)" if kind == "model" else
                                                f" @{layer}" if layer is not None else ""), kind, n, rated,
                          _fmt(rho), ci))
    out += ["\nOur numbers (comparable pair set):\n",
            markdown_table(["gold", "size", "technique", "kind", "scored", "pairs", "rho", "95% CI"], table)]

    # paired: the best model layer and the release's FT-cbow against NW (is "embeddings beat
    # string distance for similarity" significant?)
    if judged:
        paired = []
        for size in SIZES:
            for gold in ("similarity", "relatedness"):
                nw = judged.get(("NW", size, gold))
                if not nw:
                    continue
                rivals = sorted((r for r in head if r[3] == size and r[4] == gold
                                 and (r[1] in ("model", "embedding") or r[0] in ("release:FT-cbow", "ensemble:release"))),
                                key=lambda r: (r[1], r[0]))
                for system, *_ in rivals:
                    a = judged.get((system, size, gold))
                    if a and len(a[1]) == len(nw[1]):
                        p = paired_spearman(a[0], nw[0], nw[1], replicates, seed, key=f"{system}-NW/{size}/{gold}")
                        paired.append((gold, size, system, p.n, _fmt(p.rho_a), _fmt(p.rho_b), _fmt(p.diff),
                                       f"[{_fmt(p.lo)}, {_fmt(p.hi)}]", _fmt(p.p_value, 3)))
        if paired:
            out += ["\nPaired bootstrap against NW (same pairs, resampled together):\n",
                    markdown_table(["gold", "size", "technique", "pairs", "rho", "NW rho", "difference", "95% CI", "p"],
                                   paired)]

    out += _twins(con, replicates, seed)
    out += _headline(con)
    out += _embeddings(con)
    out += _ensembles(con)
    out += _new_pairs(con, min_n(config if isinstance(config, dict) else {}))

    cov = con.sql("SELECT system, size, gold, n, rated, coverage FROM idbench_spearman WHERE pair_set = 'all_rated' "
                  "AND (kind <> 'model' OR (layer = 0 AND pooling = 'mean')) AND coverage < 1 ORDER BY ALL").fetchall()
    out += ["\nCoverage on every rated pair (techniques that did not score every pair; model coverage shown at "
            "layer 0):\n", markdown_table(["technique", "size", "gold", "scored", "rated", "coverage"], cov)
            if cov else "every technique scored every rated pair.\n"]
    allr = con.sql("SELECT system, size, gold, n, round(rho, 4) FROM idbench_spearman WHERE pair_set = 'all_rated' "
                   "AND kind <> 'model' AND size = 'small' ORDER BY gold, system").fetchall()
    if allr:
        out += ["\nEvery rated pair (small benchmark; other sizes in the view `idbench_spearman`):\n",
                markdown_table(["technique", "size", "gold", "scored", "rho"], allr)]

    subs = con.sql("SELECT subset, system, gold, n, round(rho, 2) FROM idbench_by_subset WHERE size = 'large' "
                   "AND kind <> 'model' AND gold = 'similarity' ORDER BY ALL").fetchall()
    if subs:
        out += ["\nInteresting subsets (large benchmark, similarity, every rated pair of the subset):\n",
                markdown_table(["subset", "technique", "gold", "pairs", "rho"], subs)]

    curves = con.sql("SELECT system, gold, size, layer, rho FROM idbench_spearman WHERE kind = 'model' AND "
                     "pooling = 'mean' AND pair_set = 'comparable' ORDER BY ALL").fetchall()
    if plots is not None:
        write_plot(plots / "idbench_layers.csv", ["model", "gold", "size", "x", "y"], curves)  # x: layer, y: rho
    if curves:
        save(_layers_figure(con, curves, HEADLINE_SIZE), figures / "idbench_layers.png")  # the headline's benchmark
        out.append(f"\n![Spearman per layer]({link}/idbench_layers.png)\n")

    out += ["\nPaper (Section III; its Figure 2 gives bars only, the `release:*` rows above recompute them from "
            "the release's per-pair scores):\n",
            markdown_table(["gold", "technique", "rho low", "rho high"], paper.RANGES),
            "\nPaper Table II as printed (pairs per task and size, inter-rater agreement) beside the rated pairs "
            "of the released CSVs (gold score not NAN), which hold 1-2 fewer:\n",
            markdown_table(["size", "relatedness pairs (paper)", "(CSV)", "IRA", "similarity pairs (paper)", "(CSV)",
                            "IRA", "contextual pairs (paper)", "(CSV)"],
                           [(size, rel, c.get((size, "relatedness", "all_rated"), 0), ira_r, sim,
                             c.get((size, "similarity", "all_rated"), 0), ira_s, ctx,
                             c.get((size, "contextual_similarity", "all_rated"), 0))
                            for size, rel, ira_r, sim, ira_s, ctx in paper.TABLE_II]),
            "\nPaper: the SVR ensemble improves on the best single technique of the large benchmark by "
            + ", ".join(f"{g} +{v:.2f}" for g, v in paper.ENSEMBLE_GAIN_LARGE.items()) + " (`ensemble:*` rows above: "
            "scikit-learn's default SVR over technique scores and identifier features, leave-one-out).\n"]
    page_rows: list = []
    floor = min_n(config if isinstance(config, dict) else {})
    return Section("idbench (IdBench, Figure 2)", headline(con, judged, held_out, replicates, seed, twins, floor,
                                                           page_rows), "\n".join(out) + "\n").leaving(page_rows)


def _layer_scores(con) -> tuple[dict, dict]:
    """Every model's per-layer cosine per pair (mean pooling, comparable pairs): {(model, size, gold): {pair_id:
    {layer: score}}}, and the gold value per (size, gold, pair_id)."""
    rows = con.sql("SELECT system, size, gold, pair_id, layer, score, value FROM idbench_judged "
                   "WHERE kind = 'model' AND pooling = 'mean' AND pair_set = 'comparable' ORDER BY ALL").fetchall()
    groups = defaultdict(lambda: defaultdict(dict))
    gold_of = {}
    for system, size, gold, pair_id, layer, score, value in rows:
        groups[(system, size, gold)][pair_id][layer] = score
        gold_of[(size, gold, pair_id)] = value
    return groups, gold_of


def _finite(v) -> bool:
    return v is not None and v == v


def _complete_ids(pairs: dict, layers: list[int], gold_of: dict, size: str, gold: str) -> list[str]:
    """The pair ids (sorted) every layer scored and with a gold value."""
    return [p for p, by_layer in sorted(pairs.items())
            if all(_finite(by_layer.get(k)) for k in layers) and _finite(gold_of[(size, gold, p)])]


def _layers_figure(con, curves: list[tuple], size: str = "small"):
    """Spearman rho per layer (mean pooling, comparable pairs of `size`): one row of panels per gold score, each
    panel at most MAX_SERIES lines, a model and its random twin in the same panel and colour (the twin dashed),
    and the reference every panel is read against: the release's best embedding on the same pairs (the paper's
    technique, recomputed from its per-pair scores; grey dotted)."""
    from pipeline.report.common import CHANCE, MAX_SERIES

    twin_of = dict(con.sql("SELECT twin, model FROM model_twins").fetchall())
    models = sorted({m for m, g, s, *_ in curves if s == size})
    trained = [m for m in models if m not in twin_of or twin_of[m] not in models]
    groups = [[m, *[t for t in models if twin_of.get(t) == m]] for m in trained]
    panels: list[list[str]] = [[]]
    for group in groups:  # whole (model, twin) groups, at most MAX_SERIES lines a panel
        if panels[-1] and len(panels[-1]) + len(group) > MAX_SERIES:
            panels.append([])
        panels[-1].extend(group)
    reference = {g: (s, r) for g, s, r in con.sql(
        "SELECT gold, arg_max(system, {'rho': round(rho, 9), 'system': system}), max(rho) FROM idbench_spearman "
        "WHERE kind = 'release' AND system NOT IN ('release:LV', 'release:NW') AND size = ? "
        "AND pair_set = 'comparable' AND rho IS NOT NULL GROUP BY gold", params=[size]).fetchall()}
    colours = {m: f"C{i % 10}" for i, m in enumerate(trained)}
    fig, axes = plt.subplots(len(GOLDS), len(panels), figsize=(4.6 * len(panels) + 1.5, 2.8 * len(GOLDS)),
                             sharey=True, sharex=True, squeeze=False)
    for row, gold in enumerate(GOLDS):
        for col, members in enumerate(panels):
            ax = axes[row][col]
            for m in members:
                pts = sorted((layer, rho) for model, g, s, layer, rho in curves if model == m and g == gold and s == size)
                twin = m not in colours
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3,
                        color=colours.get(twin_of.get(m), "C9") if twin else colours[m],
                        linestyle="--" if twin else "-", label=f"{m} (random twin)" if twin else m)
            if gold in reference:
                system, rho = reference[gold]
                name = system.split(":", 1)[1]
                ax.axhline(rho, zorder=1, label=f"reference: {name} (paper), rho {rho:.2f}",
                           **{**CHANCE, "linestyle": ":", "color": "#444444"})
                ax.annotate(f"{name} (paper) {rho:.2f}", (0.01, rho), xycoords=("axes fraction", "data"),
                            xytext=(0, 2), textcoords="offset points", fontsize=6, color="#444444", va="bottom")
            ax.set_title(f"{gold} ({size})" + (f", {col + 1} of {len(panels)}" if len(panels) > 1 else ""), fontsize=9)
            if row == len(GOLDS) - 1:
                ax.set_xlabel("layer")
            if col == 0:
                ax.set_ylabel("Spearman rho")
            if row == 0:
                ax.legend(fontsize=6, loc="best")
    fig.suptitle("idbench: rho per layer, each model beside its random twin (dashed) and the paper's technique",
                 fontsize=10)
    return fig


def _held_out_layers(con, replicates: int, seed: int, folds: int, scored=None) -> dict:
    """(model, size, gold) -> its rho with the layer chosen on held-out pairs (stats.cv_layer_spearman), mean
    pooling, comparable pairs, on the pairs every layer scored."""
    groups, gold_of = scored or _layer_scores(con)
    out = {}
    for (system, size, gold), pairs in sorted(groups.items()):
        layers = sorted({layer for by_layer in pairs.values() for layer in by_layer})
        ids = _complete_ids(pairs, layers, gold_of, size, gold)
        if len(ids) < 2 * folds:
            continue
        scores = [[pairs[p][k] for p in ids] for k in layers]
        # every system of a (size, gold) on the same resamples of its pairs (the cell's key, not the system's):
        # a model and its twin on the same pairs then differ replicate by replicate (stats.held_out_difference)
        out[(system, size, gold)] = cv_layer_spearman(scores, [gold_of[(size, gold, p)] for p in ids], layers, ids,
                                                      folds, replicates, seed, key=f"{size}/{gold}")
    return out


def _held_out_twins(con, replicates: int, seed: int, folds: int, sizes: tuple[str, ...], scored=None,
                    held_out: dict | None = None) -> dict:
    """(model, twin, size, gold) -> stats.HeldOutTwinDiff: the model against its random twin, each at its own
    layer chosen on held-out pairs (the same folds as its own held-out row), on the pairs both scored at every
    layer, the choice of both layers redone inside every bootstrap resample (seeded from the run seed and the
    cell: size, gold). From the two held-out rows' replicates when both are over the same pairs (`held_out`:
    _held_out_layers, drawn per cell), else recomputed on the pairs both scored."""
    groups, gold_of = scored or _layer_scores(con)
    held_out = held_out or {}
    out = {}
    for model, twin in con.sql("SELECT model, twin FROM model_twins ORDER BY ALL").fetchall():
        for size in sizes:
            for gold in GOLDS:
                a, b = groups.get((model, size, gold)), groups.get((twin, size, gold))
                if not a or not b:
                    continue
                ha, hb = held_out.get((model, size, gold)), held_out.get((twin, size, gold))
                fast = held_out_difference(ha, hb) if ha is not None and hb is not None else None
                if fast is not None:
                    out[(model, twin, size, gold)] = fast
                    continue
                layers_a = sorted({k for by_layer in a.values() for k in by_layer})
                layers_b = sorted({k for by_layer in b.values() for k in by_layer})
                both = set(_complete_ids(a, layers_a, gold_of, size, gold)) & set(
                    _complete_ids(b, layers_b, gold_of, size, gold))
                ids = sorted(both)
                if len(ids) < 3 * folds:
                    continue
                out[(model, twin, size, gold)] = held_out_twin_diff(
                    [[a[p][k] for p in ids] for k in layers_a], [[b[p][k] for p in ids] for k in layers_b],
                    [gold_of[(size, gold, p)] for p in ids], layers_a, layers_b, ids, folds, replicates, seed,
                    key=f"{size}/{gold}")
    return out


def _embeddings(con) -> list[str]:
    """Our corpus-trained embeddings beside the release's (the paper's bars), with coverage."""
    models = con.sql("SELECT technique, files, tokens, vocabulary, vector_size, identifiers_in_vocabulary, identifiers, "
                     "pairs_scored, pairs FROM idbench_embedding_models ORDER BY technique").fetchall()
    if not models:
        return ["\nCorpus-trained word2vec / FastText: not built in this run (params `idbench.embeddings.enabled`).\n"]
    out = ["\nCorpus-trained embeddings (gensim, one worker, seeded; params `idbench.embeddings`):\n",
           markdown_table(["technique", "files", "tokens", "vocabulary", "dim", "IdBench identifiers in vocabulary",
                           "pairs scored"],
                          [(t, f, f"{tok:,}", f"{v:,}", d, f"{iv}/{ni}", f"{ps}/{np_}")
                           for t, f, tok, v, d, iv, ni, ps, np_ in models])]
    rows = con.sql("""
        SELECT o.gold, o.size, o.system, o.n, o.rated, o.rho, r.rho AS paper
        FROM idbench_spearman o LEFT JOIN idbench_spearman r
          ON r.system = 'release:' || o.system AND r.size = o.size AND r.gold = o.gold AND r.pair_set = o.pair_set
        WHERE o.kind IN ('embedding', 'string') AND o.pair_set = 'comparable'
        ORDER BY o.gold, o.system, o.size""").fetchall()
    order = {g: i for i, g in enumerate(GOLDS)}
    rows.sort(key=lambda r: (order[r[0]], r[2], SIZES.index(r[1])))
    out += ["\nOurs beside the paper's (comparable pairs; `paper` = the same technique's rho from the release's own "
            "per-pair scores, i.e. the paper's Figure 2 bar; coverage = pairs scored / rated; word2vec cannot score "
            "out-of-vocabulary identifiers, FastText scores them from subwords):\n",
            markdown_table(["gold", "size", "technique", "ours rho", "coverage", "paper rho"],
                           [(g, sz, t, _fmt(rho), f"{n}/{rated}", _fmt(p)) for g, sz, t, n, rated, rho, p in rows])]
    cov = con.sql("SELECT technique, size, pairs, scored, both_in_vocabulary FROM idbench_embedding_coverage "
                  "ORDER BY technique, size").fetchall()
    if cov:
        cov.sort(key=lambda r: (r[0], SIZES.index(r[1])))
        out += ["\nCoverage per size (every pair of the size's file):\n",
                markdown_table(["technique", "size", "pairs", "scored", "both identifiers in vocabulary"], cov)]
    return out


TWIN_PAIR_SET = "comparable"  # the pair set of every model table on the page


def _twins(con, replicates: int, seed: int) -> list[str]:
    """Each model against its random twin on the same pairs (view idbench_twin_pairs), per layer: both rhos, the
    difference, its paired bootstrap 95% CI and p (stats.twin_diff), the comparable pairs; every size and gold."""
    rows = twin_diff(con.sql(TWIN_PAIRS_SQL, params=[TWIN_PAIR_SET]).fetchall(), replicates, seed)
    if not rows:
        return ["\nModel vs its random twin: no model of this run has a twin (`random:<model>` in the zoo).\n"]
    order = {g: i for i, g in enumerate(GOLDS)}
    rows.sort(key=lambda t: (t.model, order[t.gold], SIZES.index(t.size), t.pooling, t.layer))
    table = [(t.model, t.twin, t.gold, t.size, t.layer, t.pooling, t.paired.n, _fmt(t.paired.rho_a, 3),
              _fmt(t.paired.rho_b, 3), _fmt(t.paired.diff, 3),
              f"[{_fmt(t.paired.lo, 3)}, {_fmt(t.paired.hi, 3)}]" if replicates and t.paired.lo == t.paired.lo else "",
              _fmt(t.paired.p_value, 3))
             for t in rows]
    return [f"\nModel vs its random twin, paired (same architecture and tokenizer, random weights; view "
            f"`idbench_twin_diff`): Spearman's rho of each at every layer on the same {TWIN_PAIR_SET} pairs (those "
            f"both scored), the difference model - twin, its 95% CI and two-sided p from {replicates} bootstrap "
            "resamples of the pairs (both rhos recomputed on each resample; every layer of a model on the same "
            "resamples). A CI above 0: the trained weights order identifier pairs more like developers than the "
            "architecture alone does. Empty rho: one side gives every pair the same cosine (e.g. the first token's "
            "state at layer 0, the same for every identifier), so no rank correlation:\n",
            markdown_table(["model", "twin", "gold", "size", "layer", "pooling", "pairs", "rho", "twin rho",
                            "difference", "95% CI", "p"], table)]


def _kind(system: str) -> str:
    return "string" if system.split(":")[-1] in ("LV", "NW") else "embedding"


def _headline(con) -> list[str]:
    """The headline size by size: per gold score and kind (embedding / string distance), the release's best
    technique (its own per-pair scores) beside our best, on the same comparable pairs of the same size; the
    paper text's numbers apart, named as the maxima over the three sizes they are."""
    release = con.sql("SELECT gold, size, system, n, rho FROM idbench_spearman WHERE kind = 'release' "
                      "AND pair_set = 'comparable' AND rho IS NOT NULL AND NOT isnan(rho)").fetchall()
    ours = con.sql("SELECT gold, size, system, n, rated, rho FROM idbench_spearman WHERE kind IN ('embedding', "
                   "'string') AND pair_set = 'comparable'").fetchall()
    best_rel, best_ours = {}, {}
    for gold, size, system, n, rho in release:
        if rho > best_rel.get((gold, _kind(system), size), (None, -2.0))[1]:
            best_rel[(gold, _kind(system), size)] = (system, rho, n)
    for gold, size, system, n, rated, rho in ours:
        if rho is not None and rho == rho and rho > best_ours.get((gold, _kind(system), size), (None, -2.0))[1]:
            best_ours[(gold, _kind(system), size)] = (system, rho, n, rated)
    table = []
    for gold in GOLDS:
        for kind in ("embedding", "string"):
            for size in SIZES:
                rs, rrho, rn = best_rel.get((gold, kind, size), ("", None, 0))
                os_, orho, on, orated = best_ours.get((gold, kind, size), ("", None, 0, 0))
                table.append((gold, kind, size, rs, _fmt(rrho), rn, os_, _fmt(orho), f"{on}/{orated}" if orated else ""))
    maxima = []
    for gold, kind, value in paper.TEXT_MAXIMA:
        cands = [(rho, system, size) for (g, k, size), (system, rho, _) in best_rel.items() if g == gold and k == kind]
        rho, system, size = max(cands) if cands else (None, "", "")
        maxima.append((gold, kind, f"{value:.2f}", _fmt(rho), f"{system} ({size})" if system else ""))
    return ["\nHeadline, size by size: the best technique of each kind from the release's own per-pair scores "
            "beside our best of that kind (comparable pairs of the same size; ours: corpus-trained embeddings, "
            "LV/NW):\n",
            markdown_table(["gold", "kind", "size", "release best", "release rho", "pairs", "ours best", "ours rho",
                            "coverage"], table),
            "\nThe paper's text gives only the maxima over the three sizes (\"up to 74%\", \"32% vs. 38%\", \"29% vs. "
            "36%\"); beside them the release's maximum over sizes, and where it is:\n",
            markdown_table(["gold", "kind", "paper text (max over sizes)", "release max", "release technique (size)"],
                           maxima)]


def _ensembles(con) -> list[str]:
    """Each ensemble variant against the best single technique of its inputs (the paper's gain)."""
    rows = con.sql("""
        WITH e AS (SELECT system, size, gold, n, rho FROM idbench_spearman
                   WHERE kind = 'ensemble' AND pair_set = 'comparable'),
             best_release AS (SELECT size, gold, max(rho) AS rho FROM idbench_spearman
                              WHERE kind = 'release' AND pair_set = 'comparable' GROUP BY ALL),
             best_ours AS (SELECT size, gold, max(rho) AS rho FROM idbench_spearman
                           WHERE kind IN ('string', 'embedding') AND pair_set = 'comparable' GROUP BY ALL)
        SELECT e.gold, e.size, e.system, e.n, e.rho,
               CASE WHEN e.system LIKE 'ensemble:release%' THEN r.rho ELSE o.rho END AS best
        FROM e LEFT JOIN best_release r USING (size, gold) LEFT JOIN best_ours o USING (size, gold)""").fetchall()
    if not rows:
        return []
    order = {g: i for i, g in enumerate(GOLDS)}
    rows.sort(key=lambda r: (order[r[0]], SIZES.index(r[1]), r[2]))
    table = [(g, sz, t, n, _fmt(rho), _fmt(best), _fmt(None if rho is None or best is None else rho - best),
              f"+{paper.ENSEMBLE_GAIN_LARGE[g]:.2f}" if sz == "large" and t == "ensemble:release" else "")
             for g, sz, t, n, rho, best in rows]
    return ["\nEnsembles (SVR defaults, leave-one-out, comparable pairs). `release`: the release's seven scores, "
            "standardised as the release's compute_correlations.py does (`Pipeline([StandardScaler(), SVR()])`); "
            "`release-unscaled`: SVR on the raw features (the paper's text read literally: the identifier lengths "
            "dominate the RBF kernel); `ours`: LV, NW and the corpus-trained embeddings. Best single = the best "
            "technique among the ensemble's inputs:\n",
            markdown_table(["gold", "size", "ensemble", "pairs", "rho", "best single", "gain", "paper's gain"], table)]


def _new_pairs(con, floor: int = 0) -> list[str]:
    """The new pairs per language and stratum; a language with fewer than `floor` pairs (`report.min_n`) is one row
    that prints "too few items" and its n, not its strata."""
    rows = con.sql("SELECT language, stratum, technique, count(*), min(cosine), max(cosine), "
                   "count(*) FILTER (WHERE in_idbench) FROM idbench_new_pairs GROUP BY ALL").fetchall()
    if not rows:
        return []
    totals: dict = {}
    for r in rows:
        totals[r[0]] = totals.get(r[0], 0) + r[3]
    few = {lang for lang, n in totals.items() if floored(n, floor)}
    rows = [r for r in rows if r[0] not in few] + [
        (lang, "all", next(r[2] for r in rows if r[0] == lang), f"{TOO_FEW} (n = {totals[lang]}, under "
         f"report.min_n {floor})", None, None, sum(r[6] for r in rows if r[0] == lang)) for lang in sorted(few)]
    rows.sort(key=lambda r: (r[0] == "mixed", r[0], r[1] == "random",
                             int(r[1].split("-")[1]) if r[1].startswith("range-") else 0))
    return ["\nNew pairs for a rating survey (`idbench_new_pairs`: frequent corpus identifiers, pairs sampled from "
            "each range of one embedding's cosine ranking plus random pairs, as the paper selected IdBench's; "
            "ranked and sampled per language, `mixed` only when `new_pairs.mixed` asks for it):\n",
            markdown_table(["language", "stratum", "ranked by", "pairs", "min cosine", "max cosine",
                            "already in IdBench"],
                           [(lang, st, t, n, _fmt(lo), _fmt(hi), k) for lang, st, t, n, lo, hi, k in rows])]
