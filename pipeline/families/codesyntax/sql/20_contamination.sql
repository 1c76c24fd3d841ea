-- Known contamination per sample and model (docs/contamination.md): a function sample is dated by its function
-- (dated_by_function: the context's date, `dated_by = 'context'`: could the model have read this code?) and labelled by its first line (labelled_by_line). A sample is the same function in every
-- labelled variant (its id does not name the variant): one row each.
CREATE TABLE codesyntax_contamination AS
WITH samples AS (
    SELECT DISTINCT sample_id, language, eval_split, file_id, function, start_line AS line FROM codesyntax_samples
), dated AS (
    FROM dated_by_function('samples')
)
SELECT model, sample_id, language, eval_split, basis, cutoff_kind, label, 'context' AS dated_by,
       released AS item_released, date_basis, released AS context_released, date_basis AS context_date_basis
FROM labelled_by_line('dated')
ORDER BY ALL;

CREATE VIEW codesyntax_contamination_counts AS
SELECT model, language, eval_split, basis, cutoff_kind, label, dated_by, date_basis, count(*) AS samples
FROM codesyntax_contamination
GROUP BY ALL
ORDER BY ALL;

-- The headline per test sample, the unit a label is on: the sample's edges (first token, top-1) that the model's
-- best head of their relation finds (codesyntax_best_heads: chosen on dev, or on test as the paper did), summed
-- over its relations, from the inference's per-sample rows (sample_id set). A sample's value is hits / edges, the
-- share of its edges found; the headline averages relations instead (codesyntax_scores), so the two differ.
CREATE TABLE codesyntax_sample_scores AS
SELECT b.chosen_on, p.model, p.language, p.variant, p.sample_id, sum(p.hits)::BIGINT AS hits,
       sum(p.total)::BIGINT AS edges
FROM codesyntax_predictions p
JOIN codesyntax_best_heads b
  ON b.model = p.model AND b.language = p.language AND b.variant = p.variant AND b.relation = p.relation
 AND b.metric = p.metric AND b.k = p.k AND b.layer = p.layer AND b.head = p.head
WHERE p.sample_id IS NOT NULL
GROUP BY ALL
HAVING sum(p.total) > 0
ORDER BY ALL;

-- The score split by label: per model, language and label, the mean over test samples of their share of edges
-- found, with n (samples) and a 95% Poisson-bootstrap CI over the samples.
CREATE VIEW codesyntax_contamination_scores AS
WITH hits AS (
    SELECT s.chosen_on, s.model, s.language, s.variant, c.label, c.cutoff_kind, c.dated_by, s.hits::DOUBLE / s.edges AS value,
           count(*) AS items
    FROM codesyntax_sample_scores s JOIN codesyntax_contamination c ON c.model = s.model AND c.sample_id = s.sample_id
    GROUP BY ALL
)
SELECT chosen_on, model, language, variant, label, cutoff_kind, dated_by, n, round(mean, 4) AS score, round(greatest(0, lo), 4) AS lo,
       round(least(1, hi), 4) AS hi
FROM poisson_bootstrap_hist(hits)
ORDER BY ALL;

-- A model against its random twin on each side of the model's label: the same samples, each system with its own
-- best heads; the difference's 95% CI and p-value from a paired Poisson bootstrap over the samples.
CREATE VIEW codesyntax_contamination_vs_twin AS
WITH pairs AS (
    SELECT t.chosen_on, t.model, w.twin, t.language, t.variant, c.label, c.cutoff_kind, c.dated_by, t.hits::DOUBLE / t.edges AS a,
           r.hits::DOUBLE / r.edges AS b, count(*) AS items
    FROM codesyntax_sample_scores t
    JOIN model_twins w ON w.model = t.model
    JOIN codesyntax_sample_scores r ON r.model = w.twin AND r.chosen_on = t.chosen_on AND r.language = t.language
                                   AND r.variant = t.variant AND r.sample_id = t.sample_id
    JOIN codesyntax_contamination c ON c.model = t.model AND c.sample_id = t.sample_id
    GROUP BY ALL
)
SELECT chosen_on, model, twin, language, variant, label, cutoff_kind, dated_by, n, round(mean_a, 4) AS score,
       round(mean_b, 4) AS twin_score, round(diff, 4) AS diff, round(lo, 4) AS lo, round(hi, 4) AS hi, p_value
FROM poisson_paired_bootstrap_hist(pairs)
ORDER BY ALL;
