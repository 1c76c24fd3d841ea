"""The CodeSyntax section of reports/index.md: the paper's Table 3 with our numbers beside it first, then our
extensions and per-head heatmaps. Every score is a fraction in [0, 1] (the warehouse's unit), printed with 3
decimals."""

from __future__ import annotations

from pathlib import Path

from pipeline.families.codesyntax import paper
from pipeline.families.codesyntax.paper import HEATMAP_RELATIONS
from pipeline.report.common import (FRACTION_DIGITS, TWIN_ROWS, Section, clip, detectable, floored, fraction,
                                     interval, language_name, markdown_table, min_n, model_size, plt, save, score_cell,
                                     twinned, write_plot)

DATED_BY = "context"  # pipeline.report.contamination: a sample is dated by its own code (its context)
DIGITS = FRACTION_DIGITS


# CPU-s of section() on the default build (2026-12-02):
# the report runs the longest parts first (pipeline.report.build.section_weight)
SECTION_CPU_S = 27


def with_interval(score, lo, hi, n=None, floor: int = 0) -> str:
    """`0.436 [0.401, 0.470]`: a score and its 95% CI in one cell; "too few items (n = N)" when its n (the test
    edges the score is over) is under the power floor."""
    if score is None:
        return ""
    if floor and floored(n, floor):
        return score_cell(score, n, floor)
    return " ".join(filter(None, (fraction(score), interval(clip(lo), clip(hi)))))


def twin_line(con, variant: str, floor: int) -> str:
    """Each model against its random twin (top-1, heads chosen on dev; codesyntax_twin_diff) and the smallest
    difference its relations can detect (the paired CI's half-width)."""
    parts = []
    for model, twin, language, relations, diff, lo, hi, p, edges in con.sql(
            "SELECT t.model, t.twin, t.language, t.relations, t.diff, t.lo, t.hi, t.p_value, s.edges "
            "FROM codesyntax_twin_diff t LEFT JOIN codesyntax_scores s ON s.system = t.model AND s.chosen_on = "
            "t.chosen_on AND s.language = t.language AND s.variant = t.variant AND s.metric = t.metric AND s.k = t.k "
            "WHERE t.variant = ? AND t.chosen_on = 'dev' ORDER BY t.model, t.language, t.metric, t.k", params=[variant]).fetchall():
        smallest = detectable(lo, hi)
        what = (score_cell(diff, edges, floor) if floored(edges, floor)
                else f"{fraction(diff)} {interval(lo, hi)}, p = {fraction(p)}")
        parts.append(f"{model} - {twin}, {language_name(language)}: {what}, over {relations} relations "
                     f"(detectable: ±{fraction(smallest)})")
    if not parts:
        return ""
    return ("\n**Model vs its random twin** (top-1, heads chosen on dev, scored on test; paired Poisson bootstrap "
            "over relations, whose CI half-width is the smallest difference the relations can detect): "
            + "; ".join(parts) + ".\n")


def population(con, variant: str, languages: list[str]) -> str:
    """One line on how our population differs from the paper's: corpus, samples, edges, models and sizes."""
    counts = {lang: (samples, edges, relations) for lang, samples, edges, relations in con.sql(
        "SELECT s.language, count(DISTINCT s.sample_id), count(r.relation), count(DISTINCT r.relation) "
        "FROM codesyntax_samples s LEFT JOIN codesyntax_relations r ON r.sample_id = s.sample_id "
        "AND r.variant = s.variant WHERE s.variant = ? AND s.eval_split = 'test' GROUP BY ALL",
        params=[variant]).fetchall()}
    models = con.sql("SELECT m.name, m.parameters FROM models m WHERE NOT coalesce(m.random, false) AND m.name IN "
                     "(SELECT DISTINCT model FROM codesyntax_head_scores) ORDER BY m.name").fetchall()
    sizes = sorted(n for _, n in models if n is not None)
    span = f"{model_size(sizes[0])}-{model_size(sizes[-1])} parameters" if sizes else "sizes unknown"
    ours = " / ".join(f"{counts.get(lang, (0, 0, 0))[0]:,}" for lang in languages)
    edges = " / ".join(f"{counts.get(lang, (0, 0, 0))[1]:,}" for lang in languages)
    relations = " / ".join(f"{counts.get(lang, (0, 0, 0))[2]:,}" for lang in languages)
    return (f"**How the populations differ:** Paper: {paper.POPULATION}. Ours: the test split of this corpus's functions "
            f"({ours} {' / '.join(language_name(lang) for lang in languages)} test samples, {edges} edges, "
            f"{relations} relation types, `{variant}` labels; heads and baselines picked on the same test split in "
            f"the k columns, as the paper did, and on the held-out dev split in the last score column); "
            f"{len(models)} models trained or packaged here ({span}: {', '.join(m for m, _ in models) or 'none'}), "
            f"{twinned(con, [m for m, _ in models])}.")


