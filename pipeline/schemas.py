"""Every table's schema, declared once; writers, readers and tests import them from here."""

import pyarrow as pa

MANIFEST = pa.schema(
    [
        pa.field("file_id", pa.string(), nullable=False),  # stable id: hash of (source, location)
        pa.field("sha256", pa.string(), nullable=False),  # content hash
        pa.field("source", pa.string(), nullable=False),
        pa.field("repository", pa.string(), nullable=False),
        pa.field("path", pa.string(), nullable=False),  # relative to the source root (package root)
        pa.field("location", pa.string(), nullable=False),  # where the bytes are, relative to the project
        pa.field("language", pa.string(), nullable=False),
        pa.field("encoding", pa.string(), nullable=False),  # how the text decodes (PEP 263 cookie for Python)
        pa.field("bytes", pa.int64(), nullable=False),
        pa.field("lines", pa.int64(), nullable=False),
        pa.field("split", pa.string(), nullable=False),  # train / valid / test, by repository
        pa.field("duplicate", pa.bool_(), nullable=False),  # same sha256 seen earlier in (source, repository, path) order
    ]
)

REJECTS = pa.schema(
    [
        pa.field("source", pa.string(), nullable=False),
        pa.field("repository", pa.string(), nullable=True),
        pa.field("path", pa.string(), nullable=False),
        pa.field("stage", pa.string(), nullable=False),  # fetch / manifest / extract / ...
        pa.field("reason", pa.string(), nullable=False),  # a short code, see REJECT_REASONS
        pa.field("detail", pa.string(), nullable=True),
        pa.field("bytes", pa.int64(), nullable=True),
    ]
)

# Files the scan of a source sees, before splits and duplicates are decided.
SCANNED = pa.schema([f for f in MANIFEST if f.name not in ("split", "duplicate")])

# Where the files of a `jsonl` source came from: the dump's repo and path per materialised file.
ORIGINS = pa.schema(
    [
        pa.field("location", pa.string(), nullable=False),
        pa.field("repository", pa.string(), nullable=False),
        pa.field("path", pa.string(), nullable=False),
        pa.field("language", pa.string(), nullable=False),
    ]
)

