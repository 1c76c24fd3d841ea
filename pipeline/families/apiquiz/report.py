"""The apiquiz section of reports/index.md: the paper's Table III with our numbers beside it."""

from __future__ import annotations

from pathlib import Path

from pipeline.families.apiquiz.paper import P_AT_1_CALL_IMPORT
from pipeline.report.common import markdown_table, plt, save, write_plot


def _distractors(con) -> list[str]:
    """Distractor kinds as generated (issue 24 item 5): per gold kind, the candidates of the gold's kind,
    of it by the inventory alone (not guessed from the name), and by the former role rule."""
    columns = {r[0] for r in con.sql("DESCRIBE apiquiz_quizzes").fetchall()}
    if "level_kind" not in columns:
        return []
    rows = con.sql("SELECT level_kind, count(*), round(avg(len(candidates)), 1), "
                   "round(100 * sum(candidates_same_kind) / greatest(1, sum(len(candidates))), 1), "
                   "round(100 * sum(candidates_same_kind_known) / greatest(1, sum(len(candidates))), 1), "
                   "round(100 * sum(candidates_same_role) / greatest(1, sum(len(candidates))), 1) "
                   "FROM apiquiz_quizzes GROUP BY ALL ORDER BY ALL").fetchall()
    return ["\nCandidates per quiz by the gold level's kind (module / class / function / method): the share of "
            "the gold's kind, of it by the inventory alone (a kind not in the inventory is guessed from the name), "
            "and of the same role (module / member / callable: the former rule, which mixed kinds):\n",
            markdown_table(["gold kind", "quizzes", "candidates", "same kind %", "known same kind %",
                            "same role %"], rows)]


