-- Predictions counted per model, protocol, quiz stratum, status and gold rank, once, when the
-- warehouse is built: every P@k below is exact from these counts, and at scale (10M prediction rows,
-- bench/warehouse_speed.py) the join with the quizzes is paid once instead of per query.
CREATE TABLE apiquiz_rank_counts AS
SELECT p.model, p.protocol, q.setting, q.mask_position, q.seen, p.status, p.gold_rank, count(*) AS n
FROM apiquiz_predictions p JOIN apiquiz_quizzes q USING (quiz_id)
GROUP BY ALL
ORDER BY ALL;

-- apiquiz precision at k (percent of scored quizzes whose gold is in the top k), per model,
-- protocol, setting, mask position and seen/unseen. `scored` < `quizzes` when answers are
-- multi-token (fill_mask) or texts too long. P@k = success_at_k (pipeline/metrics).
CREATE VIEW apiquiz_precision AS
SELECT model, protocol, setting, mask_position, seen,
       sum(n)::BIGINT AS quizzes,
       coalesce(sum(n) FILTER (WHERE status = 'ok'), 0)::BIGINT AS scored,
       round(100 * sum(n * success_at_k(gold_rank, 1)) FILTER (WHERE status = 'ok') / sum(n) FILTER (WHERE status = 'ok'), 2) AS p_at_1,
       round(100 * sum(n * success_at_k(gold_rank, 5)) FILTER (WHERE status = 'ok') / sum(n) FILTER (WHERE status = 'ok'), 2) AS p_at_5,
       round(100 * sum(n * success_at_k(gold_rank, 10)) FILTER (WHERE status = 'ok') / sum(n) FILTER (WHERE status = 'ok'), 2) AS p_at_10,
       round(100 * sum(n * success_at_k(gold_rank, 20)) FILTER (WHERE status = 'ok') / sum(n) FILTER (WHERE status = 'ok'), 2) AS p_at_20,
       round(100 * sum(n * success_at_k(gold_rank, 50)) FILTER (WHERE status = 'ok') / sum(n) FILTER (WHERE status = 'ok'), 2) AS p_at_50
FROM apiquiz_rank_counts
GROUP BY ALL
ORDER BY ALL;

-- Like the paper's Table III: P@k per model, protocol and setting (all mask positions, seen and unseen).
CREATE VIEW apiquiz_by_setting AS
SELECT model, protocol, setting,
       coalesce(sum(n) FILTER (WHERE status = 'ok'), 0)::BIGINT AS scored,
       round(100 * sum(n * success_at_k(gold_rank, 1)) FILTER (WHERE status = 'ok') / sum(n) FILTER (WHERE status = 'ok'), 2) AS p_at_1,
       round(100 * sum(n * success_at_k(gold_rank, 5)) FILTER (WHERE status = 'ok') / sum(n) FILTER (WHERE status = 'ok'), 2) AS p_at_5,
       round(100 * sum(n * success_at_k(gold_rank, 10)) FILTER (WHERE status = 'ok') / sum(n) FILTER (WHERE status = 'ok'), 2) AS p_at_10
FROM apiquiz_rank_counts
GROUP BY ALL
ORDER BY ALL;

-- P@k over all scored quizzes per model and protocol (the P@k curves).
CREATE VIEW apiquiz_p_at_k AS
SELECT model, protocol, sum(n)::BIGINT AS scored,
       100 * sum(n * success_at_k(gold_rank, 1)) FILTER (WHERE status = 'ok') / sum(n) FILTER (WHERE status = 'ok') AS p_at_1, 100 * sum(n * success_at_k(gold_rank, 5)) FILTER (WHERE status = 'ok') / sum(n) FILTER (WHERE status = 'ok') AS p_at_5,
       100 * sum(n * success_at_k(gold_rank, 10)) FILTER (WHERE status = 'ok') / sum(n) FILTER (WHERE status = 'ok') AS p_at_10, 100 * sum(n * success_at_k(gold_rank, 20)) FILTER (WHERE status = 'ok') / sum(n) FILTER (WHERE status = 'ok') AS p_at_20,
       100 * sum(n * success_at_k(gold_rank, 50)) FILTER (WHERE status = 'ok') / sum(n) FILTER (WHERE status = 'ok') AS p_at_50
FROM apiquiz_rank_counts
WHERE status = 'ok'
GROUP BY ALL
ORDER BY ALL;

-- Per-quiz hits at 1, the input of the bootstrap confidence intervals below.
CREATE VIEW apiquiz_hits_at_1 AS
SELECT p.model, p.protocol, q.setting, p.quiz_id AS item_id, success_at_k(p.gold_rank, 1) AS value
FROM apiquiz_predictions p JOIN apiquiz_quizzes q USING (quiz_id)
WHERE p.status = 'ok';

