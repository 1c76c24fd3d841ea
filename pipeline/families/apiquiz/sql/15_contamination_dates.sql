-- Each quiz's two dates, before any model (docs/contamination.md). A quiz asks for an API's name, so its label
-- follows the API's date (`dated_by = 'api'`): when the API was defined (dated_by_definition: the first pinned
-- release of its defining source that defines the name, else that source's pinned release, an upper bound; the
-- stdlib's is the pinned CPython release). Its context's date, the code the quiz is cut from, is carried beside
-- it: the earliest call of the API in the corpus, each dated by the first pinned release of its enclosing function
-- (first_seen_functions), else by its file's release (`release`: the code may be older). A call in code first
-- seen after a cutoff does not make the API new (traceback.walk_tb, called in werkzeug 3.1.3's new functions, is
-- in CPython since 3.5), so the context's date never dates the API.
CREATE TABLE apiquiz_item_dates AS
WITH uses AS (
    SELECT n.api, n.api_repository,
           arg_min(CASE WHEN f.first_released IS NOT NULL THEN 'first_seen' ELSE 'release' END,
                   coalesce(f.first_released, m.released)) AS context_date_basis,
           min(coalesce(f.first_released, m.released)) AS context_released
    FROM apiquiz_api_names n
    JOIN usages u ON u.fqn = n.fqn AND u.source = n.source AND u.repository = n.repository
    JOIN manifest m ON m.file_id = u.file_id
    LEFT JOIN first_seen_functions f ON f.file_id = u.file_id AND f.function = u.enclosing_function
    WHERE u.kind IN ('call', 'method')
    GROUP BY ALL
), apis AS (
    SELECT api, repository AS api_repository, min(category) AS category, 'python' AS language,
           NULL::VARCHAR AS api_class
    FROM apiquiz_quizzes GROUP BY ALL
)
SELECT a.api, a.api_repository, 'api' AS dated_by, d.api_released AS released, d.api_date_basis AS date_basis,
       d.api_released, d.api_date_basis, u.context_released,
       coalesce(u.context_date_basis, CASE WHEN u.context_released IS NULL THEN 'none' END) AS context_date_basis
FROM apis a
JOIN dated_by_definition('apis') d ON d.api = a.api AND d.api_repository IS NOT DISTINCT FROM a.api_repository
LEFT JOIN uses u ON u.api = a.api AND u.api_repository IS NOT DISTINCT FROM a.api_repository
ORDER BY ALL;

-- Per quiz: its API's date (the label's) and its context's, for every quiz a label is given to (context-leaking
-- nl quizzes out). One SQL text for the warehouse's labels (apiquiz_contamination) and the dates a draw by label
-- reads before inference (pipeline.warehouse.dates writes this view to data/contamination/item_dates/apiquiz.parquet).
CREATE VIEW apiquiz_quiz_dates AS
SELECT q.quiz_id, q.setting, q.api, q.repository, d.dated_by, d.released, d.date_basis, d.api_released,
       d.api_date_basis, d.context_released, d.context_date_basis, q.library
FROM apiquiz_quizzes q
LEFT JOIN apiquiz_item_dates d ON d.api = q.api AND d.api_repository IS NOT DISTINCT FROM q.repository
WHERE NOT q.context_leak;
