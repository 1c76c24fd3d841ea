-- Units: every score below (top-k accuracy, difference, CI ends) is a fraction in [0, 1], rounded to 4
-- decimals where a view rounds; percent only in rendered text (one unit in every table, so no reader
-- mixes 0.42 and 42).

-- CodeSyntax baselines averaged over relations, as in the paper's Table 3: the offsets/keywords
-- are chosen on `chosen_on` (dev: held out; test: as the paper did) and always scored on test.
CREATE VIEW codesyntax_baseline_scores AS
SELECT language, variant, chosen_on, baseline, metric, k,
       count(*) AS relations,
       round(avg(hits::DOUBLE / total), 4) AS score
FROM codesyntax_baselines
WHERE total > 0
GROUP BY ALL
ORDER BY ALL;

-- Dataset statistics like the paper's Tables 1 and 2.
CREATE VIEW codesyntax_dataset_stats AS
SELECT s.language, s.variant,
       count(DISTINCT s.sample_id) AS samples,
       sum(s.n_tokens)::BIGINT AS tokens
FROM codesyntax_samples s
GROUP BY ALL
ORDER BY ALL;

CREATE VIEW codesyntax_relation_stats AS
SELECT s.language, r.variant, r.relation,
       count(*) AS edges,
       round(avg(r.dep_start - r.head), 2) AS mean_offset
FROM codesyntax_relations r JOIN codesyntax_samples s ON s.sample_id = r.sample_id AND s.variant = r.variant
GROUP BY ALL
ORDER BY ALL;

-- CodeSyntax attention: hit rate of every (layer, head) per relation, summed over shards (the rows summed over
-- samples: sample_id null; the per-sample rows repeat the test side's first/top-1 counts, sample by sample).
-- Materialised when the warehouse is built (a table, not a view): every view below and the report
-- read it many times, and at scale (10M prediction rows: bench/speed/warehouse.py) re-aggregating
-- the shards per query is what costs.
CREATE TABLE codesyntax_head_scores AS
SELECT model, language, variant, eval_split, relation, metric, k, layer, head,
       sum(hits)::BIGINT AS hits, sum(total)::BIGINT AS total, sum(hits)::DOUBLE / sum(total) AS score
FROM codesyntax_predictions
WHERE sample_id IS NULL
GROUP BY ALL
HAVING sum(total) > 0
ORDER BY ALL;

-- The best head per relation, chosen on dev (held out) or on test (as the paper did),
-- always scored on test. Ties go to the lowest layer, then head.
CREATE VIEW codesyntax_best_heads AS
WITH chosen AS (
    SELECT eval_split AS chosen_on, model, language, variant, relation, metric, k,
           arg_max({'layer': layer, 'head': head}, {'score': score, 'layer': -layer, 'head': -head}) AS best
    FROM codesyntax_head_scores
    GROUP BY ALL
)
SELECT c.chosen_on, c.model, c.language, c.variant, c.relation, c.metric, c.k, c.best.layer AS layer,
       c.best.head AS head, t.hits, t.total, t.score
FROM chosen c
JOIN codesyntax_head_scores t
  ON t.eval_split = 'test' AND t.model = c.model AND t.language = c.language AND t.variant = c.variant
 AND t.relation = c.relation
 AND t.metric = c.metric AND t.k = c.k AND t.layer = c.best.layer AND t.head = c.best.head;

-- Per relation, the score every system averages (the best head of a model, a baseline's offsets/keywords),
-- chosen on dev or on test, scored on test: the rows codesyntax_scores averages and codesyntax_score_ci
-- resamples.
CREATE VIEW codesyntax_relation_scores AS
SELECT chosen_on, model AS system, language, variant, metric, k, relation, hits, total, score
FROM codesyntax_best_heads
UNION ALL
SELECT chosen_on, baseline AS system, language, variant, metric, k, relation, hits, total, hits::DOUBLE / total
FROM codesyntax_baselines
WHERE total > 0;

-- Averaged over relations (the paper's Table 3), models next to the baselines of the same labelled
-- variant (a model evaluated on with_newlines labels is compared with with_newlines baselines).
-- `edges`: the test edges the score averages over (its sample count; a handful means a noisy score).
CREATE VIEW codesyntax_scores AS
SELECT chosen_on, system, language, variant, metric, k, count(*) AS relations,
       round(avg(score), 4) AS score, sum(total)::BIGINT AS edges
FROM codesyntax_relation_scores
GROUP BY ALL
ORDER BY ALL;

-- The paper's headline metric (first token of the dependent) with a 95% CI: a Poisson
-- bootstrap over the relations the score averages (10,000 replicates, seed 0), the same unit as
-- codesyntax_twin_diff's; the sampling noise of the edges within a relation is not in this interval.
CREATE VIEW codesyntax_relation_values AS
SELECT chosen_on, system, language, variant, metric, k, relation AS item_id, score AS value
FROM codesyntax_relation_scores
WHERE metric = 'first';

CREATE VIEW codesyntax_score_ci AS
SELECT chosen_on, system, language, variant, metric, k, n AS relations, round(mean, 4) AS score,
       round(greatest(0, lo), 4) AS lo, round(least(1, hi), 4) AS hi  -- clipped to [0, 1], as the report prints it
FROM poisson_bootstrap_mean(codesyntax_relation_values, replicates := 10000)
ORDER BY ALL;

-- A model against its random twin (models.card says which) on the headline metric (what training added over the
-- same architecture with random weights):
-- top-1, first token, the best head per relation chosen on dev (or on test), scored on test. The
-- headline is the average over relations, so a relation is the resampling unit: the 95% CI of the
-- difference comes from a paired Poisson bootstrap over the relations both were scored on (10,000
-- replicates, seed 0; the hit counts per head carry no per-edge pairing, so the sampling noise within
-- a relation is not in this interval).
CREATE VIEW codesyntax_twin_pairs AS
SELECT t.chosen_on, t.model, twin.twin, t.language, t.variant, t.metric, t.k, t.relation AS item_id,
       t.score AS a, r.score AS b
FROM codesyntax_best_heads t
JOIN model_twins twin ON twin.model = t.model
JOIN codesyntax_best_heads r ON r.model = twin.twin AND r.chosen_on = t.chosen_on AND r.language = t.language
                            AND r.variant = t.variant AND r.metric = t.metric AND r.k = t.k AND r.relation = t.relation
WHERE t.metric = 'first' AND t.k = 1;

CREATE VIEW codesyntax_twin_diff AS
SELECT chosen_on, model, twin, language, variant, metric, k, n AS relations, round(mean_a, 4) AS score,
       round(mean_b, 4) AS twin_score, round(diff, 4) AS diff, round(lo, 4) AS lo,
       round(hi, 4) AS hi, p_value, lo > 0 AS beats_twin
FROM poisson_paired_bootstrap(codesyntax_twin_pairs, replicates := 10000)
ORDER BY ALL;
