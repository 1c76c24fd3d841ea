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

-- An item about an API, dated by the API's definition (`apis`: a table, view or CTE with api, category,
-- language and api_class; its columns come out with `api_released` and `api_date_basis`): the first release of the
-- API's defining source that defines the name (first_seen_apis, with its basis: `first_seen`, the first pinned
-- release of a source with history; `since_tag`, a JDK's own @since tag, dated by that JDK release's GA date), else
-- that source's pinned release (`release`: an upper bound on the definition's age; the stdlib's is the pinned
-- CPython release, the JDK's its JAVA_VERSION_DATE), else `none` (the defining source is not in the corpus:
-- blinker.Namespace, called by flask). Never the date of the code that calls it: a call in new code says nothing
-- about how old the API is. The defining source of a Python API: the sources whose inventory defines its
-- top-level module, else (a stdlib module written in C) the stdlib source; of a Java API: the source holding its
-- class's file (a nested class's: its top-level class's, the longest prefix of api_class with a file). Several:
-- the earliest date. A Python API's name is looked up as written and as its definition's
-- name after its package's re-exports (two hops of `imports`): `werkzeug.wrappers.Request.from_values` is first seen
-- as `werkzeug.wrappers.request.Request.from_values`.
CREATE MACRO dated_by_definition(apis) AS TABLE
WITH pinned AS (
    SELECT source, min(released) AS released FROM manifest GROUP BY source
), modules AS (
    SELECT DISTINCT library, source FROM inventory
), stdlib AS (
    SELECT DISTINCT source FROM inventory WHERE category = 'stdlib'
), wanted AS (
    SELECT DISTINCT api, category, language, api_class, split_part(api, '.', 1) AS library FROM query_table(apis)
), java_files AS (  -- each prefix of a Java API's class (`java.util.Map.Entry`: java/util/Map/Entry.java, then
                    -- java/util/Map.java, ...) joined with the manifest's Java files of that path
    SELECT w.api, w.category, w.language, w.api_class, m.source, w.i
    FROM (SELECT *, unnest(range(1, len(string_split(api_class, '.')) + 1)) AS i FROM wanted WHERE language = 'java') w
    JOIN manifest m ON m.language = 'java'
     AND (m.path = array_to_string(string_split(w.api_class, '.')[1:w.i], '/') || '.java'
          OR m.path LIKE '%/' || array_to_string(string_split(w.api_class, '.')[1:w.i], '/') || '.java')
), defining AS (
    SELECT w.api, w.category, w.language, w.api_class, d.source
    FROM wanted w JOIN modules d ON d.library = w.library WHERE w.language = 'python'
    UNION
    SELECT w.api, w.category, w.language, w.api_class, s.source
    FROM wanted w CROSS JOIN stdlib s
    WHERE w.language = 'python' AND w.category = 'stdlib' AND w.library NOT IN (SELECT library FROM modules)
    UNION
    SELECT api, category, language, api_class, source FROM (
        FROM java_files QUALIFY i = max(i) OVER (PARTITION BY api, category, language, api_class))
), reexports AS (
    -- `pkg.name` -> what `pkg`'s module-level import binds it to (the rule of pipeline.extract.availability): a
    -- public name (`werkzeug.wrappers.Request`, bound by `from .request import Request` in the package's
    -- __init__.py) leads to the module that defines it (`werkzeug.wrappers.request.Request`)
    SELECT module || '.' || bound AS name, min(target) AS target
    FROM imports
    WHERE NOT coalesce(star, false) AND target IS NOT NULL AND scope = '' AND bound IS NOT NULL AND module IS NOT NULL
      AND (kind = 'from' OR asname IS NOT NULL) AND module || '.' || bound <> target
    GROUP BY 1
), hop0 AS (
    SELECT DISTINCT api, api AS name FROM wanted WHERE language = 'python'
), prefixes1 AS (
    SELECT api, name, array_to_string(string_split(name, '.')[1:i], '.') AS prefix, i
    FROM (SELECT api, name, unnest(range(1, len(string_split(name, '.')) + 1)) AS i FROM hop0)
), hop1 AS (  -- the longest re-exported prefix replaced by its target
    SELECT p.api, coalesce(arg_max(x.target || substr(p.name, length(p.prefix) + 1), p.i)
                               FILTER (WHERE x.target IS NOT NULL), any_value(p.name)) AS name
    FROM prefixes1 p LEFT JOIN reexports x ON x.name = p.prefix
    GROUP BY p.api
), prefixes2 AS (
    SELECT api, name, array_to_string(string_split(name, '.')[1:i], '.') AS prefix, i
    FROM (SELECT api, name, unnest(range(1, len(string_split(name, '.')) + 1)) AS i FROM hop1)
), hop2 AS (  -- and once more (a package re-exporting a subpackage's re-export)
    SELECT p.api, coalesce(arg_max(x.target || substr(p.name, length(p.prefix) + 1), p.i)
                               FILTER (WHERE x.target IS NOT NULL), any_value(p.name)) AS name
    FROM prefixes2 p LEFT JOIN reexports x ON x.name = p.prefix
    GROUP BY p.api
), named AS (
    -- the first release defining the API under its own name or under its definition's (after re-exports), and how
    -- it was found (first_seen_apis.date_basis)
    SELECT source, api, min(first_released) AS first_released, arg_min(date_basis, first_released) AS basis FROM (
        SELECT f.source, w.api, f.first_released, f.date_basis FROM (SELECT DISTINCT api FROM wanted) w
        JOIN first_seen_apis f ON f.api = w.api
        UNION ALL
        SELECT f.source, h.api, f.first_released, f.date_basis FROM hop2 h JOIN first_seen_apis f ON f.api = h.name
        WHERE h.name <> h.api
    ) GROUP BY source, api
), dated AS (
    SELECT d.api, d.category, d.language, d.api_class, coalesce(n.first_released, p.released) AS released,
           CASE WHEN n.first_released IS NOT NULL THEN n.basis ELSE 'release' END AS basis
    FROM defining d JOIN pinned p ON p.source = d.source
    LEFT JOIN named n ON n.source = d.source AND n.api = d.api
    WHERE coalesce(n.first_released, p.released) IS NOT NULL
    QUALIFY row_number() OVER (PARTITION BY d.api, d.category, d.language, d.api_class
                               ORDER BY coalesce(n.first_released, p.released), n.first_released IS NULL, basis) = 1
)
SELECT i.*, d.released AS api_released, coalesce(d.basis, 'none') AS api_date_basis
FROM query_table(apis) i
LEFT JOIN dated d ON d.api = i.api AND d.category IS NOT DISTINCT FROM i.category
                 AND d.language IS NOT DISTINCT FROM i.language AND d.api_class IS NOT DISTINCT FROM i.api_class;
