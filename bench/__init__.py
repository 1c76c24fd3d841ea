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
