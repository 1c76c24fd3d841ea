"""The apiquiz section of reports/index.md: the paper's Table III with our numbers beside it first, then our
extensions. Every score is a fraction in [0, 1] (the warehouse's unit), printed with 3 decimals."""

from __future__ import annotations

from pathlib import Path

from pipeline.families.apiquiz import paper
from pipeline.report.common import (FRACTION_DIGITS, MAX_SERIES, TOO_FEW, TWIN_ROWS, Section, chance_line, clip,
                                     detectable, floored, fraction, interval, interval_cell, markdown_table, min_n,
                                     model_size, plt, rounded, save, score_cell, twinned, write_plot)

# pipeline.report.build's per-source table: how this family's items are counted per source (EvaluationSet.source_of)
PER_SOURCE = "apiquiz's quizzes by the source whose library defines the quizzed API"
DATED_BY = "api"  # pipeline.report.contamination: an item is dated by its API's (sql/15_contamination_dates.sql)
DIGITS = FRACTION_DIGITS
HEADLINE_SETTINGS = ("call", "import")  # the paper's Table III columns
HEADLINE_PROTOCOLS = ("fill_mask", "rank")  # the paper's protocol, and the candidate ranking every LM family has


# CPU-s of section() on the default build (2026-12-02):
# the report runs the longest parts first (pipeline.report.build.section_weight)
SECTION_CPU_S = 5


def table(columns: list[str], rows: list[tuple], digits: dict[int, int] | None = None) -> str:
    """markdown_table with every float printed as a fraction (3 decimals), or with `digits[i]` decimals in
    column i (lengths, counts averaged)."""
    digits = digits or {}
    return markdown_table(columns, [tuple(f"{rounded(v, digits.get(i, DIGITS)):.{digits.get(i, DIGITS)}f}"
                                          if isinstance(v, float) else v for i, v in enumerate(row))
                                    for row in rows])


def population(con) -> str:
    """One line on how our population differs from the paper's: corpus, quizzes, models and their sizes."""
    quizzes = dict(con.sql("SELECT setting, count(*) FROM apiquiz_quizzes GROUP BY ALL").fetchall())
    apis, libraries = con.sql("SELECT count(DISTINCT api), count(DISTINCT library) FROM apiquiz_quizzes").fetchall()[0]
    files, repositories = con.sql("SELECT coalesce(sum(files), 0)::BIGINT, coalesce(sum(repositories), 0)::BIGINT "
                                  "FROM corpus_summary WHERE language = 'python'").fetchall()[0]
    models = con.sql("SELECT m.name, m.parameters, coalesce(m.random, false) FROM models m WHERE m.name IN "
                     "(SELECT DISTINCT model FROM apiquiz_predictions) ORDER BY m.name").fetchall()
    trained = [(name, n) for name, n, random in models if not random]
    sizes = sorted(n for _, n in trained if n is not None)
    span = f"{model_size(sizes[0])}-{model_size(sizes[-1])} parameters" if sizes else "sizes unknown"
    return (f"**How the populations differ:** Paper: {paper.POPULATION}. Ours: {quizzes.get('call', 0):,} call and "
            f"{quizzes.get('import', 0):,} import quizzes ({apis:,} APIs of {libraries:,} libraries) from this "
            f"corpus's {files:,} Python files ({repositories:,} repositories), a seeded subset of them scored "
            f"(`apiquiz.inference.max_items`); {len(trained)} models trained or packaged here ({span}: "
            f"{', '.join(name for name, _ in trained) or 'none'}), {twinned(con, [m for m, _ in trained])}; "
            "the paper's "
            "quiz set is ours restricted to the quizzes every fill_mask model scored."
            + (f" `nl` ({quizzes['nl']:,} quizzes) is another population than the paper's RQ3: our context is the "
               "API's own docstring's first sentence, the paper's the 10 shortest of the API-sequence NL queries of "
               "[33] that name it (56,645 call quizzes), so the two `nl` figures are not comparable."
               if quizzes.get("nl") else ""))


def _populations(con) -> dict[tuple, str]:
    """(model, protocol) -> the quizzes a headline row is over: the model's drawn subset (its own
    `max_items` cap, the same quizzes as its twin's) and, for fill_mask, the paper set within it."""
    drawn = dict(((m, p), d) for m, p, d in con.sql(
        "SELECT model, protocol, sum(n)::BIGINT FROM apiquiz_rank_counts GROUP BY ALL").fetchall())
    return {key: (f"paper set of its {d:,} drawn" if key[1] == "fill_mask" else f"its {d:,} drawn")
            for key, d in drawn.items()}


