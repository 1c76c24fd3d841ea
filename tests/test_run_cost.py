"""Snakemake's own cost per job (issue 26): the jobs' exit skips the final collections over their heap
(pipeline/__init__.py), and bench/cost/run_cost.py splits what no job record covers into Snakemake's own
process and the rest."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bench.cost.run_cost import SelfCPU, table
from tests.conftest import REPO


def _python(code: str) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter that imports this checkout's `pipeline`, no cost log set."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PIPELINE_COST_LOG", None)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)


def test_importing_the_pipeline_freezes_the_heap_at_exit_after_later_handlers():
    # a handler registered before `import pipeline` runs after pipeline's (exit handlers run last-in first-out):
    # it sees the heap frozen; one registered after runs before, and sees it not yet frozen
    code = ("import atexit, gc\n"
            "atexit.register(lambda: print('after', gc.get_freeze_count() > 0))\n"
            "import pipeline\n"
            "atexit.register(lambda: print('before', gc.get_freeze_count() > 0))\n")
    assert _python(code).stdout.split() == ["before", "False", "after", "True"]


def test_a_job_records_its_cost_after_the_freeze(tmp_path):
    log = tmp_path / "cost.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "bench" / "cost" / "_costhook"), str(REPO)]),
           "PIPELINE_COST_LOG": str(log)}
    subprocess.run([sys.executable, "-m", "pipeline.preflight", "--python", "0"], env=env, capture_output=True)
    assert '"module": "pipeline.preflight"' in log.read_text()


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads /proc")
def test_self_cpu_counts_the_process_and_not_its_children():
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < {}: pass\n"
    code = (burn.format(0.3) + "import subprocess, sys\n"
            f"subprocess.run([sys.executable, '-c', {burn.format(0.6)!r}])\n")
    proc = subprocess.Popen([sys.executable, "-c", code])
    own = SelfCPU(proc.pid, every=0.05)
    proc.wait()
    assert 0.25 <= own.result() <= 0.55  # its own 0.3 s and its start, not the child's 0.6 s


def test_the_table_splits_what_no_record_covers():
    rows = [{"stage": "inference (predict)", "jobs": 2, "cpu_s": 60.0, "wall_s": 70.0, "peak_rss_mb": 600.0}]
    text = table(rows, total_cpu=100.0, total_wall=80.0, snakemake_cpu=25.0)
    assert "| Snakemake itself (planning, bookkeeping, local rules without a pipeline module) | | 40.0 | 0.400 |" in text
    assert "| - of which Snakemake's own process | | 25.0 | 0.250 |" in text
    assert "| 15.0 | 0.150 |" in text  # shells, teardown, run: jobs
    assert "of which" not in table(rows, total_cpu=100.0, total_wall=80.0)  # no /proc: the old table


def test_the_scheduler_keeps_one_reevaluation_timer_pending():
    import threading
    import time

    from snakemake.scheduling.job_scheduler import JobScheduler

    from pipeline.snakemake_fixes import coalesce_reevaluations

    class Scheduler:  # the attributes the method uses, as Snakemake's JobScheduler has them
        def __init__(self):
            self._open_jobs = threading.Semaphore(0)

        def _schedule_reevalutation(self, delay):
            threading.Timer(delay, lambda: self._open_jobs.release()).start()

    assert coalesce_reevaluations(Scheduler) and not coalesce_reevaluations(Scheduler)  # once
    def timers():
        return {t for t in threading.enumerate() if isinstance(t, threading.Timer) and t.is_alive()}

    s, before = Scheduler(), timers()
    for _ in range(20):  # twenty passes of the loop while jobs wait: one timer, not twenty
        s._schedule_reevalutation(0.2)
    assert len(timers() - before) == 1
    time.sleep(0.5)
    assert s._open_jobs.acquire(blocking=False) and not s._open_jobs.acquire(blocking=False)  # one wake-up
    s._schedule_reevalutation(0.05)  # the next pass starts a timer again
    assert s._open_jobs.acquire(timeout=2)
    # the pinned Snakemake has the method this fixes: an upgrade that renames it fails here, not silently
    assert callable(getattr(JobScheduler, "_schedule_reevalutation", None))


def test_the_snakefile_applies_the_scheduler_fix():
    assert "coalesce_reevaluations(_JobScheduler)" in (REPO / "rules" / "common.smk").read_text()


def test_a_process_that_imported_duckdb_exits_as_before_without_leak_reports():
    code = ("import atexit, gc\n"
            "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0))\n"
            "import pipeline, duckdb\n"
            "duckdb.connect().sql('select 1').fetchall()\n")
    done = _python(code)
    assert done.stdout.split() == ["frozen", "False"] and "leaked" not in done.stderr
