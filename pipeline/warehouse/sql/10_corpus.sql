-- Corpus overview: files, unique files, bytes and lines per source, language and split.
CREATE VIEW corpus_summary AS
SELECT source, language, split,
       count(*) AS files,
       count(*) FILTER (WHERE NOT duplicate) AS unique_files,
       count(DISTINCT repository) AS repositories,
       sum(bytes)::BIGINT AS bytes,
       sum(lines)::BIGINT AS lines
FROM manifest
GROUP BY ALL
ORDER BY ALL;

-- What was left out, by stage and reason.
CREATE VIEW rejects_summary AS
SELECT stage, reason, source, count(*) AS items
FROM rejects
GROUP BY ALL
ORDER BY ALL;
