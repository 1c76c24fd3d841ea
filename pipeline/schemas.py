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
    # codesyntax (per file or per function)
    "syntax_error": "the file or the cut function does not parse or tokenize",
    "parse_error": "tree-sitter found ERROR or MISSING nodes inside the method",
    "too_many_tokens": "the function has more tokens than codesyntax.max_tokens",
    "too_deep": "nesting too deep for the parser or the labeller (RecursionError)",
}


def empty(schema: pa.Schema) -> pa.Table:
    return schema.empty_table()

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
