-- idbench: every technique's score per (size, pair), the gold scores in long form, and
-- Spearman's rho per (technique, size, gold score, pair set) with the shared metric macros.
-- Sizes are never pooled. Gold and scores are DOUBLE (NAN in the CSVs is NULL here).

-- The gold scores, one row per rated (size, pair, gold score): unrated pairs have no row.
CREATE VIEW idbench_gold AS
SELECT size, pair_id, id1, id2, comparable, gold, value
FROM (UNPIVOT idbench_pairs ON relatedness, similarity, contextual_similarity INTO NAME gold VALUE value);

-- Cosine of each pair's identifiers per model, layer and pooling (every pair: NULL where a model
-- did not embed one of the identifiers). A table, computed once when the warehouse is built: every
-- Spearman view and the report read it, and the vectors are the widest input of the family.
CREATE TABLE idbench_model_cosine AS
WITH pairs AS (SELECT DISTINCT pair_id, id1_id, id2_id FROM idbench_pairs),
     systems AS (SELECT DISTINCT model, layer, pooling FROM idbench_predictions)
SELECT s.model, s.layer, s.pooling, p.pair_id,
       list_cosine_similarity(a.vector::DOUBLE[], b.vector::DOUBLE[]) AS score  -- at float64: a float32 cosine moved rho by up to 0.004 (bench/fidelity/idbench_float64.py)
FROM pairs p CROSS JOIN systems s
LEFT JOIN idbench_predictions a ON a.item_id = p.id1_id AND a.model = s.model AND a.layer = s.layer
                                AND a.pooling = s.pooling
LEFT JOIN idbench_predictions b ON b.item_id = p.id2_id AND b.model = s.model AND b.layer = s.layer
                                AND b.pooling = s.pooling;

-- Every technique's score per (size, pair): kind string (computed here: LV, NW), embedding (word2vec /
-- FastText trained here on the corpus's identifier sequences), release (the
-- release's own per-pair scores, `release:<column>`), model (a zoo model's cosine at one layer).
CREATE VIEW idbench_system_scores AS
SELECT s.technique AS system, s.kind, NULL::SMALLINT AS layer, NULL::VARCHAR AS pooling, p.size, p.pair_id, s.score
FROM idbench_scores s JOIN idbench_pairs p USING (pair_id)
UNION ALL  -- the corpus-trained word2vec / FastText (kind embedding; NULL: out of word2vec's vocabulary)
SELECT s.technique, s.kind, NULL::SMALLINT, NULL::VARCHAR, p.size, p.pair_id, s.score
FROM idbench_embedding_scores s JOIN idbench_pairs p USING (pair_id)
UNION ALL
SELECT 'release:' || CASE technique WHEN 'ft_cbow' THEN 'FT-cbow' WHEN 'ft_sg' THEN 'FT-SG' WHEN 'w2v_sg' THEN 'w2v-SG'
                      WHEN 'w2v_cbow' THEN 'w2v-cbow' WHEN 'path_based' THEN 'Path-based' WHEN 'lv' THEN 'LV'
                      ELSE 'NW' END,
       'release', NULL::SMALLINT, NULL::VARCHAR, size, pair_id, score
FROM idbench_pairs UNPIVOT INCLUDE NULLS (score FOR technique IN (ft_cbow, ft_sg, w2v_sg, w2v_cbow, path_based, lv, nw))
UNION ALL
SELECT c.model, 'model', c.layer, c.pooling, p.size, c.pair_id, c.score
FROM idbench_model_cosine c JOIN idbench_pairs p USING (pair_id);

-- Each rated pair with each technique's score, on both pair sets: `comparable` (all five release
-- embeddings scored the pair: the paper's set) and `all_rated` (every pair with this gold score).
CREATE VIEW idbench_judged AS
WITH j AS (SELECT g.size, g.gold, g.pair_id, g.comparable, g.value, s.system, s.kind, s.layer, s.pooling, s.score
           FROM idbench_gold g JOIN idbench_system_scores s USING (size, pair_id)
           UNION ALL  -- the SVR ensemble: leave-one-out predictions, comparable pairs only
           SELECT g.size, g.gold, g.pair_id, g.comparable, g.value, e.technique, 'ensemble', NULL::SMALLINT,
                  NULL::VARCHAR, e.score
           FROM idbench_gold g JOIN idbench_ensemble e USING (size, gold, pair_id))
SELECT *, 'all_rated' AS pair_set FROM j
UNION ALL
SELECT *, 'comparable' AS pair_set FROM j WHERE comparable;

-- Spearman's rho (average ranks, on floats) per technique, size, gold score and pair set, with
-- coverage: `rated` pairs in the set, `n` of them the technique scored (NULL/NaN scores excluded).
-- The metric library's definition (pipeline.metrics.correlation, macro spearman_rho: Pearson of
-- average ranks over the complete pairs, NULL when n < 2 or a side is constant) computed with window
-- functions: average rank = (rank() + the rows up to the last peer) / 2, both over the same window, so
-- one sort per side. O(n log n) per group where the list macros are O(n^2) (tests/test_idbench.py checks
-- both agree and equal scipy).
CREATE VIEW idbench_ranked AS
WITH c AS (SELECT * FROM idbench_judged
           WHERE score IS NOT NULL AND NOT isnan(score) AND value IS NOT NULL AND NOT isnan(value))
