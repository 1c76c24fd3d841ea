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

import itertools
import re
import sys
from pathlib import Path, PurePosixPath
from typing import Iterator

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
    """A dotted module name that names a test / conftest / `__main__` module (`pkg.tests.test_x`), an sdist-root
    bootstrap (`ez_setup`), or one of the stdlib's demo and test modules (`turtledemo`, `__hello__`)."""
    parts = module.split(".")
    return (any(_TEST_MODULE.match(p) for p in parts) or any(p in SCRIPT_DIRS for p in parts[:-1])
            or parts[-1] == "__main__"
            or (len(parts) == 1 and (parts[0] in SCRIPT_MODULES or parts[0] in BOOTSTRAP_MODULES))
            or any(module == m or module.startswith(m + ".") for m in STDLIB_NOT_LIBRARY))


# A test suite's text: a test framework imported, a TestCase, or argument-less `test_*` functions at module level
_SUITE = re.compile(r"^[ \t]*(?:import|from)[ \t]+(?:unittest|pytest|nose|doctest|hypothesis)\b"
                    r"|^class[ \t]+\w+\(.*TestCase\)|^def[ \t]+test\w*\([ \t]*\)", re.M)


def api_named_test(module: str, location: str | None) -> bool:
    """A package's module named `test` / `tests` whose text is no test suite (jinja2's `tests.py` of Jinja tests,
    werkzeug's `test.py` test client): library code. Only the module's own name makes it look like a test, and its
    text (read, never run) imports no test framework and defines no TestCase or argument-less `test_*` function."""
    parts = module.split(".")
    if len(parts) < 2 or parts[-1] not in ("test", "tests") or script_module(".".join(parts[:-1] + ["api"])):
        return False
    if not location:
        return False
    try:
        text = Path(location).read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return False
    return _SUITE.search(text) is None


def library_code(path: str, module: str, location: str | None = None) -> bool:
    """Importable library code: the file is not under a test / docs / examples folder, is not a lone
    module (no package) under a tools / scripts folder, and its module is no test, conftest, setup or
    `__main__` module (a package's `tests.py` that is no test suite is: `api_named_test`, given the file's
    `location`). `module` is the file's dotted name from the package layout."""
    if not module or (script_module(module) and not api_named_test(module, location)):
        return False
    p = PurePosixPath(path)
    folders = p.parts[:-1]
    lone = "." not in module and p.name != "__init__.py"
    return not any(f in SCRIPT_DIRS for f in folders) and not (lone and any(f in OUTER_SCRIPT_DIRS for f in folders))


# -- what a source declares its library to be (its own metadata, read as text/TOML/JSON, never run) ------------
# The standard library's demo and test modules: shipped with the interpreter, not APIs of it.
STDLIB_NOT_LIBRARY = frozenset({"turtledemo", "__hello__", "__phello__", "test", "idlelib.idle_test",
                                "lib2to3.tests", "tkinter.test", "unittest.test", "ctypes.test", "distutils.tests",
                                "sqlite3.test", "__phello__.spam", "__hello_alias__",
                                "__hello_only__", "__phello_alias__"})
# Root modules of an sdist that bootstrap or build it (setuptools' ez_setup.py, versioneer): never its library.
BOOTSTRAP_MODULES = frozenset({"ez_setup", "distribute_setup", "versioneer", "bootstrap", "setup", "conftest",
                               "noxfile", "fabfile", "runtests", "run_tests", "hatch_build"})
_SKIP_TOPS = SCRIPT_DIRS | {"src", "lib", ""}
# the package path of a Java file starts after these folders (a JDK module's `java.base/`, Maven's src/main/java/)
_JAVA_ROOTS = ("src/main/java/", "src/java/", "src/")