-- P@1 with its sample count and a 95% Poisson-bootstrap confidence interval (1000 replicates, seed 0).
-- The bootstrap needs only each group's histogram of hits (how many scored quizzes hit, how many miss:
-- pipeline/metrics/README.md), read from apiquiz_rank_counts: the same histogram as counting
-- apiquiz_hits_at_1, so the same CIs, without rescanning and re-joining the predictions.
CREATE VIEW apiquiz_p_at_1_ci AS
WITH hits AS (
    SELECT model, protocol, setting, success_at_k(gold_rank, 1) AS value, sum(n) AS items
    FROM apiquiz_rank_counts WHERE status = 'ok' GROUP BY ALL
)
SELECT model, protocol, setting, n, round(100 * mean, 2) AS p_at_1, round(100 * lo, 2) AS lo, round(100 * hi, 2) AS hi
FROM poisson_bootstrap_hist(hits)
ORDER BY ALL;

-- Every trained model's scored quizzes paired with its random twin's on the same quiz and protocol
-- (both scored), counted per setting, both gold ranks (capped at 11: every P@k with k <= 10 is exact
-- from these counts) and the model's n_ranked, once, when the warehouse is built: the twin views
-- below bootstrap these histograms instead of pairing every prediction per query. `quizzed`: the
-- quiz is in apiquiz_quizzes (always, in a run; setting is NULL otherwise).
CREATE TABLE apiquiz_twin_rank_pairs AS
WITH ok AS (SELECT quiz_id, model, protocol, gold_rank, n_ranked FROM apiquiz_predictions WHERE status = 'ok')
SELECT t.model, w.twin, t.protocol, q.setting, q.quiz_id IS NOT NULL AS quizzed,
       least(t.gold_rank, 11) AS rank_a, least(r.gold_rank, 11) AS rank_b, t.n_ranked, count(*) AS n
FROM ok t
JOIN model_twins w ON w.model = t.model
JOIN ok r ON r.model = w.twin AND r.protocol = t.protocol AND r.quiz_id = t.quiz_id
LEFT JOIN apiquiz_quizzes q ON q.quiz_id = t.quiz_id
GROUP BY ALL
ORDER BY ALL;

-- A model against its random twin (models.card says which) on the same quizzes: the difference in
-- P@1, its 95% CI and the paired bootstrap p-value.
-- (The (model, twin) pairs are resolved first: joined to the hits through the JSON condition, the
-- optimizer paired every model's hits with every other's per item: 37 s at 100k rows, out of memory at 1M.)
CREATE VIEW apiquiz_twin_pairs AS
SELECT t.model, t.protocol, t.setting, t.item_id, t.value AS a, r.value AS b
FROM apiquiz_hits_at_1 t
JOIN model_twins w ON w.model = t.model
JOIN apiquiz_hits_at_1 r ON r.model = w.twin AND r.protocol = t.protocol AND r.setting = t.setting
                        AND r.item_id = t.item_id;

-- (apiquiz_twin_pairs above is the per-quiz drill-down; the CIs read its histogram, apiquiz_twin_rank_pairs.)
CREATE VIEW apiquiz_vs_twin AS
WITH pair_hits AS (
    SELECT model, protocol, setting, success_at_k(rank_a, 1) AS a, success_at_k(rank_b, 1) AS b, sum(n) AS items
    FROM apiquiz_twin_rank_pairs WHERE quizzed GROUP BY ALL
)
SELECT model, protocol, setting, n, round(100 * mean_a, 2) AS p_at_1, round(100 * mean_b, 2) AS twin_p_at_1,
       round(100 * diff, 2) AS diff, round(100 * lo, 2) AS lo, round(100 * hi, 2) AS hi, p_value
FROM poisson_paired_bootstrap_hist(pair_hits)
ORDER BY ALL;

-- The inference subset per stratum (setting, mask position): quizzes generated, drawn into the
-- subset (apiquiz.inference.max_items / min_per_stratum) and scored, per protocol (min and max
-- over models: fill_mask scores only single-token answers, so it varies by tokenizer).
CREATE VIEW apiquiz_strata AS
WITH generated AS (
    SELECT setting, mask_position, count(*) AS quizzes FROM apiquiz_quizzes GROUP BY ALL
), drawn AS (  -- from the counts kept at build (the same join of predictions and quizzes)
    SELECT setting, mask_position, protocol, model, sum(n)::BIGINT AS drawn,
           coalesce(sum(n) FILTER (WHERE status = 'ok'), 0)::BIGINT AS scored
    FROM apiquiz_rank_counts
    GROUP BY ALL
)
SELECT g.setting, g.mask_position, g.quizzes, d.protocol, max(d.drawn) AS drawn,
       min(d.scored) AS min_scored, max(d.scored) AS max_scored
