"""Corpus stages in N shard jobs (so a cluster runs one stage on many nodes): which files a shard
takes, its command-line arguments, and merging the shards' sorted parts into the bytes one job writes.

The shard of a file is `shard_of(stable_id(source, path), N)` (`pipeline.core.ids`, the same stable
hash inference shards items with), the same for a file in every stage (scan, extract, identifiers,
CodeSyntax labelling), so a node could keep its files. The key is the file's (source, path), not
its file_id: the stages sort their rows by keys that tie on (source, path) for distinct files (a
jsonl dump holds many repositories' `setup.py`; CodeSyntax sorts by (source, path), extract and the
identifiers' rejects by (source, repository, path)), and with every tied file in one shard,
concatenating the shards' sorted parts and sorting them again *stably* by the stage's key gives
exactly the one-job order: a tie group comes from one part, in its own order. Scan shards the files
of one source before reading them: its key is the path a file is reported under (a jsonl dump's
origins path, else its path in the tree), the manifest's `path` later.

Merges that fit in memory use `merge_tables`; `stream_merge` does the same k-way merge with DuckDB
in bounded memory (it spills) and writes the result through `pipeline.io.parquet_stream`, so its
bytes equal an in-memory write of the same rows.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable, Sequence

import pyarrow as pa

from pipeline.core.ids import shard_of, stable_id

__all__ = ["key_of", "in_shard", "rows_of_shard", "add_arguments", "check_arguments", "merge_tables", "stream_merge"]


def key_of(source: str, path: str) -> str:
    """The shard key of a file: the hex sha256 of its source and path (see the module docstring)."""
    return stable_id(source, path, length=12)


def in_shard(source: str, path: str, shard: int, shards: int) -> bool:
    """Whether the file (source, path) belongs to `shard` of `shards` (always, with one shard)."""
    return shards == 1 or shard_of(key_of(source, path), shards) == shard


def rows_of_shard(table: pa.Table, shard: int, shards: int) -> pa.Table:
    """The rows of a table with `source` and `path` columns (the extraction's) whose file is in `shard`
    (all, with one shard): the key hashed once per distinct file, the rows filtered by Arrow."""
    if shards == 1:
        return table
    import pyarrow.compute as pc

    keys = pc.binary_join_element_wise(table.column("source"), table.column("path"), "\x00")
    mine = [k for k in pc.unique(keys).to_pylist() if in_shard(*k.split("\x00", 1), shard, shards)]
    return table.filter(pc.is_in(keys, value_set=pa.array(mine, pa.string())))


def add_arguments(ap: argparse.ArgumentParser, merge_help: str,
                  shards_help: str = "jobs the files are split over by the hash of their (source, path) (1: all files)"
                  ) -> None:
    """--shard / --shards (take only one shard's files) and --merge PART... (merge the shards' parts)."""
    ap.add_argument("--shard", type=int, default=0, help="this job's shard in [0, --shards)")
    ap.add_argument("--shards", type=int, default=1, help=shards_help)
    ap.add_argument("--merge", nargs="+", type=Path, metavar="PART", help=merge_help)


def check_arguments(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Exits with a usage error naming the bad value (argparse's `error`)."""
    if args.shards < 1:
        ap.error(f"--shards {args.shards}: give 1 (all files) or more")
    if not 0 <= args.shard < args.shards:
        ap.error(f"--shard {args.shard} is not in [0, --shards={args.shards})")
    if args.merge and args.shards != 1:
        ap.error("--merge combines finished shards: give it without --shard/--shards")


def merge_tables(tables: Sequence[pa.Table], keys: Sequence[str], schema: pa.Schema) -> pa.Table:
    """The shards' parts (each sorted by `keys`) as one table sorted by `keys`, ties in part order
    (Arrow's sort is stable)."""
    if not tables:
        return schema.empty_table()
    table = pa.concat_tables([t.select(schema.names).cast(schema) for t in tables])
    return table.sort_by([(k, "ascending") for k in keys]) if keys else table


def _sql_path(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def stream_merge(parts: Sequence[Path], schema: pa.Schema, keys: Sequence[str], out: Path, *,
                 first_of: Sequence[str] | None = None, first_by: Sequence[str] = (),
                 on_batch: Callable[[pa.RecordBatch], None] | None = None, row_group: int | None = None,
                 memory_limit: str = "256MB", tmpdir: Path | None = None) -> int:
    """Merge the shards' Parquet parts (each sorted by `keys`, a tie group in one part) into `out`,
    sorted by `keys`, ties in (part, row) order: the rows and bytes of `merge_tables`, in memory
    DuckDB bounds (it spills to `tmpdir`). `first_of`: keep one row per value of these columns, the
    first by `first_by` then (part, row) (extract's inventory: the first file in path order wins).
    `on_batch` sees every written batch (metrics counted on the way). Returns the rows written.
    Key columns sort NULLS LAST, as Arrow's `sort_by` does, and strings by their UTF-8 bytes (code
    points), as Python and Arrow do."""
    import duckdb

    from pipeline.io import ROW_GROUP, parquet_stream

    cols = ", ".join(repr_ident(c) for c in schema.names)
    union = " UNION ALL ".join(
        f"SELECT {cols}, {i} AS _part, file_row_number AS _row FROM read_parquet({_sql_path(p)}, file_row_number=true)"
        for i, p in enumerate(parts))
    order = ", ".join([f"{repr_ident(k)} ASC NULLS LAST" for k in keys] + ["_part", "_row"])
    if first_of:
        within = ", ".join([f"{repr_ident(k)} ASC NULLS LAST" for k in first_by] + ["_part", "_row"])
        union = (f"SELECT * FROM ({union}) QUALIFY row_number() OVER "
                 f"(PARTITION BY {', '.join(repr_ident(c) for c in first_of)} ORDER BY {within}) = 1")
    config = {"memory_limit": memory_limit, "threads": 1, "preserve_insertion_order": True}
    if tmpdir is not None:
        config["temp_directory"] = str(tmpdir)
    con = duckdb.connect(config=config)
    try:
        with parquet_stream(out, schema, row_group=row_group or ROW_GROUP) as writer:
            if parts:
                reader = con.sql(f"SELECT {cols} FROM ({union}) ORDER BY {order}").to_arrow_reader(8192)
                for batch in reader:
                    batch = pa.Table.from_batches([batch]).select(schema.names).cast(schema)
                    writer.write(batch)
                    if on_batch is not None:
                        for b in batch.to_batches():
                            on_batch(b)
            return writer.rows
    finally:
        con.close()


def repr_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'

