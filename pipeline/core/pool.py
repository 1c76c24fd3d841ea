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

Time limits that stop native code: a Python-level alarm (SIGALRM raising an exception) cannot
interrupt a C or Rust parser, which returns to Python only when done. `hard_limit(seconds)`, entered
by `fn` around its work, arms a CPU-time timer (ITIMER_PROF) whose signal keeps its default action:
the kernel ends the process at the limit, wherever it is. The pool then breaks like on a crash,
and the item, rerun in a process of its own, gets `on_timeout(item)` (falling back to `on_crash`)
when that process was ended by the limit.

`fn` and the items must pickle (a module-level function, or a `functools.partial` of one).
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import logging
import multiprocessing
import signal
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


HARD_LIMIT_SIGNAL = signal.SIGPROF
AHEAD = 4  # chunks in flight per worker


@contextlib.contextmanager
def hard_limit(seconds: float | None):
    """End this process (default action of SIGPROF) once it has used `seconds` of CPU time inside
    the block, even inside native code. Use only in pool workers (`imap_files` with `on_timeout`
    or `on_crash`): in the main process it would end the stage."""
    if not seconds or seconds <= 0 or multiprocessing.parent_process() is None:
        yield
        return
    previous = signal.signal(HARD_LIMIT_SIGNAL, signal.SIG_DFL)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(HARD_LIMIT_SIGNAL, previous)


def _child(fn: Callable[[T], R], item: T, conn) -> None:
    conn.send(fn(item))
    conn.close()


def _isolated(fn: Callable[[T], R], item: T, on_crash: Callable[[T], R],
              on_timeout: Callable[[T], R] | None = None) -> R:
    """`fn(item)` in a process of its own; `on_timeout(item)` if `hard_limit` ended it, `on_crash(item)`
    if it died otherwise."""
    ctx = multiprocessing.get_context()
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(fn, item, send), daemon=True)
    proc.start()
    send.close()
    try:
        result = receive.recv()
    except EOFError:  # the process ended without sending its result
        result = _NOTHING
    proc.join()
    if result is not _NOTHING and proc.exitcode == 0:
        return result
    if proc.exitcode == -HARD_LIMIT_SIGNAL and on_timeout is not None:
        return on_timeout(item)
    return on_crash(item)


_NOTHING = object()


def _reraise(item) -> None:
    raise BrokenProcessPool(f"a worker process died on {item!r}")


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
    on_timeout: Callable[[T], R] | None = None,
) -> Iterator[R]:
    """`fn(item)` for each item, in order, over `workers` processes. See the module docstring.

    progress: True always draws the bar, None only on a terminal (tqdm's `disable=None`), False never.
    """
    chunksize = max(1, chunksize)
    chunks = [items[i : i + chunksize] for i in range(0, len(items), chunksize)]
    bar = tqdm(total=len(items), desc=desc, unit=unit, file=sys.stderr,
               disable=None if progress is None else not progress)
    try:
        if on_timeout is not None:  # time limits need workers (hard_limit is off in this process)
            workers = max(workers, 1)
        elif workers <= 1 or len(chunks) <= 1:
            for chunk in chunks:
                for item in chunk:
                    yield fn(item)
                    bar.update(1)
            return
        done = 0
        try:
            with ProcessPoolExecutor(workers) as pool:
                # at most AHEAD chunks per worker in flight: results wait for the consumer in bounded
                # memory (Executor.map submits everything at once, and a slow consumer then holds the
                # whole corpus's results)
                todo = iter(chunks)
                pending = collections.deque(pool.submit(_run_chunk, fn, c) for c in itertools.islice(todo, AHEAD * workers))
                while pending:
                    part = pending.popleft().result()
                    following = next(todo, None)
                    if following is not None:
                        pending.append(pool.submit(_run_chunk, fn, following))
                    for result in part:
                        yield result
                    done += len(part)
                    bar.update(len(part))
        except BrokenProcessPool:
            if on_crash is None and on_timeout is None:
                raise
            on_crash = on_crash or _reraise
            log.warning("a worker died; running the remaining %d %ss one process each", len(items) - done, unit)
            for item in items[done:]:
                yield _isolated(fn, item, on_crash, on_timeout)
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
    on_timeout: Callable[[T], R] | None = None,
) -> list[R]:
    """`list(imap_files(...))`: every result, in the items' order."""
    return list(imap_files(fn, items, workers, chunksize=chunksize, desc=desc, unit=unit, progress=progress,
                           on_crash=on_crash, on_timeout=on_timeout))
