"""apiquiz tables, declared once: the generator, the inference task, the warehouse and the tests use these."""

import pyarrow as pa

# apiquiz (INK cloze quizzes, generate.py). `text` is `prefix + MASK + suffix`;
# `answer` is what the mask hides, so `prefix + answer + suffix` is the original code.
MASK = "<mask>"

QUIZZES = pa.schema(
    [
        pa.field("quiz_id", pa.string(), nullable=False),  # hash of (setting, api, level, mask_position, alias[, repository])
        pa.field("api", pa.string(), nullable=False),  # fully qualified name found in the corpus's calls
        pa.field("library", pa.string(), nullable=False),  # top-level module
        # "source/repository" of a user-defined name whose package several repositories define; else null
        pa.field("repository", pa.string(), nullable=True),
        pa.field("category", pa.string(), nullable=False),  # stdlib / user_defined / third_party
        pa.field("private", pa.bool_(), nullable=False),  # the API has no public name (a part starts with "_")
        pa.field("setting", pa.string(), nullable=False),  # call / import / alias / adversarial_alias / nl
        pa.field("level", pa.int32(), nullable=False),  # 0-based index of the masked dot-separated level
        pa.field("n_levels", pa.int32(), nullable=False),
        pa.field("level_name", pa.string(), nullable=False),  # the whole masked level
        pa.field("level_role", pa.string(), nullable=False),  # module / member (a class, an object) / callable
        # module / class / function / method: the inventory's kind of the level's definition, else guessed from the
        # name
        pa.field("level_kind", pa.string(), nullable=False),
        pa.field("mask_position", pa.string(), nullable=False),  # first / last token of the level, or whole level
        pa.field("alias", pa.string(), nullable=True),  # alias settings: the alias in the text
        pa.field("context", pa.string(), nullable=True),  # nl setting: the docstring sentence in front
        pa.field("text", pa.string(), nullable=False),  # prefix + "<mask>" + suffix
        pa.field("prefix", pa.string(), nullable=False),
        pa.field("suffix", pa.string(), nullable=False),
        pa.field("answer", pa.string(), nullable=False),  # gold
        # names of the same kind (level_kind) at this level, siblings (same parent path) first; gold included
        pa.field("candidates", pa.list_(pa.string()), nullable=False),
        pa.field("candidates_siblings", pa.int32(), nullable=False),  # how many are siblings of the gold
        pa.field("candidates_same_kind", pa.int32(), nullable=False),  # how many occur at this level with this kind
        # of those, how many have that kind by the inventory (not guessed from the name)
        pa.field("candidates_same_kind_known", pa.int32(), nullable=False),
        # how many occur at this level in this level_role (the former rule, for comparison)
        pa.field("candidates_same_role", pa.int32(), nullable=False),
        pa.field("seen", pa.bool_(), nullable=False),  # the API occurs in a train-split file
        pa.field("uses", pa.int64(), nullable=False),  # calls of the API in the corpus
        # nl setting: the context contains (ignoring case) the answer or the whole masked name; such quizzes
        # are left out of the headline (copying the answer from the context shows no knowledge of the API).
        # False in the other settings.
        pa.field("context_leak", pa.bool_(), nullable=False),
    ]
)

# Which called names are which quizzed API (generate.api_names): one row per (called FQN, source,
# repository) of the corpus's calls. Joined to usages' call sites and a model card's read text, it
# gives each model's own seen/unseen (sql/10_views.sql, apiquiz_seen).
API_NAMES = pa.schema(
    [
        pa.field("api", pa.string(), nullable=False),  # the quizzes' `api`
        pa.field("api_repository", pa.string(), nullable=True),  # the quizzes' `repository`
        pa.field("fqn", pa.string(), nullable=False),  # usages.fqn
        pa.field("source", pa.string(), nullable=False),  # usages.source
        pa.field("repository", pa.string(), nullable=False),  # usages.repository
    ]
)

# Per quiz and tokenizer: how many tokens the answer takes in context (the paper keeps quizzes
# whose answer is one token for every model).
QUIZ_TOKENS = pa.schema(
    [
        pa.field("quiz_id", pa.string(), nullable=False),
        pa.field("tokenizer", pa.string(), nullable=False),  # as listed in apiquiz.tokenizers
        pa.field("answer_tokens", pa.int32(), nullable=False),
        pa.field("single_token", pa.bool_(), nullable=False),  # exactly one token spanning exactly the answer
    ]
)


# Inference (infer.py): one row per (quiz, model, protocol). `fill_mask` ranks the
# gold token over the vocabulary (masked LMs, single-token answers; `fill_mask_own_first` / `_last`: the
# model's own first/last token of a whole-level quiz's level it splits); `rank` ranks the quiz's
# candidates by summed log-likelihood, `rank_mean` by its per-token mean, `rank_pmi` by the sum minus
# the no-context log-likelihood (pipeline.runtime.protocols.PROTOCOLS). gold_logprob: the gold's score
# under the row's protocol. status: ok / multi_token / too_long / not_applicable.
PREDICTIONS = pa.schema(
    [
        pa.field("quiz_id", pa.string(), nullable=False),
        pa.field("model", pa.string(), nullable=False),
        pa.field("protocol", pa.string(), nullable=False),
        pa.field("status", pa.string(), nullable=False),
        pa.field("gold_rank", pa.int32(), nullable=True),  # 1-based
        pa.field("n_ranked", pa.int32(), nullable=True),  # vocabulary size or number of candidates
        pa.field("top", pa.list_(pa.string()), nullable=False),  # best first: top-50 fill-ins / top-20 candidates
        pa.field("gold_logprob", pa.float64(), nullable=True),
    ]
)
