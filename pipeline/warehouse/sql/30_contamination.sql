-- Known contamination (docs/contamination.md): per model, how it is known whether it could have read an item,
-- and the labels. Items are dated by 25_item_dates.sql and each family's sql/15_contamination_dates.sql (run
-- before any model too: pipeline.warehouse.dates), labelled by each family's sql/20_contamination.sql.

-- Per zoo model: `exact` (its card records the text it read: pipeline-trained), `cutoff` (a pretrained model
-- with training_cutoff), `unknown`; a random twin takes its model's basis and labels (labelled_by), so a model
-- and its twin are compared on the same items on each side.
CREATE VIEW contamination_models AS
SELECT c.model, c.labelled_by,
       CASE WHEN json_extract(m.card, '$.train_data.read') IS NOT NULL THEN 'exact'
            WHEN l.training_cutoff IS NOT NULL THEN 'cutoff' ELSE 'unknown' END AS basis,
       l.training_cutoff, l.training_cutoff_source,
       -- data: the training data's stated cutoff; release: the weights' release, an upper bound on it (an item
       -- labelled released_before_cutoff is then "before the release", not "before the cutoff")
       l.training_cutoff_kind AS cutoff_kind
FROM model_cutoffs c
JOIN model_cutoffs l ON l.model = c.labelled_by
LEFT JOIN models m ON m.name = c.labelled_by;

-- Per model, the line ranges of each file its card says it read (a pipeline-trained model's exact text).
CREATE TABLE contamination_read_ranges AS
WITH files AS (
    SELECT name AS model, unnest(json_extract(card, '$.train_data.read.text[*]')) AS f FROM models
), ranges AS (
    SELECT model, json_extract_string(f, '$.file_id') AS file_id, unnest(json_extract(f, '$.ranges[*]')) AS r
    FROM files
)
SELECT model, file_id, json_extract(r, '$[0]')::INTEGER AS start_line, json_extract(r, '$[2]')::INTEGER AS end_line
FROM ranges
ORDER BY ALL;

-- One item's label for one model: `read` / `not_read` (exact), `released_after_cutoff` (the item's date is after
-- the cutoff: it cannot have been read) / `released_before_cutoff` (it could have been), else `unknown`.
-- `date_basis`: how the date was found. `release` (the pinned release of the item's source, no history: the stdlib's
-- CPython, the JDK's JAVA_VERSION_DATE, a library without `history`) is only an upper bound on the code's age: on or
-- before the cutoff it is `released_before_cutoff`, after it `unknown` (the code may be years older than the
-- release that ships it: the pinned JDK build of 2026 ships code from 1996). Only a first release can say
-- `released_after_cutoff`: `first_seen` (the first pinned release holding the code, a history without gaps) or
-- `since_tag` (a JDK API's first release, as its own @since tag names it).
CREATE MACRO contamination_label(basis, cutoff, item_date, was_read, date_basis := NULL) AS
    CASE WHEN basis = 'exact' THEN CASE WHEN was_read THEN 'read' ELSE 'not_read' END
         WHEN basis = 'cutoff' AND item_date IS NOT NULL THEN
              CASE WHEN item_date <= cutoff THEN 'released_before_cutoff'
                   WHEN date_basis = 'release' THEN 'unknown'
                   ELSE 'released_after_cutoff' END
         ELSE 'unknown' END;

-- Every model against every dated item of a file (`items`: with file_id, line and released): the model, its basis,
-- the item's columns and its label, where a trained model `read` the item when the text its card records covers
-- the item's line; a pretrained model's label compares the item's date with its cutoff; a twin takes its model's.
CREATE MACRO labelled_by_line(items) AS TABLE
SELECT c.model, c.basis, c.cutoff_kind, d.*,
       contamination_label(c.basis, c.training_cutoff, d.released,
                           EXISTS (SELECT 1 FROM contamination_read_ranges r
                                   WHERE r.model = c.labelled_by AND r.file_id = d.file_id
                                     AND d.line BETWEEN r.start_line AND r.end_line),
                           date_basis := d.date_basis) AS label
FROM contamination_models c CROSS JOIN query_table(items) d;

-- Every source with its license and release date, and what the manifest kept of it.
CREATE VIEW corpus_provenance AS
SELECT s.name AS source, s.kind, s.status, s.license, s.released,
       count(m.file_id) AS files, count(m.file_id) FILTER (WHERE m.language = 'python') AS python_files,
       (SELECT count(*) FROM rejects r WHERE r.source = s.name AND r.reason = 'license') AS license_rejects,
       (SELECT count(*) FROM first_seen_functions f WHERE f.source = s.name) AS functions_dated
FROM sources s LEFT JOIN manifest m ON m.source = s.name
GROUP BY ALL
ORDER BY source;
