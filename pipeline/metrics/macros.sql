-- The shared metric library: DuckDB macros. Installed by pipeline.metrics.install(con)
-- (every statement is CREATE OR REPLACE, so installing twice is harmless). Each macro has a
-- Python twin in pipeline/metrics/{ranking,correlation,bootstrap}.py giving the same number;
-- pipeline/metrics/README.md documents the definitions.
--
-- Conventions
--   gold_rank  INTEGER, 1-based rank of the single gold answer, NULL when it was not ranked.
--   rels       INTEGER[], relevance grade of each returned item in rank order (APIBench:
--              2 = exact API, 1 = right class, 0 = wrong). NULL = nothing returned.
--   ideal      INTEGER[], the grades of every relevant item that exists for the query.
--   n_relevant number of items with grade >= min_grade that exist for the query.
--   k          cutoff; NULL means no cutoff. min_grade: relevant means grade >= min_grade.
-- Per-item macros return one number per row: average them with avg() to get the metric.

-- ---------------------------------------------------------------------------------------
-- Single-gold rankings

-- 1 if the gold is in the top k, else 0 (NULL rank -> 0). P@k of INK = SR@k of APIBench.
CREATE OR REPLACE MACRO success_at_k(gold_rank, k) AS
    CASE WHEN gold_rank IS NOT NULL AND (k IS NULL OR gold_rank <= k) THEN 1 ELSE 0 END;

-- 1/gold_rank if the gold is in the top k (k NULL: no cutoff), else 0. avg() = MRR@k.
CREATE OR REPLACE MACRO reciprocal_rank(gold_rank, k := NULL) AS
    CASE WHEN gold_rank IS NOT NULL AND (k IS NULL OR gold_rank <= k) THEN 1::DOUBLE / gold_rank
         ELSE 0::DOUBLE END;

-- The 1-based rank of the first item with grade >= min_grade in a graded list (NULL if none):
-- turns a graded list into a gold_rank (method level: min_grade 2, class level: 1).
CREATE OR REPLACE MACRO first_rank(rels, min_grade := 1) AS
    list_position(list_transform(rels, lambda g: g >= min_grade), true);

-- ---------------------------------------------------------------------------------------
-- Graded rankings (helpers)

-- Written for speed without changing a bit of the results (bench/peers/metrics.py, docs/scaling.md): every
-- argument appears once in a macro's body (a macro is inlined: an argument used twice is computed twice),
-- and no CASE around list lambdas (DuckDB runs lambdas under a CASE branch 2x slower): `x / nullif(d, 0)`
-- then coalesce(..., 0) in place of CASE WHEN d > 0 THEN x / d ELSE 0 END.

-- The top k of a list (k NULL: the whole list; k <= 0: empty; a NULL list is empty).
CREATE OR REPLACE MACRO _top_k(rels, k) AS
    list_slice(coalesce(rels, []::INTEGER[]), 1, greatest(coalesce(k, 2147483647), 0));

-- The ranks i <= k whose grade is >= min_grade, ascending.
CREATE OR REPLACE MACRO _relevant_ranks(rels, k, min_grade) AS
    list_filter(list_transform(_top_k(rels, k), lambda g, i: if(g >= min_grade, i, 0)), lambda _i: _i > 0);