SELECT system, kind, layer, pooling, size, gold, pair_set, pair_id, score, value,
       (rank() OVER wx + count(*) OVER wx) / 2.0 AS rx,
       (rank() OVER wy + count(*) OVER wy) / 2.0 AS ry
FROM c
WINDOW wx AS (PARTITION BY system, kind, layer, pooling, size, gold, pair_set ORDER BY score),
       wy AS (PARTITION BY system, kind, layer, pooling, size, gold, pair_set ORDER BY value);

-- (idbench_ranked's ranks, with the incomplete pairs ranked apart and counted in `rated`: one pass over
-- idbench_judged, whose model cosines are the costly part; the windows partition by an integer group id,
-- not by the seven group columns, so their sorts compare integers.)
CREATE VIEW idbench_spearman AS
WITH j AS (
    SELECT system, kind, layer, pooling, size, gold, pair_set, score, value,
           coalesce(NOT isnan(score) AND NOT isnan(value), false) AS complete
    FROM idbench_judged
), g AS (
    SELECT row_number() OVER () AS gid, *
    FROM (SELECT DISTINCT system, kind, layer, pooling, size, gold, pair_set FROM j)
), r AS (
    SELECT g.gid, j.complete,
           (rank() OVER wx + count(*) OVER wx) / 2.0 AS rx,
           (rank() OVER wy + count(*) OVER wy) / 2.0 AS ry
    FROM j JOIN g ON j.system = g.system AND j.kind = g.kind AND j.layer IS NOT DISTINCT FROM g.layer
                 AND j.pooling IS NOT DISTINCT FROM g.pooling AND j.size = g.size AND j.gold = g.gold
                 AND j.pair_set = g.pair_set
    WINDOW wx AS (PARTITION BY g.gid, j.complete ORDER BY j.score),
           wy AS (PARTITION BY g.gid, j.complete ORDER BY j.value)
), s AS (
    SELECT gid, count(*) AS rated, count(*) FILTER (WHERE complete) AS n,
           CASE WHEN count(*) FILTER (WHERE complete) < 2 OR var_pop(rx) FILTER (WHERE complete) = 0
                     OR var_pop(ry) FILTER (WHERE complete) = 0 THEN NULL
                ELSE corr(rx, ry) FILTER (WHERE complete) END AS rho
    FROM r GROUP BY gid
)
SELECT g.system, g.kind, g.layer, g.pooling, g.size, g.gold, g.pair_set, s.rated, s.n, round(s.n / s.rated, 4) AS coverage,
       s.rho
FROM s JOIN g USING (gid);

