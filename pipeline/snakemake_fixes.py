"""A fix to Snakemake's scheduler loop, applied by the Snakefile to the Snakemake process that runs it.

With its job rate limiter on (`--max-jobs-per-timespan`, default 100/1s, no way to turn it off), Snakemake's
scheduler starts a timer after every pass of its loop while jobs wait for cores, to pass again when the
timespan is over. A job that finishes also starts a pass, and that pass starts a timer of its own: the
timers never merge, so every job that finishes while others wait adds one more pass per second for the rest
of the build. Each pass re-reads the sizes of every waiting job's inputs and runs an event loop, even when no
core is free. On `.test` (81 jobs, 2 cores) that was 14,937 passes in 13 minutes and 15 of the scheduler
process's 23 CPU-s (snakemake 9.27.1; docs/scaling.md, "Snakemake's own cost per job").

`coalesce_reevaluations` keeps one timer pending at most: a pass that finds one pending starts none. That
is all the limiter needs (one pass per timespan re-checks every job); passes for finished jobs are
unchanged. The timer is a daemon thread, so Snakemake's exit does not wait up to a timespan for it.
Where the method is not there (another Snakemake), nothing is changed.

Measured on Snakemake 9.27.1, the newest release when written; no upstream report was found, the text of one
is docs/upstream/snakemake-reevaluation-timers.md. It can go when Snakemake keeps at most one re-evaluation
pending; tests/test_patches.py fails when the version or the replaced method's source changes.
"""

from __future__ import annotations

import threading


def coalesce_reevaluations(scheduler_class) -> bool:
    """Patch `scheduler_class._schedule_reevalutation` (Snakemake's spelling) to keep one timer pending at
    most; True when patched (once: a second call changes nothing)."""
    original = getattr(scheduler_class, "_schedule_reevalutation", None)
    if original is None or getattr(original, "_coalesced", False):
        return False

    def _schedule_reevalutation(self, delay):
        lock = self.__dict__.setdefault("_reevaluation_lock", threading.Lock())
        with lock:
            if self.__dict__.get("_reevaluation_pending"):
                return
            self._reevaluation_pending = True

        def fire():
            with lock:
                self._reevaluation_pending = False
            self._open_jobs.release()

        timer = threading.Timer(delay, fire)
        timer.daemon = True
        timer.start()

    _schedule_reevalutation._coalesced = True
    _schedule_reevalutation.__doc__ = original.__doc__
    _schedule_reevalutation.__wrapped__ = original  # what it replaced (tests/test_patches.py pins its source)
    scheduler_class._schedule_reevalutation = _schedule_reevalutation
    return True
