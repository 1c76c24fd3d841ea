"""One process-pool map over files, used by every stage that reads the corpus file by file.

`imap_files(fn, items, workers)` yields `fn(item)` for every item, in the items' order,
whatever the number of workers, so a stage's outputs do not depend on it. Items travel to
the workers in chunks of `chunksize` (fewer round trips for many small files); a tqdm bar on
stderr counts items. With `workers <= 1`, or a single chunk, everything runs in this process
(no pool start-up, and a debugger works).

A worker that dies (a segfault in a native parser, the out-of-memory killer) breaks the whole
pool. With `on_crash` given, the items whose results had not come back yet are then run one
process each, and an item whose own process dies gets `on_crash(item)` as its result; the rest
goes on. Without it, `BrokenProcessPool` propagates.

`fn` and the items must pickle (a module-level function, or a `functools.partial` of one).
"""

from __future__ import annotations

import logging
import sys
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Iterator, Sequence, TypeVar

from tqdm import tqdm

T = TypeVar("T")
R = TypeVar("R")

log = logging.getLogger("pipeline.core.pool")


def _run_chunk(fn: Callable[[T], R], chunk: Sequence[T]) -> list[R]:
    return [fn(item) for item in chunk]


def _isolated(fn: Callable[[T], R], item: T, on_crash: Callable[[T], R]) -> R:
    """`fn(item)` in a process of its own; `on_crash(item)` if that process dies."""
    try:
        with ProcessPoolExecutor(1) as pool:
            return pool.submit(fn, item).result()
    except BrokenProcessPool:
        return on_crash(item)


def imap_files(
    fn: Callable[[T], R],
    items: Sequence[T],
    workers: int = 1,
    *,
    chunksize: int = 16,
    desc: str | None = None,
    unit: str = "file",
    progress: bool | None = None,
    on_crash: Callable[[T], R] | None = None,
) -> Iterator[R]:
    """`fn(item)` for each item, in order, over `workers` processes. See the module docstring.

    progress: True always draws the bar, None only on a terminal (tqdm's `disable=None`), False never.
    """
    chunksize = max(1, chunksize)
    chunks = [items[i : i + chunksize] for i in range(0, len(items), chunksize)]
    bar = tqdm(total=len(items), desc=desc, unit=unit, file=sys.stderr,
               disable=None if progress is None else not progress)
    try:
        if workers <= 1 or len(chunks) <= 1:
            for chunk in chunks:
                for item in chunk:
                    yield fn(item)
                    bar.update(1)
            return
        done = 0
        try:
            with ProcessPoolExecutor(workers) as pool:
                for part in pool.map(_run_chunk, [fn] * len(chunks), chunks):
                    for result in part:
                        yield result
                    done += len(part)
                    bar.update(len(part))
        except BrokenProcessPool:
            if on_crash is None:
                raise
            log.warning("a worker died; running the remaining %d %ss one process each", len(items) - done, unit)
            for item in items[done:]:
                yield _isolated(fn, item, on_crash)
                bar.update(1)
    finally:
        bar.close()


def map_files(
    fn: Callable[[T], R],
    items: Sequence[T],
    workers: int = 1,
    *,
    chunksize: int = 16,
    desc: str | None = None,
    unit: str = "file",
    progress: bool | None = None,
    on_crash: Callable[[T], R] | None = None,
) -> list[R]:
    """`list(imap_files(...))`: every result, in the items' order."""
    return list(imap_files(fn, items, workers, chunksize=chunksize, desc=desc, unit=unit, progress=progress,
                           on_crash=on_crash))
