"""The CodeSyntax section of reports/index.md: the paper's Table 3 with our numbers beside it,
and per-head heatmaps."""

from __future__ import annotations

from pathlib import Path

from pipeline.families.codesyntax.paper import HEATMAP_RELATIONS, TOP1_FIRST_TOKEN
from pipeline.report.common import markdown_table, plt, save, write_plot


def section(con, figures: Path, link: str, config, plots: Path | None = None) -> str:
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
    body = [(s, c, *[t.get(col) for col in cols]) for (s, c), t in sorted(table.items())]
    not_applicable = con.sql("SELECT model, reason FROM not_applicable WHERE family = 'codesyntax' "
                             "ORDER BY model").fetchall()
    out = ["## CodeSyntax (Table 3)\n",
           f"Top-k accuracy (first token of the dependent) averaged over relations, in percent, on the "
           f"`{variant}` labels. Models: the best attention head per relation, chosen on the dev split (held out) "
           "or on test (as the paper did), scored on test. Baselines: offsets/keywords chosen the same way. "
           "`n`: the test edges each language's scores average over.\n",
           markdown_table(["system", "chosen on"] + [f"{lang} n" if k == "n" else f"{lang} @{k}" for lang, k in cols],
                          body),
           "\nEach model against its random twin (top-1, first token, heads chosen on dev / on test, scored on "
           "test), the difference's 95% CI from a paired Poisson bootstrap over relations (the unit of the "
           "average; 1000 replicates); `beats twin`: the CI excludes zero in the trained model's favour:\n",
           markdown_table(["model", "twin", "chosen on", "language", "relations", "top-1", "twin top-1",
                           "difference", "95% CI", "p", "beats twin"],
                          con.sql("SELECT model, twin, chosen_on, language, relations, score, twin_score, diff, "
                                  "'[' || lo || ', ' || hi || ']', p_value, "
                                  "CASE WHEN beats_twin THEN 'yes' ELSE 'no' END FROM codesyntax_twin_diff "
                                  "WHERE variant = ? ORDER BY model, chosen_on, language",
                                  params=[variant]).fetchall()),
           "\nNot applicable: " + ("; ".join(f"{m} ({r})" for m, r in not_applicable) or "none") + ".\n",
           "\nPaper, top-1 (Python / Java):\n",
           markdown_table(["system", "python", "java"], [(k, *v) for k, v in TOP1_FIRST_TOKEN.items()])]
    stats = con.sql("SELECT language, variant, samples, tokens FROM codesyntax_dataset_stats ORDER BY ALL").fetchall()
    out += ["\nDataset (Tables 1-2; per-relation counts in data/families/codesyntax/stats.md):\n",
            markdown_table(["language", "variant", "samples", "tokens"], stats)]
    # a language without samples gets its line under the heading (pipeline.report.build.empty_subsets)
    # per-layer curve: the best head of each layer, top-1 first token on test, averaged over relations
    curve = con.sql("""
        SELECT model, language, layer, round(100 * avg(best), 2) AS score, count(*) AS relations FROM (
            SELECT model, language, relation, layer, max(score) AS best FROM codesyntax_head_scores
            WHERE eval_split = 'test' AND metric = 'first' AND k = 1 AND variant = ?
            GROUP BY ALL) GROUP BY ALL ORDER BY ALL""", params=[variant]).fetchall()
    if plots is not None:
        # x: layer, y: top-1 (%) of its best head, averaged over relations
        write_plot(plots / "codesyntax_layers.csv", ["model", "language", "x", "y", "relations"], curve)
    for model, language in con.sql("SELECT DISTINCT model, language FROM codesyntax_head_scores WHERE variant = ? "
                                   "ORDER BY ALL", params=[variant]).fetchall():
        path = figures / f"codesyntax_heads_{model}_{language}.png"
        if heatmaps(con, model, language, variant, path):
            out.append(f"\n![{model} {language}]({link}/{path.name})\n")
    return "\n".join(out) + "\n"


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
    fig, axes = plt.subplots(1, len(grids), figsize=(3.2 * len(grids), 3), squeeze=False)
    for ax, (rel, cells) in zip(axes[0], grids):
        layers = 1 + max(c[0] for c in cells)
        heads = 1 + max(c[1] for c in cells)
        grid = [[0.0] * heads for _ in range(layers)]
        for layer, head, score in cells:
            grid[layer][head] = 100 * score
        im = ax.imshow(grid, vmin=0, vmax=100, cmap="viridis", aspect="auto")
        ax.set_title(rel, fontsize=8)
        ax.set_xlabel("head")
    axes[0][0].set_ylabel("layer")
    fig.colorbar(im, ax=axes[0].tolist(), label="top-1 (%)")
    fig.suptitle(f"{model}, {language}: attention top-1 per head (test)", fontsize=9)
    save(fig, path)
    return True
