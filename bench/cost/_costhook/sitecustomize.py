"""Per-job cost records for `bench/cost/run_cost.py` (issue 28 item 5), as a `sitecustomize` module: the bench puts
this folder on PYTHONPATH (the rules keep it after the Snakefile's folder), so every Python process of the
build imports it at start-up, and none of the pipeline's modules does (no DVC stage depends on it). When the
environment variable PIPELINE_COST_LOG names a file, every process appends one JSON line at exit:
the module, its arguments, wall seconds, CPU seconds (user + system, its own and its waited-for children's:
the process pools of the corpus stages) and peak RSS. Off (and free) unless the variable is set; processes
started by multiprocessing are left to their parent, whose children's CPU already counts them.
Standard library only: it is imported by every process of a costed build. The bench keeps the
`pipeline.*` records."""

from __future__ import annotations

import atexit
import json
import os
import resource
import sys
import time

_START = time.monotonic()


def _record(path: str) -> None:
    import multiprocessing

    if multiprocessing.parent_process() is not None:
        return
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    argv = list(sys.argv)
    module = (sys.modules.get("__main__").__spec__.name if getattr(sys.modules.get("__main__"), "__spec__", None)
              else os.path.basename(argv[0]) if argv else "?")
    line = json.dumps({
        "module": module, "args": argv[1:], "wall_s": round(time.monotonic() - _START, 3),
        "cpu_s": round(me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime, 3),
        "children_cpu_s": round(kids.ru_utime + kids.ru_stime, 3),
        "peak_rss_mb": round(max(me.ru_maxrss, kids.ru_maxrss) / 1024, 1),
    }, sort_keys=True) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())  # one write of one short line: O_APPEND keeps parallel jobs' lines whole
    finally:
        os.close(fd)


def install() -> None:
    path = os.environ.get("PIPELINE_COST_LOG")
    if path:
        atexit.register(_record, os.path.abspath(path))


install()