-- Sum over relevant ranks i <= k of precision@i (the numerator of AP@k): the j-th relevant rank r_j adds
-- j / r_j, in rank order (trec_eval's sum; the ranks that add nothing are skipped, not added as 0.0).
CREATE OR REPLACE MACRO _sum_precision_at_hits(rels, k, min_grade) AS
    coalesce(list_sum(list_transform(_relevant_ranks(rels, k, min_grade), lambda _r, _j: _j::DOUBLE / _r)), 0::DOUBLE);

-- Number of relevant items within the top k.
CREATE OR REPLACE MACRO _hits_at_k(rels, k, min_grade) AS
    len(list_filter(_top_k(rels, k), lambda g: g >= min_grade));

-- DCG@k with gain = grade (a negative grade gains 0, as in trec_eval) and discount log2(rank + 1)
-- (trec_eval's ndcg_cut).
CREATE OR REPLACE MACRO _dcg_at_k(rels, k) AS
    coalesce(list_sum(list_transform(_top_k(rels, k), lambda g, i: greatest(g, 0)::DOUBLE / log2(i + 1))),
             0::DOUBLE);

-- x / d where d > 0, else 0 (d NULL: 0).
CREATE OR REPLACE MACRO _ratio_or_zero(x, d) AS coalesce(x / nullif(greatest(d, 0), 0), 0::DOUBLE);

-- ---------------------------------------------------------------------------------------
-- AP@k (average AP@k over items = MAP@k)

-- Standard (trec_eval map_cut): sum of precision@i over relevant ranks i <= k, divided by ALL
-- relevant items of the query (n_relevant). 0 when n_relevant is 0 or NULL.
CREATE OR REPLACE MACRO ap_at_k_standard(rels, k, n_relevant, min_grade := 1) AS
    _ratio_or_zero(_sum_precision_at_hits(rels, k, min_grade), n_relevant);

-- APIBench paper: the same sum divided by m = the relevant items found WITHIN the top k (0 if m = 0).
CREATE OR REPLACE MACRO ap_at_k_apibench(rels, k, min_grade := 1) AS
    list_transform([_relevant_ranks(rels, k, min_grade)], lambda _rs:
        _ratio_or_zero(coalesce(list_sum(list_transform(_rs, lambda _r, _j: _j::DOUBLE / _r)), 0::DOUBLE), len(_rs)))[1];

-- ---------------------------------------------------------------------------------------
-- NDCG@k

-- Standard (trec_eval ndcg_cut): DCG@k / IDCG@k, IDCG from the ideal's positive grades sorted descending.
-- 0 when IDCG is 0; NULL when ideal is NULL (len(NULL) * 0 is NULL).
CREATE OR REPLACE MACRO ndcg_at_k_standard(rels, k, ideal) AS
    coalesce(_dcg_at_k(rels, k) / nullif(_dcg_at_k(list_reverse_sort(list_filter(ideal, lambda g: g > 0)), k), 0),
             len(ideal) * 0::DOUBLE);

-- APIBench paper, as its Tables 6-7 imply: IDCG@k = the best DCG@k of the WHOLE returned list re-sorted
-- by grade ("re-arranging the order of current results"): an exact API returned below k still lowers
-- NDCG@k (Table 6: BIKER NDCG@1 .27 < class SR@1 .33). 0 if the list has no gain.
CREATE OR REPLACE MACRO ndcg_at_k_apibench(rels, k) AS
    list_transform([coalesce(rels, []::INTEGER[])], lambda _r:
        _ratio_or_zero(_dcg_at_k(_r, k), _dcg_at_k(list_reverse_sort(_r), k)))[1];

-- A looser reading: IDCG from the returned TOP K only, re-sorted (so a list whose relevant items in the
-- top k are already in the best order scores 1, whatever it misses; NDCG@1 = class SR@1 under 2/1 grades).
CREATE OR REPLACE MACRO ndcg_at_k_apibench_topk(rels, k) AS
    list_transform([_top_k(rels, k)], lambda _r:
        _ratio_or_zero(_dcg_at_k(_r, k), _dcg_at_k(list_reverse_sort(_r), k)))[1];

-- ---------------------------------------------------------------------------------------
-- Classification and regression (linear probes: pipeline/fit)

-- 1 if the prediction differs from the gold (a NULL prediction is an error). avg() = error rate.
CREATE OR REPLACE MACRO is_error(pred, gold) AS
    CASE WHEN pred IS NOT DISTINCT FROM gold THEN 0 ELSE 1 END;

-- |pred - gold| (NULL if either is NULL, so avg() skips it). avg() = MAE.
CREATE OR REPLACE MACRO abs_error(pred, gold) AS abs(pred::DOUBLE - gold::DOUBLE);

-- ---------------------------------------------------------------------------------------
-- Spearman rank correlation (average ranks for ties, on DOUBLE; pairs with a NULL or NaN
-- on either side are dropped). Over lists, so it composes with GROUP BY:
--     SELECT size, spearman_rho(list(x), list(y)), spearman_n(list(x), list(y)) FROM t GROUP BY size
-- Cost is O(n^2) per group in C++ list code (fine to ~20k pairs per group).

-- The 1-based positions of complete pairs.
CREATE OR REPLACE MACRO _complete_pairs(xs, ys) AS
    list_filter(range(1, len(xs) + 1), lambda i:
        xs[i] IS NOT NULL AND ys[i] IS NOT NULL
        AND NOT isnan(xs[i]::DOUBLE) AND NOT isnan(ys[i]::DOUBLE));

-- Average ranks (ties share the mean of their positions) of a list of DOUBLE without NULLs.
CREATE OR REPLACE MACRO avg_ranks(xs) AS
    list_transform([list_sort(xs)], lambda s:
        list_transform(xs, lambda v:
            (list_position(s, v) + (len(s) + 1 - list_position(list_reverse(s), v)))::DOUBLE / 2))[1];

-- Pearson correlation of two equal-length lists (NULL when fewer than 2 or a side is constant).
CREATE OR REPLACE MACRO _pearson(a, b) AS
    list_transform([[list_avg(a), list_avg(b)]], lambda m:
        CASE WHEN len(a) < 2 THEN NULL ELSE
        list_sum(list_transform(a, lambda u, i: (u - m[1]) * (b[i] - m[2])))
        / nullif(sqrt(list_sum(list_transform(a, lambda u: (u - m[1]) * (u - m[1])))
                    * list_sum(list_transform(b, lambda u: (u - m[2]) * (u - m[2])))), 0)
        END)[1];

-- Number of complete pairs.
CREATE OR REPLACE MACRO spearman_n(xs, ys) AS len(_complete_pairs(xs, ys));

-- Spearman's rho of two aligned lists.
CREATE OR REPLACE MACRO spearman_rho(xs, ys) AS
    list_transform([_complete_pairs(xs, ys)], lambda p:
        _pearson(avg_ranks(list_transform(p, lambda i: xs[i]::DOUBLE)),
                 avg_ranks(list_transform(p, lambda i: ys[i]::DOUBLE))))[1];

-- Table form: tbl (a table or view name) has columns x, y and any number of group columns;
-- one row per group: the group columns, n (complete pairs), excluded (pairs dropped), rho.
--     SELECT * FROM spearman(idbench_scores_long)
CREATE OR REPLACE MACRO spearman(tbl) AS TABLE
    SELECT COLUMNS(* EXCLUDE (x, y)),
           coalesce(spearman_n(list(x), list(y)), 0) AS n,
           count(*) - coalesce(spearman_n(list(x), list(y)), 0) AS excluded,
           spearman_rho(list(x), list(y)) AS rho
    FROM query_table(tbl)
    GROUP BY ALL;

-- ---------------------------------------------------------------------------------------
-- Deterministic Poisson bootstrap. Item-level form (poisson_weight, the definition): in replicate
-- b (0-based) item i gets weight w ~ Poisson(1): u = the first 13 hex digits (52 bits) of
-- md5('<seed>:<b>:<item_id>') as an integer, and w = the number of thresholds T_k <= u,
-- T_k = ceil(P(Poisson(1) <= k) * 2^52) (inverse CDF). A replicate's mean is sum(w * value) / sum(w)
-- (replicates with sum(w) = 0 are skipped); the CI is the alpha/2 and 1 - alpha/2 quantiles by
-- quantile_linear below (not quantile_cont, whose interpolation may be compiled to a fused
-- multiply-add on some platforms: not portable to Python). The table macros below draw the same
-- sums from per-value histograms (see there): O(distinct values) per replicate, not O(items).

-- Linear interpolation (type 7) of a SORTED list without NULLs at index q * (len - 1):
-- lo + (hi - lo) * frac, each operation a separate IEEE double operation (NULL for an empty list).
CREATE OR REPLACE MACRO quantile_linear(s, q) AS
    list_transform([(len(s) - 1) * q::DOUBLE], lambda rn:
        CASE WHEN len(s) = 0 THEN NULL
             ELSE s[floor(rn)::BIGINT + 1]
                  + (s[ceil(rn)::BIGINT + 1] - s[floor(rn)::BIGINT + 1]) * (rn - floor(rn)) END)[1];

CREATE OR REPLACE MACRO poisson_thresholds() AS [
    1656781714176974, 3313563428353948, 4141954285442435, 4418084571138598, 4487117142562638,
    4500923656847446, 4503224742561581, 4503553469092172, 4503594559908496, 4503599125554754,
    4503599582119380, 4503599623625255, 4503599627084078, 4503599627350141, 4503599627369145,
    4503599627370412, 4503599627370492]::BIGINT[];

CREATE OR REPLACE MACRO bootstrap_hash52(seed, b, item_id) AS
    ('0x' || substr(md5(concat_ws(':', seed, b, item_id)), 1, 13))::BIGINT;

CREATE OR REPLACE MACRO poisson_weight(seed, b, item_id) AS
    list_transform([bootstrap_hash52(seed, b, item_id)], lambda u:
        len(list_filter(poisson_thresholds(), lambda t: t <= u)))[1];

-- A Poisson(1) draw from a 52-bit integer: the number of thresholds <= u52 (poisson_weight's rule, as a CASE
-- chain: the histogram macros draw every count-1 entry this way, without the ASOF join).
CREATE OR REPLACE MACRO _poisson1_draw(u52) AS
    CASE WHEN u52 < 1656781714176974 THEN 0 WHEN u52 < 3313563428353948 THEN 1
        WHEN u52 < 4141954285442435 THEN 2 WHEN u52 < 4418084571138598 THEN 3
        WHEN u52 < 4487117142562638 THEN 4 WHEN u52 < 4500923656847446 THEN 5
        WHEN u52 < 4503224742561581 THEN 6 WHEN u52 < 4503553469092172 THEN 7
        WHEN u52 < 4503594559908496 THEN 8 WHEN u52 < 4503599125554754 THEN 9
        WHEN u52 < 4503599582119380 THEN 10 WHEN u52 < 4503599623625255 THEN 11
        WHEN u52 < 4503599627084078 THEN 12 WHEN u52 < 4503599627350141 THEN 13
        WHEN u52 < 4503599627369145 THEN 14 WHEN u52 < 4503599627370412 THEN 15
        WHEN u52 < 4503599627370492 THEN 16 ELSE 17 END;

-- Poisson bootstrap over histograms. The weights of the n_v items that share a value v sum to
-- W_v ~ Poisson(n_v) (a sum of independent Poisson(1) is Poisson of the sum), and a replicate's mean
-- sum(w * value) / sum(w) depends on the weights only through these sums: the bootstrap needs the
-- (value, count) histogram of each group, one Poisson draw per distinct value and replicate, not one
-- per item. W_v = the inverse CDF of Poisson(n_v) at u = bootstrap_hash52(seed, b, '<v>/<n_v>') / 2^52
-- (v as DOUBLE text), read by an ASOF join from the table below. Cost: replicates x distinct values
-- per group (2 per group for 0/1 hits), whatever the number of items. The *_hist macros take the
-- histogram itself (a caller that keeps counts, e.g. a table materialised when the warehouse is
-- built, never rescans its items); the item-level macros count the items, then call them.

-- Inverse-CDF table of Poisson(lam) for each distinct `items` of tbl: one row per k in
-- [lam - 8 sqrt(lam) - 1, lam + 8 sqrt(lam) + 12] (the mass outside is < 1e-14) with pmf > 0,
-- lower = P(K < k) renormalised over the window; the draw at u is the largest k with lower <= u.
CREATE OR REPLACE MACRO _poisson_inverse_cdf(tbl) AS TABLE
    WITH _pb_pmf AS (
        SELECT lam, k, exp(k * ln(lam::DOUBLE) - lam - lgamma(k + 1)) AS p
        FROM (SELECT DISTINCT items AS lam FROM query_table(tbl) WHERE items > 1) l,
             range(greatest(0, floor(lam - 8 * sqrt(lam) - 1))::BIGINT, ceil(lam + 8 * sqrt(lam) + 12)::BIGINT) r(k)
    )
    SELECT lam, k,
           coalesce(sum(p) OVER (PARTITION BY lam ORDER BY k ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)
               / sum(p) OVER (PARTITION BY lam) AS lower
    FROM _pb_pmf WHERE p > 0;

-- The replicates' Poisson weights over a histogram, shared by the bootstrap macros: tbl has columns
-- _gid, v (an entry's value), items (its count) and _key (the text hashed with the seed and the
-- replicate); one row (_gid, v, rep, w) per entry and replicate, w ~ Poisson(items): count 1 by
-- thresholds, larger counts through the inverse-CDF table.
CREATE OR REPLACE MACRO _poisson_replicate_weights(tbl, replicates, seed) AS TABLE
    WITH _pw_in AS (SELECT _gid, v, items, _key FROM query_table(tbl)),
    _pw_inv AS (SELECT * FROM _poisson_inverse_cdf(_pw_in)),
    _pw_draws AS (
        SELECT h._gid, h.v, h.items, r.rep, bootstrap_hash52(seed, r.rep, h._key) AS u52
        FROM _pw_in h CROSS JOIN range(0, replicates) r(rep)
    )
    SELECT d._gid, d.v, d.rep, i.k AS w
    FROM (SELECT *, u52 / 4503599627370496.0 AS u FROM _pw_draws WHERE items > 1) d
    ASOF JOIN _pw_inv i ON d.items = i.lam AND d.u >= i.lower
    UNION ALL
    SELECT _gid, v, rep, _poisson1_draw(u52) AS w FROM _pw_draws WHERE items = 1;

-- tbl has columns value, items (how many items have this value; rows with a NULL value or items <= 0
-- are dropped, rows repeating a value in a group are added up) and any group columns; one row per
-- group: the group columns, n, mean, lo, hi, replicates (those with sum(w) > 0).
--     SELECT * FROM poisson_bootstrap_hist(counts, replicates := 1000, seed := 0, alpha := 0.05)
CREATE OR REPLACE MACRO poisson_bootstrap_hist(tbl, replicates := 1000, seed := 0, alpha := 0.05) AS TABLE
    WITH _pb_in AS (
        SELECT COLUMNS(* EXCLUDE (value, items)), value::DOUBLE AS value, sum(items)::BIGINT AS items
        FROM query_table(tbl) WHERE value IS NOT NULL AND items > 0 GROUP BY ALL
    ),
    -- the replicates work on an integer group id, not on the group columns (joined back at the end)
    _pb_hist AS (SELECT dense_rank() OVER (ORDER BY row(0, *COLUMNS(* EXCLUDE (value, items)))) AS _gid, * FROM _pb_in),
    _pb_keys AS (SELECT DISTINCT _gid, COLUMNS(* EXCLUDE (_gid, value, items)) FROM _pb_hist),
    _pb_slim AS (SELECT _gid, value AS v, items, value::VARCHAR || '/' || items AS _key FROM _pb_hist),
    _pb_weighted AS (  -- the replicates' weights, and the observed histogram as replicate -1
        SELECT _gid, v AS value, rep, w FROM _poisson_replicate_weights(_pb_slim, replicates, seed)
        UNION ALL
        SELECT _gid, v AS value, -1 AS rep, items AS w FROM _pb_slim
    ),
    _pb_reps AS (  -- terms summed in ascending order: the same bits whatever the threads
        SELECT _gid, rep, sum(w)::BIGINT AS n, list_sum(list_sort(list(w * value))) / nullif(sum(w), 0) AS m
        FROM _pb_weighted GROUP BY _gid, rep
    ),
    _pb_summary AS (
        SELECT _gid,
               coalesce(any_value(n) FILTER (WHERE rep < 0), 0) AS n,
               any_value(m) FILTER (WHERE rep < 0) AS mean,
               list(m ORDER BY m) FILTER (WHERE rep >= 0 AND m IS NOT NULL) AS _ms
        FROM _pb_reps GROUP BY _gid
    ),
    _pb_out AS (  -- back to the group columns (no group columns and no rows: one row, n = 0)
        SELECT k.* EXCLUDE (_gid), coalesce(any_value(s.n), 0) AS n, any_value(s.mean) AS mean, any_value(s._ms) AS _ms
        FROM _pb_summary s JOIN _pb_keys k USING (_gid) GROUP BY ALL
    )
    SELECT * EXCLUDE (_ms),
           quantile_linear(_ms, alpha::DOUBLE / 2) AS lo,
           quantile_linear(_ms, 1 - alpha::DOUBLE / 2) AS hi,
           coalesce(len(_ms), 0) AS replicates
    FROM _pb_out;

-- tbl has columns item_id, value (NULL values are dropped) and any group columns; the output of
-- poisson_bootstrap_hist over the groups' (value, count) histograms. item_id is not read (the
-- histogram scheme needs no identity); it stays in the interface of the resampling bootstrap.
--     SELECT * FROM poisson_bootstrap_mean(hits, replicates := 1000, seed := 0, alpha := 0.05)
CREATE OR REPLACE MACRO poisson_bootstrap_mean(tbl, replicates := 1000, seed := 0, alpha := 0.05) AS TABLE
    WITH _item_hist AS (
        SELECT COLUMNS(* EXCLUDE (item_id, value)), value::DOUBLE AS value, count(*) AS items
        FROM query_table(tbl) WHERE value IS NOT NULL GROUP BY ALL
    )
    SELECT * FROM poisson_bootstrap_hist(_item_hist, replicates := replicates, seed := seed, alpha := alpha);

-- Paired over a histogram: tbl has columns a, b (a pair of per-item values of two systems on the same
-- item), items (how many items have this pair; rows with a NULL side or items <= 0 dropped, repeats
-- added up) and any group columns. diff = mean(a) - mean(b), its CI from one W ~ Poisson(items) per
-- distinct pair (a, b) and replicate (4 pairs for 0/1 hits; a replicate's d = sum(W (a - b)) / sum(W)),
-- and a two-sided p-value: twice the share of replicates whose difference does not have the observed
-- sign (<= 0 for a positive diff, >= 0 for a negative one; 1 when diff = 0), capped at 1.
CREATE OR REPLACE MACRO poisson_paired_bootstrap_hist(tbl, replicates := 1000, seed := 0, alpha := 0.05) AS TABLE
    WITH _pb_in AS (  -- per distinct pair (a, b): W_(a,b) ~ Poisson(n_(a,b)), value d = a - b
        SELECT COLUMNS(* EXCLUDE (a, b, items)), a::DOUBLE AS a, b::DOUBLE AS b, sum(items)::BIGINT AS items
        FROM query_table(tbl) WHERE a IS NOT NULL AND b IS NOT NULL AND items > 0 GROUP BY ALL
    ),
    _pb_hist AS (SELECT dense_rank() OVER (ORDER BY row(0, *COLUMNS(* EXCLUDE (a, b, items)))) AS _gid, * FROM _pb_in),
    _pb_keys AS (SELECT DISTINCT _gid, COLUMNS(* EXCLUDE (_gid, a, b, items)) FROM _pb_hist),
    _pb_slim AS (SELECT _gid, a - b AS v, items, a::VARCHAR || ':' || b::VARCHAR || '/' || items AS _key FROM _pb_hist),
    _pb_weighted AS (SELECT _gid, v AS d, rep, w FROM _poisson_replicate_weights(_pb_slim, replicates, seed)),
    _pb_reps AS (  -- terms summed in ascending order: the same bits whatever the threads
        SELECT _gid, rep, list_sum(list_sort(list(w * d))) / nullif(sum(w), 0) AS m
        FROM _pb_weighted GROUP BY _gid, rep
    ),
    _pb_observed AS (  -- the observed means: every weight = its count
        SELECT _gid, sum(items)::BIGINT AS n, list_sum(list_sort(list(items * a))) / sum(items) AS mean_a,
               list_sum(list_sort(list(items * b))) / sum(items) AS mean_b,
               list_sum(list_sort(list(items * (a - b)))) / sum(items) AS diff
        FROM _pb_hist GROUP BY _gid
    ),
    _pb_summary AS (
        SELECT o._gid, o.n, o.mean_a, o.mean_b, o.diff, r._ms
        FROM _pb_observed o
        LEFT JOIN (SELECT _gid, list(m ORDER BY m) FILTER (WHERE m IS NOT NULL) AS _ms FROM _pb_reps GROUP BY _gid) r
          USING (_gid)
    ),
    _pb_out AS (
        SELECT k.* EXCLUDE (_gid), coalesce(any_value(s.n), 0) AS n, any_value(s.mean_a) AS mean_a,
               any_value(s.mean_b) AS mean_b, any_value(s.diff) AS diff, any_value(s._ms) AS _ms
        FROM _pb_summary s JOIN _pb_keys k USING (_gid) GROUP BY ALL
    )
    SELECT * EXCLUDE (_ms),
           quantile_linear(_ms, alpha::DOUBLE / 2) AS lo,
           quantile_linear(_ms, 1 - alpha::DOUBLE / 2) AS hi,
           coalesce(len(_ms), 0) AS replicates,
           CASE WHEN coalesce(len(_ms), 0) = 0 THEN NULL
                WHEN diff = 0 THEN 1::DOUBLE
                ELSE least(1::DOUBLE, (2 * len(list_filter(_ms, lambda d:
                         CASE WHEN diff > 0 THEN d <= 0 ELSE d >= 0 END)))::DOUBLE / len(_ms))
           END AS p_value
    FROM _pb_out;

-- Paired: tbl has columns item_id, a, b (two systems' per-item values on the same items; items
-- with a NULL on either side are dropped) and any group columns; the output of
-- poisson_paired_bootstrap_hist over the groups' histograms of the pairs (a, b).
CREATE OR REPLACE MACRO poisson_paired_bootstrap(tbl, replicates := 1000, seed := 0, alpha := 0.05) AS TABLE
    WITH _item_hist AS (
        SELECT COLUMNS(* EXCLUDE (item_id, a, b)), a::DOUBLE AS a, b::DOUBLE AS b, count(*) AS items
        FROM query_table(tbl) WHERE a IS NOT NULL AND b IS NOT NULL GROUP BY ALL
    )
    SELECT * FROM poisson_paired_bootstrap_hist(_item_hist, replicates := replicates, seed := seed, alpha := alpha);
