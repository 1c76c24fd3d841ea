-- CodeSyntax baselines averaged over relations, as in the paper's Table 3: the offsets/keywords
-- are chosen on `chosen_on` (dev: held out; test: as the paper did) and always scored on test.
CREATE VIEW syntax_baseline_scores AS
SELECT language, variant, chosen_on, baseline, metric, k,
       count(*) AS relations,
       round(100 * avg(hits::DOUBLE / total), 1) AS score
FROM syntax_baselines
WHERE total > 0
GROUP BY ALL
ORDER BY ALL;

-- Dataset statistics like the paper's Tables 1 and 2.
CREATE VIEW syntax_dataset_stats AS
SELECT s.language, s.variant,
       count(DISTINCT s.sample_id) AS samples,
       sum(s.n_tokens) AS tokens
FROM syntax_samples s
GROUP BY ALL
ORDER BY ALL;

CREATE VIEW syntax_relation_stats AS
SELECT s.language, r.variant, r.relation,
       count(*) AS edges,
       round(avg(r.dep_start - r.head), 2) AS mean_offset
FROM syntax_relations r JOIN syntax_samples s ON s.sample_id = r.sample_id AND s.variant = r.variant
GROUP BY ALL
ORDER BY ALL;
