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
