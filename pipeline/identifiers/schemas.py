"""Tables of the identifier-sequence analysis, declared once (writer, readers and tests import them)."""

import pyarrow as pa

# One row per manifest file that parsed (duplicates by content included: they keep their own row).
# Rows are sorted by file_id; the parquet is byte-identical for the same manifest and code version.
SEQUENCES = pa.schema(
    [
        pa.field("file_id", pa.string(), nullable=False),  # the manifest's stable file id
        pa.field("sha256", pa.string(), nullable=False),  # content hash (the cache key)
        pa.field("language", pa.string(), nullable=False),  # javascript / python / java
        pa.field("source", pa.string(), nullable=False),
        pa.field("repository", pa.string(), nullable=False),
        pa.field("split", pa.string(), nullable=False),  # train / valid / test, the manifest's
        pa.field("duplicate", pa.bool_(), nullable=False),  # the manifest's flag: same bytes seen earlier
        pa.field("identifiers", pa.list_(pa.string()), nullable=False),  # identifier tokens in source order
    ]
)
