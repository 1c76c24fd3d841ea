-- Known contamination per item and model (docs/contamination.md). A code point is dated by its enclosing function
-- (apirec_point_dates, sql/15_contamination_dates.sql); a query by its file's release, or the first release
-- defining its answer (first_seen_apis) when that is earlier.
CREATE TABLE apirec_item_dates AS
SELECT item_id, benchmark, file_id, line, released, date_basis FROM apirec_point_dates
UNION ALL
SELECT q.query_id, 'query', q.file_id, q.line, least(m.released, a.first_seen),
       CASE WHEN a.first_seen IS NOT NULL AND a.first_seen <= coalesce(m.released, a.first_seen) THEN 'first_seen'
            WHEN m.released IS NOT NULL THEN 'release' ELSE 'none' END
FROM apirec_queries q
JOIN manifest m ON m.file_id = q.file_id
LEFT JOIN (SELECT api, min(first_released) AS first_seen FROM first_seen_apis GROUP BY api) a ON a.api = q.api
ORDER BY ALL;

-- Per model and item: its label by the item's line (labelled_by_line).
CREATE TABLE apirec_contamination AS
SELECT model, item_id, benchmark, basis, label, released AS item_released, date_basis
FROM labelled_by_line('apirec_item_dates')
ORDER BY ALL;

-- The headline split by label: SR@1 and SR@10 (method level) per model, ranker, benchmark and label, with n
-- and a 95% Poisson-bootstrap CI.
CREATE VIEW apirec_contamination_scores AS
WITH hits AS (
    SELECT s.model, s.ranker, s.benchmark, c.label, 'SR@' || s.k AS metric, s.sr_method AS value, count(*) AS items
    FROM apirec_point_scores s JOIN apirec_contamination c ON c.model = s.model AND c.item_id = s.point_id
    WHERE s.status = 'ok' AND s.k IN (1, 10)
    GROUP BY ALL
)
SELECT model, ranker, benchmark, label, metric, n, round(mean, 4) AS score, round(greatest(0, lo), 4) AS lo,
       round(least(1, hi), 4) AS hi
FROM poisson_bootstrap_hist(hits)
ORDER BY ALL;

-- A model against its random twin on each side (the model's label; the same items, ranker and k).
CREATE VIEW apirec_contamination_vs_twin AS
WITH pairs AS (
    SELECT t.model, w.twin, t.ranker, t.benchmark, c.label, 'SR@' || t.k AS metric, t.sr_method AS a,
           r.sr_method AS b, count(*) AS items
    FROM apirec_point_scores t
    JOIN model_twins w ON w.model = t.model
    JOIN apirec_point_scores r ON r.model = w.twin AND r.ranker = t.ranker AND r.benchmark = t.benchmark
                              AND r.point_id = t.point_id AND r.k = t.k
    JOIN apirec_contamination c ON c.model = t.model AND c.item_id = t.point_id
    WHERE t.k IN (1, 10) AND t.status = 'ok' AND r.status = 'ok'
    GROUP BY ALL
)
SELECT model, twin, ranker, benchmark, label, metric, n, round(mean_a, 4) AS score, round(mean_b, 4) AS twin_score,
       round(diff, 4) AS diff, round(lo, 4) AS lo, round(hi, 4) AS hi, p_value
FROM poisson_paired_bootstrap_hist(pairs)
ORDER BY ALL;

-- Items per model, benchmark and label, and how each side is dated.
CREATE VIEW apirec_contamination_counts AS
SELECT model, benchmark, basis, label, date_basis, count(*) AS items, min(item_released) AS earliest,
       max(item_released) AS latest
FROM apirec_contamination
GROUP BY ALL
ORDER BY ALL;
