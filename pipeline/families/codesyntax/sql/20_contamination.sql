-- Known contamination per sample and model (docs/contamination.md): a function sample is dated by its first
-- pinned release (first_seen_functions, sources with history), else by its file's release (date_basis
-- `release`: the code may be older); a trained model `read` it when its text covers the function's first line.
-- The attention hits are counted per head and relation over all samples (no per-sample rows), so the score is not
-- split here: this counts the samples of each side, the evaluation set a split score would be over.
CREATE TABLE codesyntax_contamination AS
WITH dated AS (
    SELECT s.sample_id, s.language, s.eval_split, s.file_id, s.start_line,
           coalesce(f.first_released, m.released) AS released,
           CASE WHEN f.first_released IS NOT NULL THEN 'first_seen' WHEN m.released IS NOT NULL THEN 'release'
                ELSE 'none' END AS date_basis
    FROM codesyntax_samples s
    JOIN manifest m ON m.file_id = s.file_id
    LEFT JOIN first_seen_functions f ON f.file_id = s.file_id AND f.function = s.function
)
SELECT c.model, d.sample_id, d.language, d.eval_split, c.basis,
       contamination_label(c.basis, c.training_cutoff, d.released,
                           EXISTS (SELECT 1 FROM contamination_read_ranges r
                                   WHERE r.model = c.labelled_by AND r.file_id = d.file_id
                                     AND d.start_line BETWEEN r.start_line AND r.end_line)) AS label,
       d.released AS item_released, d.date_basis
FROM contamination_models c CROSS JOIN dated d
ORDER BY ALL;

CREATE VIEW codesyntax_contamination_counts AS
SELECT model, language, eval_split, basis, label, date_basis, count(*) AS samples
FROM codesyntax_contamination
GROUP BY ALL
ORDER BY ALL;
