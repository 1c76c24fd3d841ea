-- Units: every score below (P@k, chance, difference, CI ends, shares) is a fraction in [0, 1], rounded to 4
-- decimals; percent only in rendered text (one unit in every table, so no reader mixes 0.42 and 42).

-- Each model's own seen/unseen (models read different text, so one corpus-wide flag misplaces APIs).
-- The text every pipeline-trained model read is in its card (train_data.read.text: per file, [start line,
-- start column, end line, end column) ranges of the blocks its batches drew); a quizzed API is `seen` by
-- a model when one of its calls (usages, joined through apiquiz_api_names: the called names that are this
-- API) starts inside that text.
CREATE TABLE apiquiz_model_read AS
WITH files AS (
    SELECT name AS model, unnest(json_extract(card, '$.train_data.read.text[*]')) AS f FROM models
), ranges AS (
    SELECT model, json_extract_string(f, '$.file_id') AS file_id, unnest(json_extract(f, '$.ranges[*]')) AS r
    FROM files
)
SELECT model, file_id, json_extract(r, '$[0]')::INTEGER AS start_line, json_extract(r, '$[1]')::INTEGER AS start_col,
       json_extract(r, '$[2]')::INTEGER AS end_line, json_extract(r, '$[3]')::INTEGER AS end_col
FROM ranges
ORDER BY ALL;

-- Per model, what its card says it read: `exact` (train_data.read), `none` (a random twin read no text),
-- `unknown` (a packaged or hub model, or a card without a recorded corpus: never guessed).
CREATE VIEW apiquiz_model_corpus AS
SELECT name AS model,
       CASE WHEN json_extract(card, '$.train_data.read') IS NOT NULL THEN 'exact'
            WHEN random THEN 'none' ELSE 'unknown' END AS corpus,
       json_extract(card, '$.train_data.read.files')::BIGINT AS files_read,
       json_extract(card, '$.train_data.read.bytes')::BIGINT AS bytes_read,
       json_extract(card, '$.train_data.split_files')::BIGINT AS split_files,
       json_extract(card, '$.train_data.split_bytes')::BIGINT AS split_bytes
FROM models;

