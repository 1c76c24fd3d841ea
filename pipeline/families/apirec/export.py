"""apirec as a dataset (pipeline.export): `code` (APIBench-C points: the context up to a call, the answer and the
n-gram baseline's candidates our models re-rank, as written in the file) and `query` (APIBench-Q: a docstring or comment
query, its answer, BM25's candidates), each by the manifest's split. `gold_index` is the answer's place in
`candidates` (-1: the first stage missed it, a miss at every k), `candidates` the first `apirec.inference.candidates`
of the n-gram's `ngram_candidates`: the pool our models re-rank."""

from pipeline.export import ExportConfig


def configs(config: dict) -> list[ExportConfig]:
    k = int(config["apirec"]["inference"]["candidates"])  # the pool the models re-rank (infer.score_points)
    code = ("SELECT point_id, file_id, source, repository, split, domain, function, line, col, written, api, api_class, "
            "category, library_group, position, length_bucket, "
            "CASE WHEN path LIKE '%.java' THEN 'java' ELSE 'python' END AS language, context, "
            f"candidates[1:{k}] AS candidates, candidate_texts[1:{k}] AS candidate_texts, "
            f"list_position(candidates[1:{k}], api) - 1 AS gold_index, candidates AS ngram_candidates, seen "
            "FROM apirec_points")
    query = ("SELECT query_id, file_id, source, repository, split, domain, origin, line, text, api, api_class, kind, "
             "category, leaky, answers, candidates, list_position(candidates, api) - 1 AS gold_index "
             "FROM apirec_queries")
    return [
        ExportConfig(name="code", key="point_id", sql=code, text_columns=("context", "written"),
                     dates=("apirec_point_dates", "item_id"), lm_eval="apirec",
                     description="API recommendation at a code point: `context` (imports and the function up to the "
                                 "call), the answer `api` (method level) and `api_class`, and the n-gram baseline's "
                                 "`candidates` (FQNs) with `candidate_texts` (as written in the file), which our "
                                 "models re-rank as `context + text + \"(\"` (the first `apirec.inference.candidates` of "
                                 "the n-gram's `ngram_candidates`)", extra={"candidates": k}),
        ExportConfig(name="query", key="query_id", sql=query, text_columns=("text",),
                     description="API recommendation for a natural-language query (a docstring's first sentence or a "
                                 "comment above a call): the answer `api` and BM25's `candidates`"),
    ]