-- Each model's best layer per (pooling, size, gold score, pair set): chosen on the benchmark
-- itself (an oracle choice, as the paper reports each embedding's best hyper-parameters).
CREATE VIEW idbench_best_layer AS
SELECT system AS model, pooling, size, gold, pair_set, arg_max(layer, {'rho': round(rho, 9), 'layer': -layer}) AS layer, max(rho) AS rho,
       arg_max(n, {'rho': round(rho, 9), 'layer': -layer}) AS n, arg_max(rated, {'rho': round(rho, 9), 'layer': -layer}) AS rated
FROM idbench_spearman
WHERE kind = 'model' AND rho IS NOT NULL AND NOT isnan(rho)
GROUP BY ALL;

-- The paper's comparison per size and gold score on the comparable pair set: string techniques
-- (ours and the release's), the release's embeddings, and each model at its best layer (mean pooling).
CREATE VIEW idbench_headline AS
WITH sp AS MATERIALIZED (SELECT * FROM idbench_spearman WHERE pair_set = 'comparable'),
best AS (  -- idbench_best_layer on the comparable pairs, mean pooling (idbench_spearman computed once)
    SELECT system AS model, size, gold, arg_max(layer, {'rho': round(rho, 9), 'layer': -layer}) AS layer, max(rho) AS rho, arg_max(n, {'rho': round(rho, 9), 'layer': -layer}) AS n,
           arg_max(rated, {'rho': round(rho, 9), 'layer': -layer}) AS rated
    FROM sp WHERE kind = 'model' AND pooling = 'mean' AND rho IS NOT NULL AND NOT isnan(rho)
    GROUP BY ALL
)
SELECT system, kind, NULL::SMALLINT AS layer, size, gold, n, rated, round(rho, 4) AS rho
FROM sp WHERE kind <> 'model'
UNION ALL
SELECT model, 'model', layer, size, gold, n, rated, round(rho, 4)
FROM best;

-- Spearman per interesting subset (abbreviations, synonyms, opposites, ...), every rated pair of
-- the subset per size (the subsets are small: read the n).
CREATE VIEW idbench_by_subset AS
WITH j AS (SELECT i.subset, j.* FROM idbench_judged j JOIN idbench_interesting i USING (pair_id)
           WHERE j.pair_set = 'all_rated'),
     rated AS (SELECT subset, system, kind, layer, pooling, size, gold, count(*) AS rated FROM j GROUP BY ALL),
     ranked AS (
         SELECT subset, system, kind, layer, pooling, size, gold,
                rank() OVER (PARTITION BY subset, system, kind, layer, pooling, size, gold ORDER BY score)
                + (count(*) OVER (PARTITION BY subset, system, kind, layer, pooling, size, gold, score) - 1) / 2.0 AS rx,
                rank() OVER (PARTITION BY subset, system, kind, layer, pooling, size, gold ORDER BY value)
                + (count(*) OVER (PARTITION BY subset, system, kind, layer, pooling, size, gold, value) - 1) / 2.0 AS ry
         FROM j WHERE score IS NOT NULL AND NOT isnan(score) AND value IS NOT NULL AND NOT isnan(value)),
     rho AS (SELECT subset, system, kind, layer, pooling, size, gold, count(*) AS n,
                    CASE WHEN count(*) < 2 OR var_pop(rx) = 0 OR var_pop(ry) = 0 THEN NULL
                         ELSE corr(rx, ry) END AS rho
             FROM ranked GROUP BY ALL)
SELECT t.subset, t.system, t.kind, t.layer, t.pooling, t.size, t.gold, t.rated, coalesce(r.n, 0) AS n, r.rho
FROM rated t LEFT JOIN rho r
  ON r.subset = t.subset AND r.system = t.system AND r.kind = t.kind AND r.layer IS NOT DISTINCT FROM t.layer
 AND r.pooling IS NOT DISTINCT FROM t.pooling AND r.size = t.size AND r.gold = t.gold;

-- Coverage of the corpus-trained embeddings per size: distinct pairs of the size, pairs scored, pairs
-- whose two identifiers are both in the vocabulary (FastText scores the others from subwords).
CREATE VIEW idbench_embedding_coverage AS
SELECT s.technique, p.size, count(*) AS pairs, count(s.score) AS scored,
       count(*) FILTER (WHERE v1.in_vocabulary AND v2.in_vocabulary) AS both_in_vocabulary,
       round(count(s.score) / count(*), 4) AS coverage
FROM idbench_embedding_scores s JOIN idbench_pairs p USING (pair_id)
JOIN idbench_embedding_vocab v1 ON v1.technique = s.technique AND v1.identifier_id = p.id1_id
JOIN idbench_embedding_vocab v2 ON v2.technique = s.technique AND v2.identifier_id = p.id2_id
GROUP BY ALL;

-- A model's rho with its layer chosen on held-out pairs (a layer chosen on the pairs it is scored on
-- overstates rho; stats.cv_layer_spearman's point estimate, the report adds its bootstrap CI): the
-- comparable pairs every layer scored (mean pooling) split into `idbench.layer_folds` folds by
-- sha256('idbench-fold', seed, pair_id) (pipeline.core.ids.stable_id); each fold's pairs scored at the
-- layer with the best rho on the other folds' pairs (ties: the lowest layer), a pair's score being its
-- average rank among all pairs at that layer (no gold used); one rho over all the pairs. `layers`: the
-- layer chosen per fold. scores.json's model rows read this view.
CREATE VIEW idbench_held_out_scores AS
WITH cfg AS (
    SELECT coalesce((SELECT value FROM run_params WHERE key = 'seed'), '0') AS seed,
           coalesce((SELECT value FROM run_params WHERE key = 'idbench.layer_folds'), '5')::INTEGER AS folds
), m AS (
    SELECT system, layer, size, gold, pair_id, score, value FROM idbench_judged
    WHERE kind = 'model' AND pooling = 'mean' AND pair_set = 'comparable'
), layers AS (
    SELECT system, size, gold, count(DISTINCT layer) AS n_layers FROM m GROUP BY ALL
), complete AS (
    SELECT m.system, m.size, m.gold, m.pair_id FROM m JOIN layers USING (system, size, gold)
    GROUP BY m.system, m.size, m.gold, m.pair_id, layers.n_layers
    HAVING count(*) FILTER (WHERE m.score IS NOT NULL AND NOT isnan(m.score)) = layers.n_layers
       AND bool_and(m.value IS NOT NULL AND NOT isnan(m.value))
), c AS (
    SELECT m.*, ('0x' || left(sha256('idbench-fold' || chr(0) || cfg.seed || chr(0) || m.pair_id), 16))::UBIGINT
                % cfg.folds AS fold
    FROM m JOIN complete USING (system, size, gold, pair_id) CROSS JOIN cfg
), k AS (
    SELECT range AS k FROM range((SELECT folds FROM cfg))
), train AS (
    SELECT c.system, c.size, c.gold, c.layer, k.k,
           (rank() OVER wx + count(*) OVER wx) / 2.0 AS rx, (rank() OVER wy + count(*) OVER wy) / 2.0 AS ry
    FROM c JOIN k ON c.fold <> k.k
    WINDOW wx AS (PARTITION BY c.system, c.size, c.gold, c.layer, k.k ORDER BY c.score),
           wy AS (PARTITION BY c.system, c.size, c.gold, c.layer, k.k ORDER BY c.value)
), rho AS (
    SELECT system, size, gold, layer, k, corr(rx, ry) AS rho FROM train GROUP BY ALL
), chosen AS (
    SELECT system, size, gold, k,
           first(layer ORDER BY CASE WHEN rho IS NULL OR isnan(rho) THEN NULL ELSE round(rho, 9) END DESC NULLS LAST, layer) AS layer
    FROM rho GROUP BY ALL
), x AS (
    SELECT system, size, gold, layer, pair_id, fold, value,
           (rank() OVER w + count(*) OVER w) / 2.0 AS x
    FROM c WINDOW w AS (PARTITION BY system, size, gold, layer ORDER BY score)
), per_fold AS (
    SELECT system, size, gold, list(layer ORDER BY k) AS layers FROM chosen GROUP BY ALL
)
SELECT x.system AS model, x.size, x.gold, x.pair_id, x.fold::INTEGER AS fold, x.layer, x.x, x.value, f.layers
FROM x JOIN chosen ch ON ch.system = x.system AND ch.size = x.size AND ch.gold = x.gold AND ch.k = x.fold
                     AND ch.layer = x.layer
JOIN per_fold f ON f.system = x.system AND f.size = x.size AND f.gold = x.gold;

-- (idbench_held_out_scores: each pair's score, x, at the layer chosen on the other folds, with its fold and that
-- layer: the per-pair input of the report's paired tests against the twin and the string baselines.)
CREATE VIEW idbench_held_out_layer AS
WITH ranked AS (
    SELECT model, size, gold, layers, (rank() OVER wx + count(*) OVER wx) / 2.0 AS rx,
           (rank() OVER wy + count(*) OVER wy) / 2.0 AS ry
    FROM idbench_held_out_scores
    WINDOW wx AS (PARTITION BY model, size, gold ORDER BY x), wy AS (PARTITION BY model, size, gold ORDER BY value)
)
SELECT model, size, gold, count(*) AS n, corr(rx, ry) AS rho, any_value(layers) AS layers
FROM ranked
GROUP BY model, size, gold
HAVING count(*) >= 2 * coalesce((SELECT value FROM run_params WHERE key = 'idbench.layer_folds'), '5')::INTEGER
ORDER BY ALL;

-- A model against its random twin (model_twins: the twin's card names it in `twin_of`) on the same pairs: per
-- (layer, pooling, size, gold score, pair set) every rated pair that both scored, with the model's cosine
-- (`score`), the twin's (`twin_score`) and the gold score (`value`). The input of the report's paired bootstrap
-- (stats.twin_diff: model rho minus twin rho, the pairs resampled together; the report's "model vs its random
-- twin" table and reports/plots/idbench_twin_diff.csv). A model without a twin has no row.
CREATE VIEW idbench_twin_pairs AS
SELECT w.model, w.twin, a.layer, a.pooling, a.size, a.gold, a.pair_set, a.pair_id, a.score, b.score AS twin_score,
       a.value
FROM model_twins w
JOIN idbench_judged a ON a.system = w.model AND a.kind = 'model'
JOIN idbench_judged b
  ON b.system = w.twin AND b.kind = 'model' AND b.layer = a.layer AND b.pooling = a.pooling AND b.size = a.size
 AND b.gold = a.gold AND b.pair_set = a.pair_set AND b.pair_id = a.pair_id
WHERE a.score IS NOT NULL AND NOT isnan(a.score) AND b.score IS NOT NULL AND NOT isnan(b.score)
  AND a.value IS NOT NULL AND NOT isnan(a.value);

-- Per (model, twin, layer, pooling, size, gold score, pair set): Spearman's rho of the model and of its twin on the
-- same pairs (idbench_twin_pairs: pairs both scored), their difference and n (pairs). Point estimates only: the
-- report adds the paired bootstrap's 95% CI and p-value (stats.twin_diff, `idbench.bootstrap_replicates`
-- resamples of the pairs, seeded by `seed`; in Python: a Spearman per resample needs its own ranks, replicates x
-- pairs rows per group in SQL).
CREATE VIEW idbench_twin_diff AS
WITH r AS (
    SELECT model, twin, layer, pooling, size, gold, pair_set,
           (rank() OVER wa + count(*) OVER wa) / 2.0 AS ra,
           (rank() OVER wb + count(*) OVER wb) / 2.0 AS rb,
           (rank() OVER wy + count(*) OVER wy) / 2.0 AS ry
    FROM idbench_twin_pairs
    WINDOW wa AS (PARTITION BY model, twin, layer, pooling, size, gold, pair_set ORDER BY score),
           wb AS (PARTITION BY model, twin, layer, pooling, size, gold, pair_set ORDER BY twin_score),
           wy AS (PARTITION BY model, twin, layer, pooling, size, gold, pair_set ORDER BY value)
), s AS (
    SELECT model, twin, layer, pooling, size, gold, pair_set, count(*) AS n,
           CASE WHEN count(*) < 2 OR var_pop(ra) = 0 OR var_pop(ry) = 0 THEN NULL ELSE corr(ra, ry) END AS rho,
           CASE WHEN count(*) < 2 OR var_pop(rb) = 0 OR var_pop(ry) = 0 THEN NULL ELSE corr(rb, ry) END AS twin_rho
    FROM r GROUP BY ALL
)
SELECT *, rho - twin_rho AS diff FROM s
ORDER BY model, pair_set, gold, size, pooling, layer;

COMMENT ON COLUMN idbench_held_out_scores.x IS 'the pair''s score at the layer chosen on the other folds: its average rank among all pairs at that layer (the model''s cosine ranked; no gold used)';
COMMENT ON COLUMN idbench_held_out_scores.fold IS 'the pair''s fold (sha256 of the run seed and the pair id, modulo idbench.layer_folds)';
COMMENT ON COLUMN idbench_held_out_scores.layer IS 'the layer chosen for this pair''s fold, on the other folds'' pairs (ties: the lowest layer)';
COMMENT ON COLUMN idbench_held_out_scores.layers IS 'the layer chosen per fold, in fold order';

-- Column descriptions of the twin views (the warehouse glossary holds the names shared across families).
COMMENT ON COLUMN idbench_twin_pairs.score IS 'the model''s cosine of the pair''s two identifiers (mean-pooled or first-token states at this layer)';
COMMENT ON COLUMN idbench_twin_pairs.twin_score IS 'the twin''s cosine of the same pair at the same layer and pooling';
COMMENT ON COLUMN idbench_twin_pairs.value IS 'the developers'' gold rating of the pair (the `gold` column says which)';
COMMENT ON COLUMN idbench_twin_diff.n IS 'number of pairs both the model and its twin scored (the rhos are over exactly these)';