FROM generated g LEFT JOIN drawn d USING (setting, mask_position)
GROUP BY ALL
ORDER BY ALL;

-- The headline trained-vs-twin comparison over all settings (issue 16 item 2), per ranking protocol:
-- P@1 for the candidate rankings (`rank` summed, `rank_mean` per token, `rank_pmi`), P@1 and P@10
-- for fill_mask (the masked LM's single-token quizzes). Paired on the quizzes both scored.
CREATE VIEW apiquiz_twin_hits AS
SELECT t.model, twin.twin, t.protocol, k.k, t.quiz_id AS item_id,
       success_at_k(t.gold_rank, k.k) AS a, success_at_k(r.gold_rank, k.k) AS b
FROM apiquiz_predictions t
JOIN model_twins twin ON twin.model = t.model
JOIN apiquiz_predictions r ON r.model = twin.twin AND r.protocol = t.protocol AND r.quiz_id = t.quiz_id
CROSS JOIN (VALUES (1), (10)) k(k)
WHERE t.status = 'ok' AND r.status = 'ok' AND (k.k = 1 OR t.protocol = 'fill_mask');

-- ... with chance beside it (a uniformly random order puts the gold in the top k with probability
-- min(k, n)/n, n = the candidates or the vocabulary ranked), the difference's 95% CI (paired Poisson
-- bootstrap, 1000 replicates, seed 0) and whether that CI excludes zero in the trained model's favour.
-- (Read from the histogram apiquiz_twin_rank_pairs: the same pairs as apiquiz_twin_hits, counted.)
CREATE VIEW apiquiz_twin_diff AS
WITH pairs AS (
    SELECT p.*, k.k FROM apiquiz_twin_rank_pairs p CROSS JOIN (VALUES (1), (10)) k(k)
    WHERE k.k = 1 OR p.protocol = 'fill_mask'
),
pair_hits AS (
    SELECT model, twin, protocol, k, success_at_k(rank_a, k) AS a, success_at_k(rank_b, k) AS b, sum(n) AS items
    FROM pairs GROUP BY ALL
),
boot AS (SELECT * FROM poisson_paired_bootstrap_hist(pair_hits)),
chance AS (
    SELECT model, protocol, k, 100 * sum(n * least(k, n_ranked)::DOUBLE / n_ranked) / sum(n) AS chance
    FROM pairs GROUP BY ALL
)
SELECT b.model, b.twin, b.protocol, 'P@' || b.k AS metric, b.n, round(100 * b.mean_a, 2) AS score,
       round(100 * b.mean_b, 2) AS twin_score, round(c.chance, 2) AS chance, round(100 * b.diff, 2) AS diff,
       round(100 * b.lo, 2) AS lo, round(100 * b.hi, 2) AS hi, b.p_value, b.lo > 0 AS beats_twin
FROM boot b JOIN chance c USING (model, protocol, k)
ORDER BY b.model, b.protocol, b.k;

-- Length bias of each ranking protocol: the mean length in characters of the top-1 candidate, of the
-- gold and of a candidate of the ranked pool (the gold and the first n_ranked - 1 others, as
-- infer.ranked_candidates draws them), beside P@1 and chance. A summed log-likelihood favours short
-- candidates: its top-1 is shorter than the pool's average even for a random network.
CREATE VIEW apiquiz_length_bias AS
WITH q AS (  -- per quiz, once: the gold's length and the other candidates' lengths in order
    SELECT quiz_id, length(answer)::DOUBLE AS gold_chars,
           list_transform(list_filter(candidates, lambda c: c <> answer), lambda c: length(c)::DOUBLE) AS lens
    FROM apiquiz_quizzes
)
SELECT p.model, p.protocol, count(*) AS scored,
       round(avg(length(p.top[1])), 2) AS top1_chars,
       round(avg(q.gold_chars), 2) AS gold_chars,
       round(avg((q.gold_chars + coalesce(list_sum(list_slice(q.lens, 1, p.n_ranked - 1)), 0)) / p.n_ranked), 2) AS pool_chars,
       round(100 * avg(success_at_k(p.gold_rank, 1)), 2) AS p_at_1,
       round(100 * avg(1 / p.n_ranked), 2) AS chance
FROM apiquiz_predictions p JOIN q USING (quiz_id)
WHERE p.status = 'ok' AND p.protocol <> 'fill_mask'
GROUP BY ALL
ORDER BY ALL;
