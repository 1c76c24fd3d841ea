-- apirec (APIBench-C and APIBench-Q). The items every ranking scores: code points (benchmark
-- `code`) and queries (benchmark `query`, `leaky` when the query names its answer), with the
-- metadata of the paper's breakdowns. `context_lines` buckets a point's line in its function
-- (the context's length in lines, the def line counted). `language` is the file's, from its extension
-- as the manifest decides it: python points come from the extraction, java points from tree-sitter-java.
CREATE VIEW apirec_items AS
SELECT point_id AS item_id, 'code' AS benchmark, 'code' AS origin, api, api_class, category, position, length_bucket,
       domain, seen, class_siblings, false AS leaky,
       CASE WHEN line_in_function <= 5 THEN '01-05' WHEN line_in_function <= 10 THEN '06-10'
            WHEN line_in_function <= 20 THEN '11-20' WHEN line_in_function <= 50 THEN '21-50'
            ELSE '51+' END AS context_lines,
       CASE WHEN path LIKE '%.java' THEN 'java' WHEN path LIKE '%.py' OR path LIKE '%.pyi' THEN 'python' ELSE 'other' END AS language
FROM apirec_points
UNION ALL
SELECT query_id, 'query', origin, api, api_class, category, NULL, NULL, domain, NULL, class_siblings, leaky, NULL,
       CASE WHEN path LIKE '%.java' THEN 'java' WHEN path LIKE '%.py' OR path LIKE '%.pyi' THEN 'python' ELSE 'other' END
FROM apirec_queries;

-- Every ranking (the baselines': n-gram, jedi, BM25; each model's: LM re-ranking of the n-gram's
-- top-N, encoder ranking of queries) with its item's metadata and the grades of its returned list:
-- 2 = the exact API, 1 = the right class (or module) but another method, 0 = neither.
-- `ideal` (standard NDCG) = the exact API then every other relevant API of the gold's class, capped at 10.
-- x's class (x up to its last dot: regexp_replace(x, '\.[^.]*$', '')) = cls, without a regex per element:
-- x is cls, a dot and a dot-free rest (a dot-free x is its own class).
CREATE MACRO apirec_in_class(x, cls) AS
    CASE WHEN contains(x, '.') THEN starts_with(x, cls || '.') AND NOT contains(x[length(cls) + 2:], '.')
         ELSE x = cls END;

CREATE VIEW apirec_rankings_raw AS
WITH r AS (
    SELECT point_id, model, ranker, status, gold_rank, class_rank, n_candidates, gold_in_candidates, top
    FROM apirec_baselines
    UNION ALL
    SELECT point_id, model, ranker, status, gold_rank, class_rank, n_candidates, gold_in_candidates, top
    FROM apirec_query_baselines
    UNION ALL
    SELECT point_id, model, ranker, status, gold_rank, class_rank, n_candidates, gold_in_candidates, top
    FROM apirec_predictions
)
SELECT r.*, p.benchmark, p.origin, p.leaky, p.api, p.api_class, p.category, p.position, p.length_bucket, p.domain,
       p.seen, p.class_siblings, p.context_lines, p.language,
       list_transform(r.top, lambda x: CASE WHEN x = p.api THEN 2 WHEN apirec_in_class(x, p.api_class) THEN 1
                                        ELSE 0 END) AS rels,
       greatest(p.class_siblings,
                len(list_filter(r.top, lambda x: x <> p.api AND apirec_in_class(x, p.api_class)))) AS class_others
FROM r JOIN apirec_items p ON p.item_id = r.point_id
WHERE r.status = 'ok';

-- `class_others`: the other relevant APIs of the gold's class at class level: the known ones
-- (class_siblings), or more when the ranker returned more of that class (jedi lists every member).
CREATE VIEW apirec_rankings AS
SELECT *, list_concat([2], list_transform(range(least(class_others, 9)), lambda i: 1)) AS ideal
FROM apirec_rankings_raw;

-- Per point, ranking and k (1, 3, 5, 10): the paper's Table 5 metrics and the standard ones beside them
-- (pipeline/metrics). Method level: relevant = grade 2 (one item); class level: grade >= 1
-- (1 + class_others items). MRR is over the returned top 10 (the paper's lists). NDCG is graded,
-- one for both levels: `_apibench` takes IDCG from the returned list itself, `_standard` from `ideal`.
-- A table, computed once when the warehouse is built: every view below (and the report) reads it, and the
-- per-element grading of the returned lists is the family's costly step (bench/warehouse_speed.py).
CREATE TABLE apirec_point_scores AS
SELECT r.point_id, r.model, r.ranker, r.benchmark, r.origin, r.leaky, r.category, r.position, r.length_bucket,
       r.domain, r.seen, r.context_lines, r.language, ks.k,
       success_at_k(r.gold_rank, ks.k) AS sr_method,
       success_at_k(r.class_rank, ks.k) AS sr_class,
       ap_at_k_apibench(r.rels, ks.k, min_grade := 2) AS map_apibench_method,
       ap_at_k_apibench(r.rels, ks.k, min_grade := 1) AS map_apibench_class,
       ap_at_k_standard(r.rels, ks.k, 1, min_grade := 2) AS map_standard_method,
       ap_at_k_standard(r.rels, ks.k, 1 + r.class_others, min_grade := 1) AS map_standard_class,
       reciprocal_rank(r.gold_rank, 10) AS mrr_method,
       reciprocal_rank(r.class_rank, 10) AS mrr_class,
       ndcg_at_k_apibench(r.rels, ks.k) AS ndcg_apibench,
       ndcg_at_k_standard(r.rels, ks.k, r.ideal) AS ndcg_standard
FROM apirec_rankings r, (SELECT unnest([1, 3, 5, 10]) AS k) ks;

-- Table 5 over every scored item, per benchmark, model (or baseline), ranker and k; `subset`:
-- `all`, and for queries also `non_leaky` (queries that do not name their answer).
CREATE VIEW apirec_metrics AS
WITH s AS (
    SELECT 'all' AS subset, * FROM apirec_point_scores
    UNION ALL
    SELECT 'non_leaky', * FROM apirec_point_scores WHERE benchmark = 'query' AND NOT leaky
)
SELECT benchmark, subset, model, ranker, k, count(*) AS points,
       round(avg(sr_method), 4) AS sr_method, round(avg(sr_class), 4) AS sr_class,
       round(avg(map_apibench_method), 4) AS map_apibench_method,
       round(avg(map_standard_method), 4) AS map_standard_method,
       round(avg(map_apibench_class), 4) AS map_apibench_class,
       round(avg(map_standard_class), 4) AS map_standard_class,
       round(avg(mrr_method), 4) AS mrr_method, round(avg(mrr_class), 4) AS mrr_class,
       round(avg(ndcg_apibench), 4) AS ndcg_apibench, round(avg(ndcg_standard), 4) AS ndcg_standard
FROM s
GROUP BY ALL
ORDER BY ALL;

-- Table 5 per language (code points: python from the extraction, java from tree-sitter-java), so the
-- paper's Python reference numbers sit beside Python points only.
CREATE VIEW apirec_metrics_by_language AS
SELECT benchmark, language, model, ranker, k, count(*) AS points,
       round(avg(sr_method), 4) AS sr_method, round(avg(sr_class), 4) AS sr_class,
       round(avg(map_apibench_method), 4) AS map_apibench_method,
       round(avg(map_standard_method), 4) AS map_standard_method,
       round(avg(mrr_method), 4) AS mrr_method, round(avg(mrr_class), 4) AS mrr_class,
       round(avg(ndcg_apibench), 4) AS ndcg_apibench, round(avg(ndcg_standard), 4) AS ndcg_standard
FROM apirec_point_scores
GROUP BY ALL
ORDER BY ALL;

-- How many items each ranking covers: scored, too long for the model (or no vector), and the first
-- stage's recall (the gold among the candidates re-ranked; the n-gram: among the train APIs; BM25:
-- within its top `queries.candidates`).
CREATE VIEW apirec_coverage AS
SELECT i.benchmark, r.model, r.ranker, count(*) AS points,
       count(*) FILTER (WHERE r.status = 'ok') AS scored,
       count(*) FILTER (WHERE r.status <> 'ok') AS too_long,
       round(avg(r.gold_in_candidates::INTEGER), 4) AS gold_in_candidates,
       round(avg(r.n_candidates), 2) AS mean_candidates
FROM (SELECT point_id, model, ranker, status, gold_in_candidates, n_candidates FROM apirec_baselines
      UNION ALL
      SELECT point_id, model, ranker, status, gold_in_candidates, n_candidates FROM apirec_query_baselines
      UNION ALL
      SELECT point_id, model, ranker, status, gold_in_candidates, n_candidates FROM apirec_predictions) r
JOIN apirec_items i ON i.item_id = r.point_id
GROUP BY ALL
ORDER BY ALL;

-- The paper's breakdowns (Figures 9-11 and Sec. 5): SR@k by category, position, length bucket,
-- context length in lines, domain, and seen/unseen in the train split (code); by origin, leaky and
-- category (queries).
CREATE VIEW apirec_breakdown AS
WITH d AS (
    SELECT *, 'category' AS dimension, category AS value FROM apirec_point_scores
    UNION ALL SELECT *, 'position', position FROM apirec_point_scores WHERE benchmark = 'code'
    UNION ALL SELECT *, 'length_bucket', length_bucket FROM apirec_point_scores WHERE benchmark = 'code'
    UNION ALL SELECT *, 'context_lines', context_lines FROM apirec_point_scores WHERE benchmark = 'code'
    UNION ALL SELECT *, 'domain', domain FROM apirec_point_scores
    UNION ALL SELECT *, 'seen', seen::VARCHAR FROM apirec_point_scores WHERE benchmark = 'code'
    UNION ALL SELECT *, 'language', language FROM apirec_point_scores
    UNION ALL SELECT *, 'origin', origin FROM apirec_point_scores WHERE benchmark = 'query'
    UNION ALL SELECT *, 'leaky', leaky::VARCHAR FROM apirec_point_scores WHERE benchmark = 'query'
)
SELECT benchmark, model, ranker, dimension, value, count(*) FILTER (WHERE k = 1) AS points,
       round(avg(sr_method) FILTER (WHERE k = 1), 4) AS sr1_method,
       round(avg(sr_method) FILTER (WHERE k = 5), 4) AS sr5_method,
       round(avg(sr_method) FILTER (WHERE k = 10), 4) AS sr10_method,
       round(avg(sr_class) FILTER (WHERE k = 1), 4) AS sr1_class,
       round(avg(sr_class) FILTER (WHERE k = 10), 4) AS sr10_class,
       round(avg(mrr_method) FILTER (WHERE k = 1), 4) AS mrr_method
FROM d
GROUP BY ALL
ORDER BY ALL;

-- Method-level SR@10 hits per breakdown value (Figures 9-11: the paper's Fig. 11 leaves out the
-- extremely short and long functions, so `position` does too), and their 95% Poisson-bootstrap intervals.
CREATE VIEW apirec_breakdown_hits AS
SELECT benchmark, model, ranker, 'category' AS dimension, category AS bucket, point_id AS item_id, sr_method AS value
FROM apirec_point_scores WHERE k = 10
UNION ALL SELECT benchmark, model, ranker, 'length_bucket', length_bucket, point_id, sr_method
FROM apirec_point_scores WHERE k = 10 AND benchmark = 'code'
UNION ALL SELECT benchmark, model, ranker, 'position', position, point_id, sr_method
FROM apirec_point_scores WHERE k = 10 AND benchmark = 'code' AND length_bucket = 'moderate'
UNION ALL SELECT benchmark, model, ranker, 'context_lines', context_lines, point_id, sr_method
FROM apirec_point_scores WHERE k = 10 AND benchmark = 'code'
UNION ALL SELECT benchmark, model, ranker, 'language', language, point_id, sr_method
FROM apirec_point_scores WHERE k = 10;

CREATE VIEW apirec_breakdown_ci AS
SELECT benchmark, model, ranker, dimension, bucket AS value, n, round(mean, 4) AS sr10_method, round(lo, 4) AS lo,
       round(hi, 4) AS hi
FROM poisson_bootstrap_mean(apirec_breakdown_hits)
ORDER BY ALL;

-- SR@k by API category (the plot data).
CREATE VIEW apirec_sr_by_category AS
SELECT benchmark, model, ranker, category, k, count(*) AS points, avg(sr_method) AS sr_method, avg(sr_class) AS sr_class
FROM apirec_point_scores
GROUP BY ALL
ORDER BY ALL;

-- Method-level hits at 1 and 10 per item and subset: the input of the bootstrap confidence intervals.
CREATE VIEW apirec_hits AS
SELECT benchmark, 'all' AS subset, model, ranker, k, point_id AS item_id, sr_method AS value
FROM apirec_point_scores
WHERE k IN (1, 10)
UNION ALL
SELECT benchmark, 'non_leaky', model, ranker, k, point_id, sr_method
FROM apirec_point_scores
WHERE k IN (1, 10) AND benchmark = 'query' AND NOT leaky;

-- Method-level SR@1 and SR@10 with a 95% Poisson-bootstrap confidence interval (1000 replicates, seed 0).
CREATE VIEW apirec_sr_ci AS
SELECT benchmark, subset, model, ranker, k, n, round(mean, 4) AS sr_method, round(lo, 4) AS lo, round(hi, 4) AS hi
FROM poisson_bootstrap_mean(apirec_hits)
ORDER BY ALL;

-- scores.json: method-level SR@1, SR@10 and MRR per model and ranker (queries: all and non-leaky; code:
-- both languages, and Java alone).
CREATE VIEW apirec_headline AS
SELECT model, ranker || (CASE WHEN subset = 'all' THEN '' ELSE '_' || subset END) || '_sr_at_' || k || '_method' AS metric,
       sr_method AS value, points AS n
FROM apirec_metrics WHERE k IN (1, 10)
UNION ALL
SELECT model, ranker || (CASE WHEN subset = 'all' THEN '' ELSE '_' || subset END) || '_mrr_method', mrr_method, points
FROM apirec_metrics WHERE k = 1
UNION ALL
-- Java code points on their own (the rows above pool both languages of `code`)
SELECT model, ranker || '_java_sr_at_' || k || '_method', sr_method, points
FROM apirec_metrics_by_language WHERE benchmark = 'code' AND language = 'java' AND k IN (1, 10);