def headline(con, config, page_rows: list | None = None) -> str:  # noqa: C901 (paper's rows, ours, diffs, per language)
    """The paper's Table 3 (top-k, first token, per language: baselines, models, and the best model minus the
    best baseline) and ours beside it, same rows and columns, each score of ours with its 95% CI
    (codesyntax_score_ci) and n (relations, test edges), and the line on how the populations differ.
    `page_rows` (a list) gets (TWIN_ROWS, row) for each twin's row whose model the twin line reads against it
    in that language: the first read leaves those to the page (Section.leaving)."""
    block = config["codesyntax"]
    variant, languages = block["inference"]["variant"], list(block["languages"])
    floor = min_n(config)
    ci = {(chosen, system, lang, k): (score, lo, hi, relations) for chosen, system, lang, k, score, lo, hi, relations
          in con.sql("SELECT chosen_on, system, language, k, score, lo, hi, relations FROM codesyntax_score_ci "
                     "WHERE variant = ? AND metric = 'first'", params=[variant]).fetchall()}
    k0 = min(paper.KS)
    edges = {(chosen, system, lang): n for chosen, system, lang, n in con.sql(
        "SELECT chosen_on, system, language, edges FROM codesyntax_scores WHERE variant = ? AND metric = 'first' "
        "AND k = ?", params=[variant, k0]).fetchall()}
    randoms = {name for (name,) in con.sql("SELECT name FROM models WHERE coalesce(random, false)").fetchall()}
    paired = set(con.sql("SELECT twin, language FROM codesyntax_twin_diff WHERE variant = ? AND chosen_on = 'dev'",
                         params=[variant]).fetchall())  # the twins twin_line reads their model against
    systems = sorted({system for _, system, _, _ in ci})
    baselines = [b for b in paper.BASELINES if b in systems]
    models = [s for s in systems if s not in paper.BASELINES]
    columns = ["paper / ours", "language", "system"] + [f"top-{k}" for k in paper.KS] + [f"top-{k0}, chosen on dev",
                                                                              "relations", "edges"]
    rows = []
    for lang in languages:
        name = language_name(lang)
        for system, values in paper.TABLE3.get(lang, {}).items():
            rows.append(("paper", name, system, *(fraction(v) for v in values), "", paper.RELATIONS[lang],
                         paper.EDGES[lang]))
        if lang in paper.DIFF:
            rows.append(("paper", name, "diff (best model - best baseline)", *(fraction(v) for v in paper.DIFF[lang]),
                         "", "", ""))
        for system in baselines + models:
            if not any(key[2] == lang and key[1] == system for key in ci):
                continue
            n_test, n_dev = edges.get(("test", system, lang)), edges.get(("dev", system, lang))
            cells = [with_interval(*ci.get(("test", system, lang, k), (None,) * 4)[:3], n_test, floor)
                     for k in paper.KS]
            dev = with_interval(*ci.get(("dev", system, lang, k0), (None,) * 4)[:3], n_dev, floor)
            relations = ci.get(("test", system, lang, k0), (None,) * 4)[3]
            rows.append(("ours", name, system + (" (random)" if system in randoms else ""), *cells, dev,
                         relations if relations is not None else "", edges.get(("test", system, lang), "")))
            if page_rows is not None and (system, lang) in paired:
                page_rows.append((TWIN_ROWS, rows[-1]))
        trained = [m for m in models if m not in randoms]

        def best(chosen: str, k: int, among: list[str]):  # over the systems whose cells are printed
            scores = [ci[(chosen, s, lang, k)][0] for s in among if (chosen, s, lang, k) in ci
                      and not floored(edges.get((chosen, s, lang)), floor)]
            return max(scores) if scores else None

        def diff(chosen: str, k: int) -> str:
            m, b = best(chosen, k, trained), best(chosen, k, baselines)
            return "" if m is None or b is None else fraction(m - b)

        if trained and baselines:
            rows.append(("ours", name, "diff (best model - best baseline)", *(diff("test", k) for k in paper.KS),
                         diff("dev", k0), "", ""))
    return "\n".join([
        "The paper's Table 3 (top-k accuracy, first token of the dependent, averaged over relations) and ours "
        "beside it: per language the baselines (offset, keyword, combined: the better of the two per relation), the "
        "models' best attention head per relation, and the best model minus the best baseline (negative: the "
        "models lose, as in the paper). Scores are fractions (the paper's 43.6 is 0.436); ours carry a 95% CI in "
        "brackets (Poisson bootstrap over the relations the average is over, 10,000 replicates: the unit of the "
        "average; the noise of the edges within a relation is not in it). `relations`, `edges`: what the top-1 "
        f"score is over (the paper's: its whole dataset). A row over fewer than {floor} test edges "
        "(`report.min_n`) prints its n, not a score.\n",
        markdown_table(columns, rows),
        twin_line(con, variant, floor),
        "\n" + population(con, variant, languages) + "\n"])


