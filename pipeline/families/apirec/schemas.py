"""apirec tables, declared once: the generator, the inference task, the warehouse and the tests use these."""

import pyarrow as pa

# APIBench-C recommendation points (generate.py): one row per resolved API call inside a function.
# `context` = the file's module-level imports, a blank line, then the function's code up to the
# call (cut exactly before the callee as written); the answer is `api` (method level) and
# `api_class` (class level: the FQN without its last part, a class or a module).
POINTS = pa.schema(
    [
        pa.field("point_id", pa.string(), nullable=False),  # hash of (file_id, line, col)
        pa.field("file_id", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("repository", pa.string(), nullable=False),
        pa.field("path", pa.string(), nullable=False),
        pa.field("split", pa.string(), nullable=False),  # train / valid / test, by project (repository)
        pa.field("domain", pa.string(), nullable=False),  # apirec.domains[source], else apirec.default_domain
        pa.field("function", pa.string(), nullable=False),  # enclosing function's qualname
        pa.field("line", pa.int32(), nullable=False),  # 1-based line of the call
        pa.field("col", pa.int32(), nullable=False),  # 0-based column of the callee
        pa.field("written", pa.string(), nullable=False),  # the callee as written (chain)
        pa.field("api", pa.string(), nullable=False),  # method-level answer: the FQN
        pa.field("api_class", pa.string(), nullable=False),  # class-level answer: class or module
        pa.field("category", pa.string(), nullable=False),  # stdlib / third_party / user_defined
        # stdlib / popular_third_party (top-level package in apirec.popular_libraries: the paper's popular list) /
        # other_third_party / user_defined
        pa.field("library_group", pa.string(), nullable=False),
        pa.field("previous_api", pa.string(), nullable=True),  # the resolved API called just before, in the function
        pa.field("api_index", pa.int32(), nullable=False),  # b: 1-based index among the function's resolved calls
        pa.field("api_count", pa.int32(), nullable=False),  # m
        pa.field("line_in_function", pa.int32(), nullable=False),  # a: 1-based (the def line is 1)
        pa.field("function_lines", pa.int32(), nullable=False),  # n: LOC of the function (def line to last line)
        pa.field("position", pa.string(), nullable=False),  # front / middle / back / other (paper's Sec. 5.3)
        pa.field("length_bucket", pa.string(), nullable=False),  # short (5%) / moderate / long (5%)
        pa.field("imports", pa.string(), nullable=False),  # the module-level import statements, as written
        pa.field("context", pa.string(), nullable=False),  # imports + "\n\n" + function code before the call
        pa.field("class_siblings", pa.int32(), nullable=False),  # other known APIs of the same class/module
        pa.field("seen", pa.bool_(), nullable=False),  # the API is called in a train-split file
        # the n-gram baseline's top `candidates` for this point (the models re-rank these) and how
        # each is written in this file (through its imports; builtins bare; the file's own module stripped)
        pa.field("candidates", pa.list_(pa.string()), nullable=False),
        pa.field("candidate_texts", pa.list_(pa.string()), nullable=False),
    ]
)

# Candidate rankings of the baselines (generate.py: ngram, jedi; queries.py: bm25) and of the models
# (infer.py: rerank_ngram / rerank_ngram_mean / rerank_ngram_pmi; infer_query.py: embed_bm25 / embed_universe), one row per item (a point,
# or a query: point_id holds the query_id) and ranker/model. `top` is best first; grades (2 exact,
# 1 right class, 0) are computed in SQL. status: ok / too_long / no_vector. gold_rank: 1-based
# method-level rank in the full ranking, NULL when absent.
RANKING_FIELDS = [
    pa.field("point_id", pa.string(), nullable=False),
    pa.field("model", pa.string(), nullable=False),  # a zoo model, or the baseline's name (ngram)
    pa.field("ranker", pa.string(), nullable=False),  # ngram / ngram_domain / ide / bm25 / rerank_ngram[_mean|_pmi] / embed_bm25 / embed_universe
    pa.field("status", pa.string(), nullable=False),
    pa.field("gold_rank", pa.int32(), nullable=True),  # method level
    pa.field("class_rank", pa.int32(), nullable=True),  # first candidate of the gold's class
    pa.field("n_candidates", pa.int32(), nullable=False),
    pa.field("gold_in_candidates", pa.bool_(), nullable=False),  # recall of the first stage
    pa.field("top", pa.list_(pa.string()), nullable=False),  # best first, top_k
    pa.field("gold_logprob", pa.float64(), nullable=True),  # models: the gold's score (LMs: log-likelihood; encoders: cosine)
]
BASELINES = pa.schema(RANKING_FIELDS)
PREDICTIONS = pa.schema(RANKING_FIELDS)

# APIBench-Q queries (queries.py): one row per deduplicated (normalised text, answer) of the
# evaluation split. Docstring queries: the first sentence of a definition's docstring, answered by
# that definition; comment queries: a comment block directly above a line, answered by its first
# resolved call. `candidates`: BM25's top `query_candidates` (the pool the encoders re-rank).
QUERIES = pa.schema(
    [
        pa.field("query_id", pa.string(), nullable=False),
        pa.field("origin", pa.string(), nullable=False),  # docstring / comment
        pa.field("file_id", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("repository", pa.string(), nullable=False),
        pa.field("path", pa.string(), nullable=False),
        pa.field("split", pa.string(), nullable=False),
        pa.field("domain", pa.string(), nullable=False),
        pa.field("line", pa.int32(), nullable=False),  # def line (docstring) / the comment block's last line
        pa.field("text", pa.string(), nullable=False),  # the query
        pa.field("norm", pa.string(), nullable=False),  # lower-case words: the dedup key with the answer
        pa.field("api", pa.string(), nullable=False),  # method-level answer (FQN)
        pa.field("api_class", pa.string(), nullable=False),  # class-level answer
        pa.field("kind", pa.string(), nullable=False),  # class / function / method (docstring), call (comment)
        pa.field("category", pa.string(), nullable=False),  # stdlib / third_party / user_defined
        pa.field("leaky", pa.bool_(), nullable=False),  # the query contains the answer's own name
        pa.field("answers", pa.int32(), nullable=False),  # distinct answers of this normalised text (> 1: ambiguous)
        pa.field("duplicates", pa.int32(), nullable=False),  # copies (same text and answer) dropped
        pa.field("class_siblings", pa.int32(), nullable=False),  # other universe APIs of the answer's class
        pa.field("candidates", pa.list_(pa.string()), nullable=False),  # BM25's top candidates, best first
    ]
)

# The candidate API universe of the query-based task: every public class, function and method of
# the inventory, ordered by FQN. `text` is what BM25 indexes and the encoders embed: the FQN split
# into words, then the docstring after its first sentence (`api_doc: rest`) or all of it (`full`).
API_DOCS = pa.schema(
    [
        pa.field("fqn", pa.string(), nullable=False),
        pa.field("api_class", pa.string(), nullable=False),
        pa.field("library", pa.string(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("doc", pa.string(), nullable=True),  # the inventory's first docstring sentence
        pa.field("text", pa.string(), nullable=False),
    ]
)
