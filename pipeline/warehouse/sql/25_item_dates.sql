-- How items are dated (docs/contamination.md), before any model: the warehouse runs this file and so does
-- pipeline.warehouse.dates, which writes a family's item dates before inference for a draw by contamination
-- label (over the same Parquet files: manifest, first_seen_functions), so both read one SQL text.

-- An item of a function, dated (`items`: the name of a table, view or CTE with file_id and function; its columns
-- come out with `released` and `date_basis`): by the first pinned release of its function (first_seen_functions,
-- sources with history), else by its file's release (date_basis `release`: the code may be older).
CREATE MACRO dated_by_function(items) AS TABLE
SELECT i.*, coalesce(f.first_released, m.released) AS released,
       CASE WHEN f.first_released IS NOT NULL THEN 'first_seen' WHEN m.released IS NOT NULL THEN 'release'
            ELSE 'none' END AS date_basis
FROM query_table(items) i
JOIN manifest m ON m.file_id = i.file_id
LEFT JOIN first_seen_functions f ON f.file_id = i.file_id AND f.function = i.function;