-- Per model and quizzed API: `seen` (a call of it in the text the model read), `unseen_api_seen_library`
-- (unseen, but the model saw another API of its library: the top-level module), `unseen_library` (no API
-- of its library seen: the paper's RQ4 unseen split, "we filter out all the APIs belonging to the seen
-- libraries in the unseen split"), `unknown` (apiquiz_model_corpus.corpus = unknown).
CREATE TABLE apiquiz_seen AS
WITH read_apis AS (
    SELECT DISTINCT r.model, n.api, n.api_repository
    FROM usages u
    JOIN apiquiz_api_names n ON n.fqn = u.fqn AND n.source = u.source AND n.repository = u.repository
    JOIN apiquiz_model_read r ON r.file_id = u.file_id
     AND (u.line > r.start_line OR (u.line = r.start_line AND u.col >= r.start_col))
     AND (u.line < r.end_line OR (u.line = r.end_line AND u.col < r.end_col))
    WHERE u.kind IN ('call', 'method')
), apis AS (
    SELECT DISTINCT api, repository AS api_repository, library FROM apiquiz_quizzes
), seen_libraries AS (
    SELECT DISTINCT r.model, a.library FROM read_apis r JOIN apis a USING (api)
)
SELECT c.model, a.api, a.api_repository,
       CASE WHEN c.corpus = 'unknown' THEN 'unknown'
            WHEN r.api IS NOT NULL THEN 'seen'
            WHEN l.library IS NOT NULL THEN 'unseen_api_seen_library'
            ELSE 'unseen_library' END AS seen
FROM apiquiz_model_corpus c CROSS JOIN apis a
LEFT JOIN read_apis r ON r.model = c.model AND r.api = a.api AND r.api_repository IS NOT DISTINCT FROM a.api_repository
LEFT JOIN seen_libraries l ON l.model = c.model AND l.library = a.library
ORDER BY ALL;

-- Per model: the text it read against the train split, and how many quizzes change side between the
-- split-level flag (quizzes.seen: called in any train-split file) and the model's own.
CREATE VIEW apiquiz_seen_vs_split AS
SELECT c.model, c.corpus, c.files_read, c.split_files, c.bytes_read, c.split_bytes, count(q.quiz_id) AS quizzes,
       count(*) FILTER (WHERE q.seen) AS split_seen,
       count(*) FILTER (WHERE s.seen = 'seen') AS model_seen,
       count(*) FILTER (WHERE q.seen AND s.seen LIKE 'unseen%') AS seen_to_unseen,
       count(*) FILTER (WHERE NOT q.seen AND s.seen = 'seen') AS unseen_to_seen,
       count(*) FILTER (WHERE s.seen = 'unseen_library') AS rq4_unseen_library
FROM apiquiz_model_corpus c
LEFT JOIN apiquiz_seen s USING (model)
LEFT JOIN apiquiz_quizzes q ON q.api = s.api AND q.repository IS NOT DISTINCT FROM s.api_repository
GROUP BY ALL
ORDER BY ALL;

-- The paper's quiz set (every compared model on the same quizzes): quizzes whose answer is one token of
-- every compared model's vocabulary, i.e. that every model with fill_mask rows scored (status ok) under its
-- own tokenizer.
CREATE TABLE apiquiz_paper_set AS
SELECT quiz_id FROM apiquiz_predictions
WHERE protocol = 'fill_mask'
GROUP BY quiz_id
HAVING bool_and(status = 'ok')
   AND count(DISTINCT model) = (SELECT count(DISTINCT model) FROM apiquiz_predictions WHERE protocol = 'fill_mask')
ORDER BY ALL;

-- Predictions counted per model, protocol, quiz stratum, status, gold rank and number ranked, once, when
-- the warehouse is built: every P@k below is exact from these counts, and at scale (10M prediction rows,
-- bench/speed/warehouse.py) the join with the quizzes is paid once instead of per query. `seen`: the
-- model's own (apiquiz_seen); `context_leak`: an nl quiz whose context gives the answer away (left out of
-- every view below but apiquiz_precision and apiquiz_leaks); `paper_set`: in apiquiz_paper_set. The
-- model's own first/last-token masks (fill_mask_own_first / _last, on whole-level quizzes) count under
-- mask position first / last.
CREATE TABLE apiquiz_rank_counts AS
SELECT p.model, p.protocol, q.setting,
       CASE p.protocol WHEN 'fill_mask_own_first' THEN 'first' WHEN 'fill_mask_own_last' THEN 'last'
                       ELSE q.mask_position END AS mask_position,
       coalesce(s.seen, 'unknown') AS seen, q.context_leak, ps.quiz_id IS NOT NULL AS paper_set,
       p.status, p.gold_rank, p.n_ranked, count(*) AS n
FROM apiquiz_predictions p JOIN apiquiz_quizzes q USING (quiz_id)
LEFT JOIN apiquiz_seen s ON s.model = p.model AND s.api = q.api AND s.api_repository IS NOT DISTINCT FROM q.repository
LEFT JOIN apiquiz_paper_set ps ON ps.quiz_id = p.quiz_id
GROUP BY ALL
ORDER BY ALL;

-- P@k (a fraction in [0, 1], rounded to 4 decimals) over the scored quizzes of a group that have more than k ranked items: a quiz with at
-- most k candidates has its gold in the top k by construction (the rank protocols rank <= 50), so it is
-- left out of P@k (NULL where no quiz of the group has more than k). `chance_at_k`: a random order's P@k
-- over the same quizzes, min(k, n)/n averaged. P@k = success_at_k (pipeline/metrics).
CREATE MACRO apiquiz_p_at(k, n, gold_rank, n_ranked, status) AS
    round(sum(n * success_at_k(gold_rank, k)) FILTER (WHERE status = 'ok' AND n_ranked > k)
          / sum(n) FILTER (WHERE status = 'ok' AND n_ranked > k), 4);
CREATE MACRO apiquiz_chance_at(k, n, n_ranked, status) AS
    round(sum(n * k / n_ranked) FILTER (WHERE status = 'ok' AND n_ranked > k)
          / sum(n) FILTER (WHERE status = 'ok' AND n_ranked > k), 4);

