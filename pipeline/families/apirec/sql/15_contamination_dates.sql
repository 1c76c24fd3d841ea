-- Each code point's two dates, before any model (docs/contamination.md). A point asks for the API called there, so
-- its label follows the API's date (`dated_by = 'api'`: dated_by_definition, the first pinned release of its
-- defining source that defines it, else that source's pinned release, an upper bound); its context's date, the
-- first pinned release of its enclosing function (first_seen_functions), else its file's release
-- (dated_by_function), is carried beside it. One SQL text for the warehouse's labels (apirec_item_dates,
-- apirec_contamination) and the dates a draw by label reads before inference (pipeline.warehouse.dates writes this
-- table to data/contamination/item_dates/apirec.parquet).
CREATE TABLE apirec_point_dates AS
WITH points AS (
    SELECT p.point_id AS item_id, 'code' AS benchmark, p.file_id, p.line, p.function, p.api, p.category,
           m.language, p.api_class
    FROM apirec_points p JOIN manifest m USING (file_id)
), context AS (
    FROM dated_by_function('points')
), dated AS (
    FROM dated_by_definition('context')
)
SELECT item_id, benchmark, file_id, line, 'api' AS dated_by, api_released AS released, api_date_basis AS date_basis,
       api_released, api_date_basis, released AS context_released, date_basis AS context_date_basis
FROM dated
ORDER BY ALL;
