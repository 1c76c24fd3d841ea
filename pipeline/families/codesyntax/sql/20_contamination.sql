-- Known contamination per sample and model (docs/contamination.md): a function sample is dated by its function
-- (dated_by_function) and labelled by its first line (labelled_by_line).
-- The attention hits are counted per head and relation over all samples (no per-sample rows), so the score is not
-- split here: this counts the samples of each side, the evaluation set a split score would be over.
CREATE TABLE codesyntax_contamination AS
WITH samples AS (
    SELECT sample_id, language, eval_split, file_id, function, start_line AS line FROM codesyntax_samples
), dated AS (
    FROM dated_by_function('samples')
)
SELECT model, sample_id, language, eval_split, basis, label, released AS item_released, date_basis
FROM labelled_by_line('dated')
ORDER BY ALL;

CREATE VIEW codesyntax_contamination_counts AS
SELECT model, language, eval_split, basis, label, date_basis, count(*) AS samples
FROM codesyntax_contamination
GROUP BY ALL
ORDER BY ALL;