# CodeSyntax (stage 4): one row per function or method, its tokens as the paper has them.
SYNTAX_SAMPLES = pa.schema(
    [
        pa.field("sample_id", pa.string(), nullable=False),  # hash of (file sha256, language, start line, name)
        pa.field("language", pa.string(), nullable=False),
        pa.field("file_id", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("repository", pa.string(), nullable=False),
        pa.field("path", pa.string(), nullable=False),
        pa.field("function", pa.string(), nullable=False),  # qualified name in the file, e.g. Class.method
        pa.field("start_line", pa.int32(), nullable=False),  # first line (decorators included) in the file
        pa.field("file_split", pa.string(), nullable=False),  # the manifest's train/valid/test split
        pa.field("eval_split", pa.string(), nullable=False),  # dev / test: where baselines and heads are chosen
        pa.field("code", pa.string(), nullable=False),  # the function's text (methods dedented)
        pa.field("tokens", pa.list_(pa.string()), nullable=False),
        pa.field("token_kinds", pa.list_(pa.string()), nullable=False),  # tokenize name / tree-sitter type
        pa.field("token_lines", pa.list_(pa.int32()), nullable=False),  # 1-based, in `code`
        pa.field("token_cols", pa.list_(pa.int32()), nullable=False),  # 0-based characters, in `code`
        pa.field("n_tokens", pa.int32(), nullable=False),
    ]
)

# One row per relation edge: token indices into SYNTAX_SAMPLES.tokens; head < dep_start <= dep_end.
SYNTAX_RELATIONS = pa.schema(
    [
        pa.field("sample_id", pa.string(), nullable=False),
        pa.field("relation", pa.string(), nullable=False),  # Node:head_field->dependent_field
        pa.field("head", pa.int32(), nullable=False),
        pa.field("dep_start", pa.int32(), nullable=False),
        pa.field("dep_end", pa.int32(), nullable=False),
    ]
)

# Offset / keyword / combined baselines: a score is avg(hits / total) over relations.
SYNTAX_BASELINES = pa.schema(
    [
        pa.field("language", pa.string(), nullable=False),
        pa.field("variant", pa.string(), nullable=False),  # plain / with_newlines
        pa.field("chosen_on", pa.string(), nullable=False),  # dev (held out) or test (as the paper did); scored on test
        pa.field("baseline", pa.string(), nullable=False),  # offset / keyword / combined
        pa.field("metric", pa.string(), nullable=False),  # first / last / any token of the dependent
        pa.field("relation", pa.string(), nullable=False),
        pa.field("k", pa.int32(), nullable=False),
        pa.field("chosen", pa.list_(pa.string()), nullable=False),  # e.g. ["offset=2", "offset=1"]
        pa.field("hits", pa.int64(), nullable=False),
        pa.field("total", pa.int64(), nullable=False),
    ]
)

REJECT_REASONS = {
    # fetch: archive and folder extraction
    "absolute_path": "member path is absolute",
    "parent_traversal": "member path contains '..'",
    "link_escapes_tree": "symbolic or hard link pointing outside the tree",
    "link_internal": "link inside the tree; its target is kept, the link is not materialised",
    "special_file": "device, FIFO or other non-regular member",
    "member_limit": "archive has more members than limits.max_members",
    "size_limit": "archive would exceed limits.max_total_bytes",
    "too_large": "file is larger than limits.max_file_bytes",
    "bad_record": "jsonl line is not a JSON object with repo, path, code, language",
    "source_unavailable": "the source could not be found on this machine (skipped)",
    # manifest
    "not_source": "not a source file of a known language",
    "language_not_selected": "source file of a language not in manifest.languages",
    "binary": "contains NUL bytes",
    "undecodable": "bytes do not decode in the declared or default encoding",
    # extract and codesyntax (per file or per function; too_large is reused with each stage's cap)
    "syntax_error": "CPython's, libcst's or tokenize's parser rejects the file or the cut function (e.g. Python 2 syntax)",
    "too_deep": "nesting too deep to parse or label safely (RecursionError, too many nested parentheses)",
    "timeout": "analysis ran past extract.timeout_s (not cached: depends on machine load)",
    "worker_crash": "the analysing process died on this file (not cached)",
    "parse_error": "tree-sitter found ERROR or MISSING nodes inside the method",
    "too_many_tokens": "the function has more tokens than codesyntax.max_tokens",
}

# Stage 3, static API extraction (pipeline.extract). One row per (manifest row, usage): files
# with the same content share one analysis but each keeps its own rows, module and split.
USAGES = pa.schema(
    [
        pa.field("file_id", pa.string(), nullable=False),
        pa.field("sha256", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("repository", pa.string(), nullable=False),
        pa.field("path", pa.string(), nullable=False),
        pa.field("split", pa.string(), nullable=False),
        pa.field("module", pa.string(), nullable=False),  # the file's dotted module name inside its repository
        pa.field("line", pa.int32(), nullable=False),  # 1-based
        pa.field("col", pa.int32(), nullable=False),  # 0-based, in characters
        pa.field("kind", pa.string(), nullable=False),  # call (name()), method (a.b()), reference (a.b), decorator (@name)
        pa.field("chain", pa.string(), nullable=True),  # the name chain as written; null when the callee is no chain
        pa.field("attr", pa.string(), nullable=True),  # called attribute of a non-chain callee (`a.b().c()` -> c)
        pa.field("fqn", pa.string(), nullable=True),  # fully qualified name; null when unresolved
        pa.field("category", pa.string(), nullable=False),  # stdlib / user_defined / third_party / unknown
        pa.field("via", pa.string(), nullable=True),  # import / def / builtin: what resolved the chain's head
        pa.field("import_target", pa.string(), nullable=True),  # what the imported head name denotes (via import)
        pa.field("alias", pa.string(), nullable=True),  # the head name when it comes from `import ... as alias`
        pa.field("import_statement", pa.string(), nullable=True),  # that aliasing import, normalised
        pa.field("enclosing_class", pa.string(), nullable=True),  # qualname of the innermost class
        pa.field("enclosing_function", pa.string(), nullable=True),  # qualname of the innermost function
    ]
)

IMPORTS = pa.schema(
    [
        pa.field("file_id", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("repository", pa.string(), nullable=False),
        pa.field("path", pa.string(), nullable=False),
        pa.field("split", pa.string(), nullable=False),
        pa.field("module", pa.string(), nullable=False),  # the importing file's module
        pa.field("line", pa.int32(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),  # import / from
        pa.field("imported", pa.string(), nullable=False),  # module as written, leading dots included
        pa.field("level", pa.int32(), nullable=False),  # number of leading dots
        pa.field("name", pa.string(), nullable=True),  # from-imports: the name ("*" for star imports)
        pa.field("asname", pa.string(), nullable=True),
        pa.field("bound", pa.string(), nullable=True),  # the local name bound; null for star imports
        pa.field("target", pa.string(), nullable=True),  # absolute dotted name `bound` denotes; null if unresolvable
        pa.field("scope", pa.string(), nullable=False),  # qualname of the enclosing function/class, "" at module level
        pa.field("fallback", pa.bool_(), nullable=False),  # inside an except handler (try/except ImportError)
        pa.field("star", pa.bool_(), nullable=False),
        pa.field("resolvable", pa.bool_(), nullable=False),  # false: star import, or relative beyond the top package
    ]
)

INVENTORY = pa.schema(
    [
        pa.field("library", pa.string(), nullable=False),  # top-level module
        pa.field("source", pa.string(), nullable=False),
        pa.field("repository", pa.string(), nullable=False),
        pa.field("path", pa.string(), nullable=False),
        pa.field("module", pa.string(), nullable=False),
        pa.field("qualname", pa.string(), nullable=False),  # "" for the module itself
        pa.field("fqn", pa.string(), nullable=False),  # unique
        pa.field("kind", pa.string(), nullable=False),  # module / class / function / method
        pa.field("signature", pa.string(), nullable=False),  # "(a, b=1) -> int"; bases for classes; "" for modules
        pa.field("doc", pa.string(), nullable=True),  # first sentence of the docstring
    ]
)

# apiquiz (INK cloze quizzes, pipeline.bench.apiquiz). `text` is `prefix + MASK + suffix`;
# `answer` is what the mask hides, so `prefix + answer + suffix` is the original code.
MASK = "<mask>"

QUIZZES = pa.schema(
    [
        pa.field("quiz_id", pa.string(), nullable=False),  # hash of (setting, api, level, mask_position, alias)
        pa.field("api", pa.string(), nullable=False),  # fully qualified name found in the corpus's calls
        pa.field("library", pa.string(), nullable=False),  # top-level module
        pa.field("category", pa.string(), nullable=False),  # stdlib / user_defined / third_party
        pa.field("setting", pa.string(), nullable=False),  # call / import / alias / adversarial_alias / nl
        pa.field("level", pa.int32(), nullable=False),  # 0-based index of the masked dot-separated level
        pa.field("n_levels", pa.int32(), nullable=False),
        pa.field("level_name", pa.string(), nullable=False),  # the whole masked level
        pa.field("mask_position", pa.string(), nullable=False),  # first / last token of the level, or whole level
        pa.field("alias", pa.string(), nullable=True),  # alias settings: the alias in the text
        pa.field("context", pa.string(), nullable=True),  # nl setting: the docstring sentence in front
        pa.field("text", pa.string(), nullable=False),  # prefix + "<mask>" + suffix
        pa.field("prefix", pa.string(), nullable=False),
        pa.field("suffix", pa.string(), nullable=False),
        pa.field("answer", pa.string(), nullable=False),  # gold
        pa.field("candidates", pa.list_(pa.string()), nullable=False),  # names seen at this level; gold included
        pa.field("seen", pa.bool_(), nullable=False),  # the API occurs in a train-split file
        pa.field("uses", pa.int64(), nullable=False),  # calls of the API in the corpus
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


# Inference (pipeline.infer.apiquiz): one row per (quiz, model, protocol). `fill_mask` ranks the
# gold token over the vocabulary (masked LMs, single-token answers); `rank` ranks the quiz's
# candidates by log-likelihood. status: ok / multi_token / too_long / not_applicable.
APIQUIZ_PREDICTIONS = pa.schema(
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

# Inference (pipeline.infer.codesyntax): attention hit counts per model, relation, layer and head.
SYNTAX_ATTENTION_HITS = pa.schema(
    [
        pa.field("model", pa.string(), nullable=False),
        pa.field("language", pa.string(), nullable=False),
        pa.field("eval_split", pa.string(), nullable=False),  # dev / test
        pa.field("relation", pa.string(), nullable=False),
        pa.field("metric", pa.string(), nullable=False),  # first / last / any token of the dependent
        pa.field("k", pa.int32(), nullable=False),
        pa.field("layer", pa.int32(), nullable=False),  # 0-based
        pa.field("head", pa.int32(), nullable=False),
        pa.field("hits", pa.int64(), nullable=False),
        pa.field("total", pa.int64(), nullable=False),
    ]
)


# Pooled features (the shared features runtime): one vector per (item, model, layer, pooling).
FEATURES = pa.schema(
    [
        pa.field("item_id", pa.string(), nullable=False),  # the family's stable id of a sample/word/pair
        pa.field("model", pa.string(), nullable=False),
        pa.field("layer", pa.int16(), nullable=False),  # 0 = embedding output, 1..L = layers
        pa.field("pooling", pa.string(), nullable=False),  # mean / first / concat ...
        pa.field("vector", pa.list_(pa.float16()), nullable=False),
    ]
)

# What a probe is fitted to (pipeline.fit): classification tasks fill `label`, regression tasks
# `target`; `group` keeps the samples of one snippet in one cross-validation fold. Families may
# add columns (e.g. a scalar for the regression baseline); the fit reads only those it needs.
PROBE_LABELS = pa.schema(
    [
        pa.field("item_id", pa.string(), nullable=False),
        pa.field("label", pa.string(), nullable=True),  # classification
        pa.field("target", pa.float64(), nullable=True),  # regression
        pa.field("group", pa.string(), nullable=False),  # e.g. the snippet id
    ]
)

# Fit results (pipeline.fit): one row per (task, model, pooling, layer, fold, probe). Baselines have
# model = probe = the baseline's name and a null layer. `selected` marks every fold of the layer
# chosen on fold 0; the headline is the mean of the other folds' `error` at that layer.
FIT_RESULTS = pa.schema(
    [
        pa.field("task", pa.string(), nullable=False),
        pa.field("task_type", pa.string(), nullable=False),  # classification / regression
        pa.field("model", pa.string(), nullable=False),
        pa.field("pooling", pa.string(), nullable=False),
        pa.field("probe", pa.string(), nullable=False),  # ridge / lbfgs / sgd / majority / linreg
        pa.field("layer", pa.int16(), nullable=True),
        pa.field("fold", pa.int16(), nullable=False),  # 0 chooses the layer; 1..K-1 give the headline
        pa.field("metric", pa.string(), nullable=False),  # error (1 - accuracy) / mae
        pa.field("error", pa.float64(), nullable=False),
        pa.field("n_train", pa.int64(), nullable=False),
        pa.field("n_test", pa.int64(), nullable=False),
        pa.field("alpha", pa.float64(), nullable=True),  # regularisation chosen on the train folds
        pa.field("selected", pa.bool_(), nullable=False),
        pa.field("n_dropped", pa.int64(), nullable=False),  # items left out: no label or not in every layer's features
    ]
)
