-- probing: per-layer curves, best layer, headline with a t interval over folds 1..K-1, selectivity.

CREATE VIEW probing_layers AS
SELECT task, model, pooling, probe, layer, min(metric) AS metric, avg(error) AS error,
       count(*) AS folds, sum(n_test)::BIGINT AS n_test
FROM probing_fits WHERE layer IS NOT NULL
GROUP BY task, model, pooling, probe, layer;

CREATE VIEW probing_best AS
SELECT task, model, pooling, probe, min(layer) AS layer
FROM probing_fits WHERE selected AND layer IS NOT NULL
GROUP BY task, model, pooling, probe;

-- probes at the layer chosen on fold 0 and every baseline, scored on folds 1..K-1: the mean error over those test
-- samples and its 95% percentile bootstrap interval over them (pipeline.fit.probe.headline_columns: 10,000
-- replicates, seeded per task, model and probe; inside the metric's range by construction, never clipped), as the
-- fit wrote them on the selected layer's rows (`headline_*`). Rows written without them (an older fit) fall back to
-- the mean of the fold means with a 95% Student-t interval over the folds, clipped to the metric's range (`interval`
-- says which). Each model is fitted on its own items (pipeline.fit): a probe row is over that model's items; a
-- baseline row with a model's name (probe `majority` / `linreg`) is that baseline on the same model's items, and one
-- named after itself (model = probe) is the family's baseline on the full labelled item set.
-- n_test: the headline's n, the distinct test samples the mean is over (every item is tested in one fold only,
-- so the test rows of folds 1..K-1 summed).
CREATE VIEW probing_headline AS
WITH f AS (  -- fit files written before the headline columns existed read as null here
    SELECT * FROM probing_fits
    UNION ALL BY NAME
    SELECT NULL::DOUBLE AS headline_error, NULL::DOUBLE AS headline_lo, NULL::DOUBLE AS headline_hi WHERE false
), b AS (
    SELECT * FROM probing_baselines
    UNION ALL BY NAME
    SELECT NULL::DOUBLE AS headline_error, NULL::DOUBLE AS headline_lo, NULL::DOUBLE AS headline_hi WHERE false
), rows AS (  -- a baseline row is `selected` too (its null layer is the chosen one): taken once, below
    SELECT task, model, probe, layer, metric, error, fold, n_test, headline_error, headline_lo, headline_hi FROM f
    WHERE selected AND fold > 0 AND layer IS NOT NULL
    UNION ALL
    SELECT task, model, probe, layer, metric, error, fold, n_test, headline_error, headline_lo, headline_hi FROM f
    WHERE layer IS NULL AND fold > 0
    UNION ALL
    SELECT task, model, probe, layer, metric, error, fold, n_test, headline_error, headline_lo, headline_hi FROM b
    WHERE fold > 0
), s AS (
    SELECT task, model, probe, min(layer) AS layer, min(metric) AS metric, avg(error) AS fold_mean,
           coalesce(stddev_samp(error), 0) AS sd, count(*) AS n, sum(n_test)::BIGINT AS n_test,
           min(headline_error) AS headline_error, min(headline_lo) AS headline_lo, min(headline_hi) AS headline_hi
    FROM rows GROUP BY task, model, probe
), t AS (
    SELECT *, CASE n - 1 WHEN 1 THEN 12.706 WHEN 2 THEN 4.303 WHEN 3 THEN 3.182 WHEN 4 THEN 2.776
              WHEN 5 THEN 2.571 ELSE 1.96 END AS t FROM s
)
SELECT task, model, probe, layer, metric, coalesce(headline_error, fold_mean) AS mean,
       coalesce(headline_lo, greatest(0, fold_mean - t * sd / sqrt(n))) AS ci_low,
       coalesce(headline_hi, CASE WHEN metric = 'mae' THEN fold_mean + t * sd / sqrt(n)
                                  ELSE least(1, fold_mean + t * sd / sqrt(n)) END) AS ci_high,
       n AS folds, n_test,
       CASE WHEN headline_lo IS NULL THEN 't95 over folds, clipped' ELSE 'bootstrap over test samples' END AS interval
FROM t;

COMMENT ON COLUMN probing_headline.mean IS 'mean error (1 - accuracy; MAE for a regression task) over the test samples of folds 1..K-1 at the layer chosen on fold 0';
COMMENT ON COLUMN probing_headline.n_test IS 'the headline''s n: distinct test samples the mean is over (folds 1..K-1; each item is tested in one fold)';
COMMENT ON COLUMN probing_headline.ci_low IS '95% percentile bootstrap interval over the test samples (10,000 replicates, seeded per cell); never clipped';
COMMENT ON COLUMN probing_headline.interval IS 'how ci_low / ci_high were computed: a bootstrap over test samples, or (fits without per-sample errors) a t interval over the folds, clipped';

