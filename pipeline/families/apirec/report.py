"""The apirec section of the report. Headline (reports/index.md): the paper's Table 7 (code-based, Python,
SR@1/3/5/10) with ours beside it, n, 95% intervals, chance and how the populations differ. Details
(reports/apirec.md): Table 5 metrics of APIBench-C and APIBench-Q beside the paper's Tables 6-9, every
score with its count and a bootstrap interval, and Figures 9-11 style plots (SR@10 by API category,
function length and recommendation-point position; SR@k by category and by context length, faceted,
with the chance of a random order of the candidates)."""

from __future__ import annotations

from pipeline.metrics.bootstrap import HEADLINE_REPLICATES

from pathlib import Path

from pipeline.families.apirec.paper import (CODE_SR, CROSS_DOMAIN_SR10, CROSS_DOMAIN_TEST, IDE_SR, NDCG_AT_1,
                                            QUERY_SR_METHOD)
from pipeline.report.common import (MAX_SERIES, TOO_FEW, TWIN_ROWS, Section, bar_n, bootstrap_seed, chance_line, clip,
                                     detectable, floored, language_name, markdown_table, min_n, plt, run_seed, save,
                                     write_plot)

DATED_BY = "api"  # pipeline.report.contamination: an item is dated by its API's (sql/15_contamination_dates.sql)
HEADLINE_RANKERS = ("ngram", "ide", "rerank_ngram")  # the baselines and the LM re-ranking by summed log-likelihood
KS = (1, 3, 5, 10)

# Per point and k, what a random order of the candidates the ranking chose from would reach: k over the
# candidates (at most 1) when the gold is among them, else 0.
CHANCE_SQL = ("SELECT {cols}, k, avg(CASE WHEN gold_in_candidates AND n_candidates > 0 "
              "THEN least(k, n_candidates) / n_candidates ELSE 0 END) FROM apirec_rankings, "
              "(SELECT unnest([1, 3, 5, 10]) AS k) WHERE benchmark = 'code' {where} GROUP BY ALL ORDER BY ALL")


# CPU-s of section() on the default build (2026-12-02):
# the report runs the longest parts first (pipeline.report.build.section_weight)
SECTION_CPU_S = 5


def _ci(mean, lo, hi) -> str:
    return "" if mean is None else f"{mean:.2f} [{lo:.2f}, {hi:.2f}]"


def _cell(mean, lo, hi, n, floor: int) -> str:
    """A headline score with its CI, or "too few items (n = N)" when its n is under the power floor."""
    if mean is None:
        return ""
    if floored(n, floor):
        return f"{TOO_FEW} (n = {0 if n is None else int(n)})"
    return f"{mean:.2f}" if lo is None else _ci(mean, clip(lo), clip(hi))


def _signed(v) -> str:
    return "" if v is None else f"{v:+.2f}"


HEADLINE_LANGUAGE = "python"  # Table 7 is Python


def rerank_vs_ngram(con, config, language: str = HEADLINE_LANGUAGE, rankers: tuple[str, ...] = ("rerank_ngram",),
                    replicates: int = HEADLINE_REPLICATES) -> list[dict]:
    """Each LM re-ranking against the n-gram whose pool it re-ranks, paired on the LM's own points (view
    apirec_rerank_pairs): per (model, ranker) its points, the pool's recall on them (the ceiling of any
    re-ranking), SR@1 of both and the difference with its 95% paired Poisson-bootstrap CI and p. Each cell's
    bootstrap is seeded from the run seed and the cell's name (pipeline.report.common.bootstrap_seed)."""
    seed = run_seed(config)
    keys = con.sql("SELECT DISTINCT model, ranker FROM apirec_rerank_pairs WHERE language = ? AND k = 1 "
                   f"AND ranker IN {tuple(rankers) + ('',)} ORDER BY model, ranker", params=[language]).fetchall()
    out = []
    for model, ranker in keys:
        cell = f"apirec/rerank_vs_ngram/{language}/{model}/{ranker}/sr@1"
        boot = con.sql(
            "WITH h AS (SELECT a, b, sum(items) AS items FROM apirec_rerank_pairs WHERE language = ? AND model = ? "
            "AND ranker = ? AND k = 1 GROUP BY ALL) SELECT n, mean_a, mean_b, diff, lo, hi, p_value "
            f"FROM poisson_paired_bootstrap_hist(h, replicates := {int(replicates)}, "
            f"seed := {bootstrap_seed(seed, cell)})", params=[language, model, ranker]).fetchall()
        recall = con.sql("SELECT sum(items) FILTER (WHERE in_pool) / sum(items) FROM apirec_rerank_pairs "
                         "WHERE language = ? AND model = ? AND ranker = ? AND k = 1",
                         params=[language, model, ranker]).fetchall()[0][0]
        if not boot:
            continue
        n, a, b, diff, lo, hi, p = boot[0]
        out.append({"model": model, "ranker": ranker, "n": int(n), "pool_recall": recall, "sr": a, "ngram_sr": b,
                    "diff": diff, "lo": lo, "hi": hi, "p": p})
    return out


