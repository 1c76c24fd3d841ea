-- Each code point's date, before any model (docs/contamination.md): its enclosing function's first pinned release
-- (first_seen_functions, sources with history), else its file's release (dated_by_function). One SQL text for the
-- warehouse's labels (apirec_item_dates, apirec_contamination) and the dates a draw by label reads before inference
-- (pipeline.warehouse.dates writes this table to data/contamination/item_dates/apirec.parquet).
CREATE TABLE apirec_point_dates AS
WITH points AS (SELECT point_id AS item_id, 'code' AS benchmark, file_id, line, function FROM apirec_points)
SELECT item_id, benchmark, file_id, line, released, date_basis FROM dated_by_function('points')
ORDER BY ALL;