-- Every probe's row for the report's model table: its headline (probing_headline), the error on fold 0 at the
-- layer chosen there (the held-out figure a "best model" is chosen on, never the test folds' mean) and fold 0's n,
-- the baseline on the same model's items (majority, or linreg for depth: its headline with its bootstrap interval)
-- and the probe paired against it on the same test samples (probe - baseline, its 95% bootstrap interval and p, as
-- the fit computed them), and whether the model is a random-weights control (the twin of another zoo model in
-- model_twins).
CREATE VIEW probing_models AS
WITH f AS (
    SELECT * FROM probing_fits
    UNION ALL BY NAME
    SELECT NULL::VARCHAR AS baseline_name, NULL::DOUBLE AS baseline_score, NULL::DOUBLE AS vs_baseline,
           NULL::DOUBLE AS vs_baseline_lo, NULL::DOUBLE AS vs_baseline_hi, NULL::DOUBLE AS vs_baseline_p WHERE false
), f0 AS (
    -- one row per probe (its pooling's); were there several, the lowest error, then the pooling's name
    SELECT task, model, probe, arg_min(pooling, {'e': round(error, 9), 'p': pooling}) AS pooling,
           min(error) AS fold0_error, arg_min(n_test, {'e': round(error, 9), 'p': pooling})::BIGINT AS fold0_n
    FROM f WHERE selected AND fold = 0 AND layer IS NOT NULL GROUP BY task, model, probe
), vs AS (  -- the fit's pairing, on the selected layer's rows (the same values on each fold's row)
    SELECT task, model, probe, pooling, min(baseline_name) AS baseline_name, min(vs_baseline) AS vs_baseline,
           min(vs_baseline_lo) AS vs_baseline_lo, min(vs_baseline_hi) AS vs_baseline_hi,
           min(vs_baseline_p) AS vs_baseline_p
    FROM f WHERE selected AND layer IS NOT NULL GROUP BY task, model, probe, pooling
), base AS (
    SELECT task, model, probe AS baseline_name, mean AS baseline_score, ci_low AS baseline_ci_low,
           ci_high AS baseline_ci_high, n_test AS baseline_n
    FROM probing_headline WHERE layer IS NULL AND probe IN ('majority', 'linreg') AND model <> probe
)
SELECT h.task, h.model, h.probe, f0.pooling, h.layer, h.metric, h.mean, h.ci_low, h.ci_high, h.n_test,
       f0.fold0_error, f0.fold0_n, vs.baseline_name, b.baseline_score, b.baseline_ci_low, b.baseline_ci_high,
       b.baseline_n, vs.vs_baseline, vs.vs_baseline_lo, vs.vs_baseline_hi, vs.vs_baseline_p,
       h.model IN (SELECT twin FROM model_twins) AS control
FROM probing_headline h
JOIN f0 USING (task, model, probe)
LEFT JOIN vs USING (task, model, probe, pooling)
LEFT JOIN base b ON b.task = h.task AND b.model = h.model AND b.baseline_name = vs.baseline_name
WHERE h.layer IS NOT NULL;
COMMENT ON COLUMN probing_models.fold0_error IS 'the probe''s error on fold 0 (the held-out fold its layer is chosen on; what the headline picks a model by, never the test folds)';
COMMENT ON COLUMN probing_models.fold0_n IS 'test samples of fold 0 (the held-out fold the layer and the headline''s model are chosen on)';
COMMENT ON COLUMN probing_models.baseline_name IS 'the baseline on this model''s own items the probe is paired against: majority (classification), linreg on the token count (regression)';
COMMENT ON COLUMN probing_models.baseline_score IS 'the baseline''s mean error (MAE for depth) over the same test samples as the probe (folds 1..K-1 of this model''s items)';
COMMENT ON COLUMN probing_models.baseline_ci_low IS 'low end of the baseline''s 95% bootstrap interval over those samples';
COMMENT ON COLUMN probing_models.baseline_ci_high IS 'high end of the baseline''s 95% bootstrap interval over those samples';
COMMENT ON COLUMN probing_models.baseline_n IS 'distinct test samples the baseline''s mean is over (the probe''s n_test)';
COMMENT ON COLUMN probing_models.vs_baseline IS 'probe error - baseline error, paired on the same test samples (negative: the probe errs less than its baseline)';
COMMENT ON COLUMN probing_models.vs_baseline_lo IS 'low end of the paired difference''s 95% percentile bootstrap interval (10,000 replicates over the test samples, seeded per cell)';
COMMENT ON COLUMN probing_models.vs_baseline_hi IS 'high end of the paired difference''s 95% percentile bootstrap interval';
COMMENT ON COLUMN probing_models.vs_baseline_p IS 'two-sided p of the paired difference: twice the share of replicates without its sign, capped at 1';
COMMENT ON COLUMN probing_models.control IS 'true when the model is a random-weights twin (model_twins): a control, never the headline''s chosen model';

-- Hewitt & Liang selectivity per layer: control-task error - task error (mean over all folds), with the
-- samples it rests on (test rows summed over the folds: every sample once) and a 95% Student-t interval of
-- the mean of the per-fold paired differences (the task and its control share items and folds), clipped to [-1, 1]
CREATE VIEW probing_selectivity AS
WITH paired AS (
    SELECT t.task, t.model, t.layer, t.fold, t.error AS task_error, c.error AS control_error,
           c.error - t.error AS diff, t.n_test
    FROM probing_fits t JOIN probing_fits c
      ON c.task = t.task || '-control' AND c.model = t.model AND c.layer = t.layer AND c.pooling = t.pooling
         AND c.probe = t.probe AND c.fold = t.fold
    WHERE t.layer IS NOT NULL
), s AS (
    SELECT task, model, layer, avg(task_error) AS task_error, avg(control_error) AS control_error,
           avg(diff) AS selectivity, coalesce(stddev_samp(diff), 0) AS sd, count(*) AS folds, sum(n_test)::BIGINT AS samples
    FROM paired GROUP BY task, model, layer
)
SELECT task, model, layer, task_error, control_error, selectivity,
       greatest(-1, selectivity - t * sd / sqrt(folds)) AS ci_low, least(1, selectivity + t * sd / sqrt(folds)) AS ci_high,
       folds, samples
FROM (SELECT *, CASE folds - 1 WHEN 1 THEN 12.706 WHEN 2 THEN 4.303 WHEN 3 THEN 3.182 WHEN 4 THEN 2.776
                 WHEN 5 THEN 2.571 ELSE 1.96 END AS t FROM s);

-- A model against its random twin (model_twins) on the same test samples: per (language, task, probe, pooling) each
-- model at its own headline layer (chosen on fold 0), every sample of folds 1..K-1 that both were tested on (each
-- model is fitted on its own items and the folds are assigned on the full labelled set, so an item both read is in
-- the same fold for both: n = the items both read that fall in folds 1..K-1), with its
-- error (0/1 misclassification, or |prediction - target| for a regression task: MAE); score = the model's mean error
-- over those samples (so it can differ from probing_headline's mean of fold means in the 3rd decimal), twin_score the
-- twin's, diff = model - twin (negative: the model errs less), its 95% CI and two-sided p from a paired Poisson
-- bootstrap over the samples (poisson_paired_bootstrap, 1000 replicates, seeded by the run's `seed`). The samples
-- of one snippet are resampled independently (the token tasks' snippets are not clusters here). `beats_twin`: the
-- CI is below 0. A model without a twin, or fits without per-sample errors, have no row.
CREATE VIEW probing_twin_items AS
WITH f AS (  -- fit files written before the per-sample columns existed read as null here (no row), not an error
    SELECT * FROM probing_fits
    UNION ALL BY NAME
    SELECT NULL::VARCHAR[] AS test_items, NULL::DOUBLE[] AS test_errors WHERE false
), s AS (
    SELECT task, model, probe, pooling, metric, layer, fold, unnest(test_items) AS item_id, unnest(test_errors) AS error
    FROM f
    WHERE selected AND fold > 0 AND layer IS NOT NULL AND test_items IS NOT NULL
)
SELECT split_part(a.task, '-', 1) AS language, a.task[length(split_part(a.task, '-', 1)) + 2:] AS task,
       w.model, w.twin, a.probe, a.pooling, a.metric, a.layer, b.layer AS twin_layer, a.item_id, a.error AS a,
       b.error AS b
FROM model_twins w
JOIN s a ON a.model = w.model
JOIN s b ON b.model = w.twin AND b.task = a.task AND b.probe = a.probe AND b.pooling = a.pooling
        AND b.item_id = a.item_id;

CREATE VIEW probing_twin_diff AS
SELECT model, twin, language, task, probe, pooling, metric, layer, twin_layer, n::BIGINT AS n,
       round(mean_a, 4) AS score, round(mean_b, 4) AS twin_score, round(diff, 4) AS diff, round(lo, 4) AS lo,
       round(hi, 4) AS hi, p_value, hi < 0 AS beats_twin
FROM poisson_paired_bootstrap(probing_twin_items,
                              seed := coalesce((SELECT value FROM run_params WHERE key = 'seed'), '0'))
ORDER BY model, language, task, probe, pooling;

-- Column descriptions of the twin views (the warehouse glossary holds the names shared across families).
COMMENT ON COLUMN probing_twin_items.a IS 'the model''s error on the test sample: 0/1 misclassification, or |prediction - target| for a regression task';
COMMENT ON COLUMN probing_twin_items.b IS 'the twin''s error on the same test sample';
COMMENT ON COLUMN probing_twin_diff.score IS 'the model''s mean error over the test samples of folds 1..K-1 (1 - accuracy; MAE for a regression task)';
COMMENT ON COLUMN probing_twin_diff.twin_score IS 'the twin''s mean error over the same test samples';
COMMENT ON COLUMN probing_twin_diff.n IS 'number of test samples both the model and its twin were tested on (folds 1..K-1)';
COMMENT ON COLUMN probing_twin_diff.beats_twin IS 'true when the paired difference''s 95% CI lies below zero (the model errs less than its twin)';