def _twin_sr1(con, language: str = HEADLINE_LANGUAGE) -> dict:
    """(model, ranker) -> its SR@1 against its random twin on the same points (view apirec_twin_diff):
    (n, diff, lo, hi, p, twin)."""
    return {(m, r): (n, diff, lo, hi, p, twin) for m, r, n, diff, lo, hi, p, twin in con.sql(
        "SELECT model, ranker, n, diff, lo, hi, p_value, twin FROM apirec_twin_diff WHERE benchmark = 'code' "
        "AND language = ? AND metric = 'SR@1'", params=[language]).fetchall()}


PAIRED_RANKERS = ("rerank_ngram",)  # the rankers of the headline's paired table
# what the first read says of Table 7's chance and ceiling rows, which it leaves to the page: the paired table reads
# each LM against what it must beat on its own points (the n-gram whose pool it re-ranks, that pool's recall)
CHANCE_ROWS = ("Table 7's chance and ceiling rows (the paired table reads each LM against the n-gram it re-ranks "
               "and that pool's recall, on the LM's own points)")
# ... and of an LM's row of Table 7 whose n is under the power floor (it prints no score): the paired table lists the
# LM with the same population and n
FLOORED_ROWS = "Table 7's rows of LMs under the power floor (no score; the paired table gives their points and n)"


def paired_table(con, config, floor: int, language: str = HEADLINE_LANGUAGE,
                 rankers: tuple[str, ...] = PAIRED_RANKERS, twins: dict | None = None, results: list | None = None,
                 page_rows: list | None = None) -> str:
    """The headline's second table: each LM against the n-gram it re-ranks (and against its random twin), paired
    on the same points, the pool's recall ceiling on them and the smallest difference the n detects. `twins`
    (_twin_sr1) and `results` (rerank_vs_ngram) are queried when not given; `page_rows` (a list) gets
    (TWIN_ROWS, row) for each twin's row whose model's `vs twin` cell reads it: the first read leaves those to
    the page."""
    rows = []
    twins = _twin_sr1(con, language) if twins is None else twins
    results = rerank_vs_ngram(con, config, language, rankers) if results is None else results
    listed = {(r["model"], r["ranker"]) for r in results}
    read = {(t[-1], ranker) for (model, ranker), t in twins.items() if (model, ranker) in listed}
    for r in results:
        small = floored(r["n"], floor)
        too_few = f"{TOO_FEW} (n = {r['n']})"
        twin = twins.get((r["model"], r["ranker"]))
        if twin is None:
            vs_twin = ""
        elif floored(twin[0], floor):
            vs_twin = f"{TOO_FEW} (n = {twin[0]})"
        else:
            vs_twin = f"{_signed(twin[1])} [{_signed(twin[2])}, {_signed(twin[3])}], p = {twin[4]:.3f}"
        rows.append((f"{r['model']}/{r['ranker']}", f"its {r['n']:,} seeded points", r["n"],
                     "" if r["pool_recall"] is None else too_few if small else f"{r['pool_recall']:.2f}",
                     too_few if small else f"{r['sr']:.2f}", too_few if small else f"{r['ngram_sr']:.2f}",
                     too_few if small else f"{_signed(r['diff'])} [{_signed(r['lo'])}, {_signed(r['hi'])}]",
                     "" if small or r["p"] is None else f"{r['p']:.3f}",
                     "" if detectable(r["lo"], r["hi"]) is None else f"±{detectable(r['lo'], r['hi']):.2f}",
                     vs_twin))
        if page_rows is not None and (r["model"], r["ranker"]) in read:
            page_rows.append((TWIN_ROWS, rows[-1]))
    if not rows:
        return ""
    return "\n".join([
        f"\nEach LM against the n-gram whose top-N pool it re-ranks, **paired on the same points** (the LM's seeded "
        f"subset, {language_name(language)}; a point the LM could not score is a miss): `pool recall` is the share of "
        "those points whose gold is in the pool, the ceiling of any re-ranking; the SR@1 difference LM - n-gram with "
        "its 95% paired Poisson-bootstrap CI and two-sided p (10,000 replicates, seeded from the run seed and the "
        "row); `detectable`: the CI's half-width, the smallest difference these points can detect; `vs twin`: "
        "SR@1 minus the random twin's on the points both scored. Rows under the power floor print n, not scores:\n",
        markdown_table(["LM / ranker", "population", "n", "pool recall (ceiling)", "LM SR@1", "n-gram SR@1",
                        "difference [95% CI]", "p", "detectable", "vs twin [95% CI]"], rows)])


