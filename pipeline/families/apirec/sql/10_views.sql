-- apirec (APIBench-C). Every ranking (the n-gram baseline's and each model's re-ranking of the
-- n-gram's top-N) with its point's metadata and the grades of its returned list:
-- 2 = the exact API, 1 = the right class (or module) but another method, 0 = neither.
-- `ideal` (standard NDCG) = the exact API then every other known API of the gold's class, capped at 10.
CREATE VIEW apirec_rankings AS
WITH r AS (
    SELECT point_id, model, ranker, status, gold_rank, class_rank, n_candidates, gold_in_candidates, top
    FROM apirec_baselines
    UNION ALL
    SELECT point_id, model, ranker, status, gold_rank, class_rank, n_candidates, gold_in_candidates, top
    FROM apirec_predictions
)
SELECT r.*, p.api, p.api_class, p.category, p.position, p.length_bucket, p.domain, p.seen, p.class_siblings,
       list_transform(r.top, lambda x: CASE WHEN x = p.api THEN 2
                                        WHEN regexp_replace(x, '\.[^.]*$', '') = p.api_class THEN 1
                                        ELSE 0 END) AS rels,
       list_concat([2], list_transform(range(least(p.class_siblings, 9)), lambda i: 1)) AS ideal
FROM r JOIN apirec_points p USING (point_id)
WHERE r.status = 'ok';

-- Per point, ranking and k (1, 3, 5, 10): the paper's Table 5 metrics and the standard ones beside them
-- (pipeline/metrics). Method level: relevant = grade 2 (one item); class level: grade >= 1
-- (1 + class_siblings items). MRR is over the returned top 10 (the paper's lists). NDCG is graded,
-- one for both levels: `_apibench` takes IDCG from the returned list itself, `_standard` from `ideal`.
CREATE VIEW apirec_point_scores AS
SELECT r.point_id, r.model, r.ranker, r.category, r.position, r.length_bucket, r.domain, r.seen, ks.k,
       success_at_k(r.gold_rank, ks.k) AS sr_method,
       success_at_k(r.class_rank, ks.k) AS sr_class,
       ap_at_k_apibench(r.rels, ks.k, min_grade := 2) AS map_apibench_method,
       ap_at_k_apibench(r.rels, ks.k, min_grade := 1) AS map_apibench_class,
       ap_at_k_standard(r.rels, ks.k, 1, min_grade := 2) AS map_standard_method,
       ap_at_k_standard(r.rels, ks.k, 1 + r.class_siblings, min_grade := 1) AS map_standard_class,
       reciprocal_rank(r.gold_rank, 10) AS mrr_method,
       reciprocal_rank(r.class_rank, 10) AS mrr_class,
       ndcg_at_k_apibench(r.rels, ks.k) AS ndcg_apibench,
       ndcg_at_k_standard(r.rels, ks.k, r.ideal) AS ndcg_standard
FROM apirec_rankings r, (SELECT unnest([1, 3, 5, 10]) AS k) ks;

-- Table 5 over every scored point, per model (or baseline), ranker and k.
CREATE VIEW apirec_metrics AS
SELECT model, ranker, k, count(*) AS points,
       round(avg(sr_method), 4) AS sr_method, round(avg(sr_class), 4) AS sr_class,
       round(avg(map_apibench_method), 4) AS map_apibench_method,
       round(avg(map_standard_method), 4) AS map_standard_method,
       round(avg(map_apibench_class), 4) AS map_apibench_class,
       round(avg(map_standard_class), 4) AS map_standard_class,
       round(avg(mrr_method), 4) AS mrr_method, round(avg(mrr_class), 4) AS mrr_class,
       round(avg(ndcg_apibench), 4) AS ndcg_apibench, round(avg(ndcg_standard), 4) AS ndcg_standard
FROM apirec_point_scores
GROUP BY ALL
ORDER BY ALL;

-- How many points each ranking covers: scored, too long for the model, and the first stage's recall
-- (the gold among the candidates the model re-ranks; the n-gram: among the train APIs).
CREATE VIEW apirec_coverage AS
SELECT r.model, r.ranker, count(*) AS points,
       count(*) FILTER (WHERE r.status = 'ok') AS scored,
       count(*) FILTER (WHERE r.status = 'too_long') AS too_long,
       round(avg(r.gold_in_candidates::INTEGER), 4) AS gold_in_candidates,
       round(avg(r.n_candidates), 2) AS mean_candidates
FROM (SELECT model, ranker, status, gold_in_candidates, n_candidates FROM apirec_baselines
      UNION ALL
      SELECT model, ranker, status, gold_in_candidates, n_candidates FROM apirec_predictions) r
GROUP BY ALL
ORDER BY ALL;

-- The paper's breakdowns (Figures 9-11 and Sec. 5): SR@k by category, position, length bucket,
-- domain, and seen/unseen in the train split.
CREATE VIEW apirec_breakdown AS
WITH d AS (
    SELECT *, 'category' AS dimension, category AS value FROM apirec_point_scores
    UNION ALL SELECT *, 'position', position FROM apirec_point_scores
    UNION ALL SELECT *, 'length_bucket', length_bucket FROM apirec_point_scores
    UNION ALL SELECT *, 'domain', domain FROM apirec_point_scores
    UNION ALL SELECT *, 'seen', seen::VARCHAR FROM apirec_point_scores
)
SELECT model, ranker, dimension, value, count(*) FILTER (WHERE k = 1) AS points,
       round(avg(sr_method) FILTER (WHERE k = 1), 4) AS sr1_method,
       round(avg(sr_method) FILTER (WHERE k = 5), 4) AS sr5_method,
       round(avg(sr_method) FILTER (WHERE k = 10), 4) AS sr10_method,
       round(avg(sr_class) FILTER (WHERE k = 1), 4) AS sr1_class,
       round(avg(sr_class) FILTER (WHERE k = 10), 4) AS sr10_class,
       round(avg(mrr_method) FILTER (WHERE k = 1), 4) AS mrr_method
FROM d
GROUP BY ALL
ORDER BY ALL;

-- SR@k by API category (the plot data).
CREATE VIEW apirec_sr_by_category AS
SELECT model, ranker, category, k, count(*) AS points, avg(sr_method) AS sr_method, avg(sr_class) AS sr_class
FROM apirec_point_scores
GROUP BY ALL
ORDER BY ALL;

-- Method-level hits at 1 and 10 per point: the input of the bootstrap confidence intervals.
CREATE VIEW apirec_hits AS
SELECT model, ranker, k, point_id AS item_id, sr_method AS value
FROM apirec_point_scores
WHERE k IN (1, 10);

-- Method-level SR@1 and SR@10 with a 95% Poisson-bootstrap confidence interval (1000 replicates, seed 0).
CREATE VIEW apirec_sr_ci AS
SELECT model, ranker, k, n, round(mean, 4) AS sr_method, round(lo, 4) AS lo, round(hi, 4) AS hi
FROM poisson_bootstrap_mean(apirec_hits)
ORDER BY ALL;

-- scores.json: method-level SR@1, SR@10 and MRR per model and ranker.
CREATE VIEW apirec_headline AS
SELECT model, ranker || '_sr_at_' || k || '_method' AS metric, sr_method AS value
FROM apirec_metrics WHERE k IN (1, 10)
UNION ALL
SELECT model, ranker || '_mrr_method', mrr_method FROM apirec_metrics WHERE k = 1;
