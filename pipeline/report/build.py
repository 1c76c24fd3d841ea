"""Write reports/index.md and reports/figures/*.png from the warehouse, with the papers'
reference numbers beside ours. Everything here is a query over data/warehouse.duckdb."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from pipeline.io import atomic_path  # noqa: E402
from pipeline.query import connect  # noqa: E402

log = logging.getLogger("pipeline.report.build")

# The papers' numbers (SPEC.md): apiquiz Table III P@1 (call, import); CodeSyntax Table 3 top-1 first token.
APIQUIZ_PAPER = [
    ("CodeBERT-MLM", 23.90, 26.33),
    ("CodeBERT-MLM-Python", 29.35, 29.67),
    ("GraphCodeBERT-MLM", 25.89, 30.76),
    ("PLBART-base", 1.65, 2.64),
]
CODESYNTAX_PAPER = {  # system: (python, java)
    "offset": (43.6, 52.7), "keyword": (15.7, 22.4), "combined": (49.4, 60.4),
    "CuBERT": (39.2, 39.7), "CodeBERT": (33.1, 36.3), "RoBERTa": (34.5, 34.7),
}
HEATMAP_RELATIONS = ("If:if->else", "Call:func->args", "Assign:target->value", "For:for->body")


def markdown_table(columns: list[str], rows: list[tuple]) -> str:
    def fmt(v):
        return "" if v is None else f"{v:.2f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def section_corpus(con) -> str:
    rows = con.sql("SELECT language, sum(files)::BIGINT, sum(unique_files)::BIGINT, sum(repositories)::BIGINT, "
                   "sum(bytes)::BIGINT, sum(lines)::BIGINT FROM corpus_summary GROUP BY 1 ORDER BY 1").fetchall()
    rejects = con.sql("SELECT stage, reason, sum(items)::BIGINT FROM rejects_summary GROUP BY 1, 2 ORDER BY 1, 2").fetchall()
    return ("## Corpus\n\n" + markdown_table(["language", "files", "unique", "repositories", "bytes", "lines"], rows)
            + "\n\nLeft out, by stage and reason:\n\n" + markdown_table(["stage", "reason", "items"], rejects) + "\n")


def section_apiquiz(con, figures: Path, link: str) -> str:
    rows = con.sql("SELECT model, protocol, setting, scored, p_at_1, p_at_5, p_at_10 FROM apiquiz_by_setting "
                   "WHERE scored > 0 ORDER BY protocol, model, setting").fetchall()
    not_applicable = [m for (m,) in con.sql("SELECT DISTINCT model FROM apiquiz_predictions GROUP BY model "
                                             "HAVING bool_and(status = 'not_applicable') ORDER BY 1").fetchall()]
    out = ["## apiquiz (INK, Table III)\n",
           "P@k in percent over scored quizzes. `fill_mask` is the paper's protocol (masked LMs, answers that are "
           "one token of the model's tokenizer); `rank` ranks the quiz's candidates by log-likelihood "
           "(every LM family, multi-token answers included).\n",
           markdown_table(["model", "protocol", "setting", "scored", "P@1", "P@5", "P@10"], rows),
           f"\nNot applicable (no LM head): {', '.join(not_applicable) or 'none'}.\n",
           "\nPaper, P@1 (call / import):\n",
           markdown_table(["model", "call", "import"], APIQUIZ_PAPER)]
    seen = con.sql("SELECT model, protocol, seen, sum(scored)::BIGINT, round(sum(p_at_1 * scored) / sum(scored), 2) "
                   "FROM apiquiz_precision WHERE scored > 0 GROUP BY ALL ORDER BY ALL").fetchall()
    if seen:
        out += ["\nSeen vs unseen in the train split (P@1):\n",
                markdown_table(["model", "protocol", "seen", "scored", "P@1"], seen)]
    curves = con.sql("SELECT model, protocol, p_at_1, p_at_5, p_at_10, p_at_20, p_at_50, scored FROM ("
                     "SELECT p.model, p.protocol, count(*) FILTER (WHERE status = 'ok') AS scored, "
                     + ", ".join(f"100 * avg((gold_rank <= {k})::INT) FILTER (WHERE status = 'ok') AS p_at_{k}"
                                 for k in (1, 5, 10, 20, 50))
                     + " FROM apiquiz_predictions p GROUP BY ALL) WHERE scored > 0 ORDER BY ALL").fetchall()
    if curves:
        fig, ax = plt.subplots(figsize=(6, 4))
        for model, protocol, *ps, _ in curves:
            ax.plot([1, 5, 10, 20, 50], ps, marker="o", label=f"{model} ({protocol})")
        ax.set_xscale("log")
        ax.set_xlabel("k")
        ax.set_ylabel("P@k (%)")
        ax.set_title("apiquiz: precision at k")
        ax.legend(fontsize=7)
        save(fig, figures / "apiquiz_p_at_k.png")
        out.append(f"\n![P@k per model]({link}/apiquiz_p_at_k.png)\n")
    return "\n".join(out) + "\n"


def section_codesyntax(con, figures: Path, link: str) -> str:
    rows = con.sql("SELECT system, chosen_on, language, k, score FROM syntax_scores WHERE metric = 'first' "
                   "ORDER BY system, chosen_on, language, k").fetchall()
    table: dict[tuple, dict] = {}
    for system, chosen, language, k, score in rows:
        table.setdefault((system, chosen), {})[(language, k)] = score
    cols = [(lang, k) for lang in ("python", "java") for k in (1, 3, 10, 20)]
    body = [(s, c, *[t.get(col) for col in cols]) for (s, c), t in sorted(table.items())]
    out = ["## CodeSyntax (Table 3)\n",
           "Top-k accuracy (first token of the dependent) averaged over relations, in percent. Models: the best "
           "attention head per relation, chosen on the dev split (held out) or on test (as the paper did), scored on "
           "test. Baselines: offsets/keywords chosen the same way. Causal LMs are not applicable (their attention "
           "cannot look ahead from head to dependent).\n",
           markdown_table(["system", "chosen on"] + [f"{lang} @{k}" for lang, k in cols], body),
           "\nPaper, top-1 (Python / Java):\n",
           markdown_table(["system", "python", "java"], [(k, *v) for k, v in CODESYNTAX_PAPER.items()])]
    stats = con.sql("SELECT language, variant, samples, tokens FROM syntax_dataset_stats ORDER BY ALL").fetchall()
    out += ["\nDataset (Tables 1-2; per-relation counts in codesyntax_stats.md):\n",
            markdown_table(["language", "variant", "samples", "tokens"], stats)]
    for model, language in con.sql("SELECT DISTINCT model, language FROM syntax_head_scores ORDER BY ALL").fetchall():
        path = figures / f"codesyntax_heads_{model}_{language}.png"
        if heatmaps(con, model, language, path):
            out.append(f"\n![{model} {language}]({link}/{path.name})\n")
    return "\n".join(out) + "\n"


def heatmaps(con, model: str, language: str, path: Path) -> bool:
    """Per-layer/head top-1 accuracy on test for the relations people look at first."""
    grids = []
    for rel in HEATMAP_RELATIONS:
        cells = con.sql("SELECT layer, head, score FROM syntax_head_scores WHERE model = ? AND language = ? AND "
                        "relation = ? AND eval_split = 'test' AND metric = 'first' AND k = 1",
                        params=[model, language, rel]).fetchall()
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


def section_models(models_metrics: Path | None) -> str:
    if not models_metrics or not models_metrics.exists():
        return ""
    data = json.loads(models_metrics.read_text())
    rows = [(name, *(m.get(k) for k in ("source", "family", "parameters", "test_perplexity", "perplexity_ratio_to_twin")))
            for name, m in sorted(data["models"].items())]
    return ("## Models\n\nTest-split perplexity (masked-token perplexity for masked LMs; none for encoders without an "
            "LM head); a random twin's last column is its perplexity over its trained model's.\n\n"
            + markdown_table(["model", "source", "family", "parameters", "test perplexity", "twin / trained"], rows) + "\n")


def save(fig, path: Path) -> None:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)


def build(db: Path, out: Path, figures: Path, models_metrics: Path | None = None) -> None:
    con = connect(db)
    figures.mkdir(parents=True, exist_ok=True)
    link = os.path.relpath(figures, out.parent)  # image links relative to the Markdown file
    text = "\n".join([
        "# Benchmark report\n",
        "Regenerated from `data/warehouse.duckdb` by `snakemake report`; every number is a view you can query "
        "with `python -m pipeline query`.\n",
        section_corpus(con), section_models(models_metrics), section_apiquiz(con, figures, link),
        section_codesyntax(con, figures, link)])
    with atomic_path(out) as tmp:
        tmp.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.report.build",
                                 description="Regenerate reports/index.md and reports/figures/ from the warehouse.")
    ap.add_argument("--db", type=Path, default=Path("data/warehouse.duckdb"))
    ap.add_argument("--models-metrics", type=Path, default=None, help="reports/metrics/models.json")
    ap.add_argument("--out", type=Path, default=Path("reports/index.md"))
    ap.add_argument("--figures", type=Path, default=Path("reports/figures/report"))
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    build(args.db, args.out, args.figures, args.models_metrics)
    return 0


if __name__ == "__main__":
    sys.exit(main())