def headline(con, config=None, page_rows: list | None = None) -> str:
    """Table 7 (code-based, Python, the General domain): the paper's three systems, SR@1/3/5/10, with ours
    beside them on this corpus's Python points (the baselines and each LM re-ranking the n-gram's top-N by
    summed log-likelihood), each row with its population (which points, n), 95% Poisson-bootstrap intervals of
    SR@1 and SR@10, the recall ceiling of the n-gram's pool and the chance of a random order of each pool; a
    cell over fewer than `report.min_n` points prints its n, not a score. Then each LM paired with the n-gram
    it re-ranks on the same points (paired_table). `page_rows` (a list) gets (what, row) for the rows the first
    read leaves to the page: each twin's rows whose model the paired table reads against it (TWIN_ROWS), an
    LM's Table 7 row under the power floor that the paired table lists (FLOORED_ROWS) and, where the paired table
    has an LM, the chance and ceiling rows (CHANCE_ROWS)."""
    config = config or {}
    floor = min_n(config)
    ours = con.sql("SELECT model || '/' || ranker, ranker, max(points), "
                   + ", ".join(f"max(sr_method) FILTER (WHERE k = {k})" for k in KS)
                   + " FROM apirec_metrics_by_language WHERE benchmark = 'code' AND language = ? AND ranker IN "
                   f"{HEADLINE_RANKERS} GROUP BY model, ranker ORDER BY ranker <> 'ngram', ranker <> 'ide', 1",
                   params=[HEADLINE_LANGUAGE]).fetchall()
    ci = {(s, k): (m, lo, hi) for s, k, _, m, lo, hi in con.sql(
        "WITH h AS (SELECT model || '/' || ranker AS system, k, point_id AS item_id, sr_method AS value "
        "FROM apirec_point_scores WHERE benchmark = 'code' AND language = ? AND k IN (1, 10) "
        f"AND ranker IN {HEADLINE_RANKERS}) SELECT system, k, n, mean, lo, hi FROM poisson_bootstrap_mean(h)",
        params=[HEADLINE_LANGUAGE]).fetchall()}
    chance = {(r, k): v for r, k, v in con.sql(CHANCE_SQL.format(cols="ranker", where="AND language = 'python'"))
              .fetchall()}
    every = max((n for _, r, n, *_ in ours if r in ("ngram", "ide")), default=0)
    pool = con.sql("SELECT points, pool_recall, pool_size, chance_at_1, chance_at_3, chance_at_5, chance_at_10 "
                   "FROM apirec_pool_recall WHERE language = ?", params=[HEADLINE_LANGUAGE]).fetchall()
    rows = [(f"paper: {name}", "APIBench-C Python General", "", f"{v[0]:.2f}", f"{v[1]:.2f}", f"{v[2]:.2f}",
             f"{v[3]:.2f}") for name, *v in CODE_SR]
    twins = _twin_sr1(con)
    results = rerank_vs_ngram(con, config, HEADLINE_LANGUAGE, PAIRED_RANKERS)
    listed = {f"{r['model']}/{r['ranker']}" for r in results}  # the LMs the paired table lists
    read = {f"{t[-1]}/{ranker}" for (model, ranker), t in twins.items()  # the twins the paired table reads
            if f"{model}/{ranker}" in listed}
    for system, ranker, n, *sr in ours:
        population = (f"all {n:,} Python points" if ranker in ("ngram", "ide") else f"its {n:,} seeded points")
        cells = [_cell(*ci[(system, 1)], n, floor) if (system, 1) in ci else _cell(sr[0], None, None, n, floor),
                 *(_cell(v, None, None, n, floor) for v in sr[1:3]),
                 _cell(*ci[(system, 10)], n, floor) if (system, 10) in ci else _cell(sr[3], None, None, n, floor)]
        rows.append((f"ours: {system}", population, n, *cells))
        if page_rows is not None and system in read:
            page_rows.append((TWIN_ROWS, rows[-1]))
        elif page_rows is not None and system in listed and floored(n, floor):
            page_rows.append((FLOORED_ROWS, rows[-1]))
    reference = len(rows)  # the chance and ceiling rows from here on: the page's (CHANCE_ROWS)
    for ranker in ("ngram", "ide"):
        if (ranker, 1) in chance:
            rows.append((f"chance: random order of the {ranker} pool", f"all {every:,} Python points", "",
                         *(f"{chance[(ranker, k)]:.2f}" if (ranker, k) in chance else "" for k in KS)))
    if pool and pool[0][0]:
        points, recall, size, *pool_chance = pool[0]
        rows.append((f"ceiling: gold in the n-gram's top-{size} pool (no re-ranker of it exceeds this)",
                     f"all {points:,} Python points", points, *([_cell(recall, None, None, points, floor)] * len(KS))))
        rows.append((f"chance: random order of the n-gram's top-{size} pool (what the LMs re-rank)",
                     f"all {points:,} Python points", "", *(f"{v:.2f}" for v in pool_chance)))
    paired = paired_table(con, config, floor, twins=twins, results=results, page_rows=page_rows)
    if page_rows is not None and paired:  # where no LM is paired with the n-gram, chance and ceiling stay
        page_rows += [(CHANCE_ROWS, row) for row in rows[reference:]]
    points = every or max((n for _, _, n, *_ in ours), default=0)
    where = f"{points} Python recommendation points of this corpus's evaluation split" if points else \
        "this corpus's Python points (none here)"
    return "\n".join([
        "Paper Table 7 (code-based API recommendation, Python, the General domain of APIBench-C) with ours beside "
        "it: method-level Success Rate@k, `population` = which points the row is over, n = points, 95% "
        f"Poisson-bootstrap intervals for SR@1 and SR@10. A cell over fewer than {floor} points (`report.min_n`) "
        "prints its n, not a score: the rows differ in n, compare them only through the paired table below.\n",
        markdown_table(["system (paper / ours)", "population", "n", "SR@1 [95% CI]", "SR@3", "SR@5", "SR@10 [95% CI]"],
                       rows),
        paired,
        f"\n**How the populations differ:** the paper's systems (TravTrans, PyART, Deep3) were trained and scored on "
        f"APIBench-C's own Python projects and are not rerun here; ours are {where}, ranked by an n-gram trained on "
        "the train split, jedi (the IDE baseline, from the file alone) and our small LMs re-ranking the n-gram's "
        "top-N (summed log-likelihood; the `_mean` and `_pmi` rankers on the page), each LM on its own seeded "
        "subset of the points (`apirec.inference.max_items` or its zoo cap; its twin the same points). A re-ranker "
        "cannot exceed its pool's recall; `chance` is a random order of the same pool.\n"])