def section(con, figures: Path, link: str, config, plots: Path | None = None) -> str:
    rows = con.sql("SELECT b.model, b.protocol, b.setting, b.scored, b.p_at_1, "
                   "'[' || ci.lo || ', ' || ci.hi || ']', b.chance_at_1, b.p_at_5, b.p_at_10, b.chance_at_10 "
                   "FROM apiquiz_by_setting b LEFT JOIN apiquiz_p_at_1_ci ci USING (model, protocol, setting) "
                   "WHERE b.scored > 0 ORDER BY b.protocol, b.model, b.setting").fetchall()
    twins = con.sql("SELECT model, protocol, setting, n, p_at_1, twin_p_at_1, diff, "
                    "'[' || lo || ', ' || hi || ']', p_value FROM apiquiz_vs_twin ORDER BY ALL").fetchall()
    not_applicable = [f"{m} ({r})" for m, r in con.sql("SELECT model, reason FROM not_applicable "
                                                        "WHERE family = 'apiquiz' ORDER BY model").fetchall()]
    headline = con.sql("SELECT model, twin, protocol, metric, n, score, twin_score, chance, diff, "
                       "'[' || lo || ', ' || hi || ']', p_value, CASE WHEN beats_twin THEN 'yes' ELSE 'no' END "
                       "FROM apiquiz_twin_diff ORDER BY model, protocol, metric").fetchall()
    bias = con.sql("SELECT model, protocol, scored, p_at_1, chance, top1_chars, gold_chars, pool_chars "
                   "FROM apiquiz_length_bias ORDER BY model, protocol").fetchall()
    out = ["## apiquiz (INK, Table III)\n",
           "P@k in percent over scored quizzes. `fill_mask` is the paper's protocol (masked LMs, answers that are "
           "one token of the model's tokenizer). The other protocols rank the quiz's candidates (every LM family, "
           "multi-token answers included) from one scoring pass: `rank` by the summed log-likelihood of the "
           "scored tokens, `rank_mean` by its mean per scored token (model tokens, not bytes as "
           "lm-evaluation-harness's acc_norm), `rank_pmi` by the sum minus the same tokens' log-likelihood "
           "without the context (a PMI; `pipeline/runtime/scoring.py` says what is scored and what \"without "
           "the context\" is per model family). `fill_mask_own_first` / `_last`: the paper's first/last-token masks "
           "under the model's own tokenizer (on the levels it splits). nl quizzes whose context gives the answer away "
           "are left out (below). P@k counts only quizzes with more than k ranked items (a rank protocol ranks at "
           "most 50 candidates: P@50 would be 100% by construction); chance is a random order's P@k on the same "
           "quizzes.\n",
           markdown_table(["model", "protocol", "setting", "scored", "P@1", "95% CI", "chance@1", "P@5", "P@10",
                           "chance@10"], rows),
           "\nHeadline: each trained model against its random twin over all settings, on the quizzes both scored "
           "(P@1; P@10 too for fill_mask), with chance beside it (min(k, n)/n for n ranked items) and the "
           "difference's 95% CI (paired Poisson bootstrap, 1000 replicates); `beats twin`: the CI excludes zero "
           "in the trained model's favour. A twin far above chance shows a protocol's bias, not knowledge:\n",
           markdown_table(["model", "twin", "protocol", "metric", "quizzes", "score", "twin", "chance",
                           "difference", "95% CI", "p", "beats twin"], headline),
           "\nLength bias per protocol: mean characters of the top-1 candidate, of the gold and of a candidate in "
           "the ranked pool. A summed log-likelihood prefers short candidates (top-1 shorter than the pool), "
           "whatever the network knows:\n",
           markdown_table(["model", "protocol", "scored", "P@1", "chance", "top-1 chars", "gold chars",
                           "pool chars"], bias),
           "\nTrained models against their random twins per setting (P@1, paired Poisson bootstrap):\n",
           markdown_table(["model", "protocol", "setting", "quizzes", "P@1", "twin P@1", "difference", "95% CI",
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
           markdown_table(["model", "quiz set", "mask position", "scored", "P@1", "P@5", "P@10"],
                          con.sql("SELECT * FROM apiquiz_fill_mask ORDER BY quiz_set DESC, model, "
                                  "mask_position").fetchall()),
           "\nnl quizzes whose context contains the answer (ignoring case: the masked name, or the first/last "
           "token a first/last-token quiz masks), left out of every table above:\n",
           markdown_table(["mask position", "nl quizzes", "leaking", "leaking %", "drawn", "drawn leaking"],
                          con.sql("SELECT * FROM apiquiz_leaks").fetchall()
                          or [("(no nl quizzes)", 0, 0, None, 0, 0)]),
           "\nPaper, P@1 (call / import):\n",
           markdown_table(["model", "call", "import"], P_AT_1_CALL_IMPORT)]
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
                markdown_table(["model", "protocol", "seen", "scored", "P@1", "chance@1"], seen)]
    curves = con.sql("SELECT model, protocol, p_at_1, p_at_5, p_at_10, p_at_20, p_at_50, chance_at_1, chance_at_5, "
                     "chance_at_10, chance_at_20, chance_at_50, scored FROM apiquiz_p_at_k ORDER BY ALL").fetchall()
    ks = (1, 5, 10, 20, 50)
    if plots is not None:  # x: k, y: P@k (%); only the k below the number ranked (the rest saturate)
        write_plot(plots / "apiquiz_p_at_k.csv", ["model", "protocol", "x", "y", "chance", "scored"],
                   [(m, p, k, v, c, r[-1]) for m, p, *r in curves for k, v, c in zip(ks, r[:5], r[5:10])
                    if v is not None])
    if curves:
        fig, ax = plt.subplots(figsize=(6, 4))
        for model, protocol, *r in curves:
            points = [(k, v, c) for k, v, c in zip(ks, r[:5], r[5:10]) if v is not None]
            line, = ax.plot([k for k, _, _ in points], [v for _, v, _ in points], marker="o",
                            label=f"{model} ({protocol})")
            ax.plot([k for k, _, _ in points], [c for _, _, c in points], ls=":", color=line.get_color(), lw=1)
        ax.set_xscale("log")
        ax.set_xlabel("k")
        ax.set_ylabel("P@k (%)")
        ax.set_title("apiquiz: precision at k (dotted: chance)")
        ax.legend(fontsize=7)
        save(fig, figures / "apiquiz_p_at_k.png")
        out.append(f"\n![P@k per model]({link}/apiquiz_p_at_k.png)\n")
    return "\n".join(out) + "\n"
