-- Known contamination per item and model (docs/contamination.md). An item asks for an API, so its label follows the
-- API's definition date (`dated_by = 'api'`); its context's date is carried beside it. A code point:
-- apirec_point_dates (sql/15_contamination_dates.sql); a query: its answer's definition (dated_by_definition), its
-- context its file's release.
CREATE TABLE apirec_item_dates AS
WITH queries AS (
    SELECT q.query_id AS item_id, 'query' AS benchmark, q.file_id, q.line, q.api, q.category, m.language, q.api_class,
           m.released AS context_released,
           CASE WHEN m.released IS NOT NULL THEN 'release' ELSE 'none' END AS context_date_basis
    FROM apirec_queries q JOIN manifest m USING (file_id)
)
SELECT item_id, benchmark, file_id, line, dated_by, released, date_basis, api_released, api_date_basis,
       context_released, context_date_basis
FROM apirec_point_dates
UNION ALL
SELECT item_id, benchmark, file_id, line, 'api', api_released, api_date_basis, api_released, api_date_basis,
       context_released, context_date_basis
FROM dated_by_definition('queries')
ORDER BY ALL;

-- Per model and item: its label by the item's line (labelled_by_line).
CREATE TABLE apirec_contamination AS
SELECT model, item_id, benchmark, basis, cutoff_kind, label, dated_by, released AS item_released, date_basis,
       api_released, api_date_basis, context_released, context_date_basis
FROM labelled_by_line('apirec_item_dates')
ORDER BY ALL;

-- The headline split by label: SR@1 and SR@10 (method level) per model, ranker, benchmark and label, with n
-- and a 95% Poisson-bootstrap CI.
CREATE VIEW apirec_contamination_scores AS
WITH hits AS (
    SELECT s.model, s.ranker, s.benchmark, c.label, c.cutoff_kind, c.dated_by, 'SR@' || s.k AS metric, s.sr_method AS value, count(*) AS items
    FROM apirec_point_scores s JOIN apirec_contamination c ON c.model = s.model AND c.item_id = s.point_id
    WHERE s.status = 'ok' AND s.k IN (1, 10)
    GROUP BY ALL
)
SELECT model, ranker, benchmark, label, cutoff_kind, dated_by, metric, n, round(mean, 4) AS score, round(greatest(0, lo), 4) AS lo,
       round(least(1, hi), 4) AS hi
FROM poisson_bootstrap_hist(hits)
ORDER BY ALL;

-- A model against its random twin on each side (the model's label; the same items, ranker and k).
CREATE VIEW apirec_contamination_vs_twin AS
WITH pairs AS (
    SELECT t.model, w.twin, t.ranker, t.benchmark, c.label, c.cutoff_kind, c.dated_by, 'SR@' || t.k AS metric, t.sr_method AS a,
           r.sr_method AS b, count(*) AS items
    FROM apirec_point_scores t
    JOIN model_twins w ON w.model = t.model
    JOIN apirec_point_scores r ON r.model = w.twin AND r.ranker = t.ranker AND r.benchmark = t.benchmark
                              AND r.point_id = t.point_id AND r.k = t.k
    JOIN apirec_contamination c ON c.model = t.model AND c.item_id = t.point_id
    WHERE t.k IN (1, 10) AND t.status = 'ok' AND r.status = 'ok'
    GROUP BY ALL
)
SELECT model, twin, ranker, benchmark, label, cutoff_kind, dated_by, metric, n, round(mean_a, 4) AS score, round(mean_b, 4) AS twin_score,
       round(diff, 4) AS diff, round(lo, 4) AS lo, round(hi, 4) AS hi, p_value
FROM poisson_paired_bootstrap_hist(pairs)
ORDER BY ALL;

-- Items per model, benchmark and label, and how each side is dated.
CREATE VIEW apirec_contamination_counts AS
SELECT model, benchmark, basis, cutoff_kind, label, dated_by, date_basis, count(*) AS items, min(item_released) AS earliest,
       max(item_released) AS latest
FROM apirec_contamination
GROUP BY ALL
ORDER BY ALL;
