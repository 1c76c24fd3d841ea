"""What an API *is* (its distribution, its category, whether it is library code), decided from the
corpus's layout, never from how its files are grouped into repositories:

- its **distribution**: the sdist / package / project a file ships in. Every source is one
  distribution (a PyPI sdist, an npm package, a git checkout, a local folder), whatever its
  `repository:` setting; a source that holds many projects (`jsonl` dumps) is one distribution per
  repository the dump names; the interpreter's standard library (`builtin: stdlib`) is the
  distribution `stdlib` whatever the source is called.
- its **category**, relative to the calling file: `stdlib` when the API's module belongs to the
  standard library (the stdlib distribution, or a top-level name in `sys.stdlib_module_names` that
  the caller's own distribution does not define), `user_defined` when it belongs to the caller's own
  distribution, `third_party` otherwise; `unknown` when unresolved.
- whether a module is **library code**: importable under the package's import names, not a test,
  example, docs, tools or scripts file.
"""

from __future__ import annotations

import re
import sys
from pathlib import PurePosixPath

STDLIB_TOPS = frozenset(sys.stdlib_module_names) | {"builtins"}
STDLIB_DISTRIBUTION = "stdlib"

# Folders whose files are never library code, wherever they are (`tests/`, `pkg/tests/`, `docs/`).
SCRIPT_DIRS = frozenset({"tests", "test", "testsuite", "docs", "doc", "examples", "example", "demo", "demos",
                         "samples", "sample", "benchmarks", "benchmark"})
# Folders that hold scripts: a lone module in one (`tools/gen.py`, `scripts/release.py`) is no package's
# module; a package inside one (`tools/mypkg/`) and one inside a package (`pkg/tools/`) are packages.
OUTER_SCRIPT_DIRS = SCRIPT_DIRS | {"tools", "scripts", "script", "bin", "utils", "dev", "ci", "bench", "util",
                                   "extras", "contrib", "misc", "build_tools", "tasks"}
# Top-level module files that are project machinery, not the package (`setup.py`, docs' `conf.py`).
SCRIPT_MODULES = frozenset({"setup", "conftest", "noxfile", "fabfile", "conf", "manage", "tasks", "dodo",
                            "runtests", "run_tests", "__main__"})
_TEST_MODULE = re.compile(r"^(test_.*|.*_tests?|tests?|conftest)$")


def distribution(source: str, repository: str, per_repository: bool, stdlib: bool) -> str:
    """The distribution a manifest row ships in (see the module docstring)."""
    if stdlib:
        return STDLIB_DISTRIBUTION
    return f"{source}/{repository}" if per_repository else source


def category(fqn: str | None, via: str | None, own: str, own_tops: set[str] | frozenset[str]) -> str:
    """stdlib / user_defined / third_party / unknown of a resolved name, seen from a file of the
    distribution `own` whose top-level modules are `own_tops`."""
    if fqn is None:
        return "unknown"
    top = fqn.split(".", 1)[0]
    if via == "def" or top in own_tops:  # defined in the caller's own distribution
        return "stdlib" if own == STDLIB_DISTRIBUTION else "user_defined"
    if top in STDLIB_TOPS:
        return "stdlib"
    return "third_party"


def script_module(module: str) -> bool:
    """A dotted module name that names a test / conftest / `__main__` module (`pkg.tests.test_x`)."""
    parts = module.split(".")
    return (any(_TEST_MODULE.match(p) for p in parts) or any(p in SCRIPT_DIRS for p in parts[:-1])
            or parts[-1] == "__main__"
            or (len(parts) == 1 and parts[0] in SCRIPT_MODULES))


def library_code(path: str, module: str) -> bool:
    """Importable library code: the file is not under a test / docs / examples folder, is not a lone
    module (no package) under a tools / scripts folder, and its module is no test, conftest, setup or
    `__main__` module. `module` is the file's dotted name from the package layout."""
    if not module or script_module(module):
        return False
    p = PurePosixPath(path)
    folders = p.parts[:-1]
    lone = "." not in module and p.name != "__init__.py"
    return not any(f in SCRIPT_DIRS for f in folders) and not (lone and any(f in OUTER_SCRIPT_DIRS for f in folders))