def section(con, figures: Path, link: str, config, plots: Path | None = None) -> Section:
    block = config["codesyntax"]
    variant, ks, languages = block["inference"]["variant"], list(block["ks"]), list(block["languages"])
    rows = con.sql("SELECT system, chosen_on, language, k, score, edges FROM codesyntax_scores "
                   "WHERE metric = 'first' AND variant = ? ORDER BY system, chosen_on, language, k",
                   params=[variant]).fetchall()
    table: dict[tuple, dict] = {}
    for system, chosen, language, k, score, edges in rows:
        table.setdefault((system, chosen), {})[(language, k)] = score
        table[(system, chosen)][(language, "n")] = edges  # the test edges every k of that language averages over
    cols = [(lang, k) for lang in languages for k in [*ks, "n"]]
    body = [(s, c, *[fraction(t.get(col)) if col[1] != "n" else t.get(col) for col in cols])
            for (s, c), t in sorted(table.items())]
    not_applicable = con.sql("SELECT model, reason FROM not_applicable WHERE family = 'codesyntax' "
                             "ORDER BY model").fetchall()
    page_rows: list = []
    out = ["## CodeSyntax (Table 3)\n",
           headline(con, config, page_rows),
           "### CodeSyntax: beyond the paper\n",
           f"Top-k accuracy (first token of the dependent) averaged over relations, as fractions, on the "
           f"`{variant}` labels. Models: the best attention head per relation, chosen on the dev split (held out) "
           "or on test (as the paper did), scored on test. Baselines: offsets/keywords chosen the same way. "
           "`n`: the test edges each language's scores average over.\n",
           markdown_table(["system", "chosen on"] + [f"{lang} n" if k == "n" else f"{lang} @{k}" for lang, k in cols],
                          body),
           "\nEach model against its random twin (top-1, first token, heads chosen on dev / on test, scored on "
           "test), the difference's 95% CI from a paired Poisson bootstrap over relations (the unit of the "
           "average; 10,000 replicates); `beats twin`: the CI excludes zero in the trained model's favour:\n",
           markdown_table(["model", "twin", "chosen on", "language", "relations", "top-1", "twin top-1",
                           "difference", "95% CI", "p", "beats twin"],
                          [(*r[:5], *(fraction(v) for v in r[5:8]), interval(*r[8:10]),
                            fraction(r[10]), r[11])
                           for r in con.sql("SELECT model, twin, chosen_on, language, relations, score, twin_score, "
                                            "diff, lo, hi, p_value, CASE WHEN beats_twin THEN 'yes' ELSE 'no' END "
                                            "FROM codesyntax_twin_diff WHERE variant = ? "
                                            "ORDER BY model, chosen_on, language", params=[variant]).fetchall()]),
           "\nNot applicable: " + ("; ".join(f"{m} ({r})" for m, r in not_applicable) or "none") + ".\n"]
    stats = con.sql("SELECT language, variant, samples, tokens FROM codesyntax_dataset_stats ORDER BY ALL").fetchall()
    out += ["\nDataset (Tables 1-2; per-relation counts in data/families/codesyntax/stats.md):\n",
            markdown_table(["language", "variant", "samples", "tokens"], stats)]
    # a language without samples gets its line under the heading (pipeline.report.build.empty_subsets)
    # per-layer curve: the best head of each layer, top-1 first token on test, averaged over relations
    curve = con.sql("""
        SELECT model, language, layer, round(avg(best), 4) AS score, count(*) AS relations FROM (
            SELECT model, language, relation, layer, max(score) AS best FROM codesyntax_head_scores
            WHERE eval_split = 'test' AND metric = 'first' AND k = 1 AND variant = ?
            GROUP BY ALL) GROUP BY ALL ORDER BY ALL""", params=[variant]).fetchall()
    if plots is not None:
        # x: layer, y: top-1 (a fraction) of its best head, averaged over relations
        write_plot(plots / "codesyntax_layers.csv", ["model", "language", "x", "y", "relations"], curve)
    for model, language in con.sql("SELECT DISTINCT model, language FROM codesyntax_head_scores WHERE variant = ? "
                                   "ORDER BY ALL", params=[variant]).fetchall():
        path = figures / f"codesyntax_heads_{model}_{language}.png"
        if heatmaps(con, model, language, variant, path):
            out.append(f"\n![{model} {language}]({link}/{path.name})\n")
    return Section.cut("\n".join(out) + "\n", "### CodeSyntax: beyond the paper").leaving(page_rows)