def _tops_from_lines(lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        name = line.strip().replace("/", ".").split(".")[0]
        if name and name.isidentifier() and name not in _SKIP_TOPS and not _TEST_MODULE.match(name):
            out.append(name)
    return out


def _record_tops(text: str) -> list[str]:
    """Top-level packages and modules of a wheel's RECORD (`pkg/mod.py,sha256=...,123`)."""
    tops = []
    for line in text.splitlines():
        path = line.split(",", 1)[0].strip()
        first = path.split("/", 1)[0]
        if not path.endswith(".py") or first.endswith((".dist-info", ".data")) or first.startswith(".."):
            continue
        tops.append(first[:-3] if "/" not in path else first)
    return _tops_from_lines(tops)


def _pyproject_tops(data: dict) -> list[str]:
    """Packages and modules named by pyproject.toml's build-backend tables (setuptools, hatch, poetry, flit)."""
    tool = data.get("tool") or {}
    out: list[str] = []
    st = tool.get("setuptools") or {}
    if isinstance(st.get("packages"), list):
        out += [p for p in st["packages"] if isinstance(p, str)]
    out += [m for m in st.get("py-modules") or [] if isinstance(m, str)]
    hatch = (((tool.get("hatch") or {}).get("build") or {}).get("targets") or {}).get("wheel") or {}
    out += [PurePosixPath(p).name.removesuffix(".py") for p in hatch.get("packages") or [] if isinstance(p, str)]
    out += [PurePosixPath(p).name.removesuffix(".py") for p in hatch.get("only-include") or [] if isinstance(p, str)]
    for entry in hatch.get("include") or []:  # `/soupsieve`, `src/pkg/**`: the first folder or module named
        parts = [q for q in PurePosixPath(entry.lstrip("/")).parts if q not in ("src", "")] if isinstance(entry, str) else []
        if parts and not any(c in parts[0] for c in "*?[!"):
            out.append(parts[0].removesuffix(".py"))
    backend = (data.get("build-system") or {}).get("build-backend", "")
    if backend == "hatchling.build" and not any(hatch.get(k) for k in ("packages", "only-include", "include")):
        name = (data.get("project") or {}).get("name")  # hatchling's default: the package named after the project
        if isinstance(name, str):
            out.append(re.sub(r"[-.]+", "_", name).lower())
    for p in (tool.get("poetry") or {}).get("packages") or []:
        if isinstance(p, dict) and isinstance(p.get("include"), str) and "*" not in p["include"]:
            out.append(PurePosixPath(p["include"]).name.removesuffix(".py"))
    flit = tool.get("flit") or {}
    module = (flit.get("module") or {}).get("name") or (flit.get("metadata") or {}).get("module")
    if isinstance(module, str):
        out.append(module)
    elif flit or (data.get("build-system") or {}).get("build-backend", "").startswith("flit"):
        name = (data.get("project") or {}).get("name")  # flit: the module is named after the project
        if isinstance(name, str):
            out.append(re.sub(r"[-.]+", "_", name).lower())
    return _tops_from_lines(out)


def _package_json_paths(data: dict) -> list[str]:
    """Files and folders a package.json publishes as its code: `main`, every path in `exports`, `files`."""
    out: list[str] = []

    def walk(node):
        if isinstance(node, str):
            out.append(node)
        elif isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    if isinstance(data.get("main"), str):
        out.append(data["main"])
    walk(data.get("exports"))
    walk(data.get("files"))
    return sorted({p.removeprefix("./").rstrip("/") for p in out if p and not p.startswith("..")} - {"", "."})


def declared_library(root: str | Path | None) -> dict:
    """What a source's own metadata declares as its library (read as text, never run): {"python": top-level
    packages and modules, "javascript": published paths, "from": the file that said so}, the first found in order
    of trust: `*.egg-info/top_level.txt` or `*.dist-info/top_level.txt` (at the root or under src/), a wheel's
    `RECORD`, pyproject.toml's setuptools / hatch / poetry / flit tables, package.json's main / exports / files.
    Empty when none says (the layout then decides)."""
    if root is None:
        return {}
    root = Path(root)
    if not root.is_dir():
        return {}
    out: dict = {}
    try:
        for pattern in ("*.egg-info/top_level.txt", "*.dist-info/top_level.txt", "src/*.egg-info/top_level.txt",
                        "*.dist-info/RECORD"):
            for meta in sorted(root.glob(pattern)):
                text = meta.read_text(encoding="utf-8", errors="replace")
                tops = _record_tops(text) if meta.name == "RECORD" else _tops_from_lines(text.splitlines())
                if tops:
                    return {"python": sorted(set(tops)), "from": meta.relative_to(root).as_posix()}
        pyproject = root / "pyproject.toml"
        if pyproject.is_file():
            import tomllib

            try:
                tops = _pyproject_tops(tomllib.loads(pyproject.read_text(encoding="utf-8", errors="replace")))
            except (tomllib.TOMLDecodeError, ValueError):
                tops = []
            if tops:
                out = {"python": sorted(set(tops)), "from": "pyproject.toml"}
        package_json = root / "package.json"
        if package_json.is_file():
            import json

            try:
                data = json.loads(package_json.read_text(encoding="utf-8", errors="replace"))
            except ValueError:
                data = {}
            paths = _package_json_paths(data) if isinstance(data, dict) else []
            if paths:
                out = {**out, "javascript": paths, "from": ", ".join(filter(None, (out.get("from"), "package.json")))}
    except OSError:
        return out
    return out


def _dotted(path: str) -> str:
    """A Python file's dotted name from its path alone (`src/pkg/a/b.py` -> `pkg.a.b`)."""
    parts = list(PurePosixPath(path).with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    while len(parts) > 1 and parts[0] in ("src", "lib"):
        parts = parts[1:]
    return ".".join(parts)


def _js_declared(path: str, paths: list[str]) -> bool:
    from fnmatch import fnmatchcase

    for p in paths:
        if path == p or path.startswith(p + "/") or fnmatchcase(path, p) or (
                "." not in PurePosixPath(p).name and path in (p + ".js", p + "/index.js")):
            return True
    return False


def java_package_path(path: str, module_roots: set[str] | frozenset[str] = frozenset()) -> tuple[str, str]:
    """(the folders before a Java file's package path, the package path and file): after the nearest folder
    holding a module-info.java (`java.base/`), else after `src/main/java/` (or `src/java/`, `src/`), else the
    whole path is the package path."""
    for root in sorted(module_roots, key=len, reverse=True):
        if root and path.startswith(root + "/"):
            return root + "/", path[len(root) + 1:]
    for marker in _JAVA_ROOTS:
        at = path.find(marker)
        if at == 0 or (at > 0 and path[at - 1] == "/"):
            return path[:at + len(marker)], path[at + len(marker):]
    return "", path


def library_files(rows: list[dict], scripts: list[str], declarations: dict[str, dict] | None = None) -> list[bool]:
    """Per manifest row (source, path, language): library code, or a script / test / example / docs file /
    sdist-root bootstrap. `scripts`: manifest.split_policy.scripts globs; `declarations`: source ->
    `declared_library` of its root. Python: never a test module (`pkg/tests.py`, `test_*.py`), a root bootstrap
    (`ez_setup.py`), the stdlib's demo / test modules, or (when the source declares its top-level names and some
    file is under them) a file outside them. Java: the script globs are matched on the folders before the package
    path and the file name only (`tools/*` never matches `sun/security/tools/`). JavaScript: inside the paths
    package.json publishes, when it names some that exist. Then, whatever the folders are called, a script inside a
    package (`package_scripts`: a `__main__` guard, and nothing of its source imports or names it)."""
    declarations = declarations or {}
    by_source: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        by_source.setdefault(r["source"], []).append(i)
    out = [True] * len(rows)
    for source, mine in by_source.items():
        declared = declarations.get(source) or {}
        module_roots = {str(PurePosixPath(rows[i]["path"]).parent) for i in mine
                        if PurePosixPath(rows[i]["path"]).name == "module-info.java"}
        flags = {i: _library_row(rows[i], scripts, module_roots) for i in mine}
        tops = set(declared.get("python") or ())
        py = [i for i in mine if flags[i] and rows[i]["language"] == "python"]
        if tops and any(_dotted(rows[i]["path"]).split(".")[0] in tops for i in py):
            for i in py:
                flags[i] = _dotted(rows[i]["path"]).split(".")[0] in tops
        paths = declared.get("javascript") or ()
        js = [i for i in mine if flags[i] and rows[i]["language"] == "javascript"]
        if paths and any(_js_declared(rows[i]["path"], paths) for i in js):
            for i in js:
                flags[i] = _js_declared(rows[i]["path"], paths)
        for i, flag in flags.items():
            out[i] = flag
    for source, path in package_scripts(rows, out):
        for i in by_source[source]:
            if rows[i]["path"] == path:
                out[i] = False
    return out


# -- scripts inside a package (webencodings' `mklabels.py`): read as text, never run ------------------------------
# a module-level `if __name__ == "__main__":` (either order of the comparison)
_MAIN_GUARD = re.compile(r"""^if[ \t(]+(?:__name__[ \t]*==[ \t]*(['"])__main__\1|(['"])__main__\2[ \t]*==[ \t]*__name__)""",
                         re.M)
# `from X import a, b` / `from .X import (a,\n b)`: the module part and the names
_FROM_IMPORT = re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)", re.M)
# metadata that may name a module as a console script or plugin (`name = pkg.mod:main`)
_ENTRY_POINT_FILES = ("*.egg-info/entry_points.txt", "src/*.egg-info/entry_points.txt", "*.dist-info/entry_points.txt",
                      "pyproject.toml", "setup.cfg")


def _read(location: str | None) -> str | None:
    if not location:
        return None
    try:
        return Path(location).read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return None


_DOTTED = re.compile(r"[A-Za-z_][\w.]*")
_QUOTED = re.compile(r"""(['"])\.?([A-Za-z_]\w*)\1""")
_ALL = re.compile(r"^__all__[ \t]*(?::[^=\n]*)?[+]?=", re.M)
# the source's documentation, where it names a module of its API (`.. autofunction:: werkzeug.testapp.test_app`)
_DOC_SUFFIXES = (".rst", ".md", ".txt")
_DOC_FOLDERS = ("docs", "doc")
_MAX_DOC_FILES = 2000


def _names_in(text: str) -> set[str]:
    """Every dotted name of `text` and each of its heads (`json.tool.main` gives json, json.tool, json.tool.main):
    what `python -m json.tool`, `import pkg.mod`, `pkg.mod:main` and `.. autofunction:: pkg.mod.f` name."""
    out: set[str] = set()
    for token in set(_DOTTED.findall(text)):
        parts = token.strip(".").split(".")
        out.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return out


def _from_imports(text: str, here: str, is_package: bool) -> set[str]:
    """The modules and names a module's `from` imports reach, absolute: `from . import mod` in `pkg/__init__.py`
    gives pkg and pkg.mod; `from .mod import x` in `pkg/a.py` gives pkg.mod and pkg.mod.x."""
    parts = here.split(".") if is_package else here.split(".")[:-1]
    out: set[str] = set()
    for dots, rest, names in _FROM_IMPORT.findall(text):
        if dots:
            if len(dots) - 1 > len(parts):
                continue
            base = ".".join(parts[: len(parts) - (len(dots) - 1)] + ([rest] if rest else []))
        else:
            base = rest
        out.add(base)
        for name in names.strip("()").replace("\\", " ").split(","):
            name = name.split(" as ")[0].strip()
            if name.isidentifier():
                out.add(f"{base}.{name}")
    return out


def _doc_texts(root: Path) -> Iterator[str]:
    """The text of the documentation at a source's root: its top-level README / *.rst / *.md / *.txt files and those
    under docs/ or doc/ (at most _MAX_DOC_FILES files)."""
    files = [f for f in sorted(root.iterdir()) if f.is_file() and (f.suffix in _DOC_SUFFIXES or f.name.startswith("README"))]
    for folder in _DOC_FOLDERS:
        if (root / folder).is_dir():
            files += [f for f in sorted((root / folder).rglob("*")) if f.suffix in _DOC_SUFFIXES and f.is_file()]
    for f in files[:_MAX_DOC_FILES]:
        text = _read(str(f))
        if text:
            yield text


def package_scripts(rows: list[dict], library: list[bool] | None = None) -> set[tuple[str, str]]:
    """(source, path) of the Python modules inside a package that are scripts, not library code, whatever their folder
    is called (webencodings' `webencodings/mklabels.py`, which regenerates `labels.py` from the web): a module (not
    `__init__.py`) in a package folder (one with `__init__.py`), with a module-level `if __name__ == "__main__":`
    guard, that declares no public API (no `__all__`) and that nothing of its source refers to: no other Python file
    imports it (`from . import mod`, `from .mod import x`, `from pkg import mod`), names its dotted name (`import
    pkg.mod`, `python -m pkg.mod` in a docstring, `"pkg.mod"`) or quotes its name inside its own top-level package
    (`"mod"`, `".mod"`: codec registries, plugin loaders), and neither the source's metadata (entry points,
    pyproject.toml, setup.cfg) nor its documentation (README, docs/) names it. So a module its package imports or
    names, or that declares or documents an API, stays library code whatever guard it has (json.tool, named by
    json's docstring; wsgiref.simple_server, its `__all__`; werkzeug.testapp, its docs; flask.cli; requests.certs).
    Read as text, never run or imported. `rows`: manifest rows (source, path, language, location); every row may
    refer, only those `library` flags (all when None) are judged."""
    by_source: dict[str, list[dict]] = {}
    judged: set[tuple[str, str]] = set()
    for i, r in enumerate(rows):
        if r.get("language") == "python":
            by_source.setdefault(r["source"], []).append(r)
            if library is None or library[i]:
                judged.add((r["source"], r["path"]))
    roots = source_roots(rows)
    out: set[tuple[str, str]] = set()
    for source, mine in sorted(by_source.items()):
        folders = {str(PurePosixPath(r["path"]).parent) for r in mine if PurePosixPath(r["path"]).name == "__init__.py"}
        candidates = {}
        for r in mine:
            path = PurePosixPath(r["path"])
            if (path.name in ("__init__.py", "__main__.py") or str(path.parent) not in folders
                    or (source, r["path"]) not in judged):
                continue
            text = _read(r.get("location"))
            if text and "__main__" in text and _MAIN_GUARD.search(text) and not _ALL.search(text):
                candidates[r["path"]] = _dotted(r["path"])
        if not candidates:
            continue
        referred: set[str] = set()
        for r in mine:
            if len(referred) == len(candidates):
                break
            text = _read(r.get("location"))
            if not text:
                continue
            here = _dotted(r["path"])
            left = {p: d for p, d in candidates.items() if p != r["path"] and p not in referred}
            # what could refer to them at all (plain substring tests first: the stdlib's 700 files are read whole)
            named = {p for p, d in left.items() if d in text}
            near = {p for p, d in left.items() if d.split(".")[0] in text or d.split(".")[0] == here.split(".")[0]}
            if not named and not near:
                continue
            names = _names_in(text) if named else set()
            imported = _from_imports(text, here, PurePosixPath(r["path"]).name == "__init__.py")
            own = {p for p in near if here.split(".")[0] == left[p].split(".")[0]}
            quoted = {m[1] for m in _QUOTED.findall(text)} if own else set()
            for p, dotted in left.items():
                if dotted in names or dotted in imported or (p in own and dotted.rsplit(".", 1)[-1] in quoted):
                    referred.add(p)
        root = roots.get(source)
        if root is not None and len(referred) < len(candidates):
            metadata = [_read(str(f)) or "" for pattern in _ENTRY_POINT_FILES for f in sorted(root.glob(pattern))]
            for text in itertools.chain(metadata, _doc_texts(root)):
                names = _names_in(text)
                referred |= {p for p, dotted in candidates.items() if dotted in names}
                if len(referred) == len(candidates):
                    break
        out |= {(source, p) for p in candidates if p not in referred}
    return out


def glob_match(path: str, patterns: list[str] | tuple[str, ...]) -> str | None:
    """The first glob matching `path` or one of its tails that starts at a folder, else None (as
    `manifest.exclude` and `manifest.split_policy.scripts` match)."""
    from fnmatch import fnmatchcase

    parts = path.split("/")
    tails = ["/".join(parts[i:]) for i in range(len(parts))]
    for pattern in patterns:
        if any(fnmatchcase(tail, pattern) for tail in tails):
            return pattern
    return None


def _library_row(row: dict, scripts: list[str], module_roots: set[str]) -> bool:
    path, language = row["path"], row["language"]
    if language == "java":
        if "src/test/" in f"/{path}":
            return False
        head, package = java_package_path(path, module_roots)
        return glob_match(head + PurePosixPath(package).name, scripts) is None
    if glob_match(path, scripts) is not None:
        return False
    if language != "python":
        return True
    dotted = _dotted(path)
    return bool(dotted) and (not script_module(dotted) or api_named_test(dotted, row.get("location")))


def source_roots(rows: list[dict]) -> dict[str, Path]:
    """Each source's folder on disk (a file's location less its path), where its metadata is."""
    out: dict[str, Path] = {}
    for r in rows:
        location, path = r.get("location") or "", r["path"]
        if r["source"] not in out and location.endswith("/" + path):
            out[r["source"]] = Path(location[: len(location) - len(path)] or ".")
    return out


def declarations(rows: list[dict]) -> dict[str, dict]:
    """source -> `declared_library` of its folder, for the sources of these manifest rows."""
    return {source: declared_library(root) for source, root in sorted(source_roots(rows).items())}
