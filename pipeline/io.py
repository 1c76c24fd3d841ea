"""Atomic, deterministic writers: a reader never sees half a file, and the same
table always gives the same bytes."""

from __future__ import annotations

import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.parquet as pq


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside `path`; rename it over `path` on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        if os.path.exists(tmp):  # mkstemp makes it private; give it the usual permissions
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


ROW_GROUP = 1 << 17
WRITE_OPTIONS = dict(compression="zstd", compression_level=3, use_dictionary=True, write_statistics=True,
                     store_schema=True)


def write_parquet(table: pa.Table, path: str | os.PathLike, schema: pa.Schema) -> None:
    """Write `table` cast to `schema`, atomically, with settings fixed for byte-identical output."""
    table = table.select(schema.names).cast(schema)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, row_group_size=ROW_GROUP, **WRITE_OPTIONS)


@contextmanager
def parquet_stream(path: str | os.PathLike, schema: pa.Schema, row_group: int = ROW_GROUP) -> Iterator["ParquetStream"]:
    """A streaming twin of `write_parquet`: `out.write(table_or_batch)` any number of times; rows are
    buffered into row groups of exactly `row_group` rows, so with the default the file has the same
    bytes as `write_parquet` of all the rows at once, while memory holds at most one row group (tables
    of large rows pass a smaller `row_group`). Atomic."""
    with atomic_path(path) as tmp:
        stream = ParquetStream(tmp, schema, row_group)
        try:
            yield stream
        finally:
            stream.close()


class ParquetStream:
    def __init__(self, path: Path, schema: pa.Schema, row_group: int = ROW_GROUP):
        self.schema = schema
        self.row_group = row_group
        self.writer = pq.ParquetWriter(path, schema, **WRITE_OPTIONS)
        self.pending: list[pa.Table] = []
        self.buffered = 0
        self.rows = 0

    def write(self, data: pa.Table | pa.RecordBatch) -> None:
        table = data if isinstance(data, pa.Table) else pa.Table.from_batches([data])
        table = table.select(self.schema.names).cast(self.schema)
        self.pending.append(table)
        self.buffered += table.num_rows
        self.rows += table.num_rows
        while self.buffered >= self.row_group:
            self._flush(self.row_group)

    def _flush(self, rows: int) -> None:
        whole = pa.concat_tables(self.pending)
        # one contiguous chunk per row group: pages then split as in a one-shot write
        self.writer.write_table(whole.slice(0, rows).combine_chunks(), row_group_size=self.row_group)
        rest = whole.slice(rows)
        self.pending, self.buffered = ([rest] if rest.num_rows else []), rest.num_rows

    def close(self) -> None:
        if self.writer is None:
            return
        if self.buffered or self.rows == 0:
            whole = pa.concat_tables(self.pending).combine_chunks() if self.pending else self.schema.empty_table()
            self.writer.write_table(whole, row_group_size=self.row_group)
        self.writer.close()
        self.writer = None


def read_parquet(path: str | os.PathLike, schema: pa.Schema) -> pa.Table:
    """Read a table written with `schema`, failing loudly if the columns drifted."""
    table = pq.read_table(path)
    if not table.schema.equals(schema, check_metadata=False):
        raise ValueError(f"{path}: schema differs from the declared one:\n{table.schema}\nexpected:\n{schema}")
    return table


def write_json(obj: object, path: str | os.PathLike) -> None:
    """Write JSON atomically with sorted keys, so equal content gives equal bytes."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def load_yaml(text: str):
    """YAML text -> Python, through libyaml's C loader where PyYAML has it (the same safe subset; every
    YAML file of the project loads equal with both, ~10x faster: params and schemas are read at every
    Snakemake start, twice per job on a cluster)."""
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def code_commit() -> str:
    """The commit of this checkout's code (`git rev-parse HEAD` run beside this file, so from anywhere); `unknown`
    outside a git checkout. Results files record it."""
    import subprocess

    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                              cwd=Path(__file__).resolve().parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