-- apiquiz precision at k per model, protocol, setting, mask position, the model's own seen/unseen and the
-- nl leak flag. `scored` < `quizzes` when answers are multi-token (fill_mask) or texts too long.
CREATE VIEW apiquiz_precision AS
SELECT model, protocol, setting, mask_position, seen, context_leak,
       sum(n)::BIGINT AS quizzes,
       coalesce(sum(n) FILTER (WHERE status = 'ok'), 0)::BIGINT AS scored,
       apiquiz_p_at(1, n, gold_rank, n_ranked, status) AS p_at_1, apiquiz_p_at(5, n, gold_rank, n_ranked, status) AS p_at_5, apiquiz_p_at(10, n, gold_rank, n_ranked, status) AS p_at_10,
       apiquiz_p_at(20, n, gold_rank, n_ranked, status) AS p_at_20, apiquiz_p_at(50, n, gold_rank, n_ranked, status) AS p_at_50
FROM apiquiz_rank_counts
GROUP BY ALL
ORDER BY ALL;

-- Like the paper's Table III: P@k per model, protocol and setting (all mask positions, seen and unseen),
-- leaking nl quizzes left out; chance beside P@1 and P@10.
CREATE VIEW apiquiz_by_setting AS
SELECT model, protocol, setting,
       coalesce(sum(n) FILTER (WHERE status = 'ok'), 0)::BIGINT AS scored,
       apiquiz_p_at(1, n, gold_rank, n_ranked, status) AS p_at_1, apiquiz_p_at(5, n, gold_rank, n_ranked, status) AS p_at_5, apiquiz_p_at(10, n, gold_rank, n_ranked, status) AS p_at_10,
       apiquiz_chance_at(1, n, n_ranked, status) AS chance_at_1, apiquiz_chance_at(10, n, n_ranked, status) AS chance_at_10
FROM apiquiz_rank_counts
WHERE NOT context_leak
GROUP BY ALL
ORDER BY ALL;

-- P@k over all scored non-leaking quizzes per model and protocol (the P@k curves), each with chance.
CREATE VIEW apiquiz_p_at_k AS
SELECT model, protocol, coalesce(sum(n) FILTER (WHERE status = 'ok'), 0)::BIGINT AS scored,
       apiquiz_p_at(1, n, gold_rank, n_ranked, status) AS p_at_1, apiquiz_p_at(5, n, gold_rank, n_ranked, status) AS p_at_5, apiquiz_p_at(10, n, gold_rank, n_ranked, status) AS p_at_10,
       apiquiz_p_at(20, n, gold_rank, n_ranked, status) AS p_at_20, apiquiz_p_at(50, n, gold_rank, n_ranked, status) AS p_at_50,
       apiquiz_chance_at(1, n, n_ranked, status) AS chance_at_1, apiquiz_chance_at(5, n, n_ranked, status) AS chance_at_5,
       apiquiz_chance_at(10, n, n_ranked, status) AS chance_at_10, apiquiz_chance_at(20, n, n_ranked, status) AS chance_at_20,
       apiquiz_chance_at(50, n, n_ranked, status) AS chance_at_50
FROM apiquiz_rank_counts
WHERE status = 'ok' AND NOT context_leak
GROUP BY ALL
ORDER BY ALL;

-- The paper's table (fill_mask, masked LMs) on the paper's quiz set (one token in every compared model),
-- beside each model's own tokenizer's masks (its whole single-token levels and its own first/last token
-- of the levels it splits); leaking nl quizzes left out.
CREATE VIEW apiquiz_fill_mask AS
SELECT model, 'paper set' AS quiz_set, mask_position, sum(n)::BIGINT AS scored,
       apiquiz_p_at(1, n, gold_rank, n_ranked, status) AS p_at_1, apiquiz_p_at(5, n, gold_rank, n_ranked, status) AS p_at_5, apiquiz_p_at(10, n, gold_rank, n_ranked, status) AS p_at_10
FROM apiquiz_rank_counts
WHERE protocol = 'fill_mask' AND paper_set AND status = 'ok' AND NOT context_leak
GROUP BY ALL
UNION ALL
SELECT model, 'own tokenizer' AS quiz_set, mask_position, sum(n)::BIGINT AS scored,
       apiquiz_p_at(1, n, gold_rank, n_ranked, status) AS p_at_1, apiquiz_p_at(5, n, gold_rank, n_ranked, status) AS p_at_5, apiquiz_p_at(10, n, gold_rank, n_ranked, status) AS p_at_10
