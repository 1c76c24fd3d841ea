"""pipeline.core: stable ids and seeded hashes, the process-pool map over files, logging set-up."""

from __future__ import annotations

import hashlib
import logging
import os
import random
import subprocess
import sys
from collections import Counter
from functools import partial

import pytest

from pipeline.core import ids, logs
from pipeline.core.pool import hard_limit, imap_files, map_files


# -- ids: known values, written out so that a change to any of them is caught ---------------------
def test_known_ids():
    assert ids.stable_id("fixture", "corpus/pkg/a.py") == "72b902fef022ec60"
    assert ids.stable_id("apiquiz", "call", "os.path.join", 0, "whole", "") == "f1916369db93d92d"
    assert ids.stable_id(11, "f00d", length=None) == (
        "afc04e49a203598324fa985a5546b4c4f9c2c1efba2d2f12710173c3985b6d66")
    assert ids.seeded_order_key(11, "q", "c").hex()[:16] == "6d809d2e39f57024"
    assert ids.digest(11, "q", "c", sep=":") == ids.seeded_order_key(11, "q", "c")
    assert ids.unit_float(11, "fixture", "pkg") == 0.47754665290055226
    assert ids.seeded_rng(11, "os.path.join").randrange(10**9) == 383384765


def test_ids_match_the_call_sites_they_replaced():
    """Each helper is the exact expression a stage used to write out."""
    seed, name, loc = 7, "stdlib", "data/corpus/stdlib/json/decoder.py"
    assert ids.stable_id(name, loc) == hashlib.sha256(f"{name}\0{loc}".encode()).hexdigest()[:16]
    d = hashlib.sha256(f"{seed}\0{name}\0repo".encode()).digest()
    assert ids.unit_float(seed, name, "repo") == int.from_bytes(d[:8], "big") / 2**64
    assert ids.seeded_order_key(seed, "abc") == hashlib.sha256(f"{seed}:abc".encode()).digest()
    assert ids.seeded_order_key(seed, "q1", "x.y") == hashlib.sha256(f"{seed}:q1:x.y".encode()).digest()
    want = random.Random(int.from_bytes(hashlib.sha256(f"{seed}\0a.b".encode()).digest()[:8], "big"))
    assert ids.seeded_rng(seed, "a.b").random() == want.random()
    file_ids = ["b2", "a1", "c3"]
    assert ids.stable_id(*sorted(file_ids), length=None, sep="\n") == hashlib.sha256(b"a1\nb2\nc3").hexdigest()
    assert ids.stable_id(length=None, sep="\n") == hashlib.sha256(b"").hexdigest()  # no parts: empty text


def test_shard_of_hex_ids_keeps_the_historical_assignment():
    rng = random.Random(0)
    for _ in range(1000):
        item = f"{rng.getrandbits(64):016x}"
        for shards in (1, 2, 3, 4, 7):
            assert ids.shard_of(item, shards) == int(item[:12], 16) % shards
    assert ids.shard_of("DEADBEEF0000ffff", 5) == int("DEADBEEF0000", 16) % 5
    assert ids.shard_of("abc", 4) == int("abc", 16) % 4  # short hex ids too


@pytest.mark.parametrize("item", ["hello world", "quiz:1", "", "0x12", "ünïcödé", "zzzzzzzzzzzzzzzz", "1_2"])
def test_shard_of_any_string_id(item):
    assert all(0 <= ids.shard_of(item, n) < n for n in (1, 2, 4, 9))
    assert ids.shard_of(item, 4) == ids.shard_of(item, 4)


def test_shard_of_balanced_and_partitions():
    rng = random.Random(1)
    hex_ids = [f"{rng.getrandbits(64):016x}" for _ in range(10_000)]
    other_ids = [f"item-{rng.random()}" for _ in range(10_000)]
    for population in (hex_ids, other_ids):
        counts = Counter(ids.shard_of(i, 4) for i in population)
        assert set(counts) == {0, 1, 2, 3}
        assert all(2300 < c < 2700 for c in counts.values()), counts
        one = {i for i in population if ids.shard_of(i, 1) == 0}
        parts = [{i for i in population if ids.shard_of(i, 4) == s} for s in range(4)]
        assert one == set(population) == set().union(*parts)
        assert sum(map(len, parts)) == len(population)  # disjoint
    with pytest.raises(ValueError):
        ids.shard_of("abc", 0)


