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


def write_parquet(table: pa.Table, path: str | os.PathLike, schema: pa.Schema) -> None:
    """Write `table` cast to `schema`, atomically, with settings fixed for byte-identical output."""
    table = table.select(schema.names).cast(schema)
    with atomic_path(path) as tmp:
        pq.write_table(
            table,
            tmp,
            compression="zstd",
            compression_level=3,
            use_dictionary=True,
            write_statistics=True,
            row_group_size=1 << 17,
            store_schema=True,
        )


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
