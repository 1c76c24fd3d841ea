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


# lm-evaluation-harness (pipeline.export.lm_eval): the `code` config as one multiple_choice task: the point's context,
# each candidate as written followed by `(`; ties broken by FQN; a gold the first stage missed is a miss at every k.
LM_EVAL = {
    "context": "context",
    "configs": ("code",),
    "splits": ("test",),
    "metrics": ("sr_at_1", "sr_at_3", "sr_at_5", "sr_at_10"),
    "utils": '''
def docs(dataset):
    """Points whose first stage gave no candidate have nothing to rank (our pipeline scores none of them either)."""
    return dataset.filter(lambda doc: len(doc["candidates"]) > 0)


def choices(doc):
    return [t + "(" for t in doc["candidate_texts"]]


def target(doc):
    return max(int(doc["gold_index"]), 0)


def results(doc, results):
    gold = int(doc["gold_index"])
    rank = None if gold < 0 else _rank([r[0] for r in results], list(doc["candidates"]), gold)
    out = {"gold_rank": rank if rank is not None else -1}
    for k in (1, 3, 5, 10):
        out[f"sr_at_{k}"] = float(rank is not None and rank <= k)
    return out
''',
}