FROM apiquiz_rank_counts
WHERE status = 'ok' AND NOT context_leak
  AND (protocol IN ('fill_mask_own_first', 'fill_mask_own_last') OR (protocol = 'fill_mask' AND mask_position = 'whole'))
GROUP BY ALL
ORDER BY ALL;

-- nl quizzes whose context gives the answer away, per mask position: generated and drawn (the headline
-- leaves them out: copying the answer from the context shows no knowledge of the API).
CREATE VIEW apiquiz_leaks AS
WITH drawn AS (
    SELECT DISTINCT quiz_id FROM apiquiz_predictions
)
SELECT q.mask_position, count(*) AS nl_quizzes, count(*) FILTER (WHERE q.context_leak) AS leaking,
       round(count(*) FILTER (WHERE q.context_leak) / count(*), 4) AS leaking_fraction,
       count(d.quiz_id) AS drawn, count(d.quiz_id) FILTER (WHERE q.context_leak) AS drawn_leaking
FROM apiquiz_quizzes q LEFT JOIN drawn d USING (quiz_id)
WHERE q.setting = 'nl'
GROUP BY ALL
ORDER BY ALL;

-- Per-quiz hits at 1, the input of the bootstrap confidence intervals below.
CREATE VIEW apiquiz_hits_at_1 AS
SELECT p.model, p.protocol, q.setting, p.quiz_id AS item_id, success_at_k(p.gold_rank, 1) AS value
FROM apiquiz_predictions p JOIN apiquiz_quizzes q USING (quiz_id)
WHERE p.status = 'ok' AND NOT q.context_leak AND p.n_ranked > 1;  -- one item ranked: a hit by construction

-- P@1 with its sample count and a 95% Poisson-bootstrap confidence interval (1000 replicates, seed 0).
-- The bootstrap needs only each group's histogram of hits (how many scored quizzes hit, how many miss:
-- pipeline/metrics/README.md), read from apiquiz_rank_counts: the same histogram as counting
-- apiquiz_hits_at_1, so the same CIs, without rescanning and re-joining the predictions.
CREATE VIEW apiquiz_p_at_1_ci AS
WITH hits AS (
    SELECT model, protocol, setting, success_at_k(gold_rank, 1) AS value, sum(n) AS items
    FROM apiquiz_rank_counts WHERE status = 'ok' AND NOT context_leak AND n_ranked > 1 GROUP BY ALL
)
SELECT model, protocol, setting, n, round(mean, 4) AS p_at_1, round(greatest(0, lo), 4) AS lo,
       round(least(1, hi), 4) AS hi  -- clipped to P@1's range [0, 1], as the report prints it
FROM poisson_bootstrap_hist(hits)
ORDER BY ALL;

-- The report's first table, beside the paper's Table III: P@1 per model, protocol and setting with its sample
-- count and 95% Poisson-bootstrap CI (10,000 replicates, seed 0: the first read's headline). The paper's protocol on the paper's quiz set
-- (fill_mask on apiquiz_paper_set: quizzes whose answer is one token of every compared model's vocabulary,
-- `paper set`), the candidate rankings on every quiz they scored (`all scored`); leaking nl quizzes left out.
-- `chance_at_1`: P@1 of a uniform random ranking of each quiz's ranked items over the same quizzes (mean of
-- 1 / n_ranked: the candidates a rank protocol ranked, the vocabulary for fill_mask). The CI ends are clipped to
-- [0, 1] (a percentile interval of a mean of hits stays inside; the clip makes the range a stated rule).
CREATE VIEW apiquiz_headline AS
WITH scored AS (
    SELECT model, protocol, CASE WHEN protocol = 'fill_mask' THEN 'paper set' ELSE 'all scored' END AS quiz_set,
           setting, gold_rank, n_ranked, n
    FROM apiquiz_rank_counts
    WHERE status = 'ok' AND NOT context_leak AND n_ranked > 1
      AND ((protocol = 'fill_mask' AND paper_set) OR protocol NOT LIKE 'fill_mask%')
), hits AS (
    SELECT model, protocol, quiz_set, setting, success_at_k(gold_rank, 1) AS value, sum(n) AS items
    FROM scored GROUP BY ALL
), chance AS (
    SELECT model, protocol, quiz_set, setting,  -- terms summed in ascending order: the same bits whatever the threads
           list_sum(list_sort(list(n / n_ranked))) / sum(n) AS chance_at_1
    FROM scored GROUP BY ALL
)
SELECT b.model, b.protocol, b.quiz_set, b.setting, b.n, round(b.mean, 4) AS p_at_1,
       round(greatest(0, b.lo), 4) AS lo, round(least(1, b.hi), 4) AS hi, round(c.chance_at_1, 4) AS chance_at_1
