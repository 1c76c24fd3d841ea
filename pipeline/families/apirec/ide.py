"""The IDE baseline (the paper measured PyCharm by hand on 500 points): jedi's static completion at
the recommendation point, automated over every point.

Jedi sees the file alone, as text, cut at the point, with what a developer would have typed by then:
the callee's qualifier (`os.path.` for `os.path.join`) and the first `typed` characters of its name
(`os.path.j`; `typed` = `apirec.ide_typed_chars`, default 1: the paper says only that its manual
evaluation imitated developers, not how many characters they typed; PyCharm's completion pops up
after the first one). Completions are mapped to their full names in jedi's own order (its ranking),
classes and functions only; the file's own definitions, which jedi names `__main__.x`, get the
file's module name (`pkg.mod.x`), as the extraction names them. Jedi parses and infers; it never
imports or runs the corpus's code (the project is an empty folder, so no sys.path entry of the
corpus is added, and unsafe extension loading stays off; tests/test_apirec.py checks a file that
writes a marker when run leaves none). Each file gets one path under that empty folder (never
written), so jedi's parser re-parses only the changed tail between two cuts of the same file.
Jedi infers in this process (`InterpreterEnvironment`, the pipeline's own interpreter), not through the
helper subprocess it starts by default: a completion never depends on that subprocess's health under
load. A point where jedi raises gets no completions and is counted (`ide_failures` in the stats).
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
from pathlib import Path

log = logging.getLogger("pipeline.families.apirec.ide")

KINDS = ("function", "class")
MAIN = "__main__."


def typed_prefix(written: str, typed: int) -> str:
    """What is typed at the point: the callee's qualifier and the first `typed` characters of its name."""
    qualifier, _, name = written.rpartition(".")
    return (qualifier + "." if qualifier else "") + name[: max(typed, 0)]


def complete(text_before: str, written: str, project, typed: int = 0, key: str | None = None,
             module: str = "", failures: list | None = None) -> list[str]:
    """Ranked full names jedi offers at the end of `text_before` + the typed prefix of the callee.
    `key` names the file (one path per file under the project's empty folder); `module` replaces jedi's
    `__main__` for the file's own definitions; a jedi error appends its message to `failures`."""
    import jedi

    code = text_before + typed_prefix(written, typed)
    lines = code.split("\n")
    path = Path(project.path) / f"{key}.py" if key else None
    out, seen = [], set()
    try:
        script = jedi.Script(code=code, path=path, project=project, environment=_environment())
        for c in script.complete(len(lines), len(lines[-1])):
            name = c.full_name  # inferred lazily: inside the try too
            if c.type not in KINDS or not name:
                continue
            if module and name.startswith(MAIN):
                name = module + "." + name[len(MAIN):]
            if name not in seen:
                seen.add(name)
                out.append(name)
    except Exception as exc:  # jedi's inference can fail on odd code: no completions, counted
        log.debug("jedi failed: %s", exc)
        if failures is not None:
            failures.append(f"{type(exc).__name__}: {exc}")
        return []
    return out


_ENV = None


def _environment():
    global _ENV
    if _ENV is None:
        import jedi

        _ENV = jedi.InterpreterEnvironment()
    return _ENV


@contextlib.contextmanager
def project():
    """A jedi project rooted in an empty temporary folder (nothing of the corpus on its path), removed when
    the block ends (`with project() as p:`), whether it ends normally or not.

    Inside the block parso evicts no parse tree by the clock. Its default drops trees unused for 10 minutes once
    600 are cached, while jedi may still look one up in the same completion (KeyError in get_parso_cache_node,
    found in a 4,920-file build after 10 minutes of jedi): which points fail would then depend on the machine's
    speed. A corpus file's tree is dropped instead when its points are done (`forget`), and the block's end drops
    the rest of the project's."""
    import jedi
    import parso.cache

    survival = parso.cache._CACHED_FILE_MINIMUM_SURVIVAL
    parso.cache._CACHED_FILE_MINIMUM_SURVIVAL = float("inf")
    try:
        with tempfile.TemporaryDirectory(prefix="apirec-jedi-") as folder:
            made = jedi.Project(folder, load_unsafe_extensions=False, smart_sys_path=False)
            try:
                yield made
            finally:
                for trees in parso.cache.parser_cache.values():
                    for path in [p for p in trees if p is not None and Path(p).parent == Path(folder)]:
                        del trees[path]
    finally:
        parso.cache._CACHED_FILE_MINIMUM_SURVIVAL = survival


def forget(project, key: str) -> None:
    """Drop the parse tree of the file `key` (its points are done: no later completion reads it)."""
    import parso.cache

    path = Path(project.path) / f"{key}.py"
    for trees in parso.cache.parser_cache.values():
        trees.pop(path, None)
