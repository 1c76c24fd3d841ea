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


# A full disk (or quota) in any job is one line naming the stage and the path, not a traceback: every
# `python -m pipeline.<stage>` imports this package first, so its uncaught exceptions come here. Everything
# else goes to the previous hook unchanged.
_DISK_FULL = (28, 122)  # errno.ENOSPC, errno.EDQUOT (Linux)


def disk_full_line(exc: BaseException, stage: str | None = None, argv: list | None = None) -> str | None:
    """The one line for a full disk (ENOSPC / EDQUOT anywhere in the exception's chain), else None."""
    import sys

    seen = exc
    while seen is not None and not (isinstance(seen, OSError) and seen.errno in _DISK_FULL):
        seen = seen.__cause__ or seen.__context__
    if seen is None:
        return None
    if stage is None:
        spec = getattr(sys.modules.get("__main__"), "__spec__", None)
        stage = spec.name if spec is not None else (sys.argv[0] or "python")
    argv = sys.argv[1:] if argv is None else argv
    path = seen.filename or seen.filename2
    if not path:  # a write() names no file: the job's outputs, as its command line gives them
        outs = [v for k, v in zip(argv, argv[1:]) if k.startswith(("--out", "--dest", "--record", "--rejects"))]
        path = ", ".join(outs) or "(the path is not known; see the job's outputs)"
    return (f"error: {stage}: no space left on the device (errno {seen.errno}: {seen.strerror or 'disk full'}) "
            f"writing {path}; free space there (or point corpus.cache_dir / the working directory at a larger "
            "disk) and rerun: finished outputs are kept")


def _excepthook(kind, exc, tb, _previous=None) -> None:
    import sys

    line = disk_full_line(exc) if isinstance(exc, BaseException) else None
    if line is None:
        return (_previous or sys.__excepthook__)(kind, exc, tb)
    print(line, file=sys.stderr)


def _install_excepthook() -> None:
    import functools
    import sys

    if getattr(sys.excepthook, "func", None) is not _excepthook:
        sys.excepthook = functools.partial(_excepthook, _previous=sys.excepthook)


_install_excepthook()