def heatmaps(con, model: str, language: str, variant: str, path: Path) -> bool:
    """Per-layer/head top-1 accuracy on test for the relations people look at first."""
    grids = []
    for rel in HEATMAP_RELATIONS:
        cells = con.sql("SELECT layer, head, score FROM codesyntax_head_scores WHERE model = ? AND language = ? AND "
                        "variant = ? AND relation = ? AND eval_split = 'test' AND metric = 'first' AND k = 1",
                        params=[model, language, variant, rel]).fetchall()
        if cells:
            grids.append((rel, cells))
    if not grids:
        return False
    # one colour scale for the panels, spanning their data (a fixed 0-1 scale left low scores near-black)
    values = [c[2] for _, cells in grids for c in cells if c[2] is not None]
    vmin, vmax = (min(values), max(values)) if values else (0.0, 1.0)
    if vmax - vmin < 1e-9:
        vmin, vmax = vmin - 0.005, vmax + 0.005
    fig, axes = plt.subplots(1, len(grids), figsize=(3.2 * len(grids), 3), squeeze=False)
    for ax, (rel, cells) in zip(axes[0], grids):
        layers = 1 + max(c[0] for c in cells)
        heads = 1 + max(c[1] for c in cells)
        grid = [[float("nan")] * heads for _ in range(layers)]
        for layer, head, score in cells:
            grid[layer][head] = score
        im = ax.imshow(grid, vmin=vmin, vmax=vmax, cmap="viridis", aspect="auto")
        ax.set_title(rel, fontsize=8)
        ax.set_xlabel("head")
    axes[0][0].set_ylabel("layer")
    fig.colorbar(im, ax=axes[0].tolist(), label=f"top-1 (scale {vmin:.2f}-{vmax:.2f}: the data's range)")
    fig.suptitle(f"{model}, {language}: attention top-1 per head (test)", fontsize=9)
    save(fig, path)
    return True


def contamination(con, floor: int) -> list[str]:
    """This family's part of the corpus page's contamination section: its test samples on each side of each
    model's label (view codesyntax_contamination), the headline split by label (codesyntax_contamination_scores)
    and each model against its twin on each side (codesyntax_contamination_vs_twin), heads chosen on dev."""
    from pipeline.report.contamination import Split, label_part
    return label_part(
        con, floor, "codesyntax_contamination",
        "\n**codesyntax:** test-side function samples on each side of each model's label, dated by their code "
        "(context): a function's first pinned release, else its file's release.\n",
        Split(keys=(("language", "language"),), score="score", twin_score="twin_score", header="top-1",
              scores_title="\nTop-1 (first token; each relation's best head chosen on dev) by label, per test function: "
                           "the share of its edges found, averaged over functions (the headline averages relations):\n",
              twins_title="\nEach model against its random twin on each side (paired on the same functions, each with "
                          "its own best heads):\n",
              where="chosen_on = 'dev'"),
        counts_where="eval_split = 'test'")
