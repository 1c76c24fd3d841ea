-- Known contamination per quiz and model (docs/contamination.md); each quiz's date: sql/15_contamination_dates.sql.

-- Per model and quiz: its label (a trained model: `read` when a call of the API is in the text it read, as
-- apiquiz_seen; a pretrained model with a cutoff: the API's definition date against it, `dated_by = 'api'`; a twin:
-- its model's), the date the label read (item_released, date_basis) and both dates with their basis.
CREATE TABLE apiquiz_contamination AS
SELECT c.model, q.quiz_id, q.setting, c.basis, c.cutoff_kind,
       contamination_label(c.basis, c.training_cutoff, q.released, s.seen = 'seen', date_basis := q.date_basis) AS label,
       q.dated_by, q.released AS item_released, q.date_basis, q.api_released, q.api_date_basis,
       q.context_released, q.context_date_basis
FROM contamination_models c
CROSS JOIN apiquiz_quiz_dates q
LEFT JOIN apiquiz_seen s ON s.model = c.labelled_by AND s.api = q.api AND s.api_repository IS NOT DISTINCT FROM q.repository
ORDER BY ALL;

-- The headline split by label: P@1 per model, protocol and label over the scored quizzes (every setting
-- pooled; context-leaking nl quizzes out), with n and a 95% Poisson-bootstrap CI.
CREATE VIEW apiquiz_contamination_scores AS
WITH hits AS (
    SELECT p.model, p.protocol, c.label, c.cutoff_kind, c.dated_by, success_at_k(p.gold_rank, 1) AS value, count(*) AS items
    FROM apiquiz_predictions p JOIN apiquiz_contamination c USING (model, quiz_id)
    WHERE p.status = 'ok' AND p.n_ranked > 1 AND p.protocol NOT LIKE 'fill_mask%'
    GROUP BY ALL
)
SELECT model, protocol, label, cutoff_kind, dated_by, n, round(mean, 4) AS p_at_1, round(greatest(0, lo), 4) AS lo,
       round(least(1, hi), 4) AS hi
FROM poisson_bootstrap_hist(hits)
ORDER BY ALL;

-- A model against its random twin on each side (the model's label; the same quizzes, both scored).
CREATE VIEW apiquiz_contamination_vs_twin AS
WITH pairs AS (
    SELECT t.model, w.twin, t.protocol, c.label, c.cutoff_kind, c.dated_by, success_at_k(t.gold_rank, 1) AS a, success_at_k(r.gold_rank, 1) AS b,
           count(*) AS items
    FROM apiquiz_predictions t
    JOIN model_twins w ON w.model = t.model
    JOIN apiquiz_predictions r ON r.model = w.twin AND r.protocol = t.protocol AND r.quiz_id = t.quiz_id
    JOIN apiquiz_contamination c ON c.model = t.model AND c.quiz_id = t.quiz_id
    WHERE t.status = 'ok' AND r.status = 'ok' AND t.n_ranked > 1 AND t.protocol NOT LIKE 'fill_mask%'
    GROUP BY ALL
)
SELECT model, twin, protocol, label, cutoff_kind, dated_by, n, round(mean_a, 4) AS p_at_1, round(mean_b, 4) AS twin_p_at_1,
       round(diff, 4) AS diff, round(lo, 4) AS lo, round(hi, 4) AS hi, p_value
FROM poisson_paired_bootstrap_hist(pairs)
ORDER BY ALL;

-- Quizzes per model and label (all generated, not only those scored), and how each side is dated.
CREATE VIEW apiquiz_contamination_counts AS
SELECT model, basis, cutoff_kind, label, dated_by, date_basis, count(*) AS quizzes, min(item_released) AS earliest,
       max(item_released) AS latest
FROM apiquiz_contamination
GROUP BY ALL
ORDER BY ALL;

-- The before/after comparison that can tell (docs/contamination.md): the same libraries on both sides. Only quizzes
-- whose API is dated by its definition's first pinned release (api_date_basis `first_seen`: sources with history),
-- only libraries with quizzes the model and its twin both scored on each side of the model's cutoff; per side the
-- paired gain over the twin (Poisson bootstrap), and the difference of the two gains, its 95% CI from the two
-- sides' bootstrap standard errors (independent quizzes: a normal approximation).
CREATE VIEW apiquiz_contamination_same_library AS
WITH scored AS (
    SELECT t.model, w.twin, t.protocol, c.label, c.cutoff_kind, q.library, success_at_k(t.gold_rank, 1) AS a,
           success_at_k(r.gold_rank, 1) AS b
    FROM apiquiz_predictions t
    JOIN model_twins w ON w.model = t.model
    JOIN apiquiz_predictions r ON r.model = w.twin AND r.protocol = t.protocol AND r.quiz_id = t.quiz_id
    JOIN apiquiz_contamination c ON c.model = t.model AND c.quiz_id = t.quiz_id
    JOIN apiquiz_quizzes q ON q.quiz_id = t.quiz_id
    WHERE t.status = 'ok' AND r.status = 'ok' AND t.n_ranked > 1 AND t.protocol NOT LIKE 'fill_mask%'
      AND c.api_date_basis = 'first_seen' AND c.label IN ('released_before_cutoff', 'released_after_cutoff')
), libraries AS (
    SELECT model, protocol, library FROM scored GROUP BY ALL HAVING count(DISTINCT label) = 2
), pairs AS (
    SELECT s.model, s.twin, s.protocol, s.label, s.cutoff_kind, s.a, s.b, count(*) AS items
    FROM scored s JOIN libraries USING (model, protocol, library)
    GROUP BY ALL
), sides AS (
    FROM poisson_paired_bootstrap_hist(pairs)
), counted AS (
    SELECT model, protocol, count(DISTINCT library) AS libraries FROM libraries GROUP BY ALL
)
SELECT a.model, a.twin, a.protocol, a.cutoff_kind, 'api' AS dated_by, 'first_seen' AS date_basis, l.libraries,
       a.n AS n_after, round(a.diff, 4) AS gain_after, round(a.lo, 4) AS gain_after_lo, round(a.hi, 4) AS gain_after_hi,
       b.n AS n_before, round(b.diff, 4) AS gain_before, round(b.lo, 4) AS gain_before_lo,
       round(b.hi, 4) AS gain_before_hi, round(a.diff - b.diff, 4) AS gain_difference,
       round(a.diff - b.diff - 1.959964 * sqrt(pow((a.hi - a.lo) / 3.919928, 2) + pow((b.hi - b.lo) / 3.919928, 2)), 4)
           AS lo,
       round(a.diff - b.diff + 1.959964 * sqrt(pow((a.hi - a.lo) / 3.919928, 2) + pow((b.hi - b.lo) / 3.919928, 2)), 4)
           AS hi
FROM sides a
JOIN sides b ON b.model = a.model AND b.protocol = a.protocol AND b.label = 'released_before_cutoff'
JOIN counted l ON l.model = a.model AND l.protocol = a.protocol
WHERE a.label = 'released_after_cutoff'
ORDER BY ALL;
