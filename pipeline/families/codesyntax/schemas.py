"""CodeSyntax tables, declared once: the generator, the inference task, the warehouse and the tests use these."""

import pyarrow as pa

# CodeSyntax (stage 4): one row per function or method, its tokens as the paper has them.
SAMPLES = pa.schema(
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

# One row per relation edge: token indices into SAMPLES.tokens; head < dep_start <= dep_end.
RELATIONS = pa.schema(
    [
        pa.field("sample_id", pa.string(), nullable=False),
        pa.field("relation", pa.string(), nullable=False),  # Node:head_field->dependent_field
        pa.field("head", pa.int32(), nullable=False),
        pa.field("dep_start", pa.int32(), nullable=False),
        pa.field("dep_end", pa.int32(), nullable=False),
    ]
)

# Offset / keyword / combined baselines: a score is avg(hits / total) over relations.
BASELINES = pa.schema(
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

# Inference (infer.py): attention hit counts per model, variant, relation, layer and head, summed over samples
# (sample_id null) and, for the test side at the headline's metric and k, per sample.
ATTENTION_HITS = pa.schema(
    [
        pa.field("model", pa.string(), nullable=False),
        pa.field("language", pa.string(), nullable=False),
        pa.field("variant", pa.string(), nullable=False),  # plain / with_newlines: the labels evaluated
        pa.field("eval_split", pa.string(), nullable=False),  # dev / test
        pa.field("relation", pa.string(), nullable=False),
        pa.field("metric", pa.string(), nullable=False),  # first / last / any token of the dependent
        pa.field("k", pa.int32(), nullable=False),
        pa.field("layer", pa.int32(), nullable=False),  # 0-based
        pa.field("head", pa.int32(), nullable=False),
        pa.field("hits", pa.int64(), nullable=False),
        pa.field("total", pa.int64(), nullable=False),
        # null: the row sums the shard's samples (every split, metric and k). Set: one test sample's hits at the
        # headline's metric and k (first, 1) per relation and head, so that a score can be split by what is known
        # of each sample (its contamination label: docs/contamination.md); the null rows already count them.
        pa.field("sample_id", pa.string(), nullable=True),
    ]
)