METRIC_COLUMNS = ["benchmark", "subset", "model", "ranker", "k", "points", "scored", "pool recall", "SR method",
                  "SR class", "MAP method (paper)", "MAP method (std)", "MAP class (paper)", "MAP class (std)",
                  "MRR method", "MRR class", "NDCG (paper)", "NDCG (top-k re-sorted)", "NDCG (std, 2/1)",
                  "NDCG (std, method)"]


def _paper_tables(con) -> list[str]:
    """NDCG@1 beside SR@1 (Tables 6-8's pattern), each ranking against its baseline on the same items (paired),
    and the cross-domain matrix (Table 9), ours beside the paper's."""
    ndcg = con.sql("SELECT benchmark || ' (' || subset || ')', model || '/' || ranker, points, sr1_method, sr1_class, "
                   "ndcg1_apibench, ndcg1_apibench_topk, ndcg1_standard, pattern_holds FROM apirec_ndcg_at_1 "
                   "WHERE ranker <> 'ngram_domain' ORDER BY ALL").fetchall()
    paired = con.sql("SELECT benchmark, subset, model, ranker, baseline, k, n, pool_recall, sr_method, "
                     "baseline_sr_method, diff, '[' || lo || ', ' || hi || ']', p_value FROM apirec_vs_baseline "
                     "ORDER BY ALL").fetchall()
    twins = con.sql("SELECT model, twin, benchmark, ranker, language, metric, n, score, twin_score, diff, "
                    "'[' || lo || ', ' || hi || ']', p_value FROM apirec_twin_diff ORDER BY ALL").fetchall()
    cross = con.sql("SELECT train_domain, test_domain, n, sr10_method, '[' || lo || ', ' || hi || ']' "
                    "FROM apirec_cross_domain ORDER BY ALL").fetchall()
    paper_cross = [(f"paper Table 9: {system}", train, *(f"{t} {v:.2f}" for t, v in zip(CROSS_DOMAIN_TEST, vals)))
                   for system, rows in CROSS_DOMAIN_SR10.items() for train, vals in rows.items()]
    return [
        "\nNDCG@1 beside SR@1 (the paper's tables fix the reading: code points are graded at method level, so "
        "Table 7 has NDCG@1 = SR@1; queries are graded 2 exact / 1 right class with IDCG from the whole returned "
        "list, so Table 6 has method SR@1 <= NDCG@1 <= class SR@1, strictly below the class SR@1 for BIKER, "
        "DeepAPI and Lucene). `pattern holds` checks ours; the top-k re-sorted and the standard readings beside:\n",
        markdown_table(["table", "system", "SR@1 method", "SR@1 class", "NDCG@1"],
                       [(t, n, m, "" if c is None else c, v) for t, n, m, c, v in NDCG_AT_1]),
        "",
        markdown_table(["benchmark (subset)", "system", "items", "SR@1 method", "SR@1 class", "NDCG@1 (paper)",
                        "NDCG@1 (top-k re-sorted)", "NDCG@1 (std, 2/1)", "pattern holds"], ndcg),
        "\nEach ranking against its benchmark's first baseline on the same items (code: the n-gram; queries: BM25), "
        "an item a model could not score counted as a miss; `pool recall` is the share of items whose gold is in "
        "the pool the ranking chose from (a re-ranker of the n-gram's top-N cannot exceed it); the difference "
        "with its 95% paired Poisson-bootstrap interval and two-sided p-value:\n",
        markdown_table(["benchmark", "subset", "model", "ranker", "baseline", "k", "items", "pool recall", "SR",
                        "baseline SR", "difference", "95% CI", "p"], paired),
        "\nEach model against its random twin (same architecture and tokenizer, random weights) on the same items "
        "and ranker, method-level SR@k, the difference with its 95% paired Poisson-bootstrap interval:\n",
        markdown_table(["model", "twin", "benchmark", "ranker", "language", "metric", "items", "model SR", "twin SR",
                        "difference", "95% CI", "p"], twins),
        "\nCross-domain (the paper's RQ6, Table 9): the n-gram trained on one domain's train split (`all`: on every "
        "domain, the paper's \"General\" row), method-level SR@10 on each evaluation domain; empty when the train "
        "split holds one domain:\n",
        markdown_table(["train domain", "test domain", "points", "SR@10", "95% CI"], cross),
        "",
        markdown_table(["system", "train domain", "", "", "", ""], paper_cross),
    ]