FROM poisson_bootstrap_hist(hits, replicates := 10000) b JOIN chance c USING (model, protocol, quiz_set, setting)
ORDER BY ALL;

-- Every trained model's scored quizzes paired with its random twin's on the same quiz and protocol
-- (both scored), counted per setting, both gold ranks (capped at 11: every P@k with k <= 10 is exact
-- from these counts) and the model's n_ranked, once, when the warehouse is built: the twin views
-- below bootstrap these histograms instead of pairing every prediction per query. `quizzed`: the
-- quiz is in apiquiz_quizzes (always, in a run; setting is NULL otherwise).
CREATE TABLE apiquiz_twin_rank_pairs AS
WITH ok AS (SELECT quiz_id, model, protocol, gold_rank, n_ranked FROM apiquiz_predictions WHERE status = 'ok')
SELECT t.model, w.twin, t.protocol, q.setting, q.quiz_id IS NOT NULL AS quizzed,
       least(t.gold_rank, 11) AS rank_a, least(r.gold_rank, 11) AS rank_b, t.n_ranked, count(*) AS n
FROM ok t
JOIN model_twins w ON w.model = t.model
JOIN ok r ON r.model = w.twin AND r.protocol = t.protocol AND r.quiz_id = t.quiz_id
LEFT JOIN apiquiz_quizzes q ON q.quiz_id = t.quiz_id
WHERE NOT coalesce(q.context_leak, false)  -- leaking nl quizzes are left out (the context gives the answer)
GROUP BY ALL
ORDER BY ALL;

-- A model against its random twin (models.card says which) on the same quizzes: the difference in
-- P@1, its 95% CI and the paired bootstrap p-value.
-- (The (model, twin) pairs are resolved first: joined to the hits through the JSON condition, the
-- optimizer paired every model's hits with every other's per item: 37 s at 100k rows, out of memory at 1M.)
CREATE VIEW apiquiz_twin_pairs AS
SELECT t.model, t.protocol, t.setting, t.item_id, t.value AS a, r.value AS b
FROM apiquiz_hits_at_1 t
JOIN model_twins w ON w.model = t.model
JOIN apiquiz_hits_at_1 r ON r.model = w.twin AND r.protocol = t.protocol AND r.setting = t.setting
                        AND r.item_id = t.item_id;

-- (apiquiz_twin_pairs above is the per-quiz drill-down; the CIs read its histogram, apiquiz_twin_rank_pairs.)
CREATE VIEW apiquiz_vs_twin AS
WITH pair_hits AS (
    SELECT model, protocol, setting, success_at_k(rank_a, 1) AS a, success_at_k(rank_b, 1) AS b, sum(n) AS items
    FROM apiquiz_twin_rank_pairs WHERE quizzed AND n_ranked > 1 GROUP BY ALL
)
SELECT model, protocol, setting, n, round(mean_a, 4) AS p_at_1, round(mean_b, 4) AS twin_p_at_1,
       round(diff, 4) AS diff, round(lo, 4) AS lo, round(hi, 4) AS hi, p_value
FROM poisson_paired_bootstrap_hist(pair_hits, replicates := 10000)  -- the first read's (>= 10,000: a p near 0.05 needs them)
ORDER BY ALL;