# -- pool ------------------------------------------------------------------------------------------
def _square(x: int) -> int:
    return x * x


def _pid_and_square(x: int) -> tuple[int, int]:
    return os.getpid(), x * x


def _die_on(bad: int, x: int) -> int:
    if x == bad:
        os._exit(3)  # a native crash: no exception, the process is gone
    return x + 1


def _raise_on(bad: int, x: int) -> int:
    if x == bad:
        raise KeyError(x)
    return x


def test_map_files_ordered_and_serial_equals_parallel():
    items = list(range(103))
    serial = map_files(_square, items, 1, chunksize=4)
    assert serial == [x * x for x in items]
    assert map_files(_square, items, 2, chunksize=4) == serial
    assert map_files(_square, items, 2, chunksize=1000) == serial  # one chunk: runs here
    assert list(imap_files(_square, items, 2, chunksize=7)) == serial
    assert map_files(_square, [], 2) == []


def test_map_files_uses_processes_only_when_asked():
    here = {pid for pid, _ in map_files(_pid_and_square, list(range(20)), 1, chunksize=2)}
    assert here == {os.getpid()}
    there = {pid for pid, _ in map_files(_pid_and_square, list(range(20)), 2, chunksize=2)}
    assert os.getpid() not in there


def test_map_files_worker_crash_is_reported_not_fatal():
    items = list(range(40))
    out = map_files(partial(_die_on, 13), items, 2, chunksize=4, on_crash=lambda x: ("crashed", x))
    assert out == [("crashed", 13) if x == 13 else x + 1 for x in items]


def test_map_files_worker_crash_without_hook_raises():
    from concurrent.futures.process import BrokenProcessPool

    with pytest.raises(BrokenProcessPool):
        map_files(partial(_die_on, 5), list(range(20)), 2, chunksize=2)


def test_map_files_exceptions_propagate():
    for workers in (1, 2):
        with pytest.raises(KeyError):
            map_files(partial(_raise_on, 7), list(range(20)), workers, chunksize=2)


# -- logs ------------------------------------------------------------------------------------------
def test_logs_setup_format_level_stderr():
    code = ("import logging; from pipeline.core import logs; logs.setup(); "
            "logging.getLogger('x').info('hello'); logging.getLogger('x').debug('hidden')")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout == ""
    line, = run.stderr.splitlines()
    assert line.endswith(" INFO hello") and line[:4].isdigit()  # "%(asctime)s %(levelname)s %(message)s"
    verbose = subprocess.run([sys.executable, "-c", code.replace("setup()", "setup(verbose=True)")],
                             capture_output=True, text=True, check=True)
    assert verbose.stderr.splitlines()[-1].endswith(" DEBUG hidden")


def test_logs_setup_leaves_existing_handlers(caplog):
    root = logging.getLogger()
    before = list(root.handlers)
    logs.setup()
    assert root.handlers == before


def _native_spin(x: str) -> str:
    """'spin' loops inside C (sum over a range never returns to the interpreter, so a Python signal
    handler, e.g. a SIGALRM timeout, would run only after minutes); the others return at once."""
    with hard_limit(1.0):
        if x == "spin":
            sum(range(10**11))
        return x


@pytest.mark.parametrize("workers", [1, 2])
def test_hard_limit_ends_native_code_and_reports_a_timeout(workers):
    """Issue 15 item 7: a per-item limit that really stops native code, records a timeout, and the rest goes on."""
    import resource

    def children_cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    before = children_cpu()
    out = map_files(_native_spin, ["a", "spin", "b", "c", "d"], workers, chunksize=1,
                    on_crash=lambda x: ("crashed", x), on_timeout=lambda x: ("timeout", x))
    assert out == ["a", ("timeout", "spin"), "b", "c", "d"]
    # CPU, not wall time (a loaded machine stretches wall time): two 1 s CPU limits (pool, then isolated) and the
    # workers' start-up, not the minutes of CPU the spin would take unbounded
    assert children_cpu() - before < 30


def test_hard_limit_is_off_in_the_main_process():
    with hard_limit(0.01):
        assert sum(range(3 * 10**6)) > 0  # would have ended the test run