def _chunks(items: list, size: int = MAX_SERIES) -> list[list]:
    """`items` in as few even runs as keep each at <= size (a panel's series)."""
    parts = max(1, -(-len(items) // size))
    per = -(-len(items) // parts) if items else 0
    return [items[i * per:(i + 1) * per] for i in range(parts)]


def _system_order(system: str) -> tuple:
    ranker = system.split("/", 1)[1]
    return (ranker != "ngram", ranker != "ide", system)


def _composition(con, config) -> list[str]:
    """The evaluation points per source and API category (library_group), and a note when the paper's popular
    third-party category (Fig. 9) has no point here."""
    groups = ("stdlib", "popular_third_party", "other_third_party", "user_defined")
    rows = con.sql("SELECT source, library_group, count(*) FROM apirec_points GROUP BY ALL ORDER BY ALL").fetchall()
    if not rows:
        return []
    by_source: dict[str, dict[str, int]] = {}
    for source, group, n in rows:
        by_source.setdefault(source, {})[group] = n
    table = [(source, *(cell.get(g, 0) for g in groups), sum(cell.values())) for source, cell in sorted(by_source.items())]
    table.append(("all", *(sum(c.get(g, 0) for c in by_source.values()) for g in groups),
                  sum(sum(c.values()) for c in by_source.values())))
    out = ["\nEvaluation points per source and API category (every source with library code holds points: "
           "docs/splits.md):\n", markdown_table(["source", *groups, "points"], table)]
    if not any(c.get("popular_third_party") for c in by_source.values()):
        popular = ", ".join((config or {}).get("apirec", {}).get("popular_libraries") or []) or "none given"
        out.append("\n**No popular third-party point:** no call in the evaluation split goes to a library of "
                   f"`apirec.popular_libraries` ({popular}) from outside it (a library's calls of its own names are "
                   "user-defined), so the paper's popular-library category in Fig. 9 has nothing to compare here; add "
                   "sources that use those libraries to fill it.\n")
    return out


def _figures(con, figures: Path, link: str) -> list[str]:
    rows = con.sql("SELECT model || '/' || ranker, dimension, value, n, sr10_method, lo, hi FROM apirec_breakdown_ci "
                   "WHERE benchmark = 'code' AND dimension IN ('category', 'length_bucket', 'position') "
                   f"AND ranker IN {HEADLINE_RANKERS} ORDER BY ALL").fetchall()
    if not rows:
        return []
    dims = [("category", "API category (Fig. 9)"), ("length_bucket", "function length (Fig. 10)"),
            ("position", "point position, moderate functions (Fig. 11)")]
    groups = _chunks(sorted({r[0] for r in rows}, key=_system_order))
    fig, axes = plt.subplots(len(groups), 3, figsize=(13, 3.8 * len(groups)), sharey=True, squeeze=False)
    for g, (row, systems) in enumerate(zip(axes, groups)):
        for ax, (dim, title) in zip(row, dims):
            values = sorted({r[2] for r in rows if r[1] == dim and r[2] is not None})
            width = 0.8 / max(len(systems), 1)
            for j, system in enumerate(systems):
                got = {r[2]: r for r in rows if r[0] == system and r[1] == dim}
                xs = [i + j * width for i in range(len(values))]
                ys = [got[v][4] if v in got else 0 for v in values]
                err = [[(got[v][4] - got[v][5]) if v in got else 0 for v in values],
                       [(got[v][6] - got[v][4]) if v in got else 0 for v in values]]
                bars = ax.bar(xs, ys, width, yerr=err, capsize=2, label=system)
                bar_n(ax, bars, [got[v][3] if v in got else None for v in values])
            ax.set_xticks([i + 0.4 - width / 2 for i in range(len(values))], values, fontsize=7)
            ax.set_ylim(0, 1.18)  # room for the n written above a bar at 1
            ax.set_title(title if len(groups) == 1 else f"{title}, systems {g + 1} of {len(groups)}", fontsize=9)
        row[0].set_ylabel("method-level SR@10 (95% CI)")
        row[-1].legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.suptitle("apirec: SR@10 by breakdown (bars: 95% CI; numbers: points)", fontsize=10)
    save(fig, figures / "apirec_breakdowns.png")
    return [f"\n![SR@10 by category, function length and position]({link}/apirec_breakdowns.png)\n"]


def _curves(con, figures: Path, link: str, plots: Path | None, name: str, column: str, title: str,
            xlabel: str) -> list[str]:
    """SR@k curves per group (an API category, a context length): one panel per group (and per run of at most
    MAX_SERIES systems), the headline systems only, with the chance of a random order of each ranker's pool; the
    plot CSV holds every ranker."""
    if column == "category":
        curves = con.sql("SELECT model || '/' || ranker, category, k, sr_method, points FROM apirec_sr_by_category "
                         "WHERE benchmark = 'code' ORDER BY ALL").fetchall()
    else:
        curves = con.sql("SELECT model || '/' || ranker, context_lines, k, avg(sr_method), count(*) "
                         "FROM apirec_point_scores WHERE benchmark = 'code' GROUP BY ALL ORDER BY ALL").fetchall()
    if plots is not None:
        write_plot(plots / f"{name}.csv", ["system", "group", "x", "y", "points"], curves)  # x: k, y: method SR@k
    curves = [c for c in curves if c[0].split("/", 1)[1] in HEADLINE_RANKERS]
    if not curves:
        return []
    chance: dict[tuple, list] = {}
    for ranker, group, k, v in con.sql(CHANCE_SQL.format(cols=f"ranker, {column}", where="")).fetchall():
        chance.setdefault((ranker, group), []).append((k, v))
    series: dict[tuple, list] = {}
    points: dict = {}
    for system, group, k, sr, n in curves:
        series.setdefault((group, system), []).append((k, sr))
        points[group] = max(points.get(group, 0), n)
    groups = sorted(points, key=str)
    chunks = _chunks(sorted({s for _, s in series}, key=_system_order))
    fig, axes = plt.subplots(len(chunks), len(groups), figsize=(3.6 * len(groups) + 1.8, 3.2 * len(chunks)),
                             sharex=True, sharey=True, squeeze=False)
    for c, (row, systems) in enumerate(zip(axes, chunks)):
        for ax, group in zip(row, groups):
            for system in systems:
                pts = series.get((group, system))
                if pts:
                    ax.plot([k for k, _ in pts], [v for _, v in pts], marker="o", markersize=3.5, label=system)
            for i, ranker in enumerate(dict.fromkeys(s.split("/", 1)[1] for s in systems)):
                pts = chance.get((ranker, group), [])  # one grey and dash pattern per pool, labelled at its end
                chance_line(ax, [k for k, _ in pts], [v for _, v in pts], label=f"chance ({ranker} pool)", style=i)
            ax.set_title(f"{xlabel} {group} (n={points[group]})", fontsize=9)
            ax.set_xticks(KS)
            ax.set_ylim(-0.02, 1.02)
        row[0].set_ylabel("method-level SR@k")
        row[-1].legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    for ax in axes[-1]:
        ax.set_xlabel("k")
    fig.suptitle(title, fontsize=10)
    save(fig, figures / f"{name}.png")
    return [f"\n![{title}]({link}/{name}.png)\n"]


def section(con, figures: Path, link: str, config, plots: Path | None = None) -> Section:
    metrics = con.sql("SELECT benchmark, subset, model, ranker, k, points, scored, pool_recall, sr_method, sr_class, "
                      "map_apibench_method, map_standard_method, map_apibench_class, map_standard_class, mrr_method, "
                      "mrr_class, ndcg_apibench, ndcg_apibench_topk, ndcg_standard, ndcg_standard_method "
                      "FROM apirec_metrics ORDER BY benchmark, subset, ranker, model, k").fetchall()
    coverage = con.sql("SELECT benchmark, model, ranker, points, scored, too_long, gold_in_candidates, mean_candidates "
                       "FROM apirec_coverage ORDER BY benchmark, ranker, model").fetchall()
    ci = con.sql("SELECT benchmark, subset, model, ranker, k, n, sr_method, '[' || lo || ', ' || hi || ']' "
                 "FROM apirec_sr_ci ORDER BY benchmark, subset, ranker, model, k").fetchall()
    breakdown = con.sql("SELECT b.benchmark, b.model, b.ranker, b.dimension, b.value, b.points, b.sr1_method, "
                        "b.sr10_method, '[' || c.lo || ', ' || c.hi || ']', b.sr1_class, b.sr10_class "
                        "FROM apirec_breakdown b LEFT JOIN apirec_breakdown_ci c USING (benchmark, model, ranker, "
                        "dimension, value) WHERE b.dimension <> 'position' "
                        "UNION ALL SELECT c.benchmark, c.model, c.ranker, 'position (moderate functions)', c.value, "
                        "c.n, NULL, c.sr10_method, '[' || c.lo || ', ' || c.hi || ']', NULL, NULL "
                        "FROM apirec_breakdown_ci c WHERE c.dimension = 'position' "
                        "ORDER BY 1, 4, 3, 2, 5, 6, 7, 8, 9, 10, 11").fetchall()
    not_applicable = [f"{m} ({r})" for m, r in con.sql("SELECT model, reason FROM not_applicable "
                                                        "WHERE family = 'apirec' ORDER BY model").fetchall()]
    paper_code = [(name, *vals) for name, *vals in CODE_SR]
    ours_code = con.sql("SELECT language || ': ' || model || '/' || ranker, max(points), "
                        "max(sr_method) FILTER (WHERE k = 1), max(sr_method) FILTER (WHERE k = 3), "
                        "max(sr_method) FILTER (WHERE k = 5), max(sr_method) FILTER (WHERE k = 10) "
                        "FROM apirec_metrics_by_language WHERE benchmark = 'code' AND ranker <> 'ngram_domain' "
                        "GROUP BY ALL ORDER BY 1").fetchall()
    by_language = con.sql("SELECT benchmark, language, model, ranker, k, points, pool_recall, sr_method, sr_class, "
                          "map_apibench_method, map_standard_method, mrr_method, ndcg_apibench, ndcg_standard "
                          "FROM apirec_metrics_by_language ORDER BY benchmark, language, ranker, model, k").fetchall()
    ours_query = con.sql("SELECT model || '/' || ranker || ' (' || subset || ')', max(points), "
                         "max(sr_method) FILTER (WHERE k = 1), max(sr_method) FILTER (WHERE k = 3), "
                         "max(sr_method) FILTER (WHERE k = 5), max(sr_method) FILTER (WHERE k = 10), "
                         "subset NOT LIKE 'stdlib%' AS later FROM apirec_metrics WHERE benchmark = 'query' "
                         "GROUP BY ALL ORDER BY later, 1").fetchall()
    ours_query = [r[:-1] for r in ours_query]  # the standard-library subset (the paper's APIBench-Q) first
    out = ["Code-based API recommendation (`code`) on Python and Java points of the evaluation split (Java: calls "
           "resolved through the file's imports with tree-sitter-java, coverage in reports/metrics/apirec.json "
           "`java`): the n-gram baseline (next API given the previous one, trained on the train split of the same "
           "language) ranks every train API, jedi completes Python points at the point from the file alone (not "
           "applicable to Java), and each LM re-ranks the n-gram's top-N by the likelihood of the "
           "completed context. Query-based recommendation (`query`): docstring first sentences and comments above "
           "calls, ranked over the corpus's API universe by BM25 and by each encoder's embedding similarity; "
           "`non_leaky` leaves out the queries that name their answer, `stdlib` keeps the standard-library answers "
           "(the paper's APIBench-Q). `(paper)` columns are the paper's definitions (MAP@k over the hits within the "
           "top k; NDCG with IDCG from the whole returned list re-sorted, queries graded 2 exact API / 1 right class, "
           "code points at method level as Table 7), `(std)` columns trec_eval's. Every item counts: a point a "
           "model could not score (too long, no vector) is a miss (`scored` says how many were scored).\n",
           "Ours beside the paper (method-level SR@k; the paper's systems are not rerun here, its corpora differ, "
           "and its query benchmark is Java):\n",
           markdown_table(["system", "points", "SR@1", "SR@3", "SR@5", "SR@10"],
                          [(f"paper Table 7: {n} (Python General)", "", *v) for n, *v in paper_code]
                          + [(f"paper Table 8: {n} (IDE, 500 points by hand)", 500, *v) for n, *v in IDE_SR]
                          + [(f"ours, code: {s}", n, *v) for s, n, *v in ours_code]),
           "",
           markdown_table(["system", "queries", "SR@1", "SR@3", "SR@5", "SR@10"],
                          [(f"paper Table 6: {n} (Java, method level)", "", *v) for n, *v in QUERY_SR_METHOD]
                          + [(f"ours, query: {s}", n, *v) for s, n, *v in ours_query]),
           "\nThe paper's APIBench-Q holds standard-library APIs only (Sec. 3): the `stdlib` rows are the comparable "
           "ones, `all` (third-party and user-defined answers too) beside them.\n",
           "\nFigures: the baselines and each LM's `rerank_ngram` (the other rankers are in the tables and in "
           "reports/plots); grey lines: the chance of a random order of each ranker's pool (one grey and dash pattern per pool, named at its right end); numbers on bars: points.\n",
           *_composition(con, config),
           *_figures(con, figures, link),
           *_curves(con, figures, link, plots, "apirec_sr_by_category", "category",
                    "apirec: SR@k by API category", "category"),
           *_curves(con, figures, link, plots, "apirec_sr_by_context", "context_lines",
                    "apirec: SR@k by context length (lines before the point)", "lines"),
           "\nBy language (code: Python points from the extraction, Java points from tree-sitter-java):\n",
           markdown_table(["benchmark", "language", "model", "ranker", "k", "points", "pool recall", "SR method",
                           "SR class", "MAP method (paper)", "MAP method (std)", "MRR method", "NDCG (paper)",
                           "NDCG (std)"], by_language),
           *_paper_tables(con),
           "\nAll Table 5 metrics:\n",
           markdown_table(METRIC_COLUMNS, metrics),
           "\nCoverage and first-stage recall (the gold among the candidates ranked):\n",
           markdown_table(["benchmark", "model", "ranker", "items", "scored", "not scored", "gold in candidates",
                           "candidates"], coverage),
           "\nMethod-level SR@k with 95% Poisson-bootstrap intervals:\n",
           markdown_table(["benchmark", "subset", "model", "ranker", "k", "n", "SR", "95% CI"], ci),
           f"\nNot applicable: {'; '.join(not_applicable) or 'none'}.\n",
           "\nBreakdowns (Figures 9-11: category, function length, position; context length in lines, domain, seen "
           "in train; queries by origin and leaky), SR@10 with its 95% interval:\n",
           markdown_table(["benchmark", "model", "ranker", "dimension", "value", "points", "SR@1 method",
                           "SR@10 method", "SR@10 95% CI", "SR@1 class", "SR@10 class"], breakdown)]
    page_rows: list = []
    return Section("apirec (APIBench-C and APIBench-Q, Table 5 metrics)", headline(con, config, page_rows),
                   "\n".join(out) + "\n").leaving(page_rows)


def contamination(con, floor: int) -> list[str]:
    """This family's part of the corpus page's contamination section: its code points and queries on each side of
    each model's label (view apirec_contamination), SR@1 by label and each model against its twin on each side."""
    from pipeline.report.contamination import Split, label_part

    return label_part(
        con, floor, "apirec_contamination",
        "\n**apirec:** code points and queries on each side of each model's label, dated by the API they ask "
        "for: its definition's first pinned release (history), else its defining source's release (an upper "
        "bound).\n",
        Split(keys=(("ranker", "ranker"), ("benchmark", "benchmark")), score="score", twin_score="twin_score",
              header="SR@1", where="metric = 'SR@1'", scores_title="\nSR@1 (method level) by label:\n",
              twins_title="\nEach model against its random twin on each side (SR@1, paired on the same items):\n"))