def twin_lines(con, floor: int) -> list[str]:
    """Each trained model against its random twin on the headline protocols, per setting, paired on the quizzes
    both scored (apiquiz_vs_twin), with the smallest difference that n can detect (the paired CI's half-width)."""
    rows = con.sql("SELECT model, protocol, setting, n, p_at_1, twin_p_at_1, diff, lo, hi, p_value "
                   f"FROM apiquiz_vs_twin WHERE protocol IN {HEADLINE_PROTOCOLS} AND setting IN {HEADLINE_SETTINGS} "
                   "ORDER BY model, protocol, setting").fetchall()
    lines = []
    for model, protocol, setting, n, a, b, diff, lo, hi, p in rows:
        smallest = detectable(lo, hi)
        if floored(n, floor):
            # no score and no detectable difference under the floor: a bootstrap over few quizzes (or over quizzes
            # both models miss, whose CI is [0, 0]) gives a half-width that claims a precision it does not have
            lines.append(f"{model} vs its twin, {protocol}, {setting}: {TOO_FEW} (n = {n}, under report.min_n = "
                         f"{floor}): no difference is read here")
        else:
            lines.append(f"{model} vs its twin, {protocol}, {setting} (n = {n}): {fraction(a)} vs {fraction(b)}, "
                         f"difference {fraction(diff)} {interval(lo, hi)}, p = {fraction(p)}; the smallest "
                         f"difference this n detects: ±{fraction(smallest)}")
    return lines


def headline(con, config=None, page_rows: list | None = None) -> str:
    """The paper's Table III (P@1 per model, call and import) and ours beside it, same columns, with n, a 95% CI
    and the chance of a random ranking of the same quizzes on our side (apiquiz_headline); a cell over fewer
    than `report.min_n` quizzes prints "too few items (n = N)" instead of its score. Then each model against
    its random twin (the smallest difference its n detects) and the line on how the populations differ.
    `page_rows` (a list) gets (TWIN_ROWS, row) for each twin's row whose model is read against it below: the
    first read leaves those to the page (Section.leaving)."""
    floor = min_n(config or {})
    columns = ["paper / ours", "model", "protocol", "quizzes"] + [f"{s} {c}" for s in HEADLINE_SETTINGS
                                                                   for c in ("P@1", "95% CI", "chance", "n")]
    rows = []
    for model, call, imp in paper.P_AT_1_CALL_IMPORT:
        n = paper.quizzes(model)
        protocol = "prompted" if model.startswith("GPT") else "fill_mask"
        # the paper's numbers keep their printed precision (23.90 -> 0.2390)
        rows.append(("paper", model, protocol, "paper set", fraction(call, 4), "", "", n[0], fraction(imp, 4), "",
                     "", n[1]))
    ours: dict[tuple, dict] = {}
    for model, protocol, quiz_set, setting, n, p1, lo, hi, chance in con.sql(
            "SELECT model, protocol, quiz_set, setting, n, p_at_1, lo, hi, chance_at_1 FROM apiquiz_headline "
            f"WHERE protocol IN {HEADLINE_PROTOCOLS} AND setting IN {HEADLINE_SETTINGS} ORDER BY ALL").fetchall():
        ours.setdefault((protocol, model, quiz_set), {})[setting] = (
            score_cell(p1, n, floor), interval_cell(clip(lo), clip(hi), n, floor), fraction(chance), n)
    populations = _populations(con)
    paired = {(twin, protocol) for twin, protocol in con.sql(  # the twins the paragraph below reads their model against
        "SELECT w.twin, v.protocol FROM apiquiz_vs_twin v JOIN model_twins w USING (model) "
        f"WHERE v.protocol IN {HEADLINE_PROTOCOLS} AND v.setting IN {HEADLINE_SETTINGS}").fetchall()}
    for (protocol, model, quiz_set), by in sorted(ours.items(), key=lambda kv: (HEADLINE_PROTOCOLS.index(kv[0][0]),
                                                                                 kv[0][1])):
        rows.append(("ours", model, protocol, populations.get((model, protocol), quiz_set),
                     *(v for s in HEADLINE_SETTINGS for v in by.get(s, ("", "", "", "")))))
        if page_rows is not None and (model, protocol) in paired:
            page_rows.append((TWIN_ROWS, rows[-1]))
    twins = twin_lines(con, floor)
    return "\n".join([
        "The paper's Table III (P@1, API call and import quizzes) and ours beside it. `fill_mask` is the paper's "
        "protocol (the masked answer token, on the quizzes whose answer is one token of every compared model's "
        "vocabulary: `paper set`); `rank` ranks the quiz's candidate names by the model's log-likelihood "
        "(whole names, every LM family: beyond the paper). `quizzes`: the population of the row (each model "
        "scores its own seeded subset, `apiquiz.inference.max_items` or its zoo cap; its twin the same quizzes); "
        "`n`: quizzes scored; 95% CI: Poisson bootstrap (10,000 replicates); `chance`: P@1 of a uniform random "
        "ranking of each quiz's ranked items (mean of 1 / candidates; the vocabulary for fill_mask) over the same "
        f"quizzes. A cell over fewer than {floor} quizzes (`report.min_n`) prints its n, not a score. P@1 is a "
        "fraction (the paper's 23.90 is 0.2390).\n",
        markdown_table(columns, rows),
        *(["\n**Model vs its random twin** (P@1, paired on the quizzes both scored; the difference's 95% CI from a "
           "paired Poisson bootstrap of 10,000 replicates, whose half-width is the smallest difference the n can detect): "
           + "; ".join(twins) + ".\n"] if twins else []),
        "\n" + population(con) + "\n"])


