"""The benchmark factory: every stage's logic, importable; Snakemake rules stay thin."""

import atexit as _atexit
import gc as _gc

__version__ = "0.1.0"


# A job's interpreter teardown ends with full cyclic collections over every object its imports made: after
# torch and transformers ~0.6 CPU-s, after a predict job ~1.1 (docs/scaling.md, "Snakemake itself"), paid by
# every job and by Snakemake's own process (the Snakefile imports this package). Freezing the heap at exit
# keeps those objects out of them. Registered when `pipeline` is imported, this runs after the exit handlers
# of everything imported later (logging's flush, multiprocessing's pool shutdown, weakref finalizers); only
# the cost record above runs after it. What it gives up: cyclic garbage left at exit is not finalized; no job
# leaves an output there (every output is written, closed and renamed before main returns).
# DuckDB's bindings (nanobind) report their objects still alive at exit as leaks, dozens of lines on stderr,
# which would bury a failed job's last line: a process that imported duckdb exits as before.


def _freeze_heap() -> None:
    import sys

    if "duckdb" not in sys.modules:
        _gc.freeze()


_atexit.register(_freeze_heap)
