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
FROM apiquiz_predictions p JOIN apiquiz_quizzes q USING (quiz_id)
GROUP BY ALL
ORDER BY ALL;

-- Like the paper's Table III: P@k per model, protocol and setting (all mask positions, seen and unseen).
CREATE VIEW apiquiz_by_setting AS
SELECT p.model, p.protocol, q.setting,
       count(*) FILTER (WHERE p.status = 'ok') AS scored,
       round(100 * avg((p.gold_rank <= 1)::INT) FILTER (WHERE p.status = 'ok'), 2) AS p_at_1,
       round(100 * avg((p.gold_rank <= 5)::INT) FILTER (WHERE p.status = 'ok'), 2) AS p_at_5,
       round(100 * avg((p.gold_rank <= 10)::INT) FILTER (WHERE p.status = 'ok'), 2) AS p_at_10
FROM apiquiz_predictions p JOIN apiquiz_quizzes q USING (quiz_id)
GROUP BY ALL
ORDER BY ALL;