-- The inference subset per stratum (setting, mask position): quizzes generated, drawn into the
-- subset (apiquiz.inference.max_items / min_per_stratum) and scored, per protocol (min and max
-- over models: fill_mask scores only single-token answers, so it varies by tokenizer).
CREATE VIEW apiquiz_strata AS
WITH generated AS (
    SELECT setting, mask_position, count(*) AS quizzes FROM apiquiz_quizzes GROUP BY ALL
), drawn AS (  -- from the counts kept at build (the same join of predictions and quizzes)
    SELECT setting, mask_position, protocol, model, sum(n)::BIGINT AS drawn,
           coalesce(sum(n) FILTER (WHERE status = 'ok'), 0)::BIGINT AS scored
    FROM apiquiz_rank_counts
    GROUP BY ALL
)
SELECT g.setting, g.mask_position, g.quizzes, d.protocol, max(d.drawn) AS drawn,
       min(d.scored) AS min_scored, max(d.scored) AS max_scored
FROM generated g LEFT JOIN drawn d USING (setting, mask_position)
GROUP BY ALL
ORDER BY ALL;

-- The headline trained-vs-twin comparison over all settings (what training added over the same
-- architecture with random weights), per ranking protocol:
-- P@1 for the candidate rankings (`rank` summed, `rank_mean` per token, `rank_pmi`), P@1 and P@10
-- for fill_mask (the masked LM's single-token quizzes). Paired on the quizzes both scored.
CREATE VIEW apiquiz_twin_hits AS
SELECT t.model, twin.twin, t.protocol, k.k, t.quiz_id AS item_id,
       success_at_k(t.gold_rank, k.k) AS a, success_at_k(r.gold_rank, k.k) AS b
FROM apiquiz_predictions t
JOIN model_twins twin ON twin.model = t.model
JOIN apiquiz_predictions r ON r.model = twin.twin AND r.protocol = t.protocol AND r.quiz_id = t.quiz_id
LEFT JOIN apiquiz_quizzes q ON q.quiz_id = t.quiz_id
CROSS JOIN (VALUES (1), (10)) k(k)
WHERE t.status = 'ok' AND r.status = 'ok' AND (k.k = 1 OR t.protocol LIKE 'fill_mask%') AND t.n_ranked > k.k
  AND NOT coalesce(q.context_leak, false);

-- ... with chance beside it (a uniformly random order puts the gold in the top k with probability
-- min(k, n)/n, n = the candidates or the vocabulary ranked), the difference's 95% CI (paired Poisson
-- bootstrap, 1000 replicates, seed 0) and whether that CI excludes zero in the trained model's favour.
-- (Read from the histogram apiquiz_twin_rank_pairs: the same pairs as apiquiz_twin_hits, counted.)
CREATE VIEW apiquiz_twin_diff AS
WITH pairs AS (
    SELECT p.*, k.k FROM apiquiz_twin_rank_pairs p CROSS JOIN (VALUES (1), (10)) k(k)
    WHERE (k.k = 1 OR p.protocol LIKE 'fill_mask%') AND p.n_ranked > k.k  -- P@k only where it does not saturate
),
pair_hits AS (
    SELECT model, twin, protocol, k, success_at_k(rank_a, k) AS a, success_at_k(rank_b, k) AS b, sum(n) AS items
    FROM pairs GROUP BY ALL
),
boot AS (SELECT * FROM poisson_paired_bootstrap_hist(pair_hits)),
chance AS (
    SELECT model, protocol, k, sum(n * least(k, n_ranked)::DOUBLE / n_ranked) / sum(n) AS chance
    FROM pairs GROUP BY ALL
)
SELECT b.model, b.twin, b.protocol, 'P@' || b.k AS metric, b.n, round(b.mean_a, 4) AS score,
       round(b.mean_b, 4) AS twin_score, round(c.chance, 4) AS chance, round(b.diff, 4) AS diff,
       round(b.lo, 4) AS lo, round(b.hi, 4) AS hi, b.p_value, b.lo > 0 AS beats_twin
FROM boot b JOIN chance c USING (model, protocol, k)
ORDER BY b.model, b.protocol, b.k;

