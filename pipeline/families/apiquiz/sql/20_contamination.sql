-- Known contamination per quiz and model (docs/contamination.md). A quiz asks for an API's name, so its date is
-- the first time the name was out: the earliest of (a) the first pinned release defining it (first_seen_apis,
-- sources with history) and (b) every call of it in the corpus, each dated by the first pinned release of its
-- enclosing function (first_seen_functions), else by its file's release (date_basis `release`: the code may be
-- older than that release; only history gives `first_seen`).
CREATE TABLE apiquiz_item_dates AS
WITH uses AS (
    SELECT n.api, n.api_repository,
           arg_min(CASE WHEN f.first_released IS NOT NULL THEN 'first_seen' ELSE 'release' END,
                   coalesce(f.first_released, m.released)) AS used_basis,
           min(coalesce(f.first_released, m.released)) AS used
    FROM apiquiz_api_names n
    JOIN usages u ON u.fqn = n.fqn AND u.source = n.source AND u.repository = n.repository
    JOIN manifest m ON m.file_id = u.file_id
    LEFT JOIN first_seen_functions f ON f.file_id = u.file_id AND f.function = u.enclosing_function
    WHERE u.kind IN ('call', 'method')
    GROUP BY ALL
), defined AS (
    SELECT api, min(first_released) AS first_seen FROM first_seen_apis GROUP BY api
), apis AS (
    SELECT DISTINCT api, repository AS api_repository FROM apiquiz_quizzes
)
SELECT a.api, a.api_repository, least(d.first_seen, u.used) AS released,
       CASE WHEN d.first_seen IS NOT NULL AND d.first_seen <= coalesce(u.used, d.first_seen) THEN 'first_seen'
            WHEN u.used IS NOT NULL THEN u.used_basis ELSE 'none' END AS date_basis
FROM apis a
LEFT JOIN uses u ON u.api = a.api AND u.api_repository IS NOT DISTINCT FROM a.api_repository
LEFT JOIN defined d ON d.api = a.api
ORDER BY ALL;

-- Per model and quiz: its label (a trained model: `read` when a call of the API is in the text it read, as
-- apiquiz_seen; a pretrained model with a cutoff: the API's date against it; a twin: its model's).
CREATE TABLE apiquiz_contamination AS
SELECT c.model, q.quiz_id, q.setting, c.basis,
       contamination_label(c.basis, c.training_cutoff, d.released, s.seen = 'seen') AS label,
       d.released AS item_released, d.date_basis
FROM contamination_models c
CROSS JOIN apiquiz_quizzes q
LEFT JOIN apiquiz_item_dates d ON d.api = q.api AND d.api_repository IS NOT DISTINCT FROM q.repository
LEFT JOIN apiquiz_seen s ON s.model = c.labelled_by AND s.api = q.api AND s.api_repository IS NOT DISTINCT FROM q.repository
WHERE NOT q.context_leak
ORDER BY ALL;

-- The headline split by label: P@1 per model, protocol and label over the scored quizzes (every setting
-- pooled; context-leaking nl quizzes out), with n and a 95% Poisson-bootstrap CI.
CREATE VIEW apiquiz_contamination_scores AS
WITH hits AS (
    SELECT p.model, p.protocol, c.label, success_at_k(p.gold_rank, 1) AS value, count(*) AS items
    FROM apiquiz_predictions p JOIN apiquiz_contamination c USING (model, quiz_id)
    WHERE p.status = 'ok' AND p.n_ranked > 1 AND p.protocol NOT LIKE 'fill_mask%'
    GROUP BY ALL
)
SELECT model, protocol, label, n, round(mean, 4) AS p_at_1, round(greatest(0, lo), 4) AS lo,
       round(least(1, hi), 4) AS hi
FROM poisson_bootstrap_hist(hits)
ORDER BY ALL;

-- A model against its random twin on each side (the model's label; the same quizzes, both scored).
CREATE VIEW apiquiz_contamination_vs_twin AS
WITH pairs AS (
    SELECT t.model, w.twin, t.protocol, c.label, success_at_k(t.gold_rank, 1) AS a, success_at_k(r.gold_rank, 1) AS b,
           count(*) AS items
    FROM apiquiz_predictions t
    JOIN model_twins w ON w.model = t.model
    JOIN apiquiz_predictions r ON r.model = w.twin AND r.protocol = t.protocol AND r.quiz_id = t.quiz_id
    JOIN apiquiz_contamination c ON c.model = t.model AND c.quiz_id = t.quiz_id
    WHERE t.status = 'ok' AND r.status = 'ok' AND t.n_ranked > 1 AND t.protocol NOT LIKE 'fill_mask%'
    GROUP BY ALL
)
SELECT model, twin, protocol, label, n, round(mean_a, 4) AS p_at_1, round(mean_b, 4) AS twin_p_at_1,
       round(diff, 4) AS diff, round(lo, 4) AS lo, round(hi, 4) AS hi, p_value
FROM poisson_paired_bootstrap_hist(pairs)
ORDER BY ALL;

-- Quizzes per model and label (all generated, not only those scored), and how each side is dated.
CREATE VIEW apiquiz_contamination_counts AS
SELECT model, basis, label, date_basis, count(*) AS quizzes, min(item_released) AS earliest, max(item_released) AS latest
FROM apiquiz_contamination
GROUP BY ALL
ORDER BY ALL;
