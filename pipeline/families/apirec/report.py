"""The apirec section of reports/index.md: Table 5 metrics beside the paper's Tables 6 and 7."""

from __future__ import annotations

from pathlib import Path

from pipeline.families.apirec.paper import CODE_SR, QUERY_SR_METHOD
from pipeline.report.common import markdown_table, plt, save, write_plot


def section(con, figures: Path, link: str, config, plots: Path | None = None) -> str:
    metrics = con.sql("SELECT model, ranker, k, points, sr_method, sr_class, map_apibench_method, map_standard_method, "
                      "map_apibench_class, map_standard_class, mrr_method, mrr_class, ndcg_apibench, ndcg_standard "
                      "FROM apirec_metrics ORDER BY ranker, model, k").fetchall()
    coverage = con.sql("SELECT model, ranker, points, scored, too_long, gold_in_candidates, mean_candidates "
                       "FROM apirec_coverage ORDER BY ranker, model").fetchall()
    ci = con.sql("SELECT model, ranker, k, n, sr_method, '[' || lo || ', ' || hi || ']' FROM apirec_sr_ci "
                 "ORDER BY ranker, model, k").fetchall()
    breakdown = con.sql("SELECT model, ranker, dimension, value, points, sr1_method, sr10_method, sr1_class, "
                        "sr10_class FROM apirec_breakdown ORDER BY dimension, ranker, model, value").fetchall()
    not_applicable = [f"{m} ({r})" for m, r in con.sql("SELECT model, reason FROM not_applicable "
                                                        "WHERE family = 'apirec' ORDER BY model").fetchall()]
    out = ["## apirec (APIBench-C, Table 5 metrics)\n",
           "Code-based API recommendation on Python points of the evaluation split: the n-gram baseline (next API "
           "given the previous one, trained on the train split) ranks every train API; each model re-ranks the "
           "n-gram's top-N by the likelihood of the completed context. `_apibench` columns are the paper's "
           "definitions (MAP@k over the hits within the top k; NDCG with IDCG from the returned list), `_standard` "
           "columns are trec_eval's. NDCG is graded (2 exact API, 1 right class), one for both levels.\n",
           markdown_table(["model", "ranker", "k", "points", "SR method", "SR class", "MAP method (paper)",
                           "MAP method (std)", "MAP class (paper)", "MAP class (std)", "MRR method", "MRR class",
                           "NDCG (paper)", "NDCG (std)"], metrics),
           "\nCoverage and first-stage recall (the gold among the candidates re-ranked):\n",
           markdown_table(["model", "ranker", "points", "scored", "too long", "gold in candidates",
                           "candidates"], coverage),
           "\nMethod-level SR@k with 95% Poisson-bootstrap intervals:\n",
           markdown_table(["model", "ranker", "k", "points", "SR", "95% CI"], ci),
           f"\nNot applicable: {'; '.join(not_applicable) or 'none'}.\n",
           "\nPaper, Table 7 (code-based, Python General, SR@1/3/5/10):\n",
           markdown_table(["approach", "SR@1", "SR@3", "SR@5", "SR@10"], CODE_SR),
           "\nPaper, Table 6 (query-based, Java, method level; APIBench-Q is not built here):\n",
           markdown_table(["approach", "SR@1", "SR@3", "SR@5", "SR@10"], QUERY_SR_METHOD),
           "\nBreakdowns (category, position, function length, domain, seen in train):\n",
           markdown_table(["model", "ranker", "dimension", "value", "points", "SR@1 method", "SR@10 method",
                           "SR@1 class", "SR@10 class"], breakdown)]
    curves = con.sql("SELECT model, ranker, category, k, sr_method, points FROM apirec_sr_by_category "
                     "ORDER BY ALL").fetchall()
    if plots is not None:
        write_plot(plots / "apirec_sr_by_category.csv", ["model", "ranker", "category", "x", "y", "points"],
                   curves)  # x: k, y: method-level SR@k
    if curves:
        fig, ax = plt.subplots(figsize=(6, 4))
        series: dict[tuple, list] = {}
        for model, ranker, category, k, sr, _ in curves:
            series.setdefault((model, ranker, category), []).append((k, sr))
        for (model, ranker, category), pts in sorted(series.items()):
            ax.plot([k for k, _ in pts], [v for _, v in pts], marker="o", label=f"{model}/{ranker} {category}")
        ax.set_xlabel("k")
        ax.set_ylabel("method-level SR@k")
        ax.set_title("apirec: success rate at k by API category")
        ax.legend(fontsize=6)
        save(fig, figures / "apirec_sr_by_category.png")
        out.append(f"\n![SR@k by category]({link}/apirec_sr_by_category.png)\n")
    return "\n".join(out) + "\n"