-- Length bias of each ranking protocol: the mean length in characters of the top-1 candidate, of the
-- gold and of a candidate of the ranked pool (the gold and the first n_ranked - 1 others, as
-- infer.ranked_candidates draws them), beside P@1 and chance. A summed log-likelihood favours short
-- candidates: its top-1 is shorter than the pool's average even for a random network.
CREATE VIEW apiquiz_length_bias AS
WITH q AS (  -- per quiz, once: the gold's length and the other candidates' lengths in order
    SELECT quiz_id, length(answer)::DOUBLE AS gold_chars,
           list_transform(list_filter(candidates, lambda c: c <> answer), lambda c: length(c)::DOUBLE) AS lens
    FROM apiquiz_quizzes
)
SELECT p.model, p.protocol, count(*) AS scored,
       round(avg(length(p.top[1])), 2) AS top1_chars,
       round(avg(q.gold_chars), 2) AS gold_chars,
       round(avg((q.gold_chars + coalesce(list_sum(list_slice(q.lens, 1, p.n_ranked - 1)), 0)) / p.n_ranked), 2) AS pool_chars,
       round(avg(success_at_k(p.gold_rank, 1)), 4) AS p_at_1,
       round(avg(1 / p.n_ranked), 4) AS chance
FROM apiquiz_predictions p JOIN q USING (quiz_id)
WHERE p.status = 'ok' AND p.protocol NOT LIKE 'fill_mask%'
GROUP BY ALL
ORDER BY ALL;

-- The frequency baseline, the guess of a model that knows only how often each name is called: per quiz, each
-- candidate's calls in the train split at the quiz's masked level, mask position and kind (summed over the quizzed
-- APIs with that name there, through apiquiz_api_names as apiquiz_seen reads them); the most-called candidate is
-- its answer, ties shared: `p_at_1` is 1 / (candidates tied at the top) when the gold is among them, else 0 (the
-- expected P@1 of a random tie-break; a quiz whose candidates no train call names is chance, 1 / candidates).
-- Only train-split calls count, as a model trained on the split reads them. The headline pairs each model with it.
CREATE TABLE apiquiz_frequency_baseline AS
WITH train_calls AS (
    SELECT n.api, n.api_repository, count(*) AS calls
    FROM usages u
    JOIN apiquiz_api_names n ON n.fqn = u.fqn AND n.source = u.source AND n.repository = u.repository
    WHERE u.split = 'train' AND u.kind IN ('call', 'method')
    GROUP BY ALL
), names AS (
    SELECT DISTINCT api, repository AS api_repository, level, mask_position, level_kind, answer AS name
    FROM apiquiz_quizzes WHERE setting = 'call'
), frequency AS (
    SELECT n.level, n.mask_position, n.level_kind, n.name, sum(coalesce(t.calls, 0))::BIGINT AS calls
    FROM names n
    LEFT JOIN train_calls t ON t.api = n.api AND t.api_repository IS NOT DISTINCT FROM n.api_repository
    GROUP BY ALL
), candidates AS (
    SELECT quiz_id, answer, level, mask_position, level_kind, unnest(candidates) AS name FROM apiquiz_quizzes
), scored AS (
    SELECT c.quiz_id, c.name = c.answer AS gold, coalesce(f.calls, 0) AS calls,
           max(coalesce(f.calls, 0)) OVER (PARTITION BY c.quiz_id) AS top
    FROM candidates c
    LEFT JOIN frequency f ON f.level = c.level AND f.mask_position = c.mask_position
     AND f.level_kind = c.level_kind AND f.name = c.name
)
SELECT quiz_id,
       (count(*) FILTER (WHERE gold AND calls = top))::DOUBLE / count(*) FILTER (WHERE calls = top) AS p_at_1,
       count(*) FILTER (WHERE calls = top)::INTEGER AS tied_at_top,
       max(calls) FILTER (WHERE gold) AS gold_calls,
       max(top) AS top_calls
FROM scored
GROUP BY quiz_id
ORDER BY quiz_id;
COMMENT ON COLUMN apiquiz_frequency_baseline.p_at_1 IS 'the frequency baseline''s expected precision at 1 on the quiz: 1 / tied_at_top when the gold is among the most-called candidates, else 0';
COMMENT ON COLUMN apiquiz_frequency_baseline.tied_at_top IS 'number of the quiz''s candidates tied at the most train-split calls (the baseline''s guess is one of them at random)';
COMMENT ON COLUMN apiquiz_frequency_baseline.gold_calls IS 'train-split calls of the gold answer''s name at the quiz''s level, mask position and kind';
COMMENT ON COLUMN apiquiz_frequency_baseline.top_calls IS 'train-split calls of the most-called candidate name at the quiz''s level, mask position and kind';
