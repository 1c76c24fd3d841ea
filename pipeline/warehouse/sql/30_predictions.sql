-- apiquiz precision at k (percent of scored quizzes whose gold is in the top k), per model,
-- protocol, setting, mask position and seen/unseen. `scored` < `quizzes` when answers are
-- multi-token (fill_mask), texts too long, or the model has no LM head (not_applicable).
CREATE VIEW apiquiz_precision AS
SELECT p.model, p.protocol, q.setting, q.mask_position, q.seen,
       count(*) AS quizzes,
       count(*) FILTER (WHERE p.status = 'ok') AS scored,
       round(100 * avg((p.gold_rank <= 1)::INT) FILTER (WHERE p.status = 'ok'), 2) AS p_at_1,
       round(100 * avg((p.gold_rank <= 5)::INT) FILTER (WHERE p.status = 'ok'), 2) AS p_at_5,
       round(100 * avg((p.gold_rank <= 10)::INT) FILTER (WHERE p.status = 'ok'), 2) AS p_at_10,
       round(100 * avg((p.gold_rank <= 20)::INT) FILTER (WHERE p.status = 'ok'), 2) AS p_at_20,
       round(100 * avg((p.gold_rank <= 50)::INT) FILTER (WHERE p.status = 'ok'), 2) AS p_at_50
FROM apiquiz_predictions p JOIN quizzes q USING (quiz_id)
GROUP BY ALL
ORDER BY ALL;

-- Like the paper's Table III: P@k per model, protocol and setting (all mask positions, seen and unseen).
CREATE VIEW apiquiz_by_setting AS
SELECT p.model, p.protocol, q.setting,
       count(*) FILTER (WHERE p.status = 'ok') AS scored,
       round(100 * avg((p.gold_rank <= 1)::INT) FILTER (WHERE p.status = 'ok'), 2) AS p_at_1,
       round(100 * avg((p.gold_rank <= 5)::INT) FILTER (WHERE p.status = 'ok'), 2) AS p_at_5,
       round(100 * avg((p.gold_rank <= 10)::INT) FILTER (WHERE p.status = 'ok'), 2) AS p_at_10
FROM apiquiz_predictions p JOIN quizzes q USING (quiz_id)
GROUP BY ALL
ORDER BY ALL;

-- CodeSyntax attention: hit rate of every (layer, head) per relation, summed over shards.
CREATE VIEW syntax_head_scores AS
SELECT model, language, eval_split, relation, metric, k, layer, head,
       sum(hits) AS hits, sum(total) AS total, sum(hits)::DOUBLE / sum(total) AS score
FROM syntax_attention
GROUP BY ALL
HAVING sum(total) > 0;

-- The best head per relation, chosen on dev (held out) or on test (as the paper did),
-- always scored on test. Ties go to the lowest layer, then head.
CREATE VIEW syntax_best_heads AS
WITH ranked AS (
    SELECT *, row_number() OVER (PARTITION BY model, language, eval_split, relation, metric, k
                                 ORDER BY score DESC, layer, head) AS r
    FROM syntax_head_scores
)
SELECT c.eval_split AS chosen_on, c.model, c.language, c.relation, c.metric, c.k, c.layer, c.head,
       t.hits, t.total, t.score
FROM ranked c
JOIN syntax_head_scores t
  ON t.eval_split = 'test' AND t.model = c.model AND t.language = c.language AND t.relation = c.relation
 AND t.metric = c.metric AND t.k = c.k AND t.layer = c.layer AND t.head = c.head
WHERE c.r = 1;

-- Averaged over relations (the paper's Table 3), models next to the baselines.
CREATE VIEW syntax_scores AS
SELECT chosen_on, model AS system, language, metric, k, count(*) AS relations, round(100 * avg(score), 1) AS score
FROM syntax_best_heads
GROUP BY ALL
UNION ALL
SELECT chosen_on, baseline AS system, language, metric, k, count(*), round(100 * avg(hits::DOUBLE / total), 1)
FROM syntax_baselines
WHERE total > 0 AND variant = 'plain'
GROUP BY ALL
ORDER BY ALL;