def _distractors(con) -> list[str]:
    """Distractor kinds as generated (how often a distractor really is of the answer's kind): per gold
    kind, the candidates of the gold's kind, of it by the inventory alone (not guessed from the name), and by
    the former role rule."""
    columns = {r[0] for r in con.sql("DESCRIBE apiquiz_quizzes").fetchall()}
    if "level_kind" not in columns:
        return []
    rows = con.sql("SELECT level_kind, count(*), avg(len(candidates)), "
                   "sum(candidates_same_kind) / greatest(1, sum(len(candidates))), "
                   "sum(candidates_same_kind_known) / greatest(1, sum(len(candidates))), "
                   "sum(candidates_same_role) / greatest(1, sum(len(candidates))) "
                   "FROM apiquiz_quizzes GROUP BY ALL ORDER BY ALL").fetchall()
    return ["\nCandidates per quiz by the gold level's kind (module / class / function / method): the share of "
            "the gold's kind, of it by the inventory alone (a kind not in the inventory is guessed from the name), "
            "and of the same role (module / member / callable: the former rule, which mixed kinds):\n",
            table(["gold kind", "quizzes", "candidates", "same kind", "known same kind", "same role"], rows,
                  {2: 1})]


def section(con, figures: Path, link: str, config, plots: Path | None = None) -> Section:
    rows = [(*r[:5], interval(*r[5:7]), *r[7:]) for r in con.sql(
        "SELECT b.model, b.protocol, b.setting, b.scored, b.p_at_1, ci.lo, ci.hi, b.chance_at_1, b.p_at_5, b.p_at_10, "
        "b.chance_at_10 FROM apiquiz_by_setting b LEFT JOIN apiquiz_p_at_1_ci ci USING (model, protocol, setting) "
        "WHERE b.scored > 0 ORDER BY b.protocol, b.model, b.setting").fetchall()]
    twins = [(*r[:7], interval(*r[7:9]), r[9]) for r in con.sql(
        "SELECT model, protocol, setting, n, p_at_1, twin_p_at_1, diff, lo, hi, p_value FROM apiquiz_vs_twin "
        "ORDER BY ALL").fetchall()]
    not_applicable = [f"{m} ({r})" for m, r in con.sql("SELECT model, reason FROM not_applicable "
                                                        "WHERE family = 'apiquiz' ORDER BY model").fetchall()]
    vs_twin = [(*r[:9], interval(*r[9:11]), *r[11:]) for r in con.sql(
        "SELECT model, twin, protocol, metric, n, score, twin_score, chance, diff, lo, hi, p_value, "
        "CASE WHEN beats_twin THEN 'yes' ELSE 'no' END FROM apiquiz_twin_diff ORDER BY model, protocol, metric"
    ).fetchall()]
    bias = con.sql("SELECT model, protocol, scored, p_at_1, chance, top1_chars, gold_chars, pool_chars "
                   "FROM apiquiz_length_bias ORDER BY model, protocol").fetchall()
    page_rows: list = []
    out = ["## apiquiz (INK, Table III)\n",
           headline(con, config, page_rows),
           "### apiquiz: beyond the paper\n",
           "P@k over scored quizzes (fractions). `fill_mask` is the paper's protocol (masked LMs, answers that are "
           "one token of the model's tokenizer). The other protocols rank the quiz's candidates (every LM family, "
           "multi-token answers included) from one scoring pass: `rank` by the summed log-likelihood of the "
           "scored tokens, `rank_mean` by its mean per scored token (model tokens, not bytes as "
           "lm-evaluation-harness's acc_norm), `rank_pmi` by the sum minus the same tokens' log-likelihood "
           "without the context (a PMI; `pipeline/runtime/plan.py` says what is scored and what \"without "
           "the context\" is per model family). `fill_mask_own_first` / `_last`: the paper's first/last-token masks "
           "under the model's own tokenizer (on the levels it splits). nl quizzes whose context gives the answer away "
           "are left out (below). P@k counts only quizzes with more than k ranked items (a rank protocol ranks at "
           "most 50 candidates: P@50 would be 1 by construction); chance is a random order's P@k on the same "
           "quizzes.\n",
           table(["model", "protocol", "setting", "scored", "P@1", "95% CI", "chance@1", "P@5", "P@10",
                  "chance@10"], rows),
           "\nEach trained model against its random twin over all settings, on the quizzes both scored "
           "(P@1; P@10 too for fill_mask), with chance beside it (min(k, n)/n for n ranked items) and the "
           "difference's 95% CI (paired Poisson bootstrap, 1000 replicates); `beats twin`: the CI excludes zero "
           "in the trained model's favour. A twin far above chance shows a protocol's bias, not knowledge:\n",
           table(["model", "twin", "protocol", "metric", "quizzes", "score", "twin", "chance",
                  "difference", "95% CI", "p", "beats twin"], vs_twin),
           "\nLength bias per protocol: mean characters of the top-1 candidate, of the gold and of a candidate in "
           "the ranked pool. A summed log-likelihood prefers short candidates (top-1 shorter than the pool), "
           "whatever the network knows:\n",
           table(["model", "protocol", "scored", "P@1", "chance", "top-1 chars", "gold chars",
                  "pool chars"], bias, {5: 2, 6: 2, 7: 2}),
           "\nTrained models against their random twins per setting (P@1, paired Poisson bootstrap):\n",
           table(["model", "protocol", "setting", "quizzes", "P@1", "twin P@1", "difference", "95% CI",
                  "p"], twins),
           f"\nNot applicable: {'; '.join(not_applicable) or 'none'}.\n",
           "\nQuizzes per stratum: generated, drawn into the inference subset (`apiquiz.inference.max_items`, "
           "at least `min_per_stratum` of each), and scored (fewest and most over the models):\n",
           markdown_table(["setting", "mask position", "generated", "protocol", "drawn", "scored (min)",
                           "scored (max)"],
                          con.sql("SELECT setting, mask_position, quizzes, coalesce(protocol, '-'), "
                                  "coalesce(drawn, 0), coalesce(min_scored, 0), coalesce(max_scored, 0) "
                                  "FROM apiquiz_strata ORDER BY ALL").fetchall()),
           *_distractors(con),
           "\nThe paper's protocol (fill_mask, masked LMs): on the paper's quiz set (answers one token of every "
           "compared model's tokenizer: every model with fill_mask rows scored them), and beside it on each "
           "model's own tokenizer (its single-token levels whole, its own first/last token of the levels it "
           "splits). Leaking nl quizzes left out:\n",
           table(["model", "quiz set", "mask position", "scored", "P@1", "P@5", "P@10"],
                 con.sql("SELECT * FROM apiquiz_fill_mask ORDER BY quiz_set DESC, model, mask_position").fetchall()),
           "\nnl quizzes whose context contains the answer (ignoring case: the masked name, or the first/last "
           "token a first/last-token quiz masks), left out of every table above:\n",
           table(["mask position", "nl quizzes", "leaking", "leaking (fraction)", "drawn", "drawn leaking"],
                 con.sql("SELECT * FROM apiquiz_leaks").fetchall() or [("(no nl quizzes)", 0, 0, None, 0, 0)])]
    corpus = con.sql("SELECT model, corpus, files_read, split_files, bytes_read, split_bytes, quizzes, split_seen, "
                     "model_seen, seen_to_unseen, unseen_to_seen, rq4_unseen_library FROM apiquiz_seen_vs_split "
                     "WHERE model IN (SELECT DISTINCT model FROM apiquiz_predictions) ORDER BY model").fetchall()
    if corpus:
        out += ["\nSeen per model, from the text its card says it read (`exact`: the blocks its batches drew; "
                "`none`: a random twin; `unknown`: a packaged or hub model, never guessed), against the split-level "
                "flag (called in any train-split file): files and bytes read vs the train split's, quizzes seen "
                "each way, and how many change side:\n",
                markdown_table(["model", "corpus", "files read", "split files", "bytes read", "split bytes",
                                "quizzes", "seen (split)", "seen (model)", "seen -> unseen", "unseen -> seen",
                                "unseen library (RQ4)"], corpus)]
    seen = con.sql("SELECT model, protocol, seen, coalesce(sum(n) FILTER (WHERE status = 'ok'), 0)::BIGINT AS scored, "
                   "apiquiz_p_at(1, n, gold_rank, n_ranked, status), apiquiz_chance_at(1, n, n_ranked, status) "
                   "FROM apiquiz_rank_counts WHERE NOT context_leak GROUP BY ALL HAVING scored > 0 "
                   "ORDER BY ALL").fetchall()
    if seen:
        out += ["\nP@1 by the model's own seen/unseen (`unseen_library`: the paper's RQ4 unseen split, no API of the "
                "library seen; `unseen_api_seen_library`: the rest of the unseen):\n",
                table(["model", "protocol", "seen", "scored", "P@1", "chance@1"], seen)]
    curves = con.sql("SELECT model, protocol, p_at_1, p_at_5, p_at_10, p_at_20, p_at_50, chance_at_1, chance_at_5, "
                     "chance_at_10, chance_at_20, chance_at_50, scored FROM apiquiz_p_at_k ORDER BY ALL").fetchall()
    ks = (1, 5, 10, 20, 50)
    if plots is not None:  # x: k, y: P@k (a fraction); only the k below the number ranked (the rest saturate)
        write_plot(plots / "apiquiz_p_at_k.csv", ["model", "protocol", "x", "y", "chance", "scored"],
                   [(m, p, k, v, c, r[-1]) for m, p, *r in curves for k, v, c in zip(ks, r[:5], r[5:10])
                    if v is not None])
    if curves:  # one panel per protocol and run of <= MAX_SERIES models, the protocol's chance in grey
        panels = []
        for protocol in sorted({c[1] for c in curves}):
            rows = [c for c in curves if c[1] == protocol]
            for start in range(0, len(rows), MAX_SERIES):
                panels.append((protocol, rows[start:start + MAX_SERIES]))
        cols = min(3, len(panels))
        nrows = -(-len(panels) // cols)
        fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols + 1, 3.3 * nrows), sharey=True, squeeze=False)
        for ax, (protocol, rows) in zip(axes.flat, panels):
            chance = {}
            for model, _, *r in rows:
                points = [(k, v, c) for k, v, c in zip(ks, r[:5], r[5:10]) if v is not None]
                ax.plot([k for k, _, _ in points], [v for _, v, _ in points], marker="o", markersize=3.5,
                        label=f"{model} (n={r[-1]})")
                for k, _, c in points:  # the chance of the quizzes the models scored (equal pools: equal chance)
                    chance.setdefault(k, []).append(c)
            xs = sorted(chance)
            chance_line(ax, xs, [sum(chance[k]) / len(chance[k]) for k in xs])
            ax.set_xscale("log")
            ax.set_xticks(list(ks), [str(k) for k in ks])
            ax.set_xlabel("k")
            ax.set_title(protocol, fontsize=9)
            ax.legend(fontsize=6, loc="best")
        for ax in list(axes.flat)[len(panels):]:
            ax.set_visible(False)
        for row in axes:
            row[0].set_ylabel("P@k")
        fig.suptitle("apiquiz: precision at k per protocol (dashed grey: chance)", fontsize=10)
        save(fig, figures / "apiquiz_p_at_k.png")
        out.append(f"\n![P@k per model]({link}/apiquiz_p_at_k.png)\n")
    return Section.cut("\n".join(out) + "\n", "### apiquiz: beyond the paper").leaving(page_rows)


def contamination(con, floor: int) -> list[str]:
    """This family's part of the corpus page's contamination section: its quizzes on each side of each model's
    label (view apiquiz_contamination), P@1 by label and each model against its twin on each side."""
    from pipeline.report.contamination import Split, label_part

    return label_part(
        con, floor, "apiquiz_contamination",
        "\n**apiquiz:** quizzes (context leaks out) on each side of each model's label, dated by the API's "
        "definition: the first pinned release of its defining source that defines it (history), else that source's "
        "release (an upper bound), never by the code calling it.\n",
        Split(keys=(("protocol", "protocol"),), score="p_at_1", twin_score="twin_p_at_1", header="P@1",
              scores_title="\nP@1 (all settings pooled) by label:\n",
              twins_title="\nEach model against its random twin on each side (paired on the same quizzes):\n"))
