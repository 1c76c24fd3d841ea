"""Performance benchmarks. Each prints throughput and ratios against a baseline measured
in the same run on the same inputs (machines here are noisy: compare ratios, not seconds)."""

import time


def best_of(fn, repeat: int):
    """(the best wall time of `repeat` calls of `fn`, the last call's result)."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def work_dir(given, prefix: str):
    """Where a bench writes its corpora and projects: the folder given (`--dir`), else a fresh temporary folder
    (never a fixed name another run or user may hold); said on stdout, since the bench leaves it for inspection."""
    import tempfile
    from pathlib import Path

    folder = Path(given) if given is not None else Path(tempfile.mkdtemp(prefix=f"bench-{prefix}-"))
    print(f"work folder: {folder}", flush=True)
    return folder
