-- Each quiz's date, before any model (docs/contamination.md). A quiz asks for an API's name, so its date is
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

-- Per quiz: its API's date, for every quiz a label is given to (context-leaking nl quizzes out). One SQL text for
-- the warehouse's labels (apiquiz_contamination) and the dates a draw by label reads before inference
-- (pipeline.warehouse.dates writes this view to data/contamination/item_dates/apiquiz.parquet).
CREATE VIEW apiquiz_quiz_dates AS
SELECT q.quiz_id, q.setting, q.api, q.repository, d.released, d.date_basis
FROM apiquiz_quizzes q
LEFT JOIN apiquiz_item_dates d ON d.api = q.api AND d.api_repository IS NOT DISTINCT FROM q.repository
WHERE NOT q.context_leak;
