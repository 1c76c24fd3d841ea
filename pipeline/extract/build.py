"""Stage 3: static API extraction over every Python file of the manifest.

Each distinct content hash is analysed once, in a process pool (one Snakemake job: the
deduplication and the cache are corpus-wide, and a pool balances files of very different
sizes better than fixed hash-prefix shards). Analyses are cached on disk by content hash
under a key that changes with the extractor's code, so a rerun re-parses only new files.
The path-dependent part (module name, relative imports, categories, split) is applied per
manifest row afterwards, which is cheap.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import json
import keyword
import logging
import pickle
import re
import signal
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from functools import partial
from importlib.metadata import version as package_version
from pathlib import Path, PurePosixPath
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from pipeline import schemas
from pipeline.core import logs, shards as sharding
from pipeline.core import budget
from pipeline.core.pool import hard_limit, imap_files
from pipeline.extract import analyse, library, platforms, requirements
from pipeline.extract.visitor import private
from pipeline.extract.analyse import Analysed, Failed, FileImport, FileResult, Outcome, Rejected
from pipeline.io import atomic_path, parquet_stream, read_parquet, write_json

log = logging.getLogger("pipeline.extract.build")

CHUNK = 16
STDLIB = library.STDLIB_TOPS
_CODE = ("visitor.py", "positions.py", "analyse.py", "platforms.py", "stdlib.py")


def code_of(source: str) -> str:
    """What a module does, without what it says: its syntax tree with every docstring dropped and no positions
    (`ast.dump`), so a comment, a docstring or a line break edited leaves the extract cache key as it was, and
    any change to the code (a name, a constant, an operator) changes it."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, include_attributes=False)


def extractor_version() -> str:
    """Changes whenever the analysis code (not its comments: `code_of`), libcst or the interpreter changes: the
    cache key."""
    h = hashlib.sha256(f"{package_version('libcst')}\0{sys.version}".encode())
    for name in _CODE:
        h.update(code_of((Path(__file__).parent / name).read_text(encoding="utf-8")).encode())
    return h.hexdigest()[:16]


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


@dataclass(frozen=True, slots=True)
class Task:
    """One distinct content to analyse: its hash and one file that has it."""

    sha256: str
    location: str
    encoding: str
    max_tokens: int = 0  # extract.max_file_tokens (pipeline.core.budget); 0: no budget


def hard_limit_s(timeout_s: float) -> float:
    """CPU seconds after which a worker analysing one file is ended (native code included)."""
    return timeout_s * 1.25 + 1


def analyse_file(location: str, encoding: str, timeout_s: float, max_tokens: int = 0) -> Outcome:
    """Analyse one file under a time limit: SIGALRM stops Python code at `timeout_s` (wall clock);
    in a pool worker, `hard_limit` ends the process inside native code (libcst's parser) at
    `hard_limit_s(timeout_s)` CPU seconds, and the pool records it as a timeout."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        try:
            text = Path(location).read_bytes().decode(encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            return Failed("undecodable", f"{encoding}: {exc}"[:300], True)
        # before libcst, whose memory grows per token
        too_many = budget.over_budget(text, "python", max_tokens, "extract.max_file_tokens")
        if too_many:
            return Failed(budget.REASON, too_many, True)
        return Analysed(analyse.analyse_source(text))
    except Rejected as exc:
        return Failed(exc.reason, exc.detail, True)
    except _Timeout:
        return Failed("timeout", f"> {timeout_s} s", False)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _analyse_task(timeout_s: float, task: Task) -> Outcome:
    with hard_limit(hard_limit_s(timeout_s)):
        return analyse_file(task.location, task.encoding, timeout_s, task.max_tokens)


def _timed_out(timeout_s: float, task: Task) -> Outcome:
    return Failed("timeout", f"> {timeout_s} s (ended inside native code after {hard_limit_s(timeout_s):g} CPU s)", False)


def _crashed(task: Task) -> Outcome:
    return Failed("worker_crash", "the analysing process died", False)


class Cache:
    """One pickle per content hash, under the extractor version and the token budget (an outcome depends on
    both: a budget changed never meets a cached outcome of another); written atomically."""

    def __init__(self, root: Path | None, max_tokens: int = 0):
        self.root = root / extractor_version() / f"tokens-{max_tokens}" if root else None

    def _path(self, sha: str) -> Path:
        return self.root / sha[:2] / f"{sha}.pkl"

    def has(self, sha: str) -> bool:
        return self.root is not None and self._path(sha).exists()

    def get(self, sha: str) -> Outcome | None:
        if self.root is None:
            return None
        try:
            return pickle.loads(self._path(sha).read_bytes())
        except (FileNotFoundError, EOFError, pickle.UnpicklingError):
            return None

    def put(self, sha: str, outcome: Outcome) -> None:
        if self.root is None or (isinstance(outcome, Failed) and not outcome.cacheable):
            return
        with atomic_path(self._path(sha)) as tmp:
            tmp.write_bytes(pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL))


def iter_outcomes(tasks: list[Task], workers: int, timeout_s: float, cache: Cache,
                  hits: list[int] | None = None) -> Iterator[tuple[Task, Outcome]]:
    """(task, outcome) for every task, in the tasks' order, as the pool delivers them: memory holds
    the pool's bounded window, never every outcome. Cache hits are read when their turn comes;
    `hits`, if given, gets the number of cache hits appended at the end."""
    cached = [cache.has(t.sha256) for t in tasks]
    todo = [t for t, c in zip(tasks, cached) if not c]
    size = max(1, min(CHUNK, len(todo) // (4 * workers)))  # small corpora still spread over the pool
    done = imap_files(partial(_analyse_task, timeout_s), todo, workers, chunksize=size, desc="extract",
                      on_crash=_crashed, on_timeout=partial(_timed_out, timeout_s))
    n_hits = 0
    for task, is_cached in zip(tasks, cached):
        outcome = cache.get(task.sha256) if is_cached else None
        if outcome is not None:
            n_hits += 1
        else:
            # a cache entry that vanished or broke since `has` is analysed here, in this process
            outcome = next(done) if not is_cached else _analyse_task(timeout_s, task)
            cache.put(task.sha256, outcome)
        yield task, outcome
    next(done, None)  # the pool's generator ends (and shuts its workers down) now, not at collection
    if hits is not None:
        hits.append(n_hits)


def analyse_all(tasks: list[Task], workers: int, timeout_s: float, cache: Cache) -> tuple[dict[str, Outcome], int]:
    """Outcome per content hash. Returns (outcomes, cache hits). A worker that dies (a native
    crash) costs only its own file: that one is rejected as `worker_crash`, the rest goes on."""
    hits: list[int] = []
    outcomes = {task.sha256: outcome for task, outcome in iter_outcomes(tasks, workers, timeout_s, cache, hits)}
    return outcomes, hits[0]


# -- per manifest row -------------------------------------------------------------------------
def package_dirs(paths: list[str]) -> set[str]:
    """Package folders of one repository: those with an __init__.py, and folders of Python files
    inside a package (implicit namespace subpackages such as flask's `sansio/`)."""
    packages = {str(PurePosixPath(p).parent) for p in paths if PurePosixPath(p).name == "__init__.py"}
    dirs = sorted({PurePosixPath(p).parent for p in paths}, key=lambda d: len(d.parts))
    for d in dirs:  # parents first, so nested namespace folders chain up
        if str(d) not in packages and str(d.parent) in packages and str(d) != ".":
            packages.add(str(d))
    return packages


def module_name(path: str, packages: set[str]) -> tuple[str, bool]:
    """Dotted module of a file: climb while the parent folder is a package (`src/a/b.py` -> `a.b`).
    Returns (module, is_package)."""
    p = PurePosixPath(path)
    is_package = p.name == "__init__.py"
    parts = [] if is_package else [p.stem]
    d = p.parent
    while str(d) in packages and str(d) != "." and d.name.isidentifier():  # `my-pkg/` is no package
        parts.append(d.name)
        d = d.parent
    if is_package and not parts:  # an __init__.py whose folder is the root
        parts = [p.parent.name or "__init__"]
    return ".".join(reversed(parts)), is_package


def import_tops(paths: list[str], packages: set[str], name: str, stdlib: bool = False) -> set[str] | None:
    """The top-level names a distribution can be imported by: its packages' (a folder with `__init__.py`, not a
    tests / docs / examples one), and a lone module (`six.py`) only when it has no package or the module is
    named after the distribution: an sdist's root scripts beside its package (pathspec's `prebuild.py`,
    structlog's `show_off.py`) are no name of the package. None: every top (the standard library's folder is
    on sys.path whole)."""
    if stdlib:
        return None
    tops, lone = set(), set()
    for path in paths:
        module, _ = module_name(path, packages)
        top = module.split(".")[0]
        if "." in module or PurePosixPath(path).name == "__init__.py":
            if not library.script_module(top) and top not in library.SCRIPT_DIRS:
                tops.add(top)
        else:
            lone.add(top)
    own = re.sub(r"[-.]+", "_", name.rsplit("/", 1)[-1]).lower()
    return tops | {m for m in lone if not tops or m.lower() == own}


def importable(module: str) -> bool:
    """A module name Python can import: every part an identifier (`idna-data` is a script, not a module)."""
    return all(part.isidentifier() and not keyword.iskeyword(part) for part in module.split("."))


def absolute(target: str, level: int, module: str, is_package: bool) -> str | None:
    """Resolve a relative name against the importing module; None beyond the top package."""
    if level == 0:
        return target
    package = module.split(".") if is_package else module.split(".")[:-1]
    keep = len(package) - (level - 1)
    if keep <= 0:
        return None
    base = ".".join(package[:keep])
    return f"{base}.{target}" if target else base


def category(fqn: str | None, via: str | None, own_tops: set[str], own: str = "") -> str:
    """`library.category`: by the caller's distribution `own` and the top-level modules it defines."""
    return library.category(fqn, via, own, own_tops)


def import_statement(imp: FileImport) -> str | None:
    if imp.asname is None:
        return None
    written = "." * imp.level + imp.module
    if imp.kind == "import":
        return f"import {written} as {imp.asname}"
    return f"from {written} import {imp.name} as {imp.asname}"


# -- star imports of the corpus's own modules (so `from .m import *` names resolve) ------------------
def _module_ast(row: dict, max_tokens: int = 0) -> ast.Module | None:
    """The file parsed by CPython's `ast` (read as text, never run); None when it does not parse or is over the
    token budget (pipeline.core.budget; the analysis rejects it as too_complex)."""
    try:
        text = Path(row["location"]).read_bytes().decode(row["encoding"])
        if budget.over_budget(text, "python", max_tokens, "extract.max_file_tokens"):
            return None
        return ast.parse(text)
    except (OSError, UnicodeDecodeError, LookupError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _star_targets(tree: ast.Module, module: str, is_package: bool) -> list[str]:
    """Absolute modules of the module-level `from X import *` statements, in source order."""
    out = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            target = absolute(node.module or "", node.level, module, is_package)
            if target:
                out.append(target)
    return out


def _exports(tree: ast.Module) -> tuple[set[str], list[str] | None]:
    """(names bound at module level, `__all__` when it is a literal list/tuple of strings)."""
    names, all_names = set(), None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(t, ast.Name):
                    names.add(t.id)
                    if t.id == "__all__" and isinstance(node.value, (ast.List, ast.Tuple)):
                        values = [e.value for e in node.value.elts if isinstance(e, ast.Constant)]
                        if all(isinstance(v, str) for v in values):
                            all_names = values
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                if a.name != "*":
                    names.add(a.asname or a.name.split(".")[0])
    return names, all_names


def star_names(rows: list[dict], modules: dict, dists: dict, max_file_bytes: int,
               only: set[str] | None = None, max_tokens: int = 0) -> dict[str, dict[str, str]]:
    """Per file with a module-level star import of a corpus module: name -> the module it comes from
    (`from .core import *` binds core's `__all__`, else its public module-level names; chains of star
    imports followed; a later star import wins, as in Python). Only files whose text has `import *`
    and the modules they name are parsed (CPython's `ast`, never run). `only`: the file_ids to resolve
    (a shard's files; the modules they import from may be anywhere in `rows`)."""
    by_module: dict[tuple[str, str], dict] = {}
    for r in rows:
        mod = modules[r["file_id"]][0]
        by_module.setdefault((dists[r["file_id"]], mod), r)
    cache: dict[str, ast.Module | None] = {}

    def parsed(r: dict) -> ast.Module | None:
        if r["file_id"] not in cache:
            cache[r["file_id"]] = _module_ast(r, max_tokens) if r["bytes"] <= max_file_bytes else None
        return cache[r["file_id"]]

    def public(dist: str, target: str, seen: frozenset) -> dict[str, str]:
        r = by_module.get((dist, target))
        tree = parsed(r) if r is not None and target not in seen else None
        if tree is None:
            return {}
        names, all_names = _exports(tree)
        out: dict[str, str] = {}
        mod, is_package = modules[r["file_id"]]
        for sub in _star_targets(tree, mod, is_package):
            out.update(public(dist, sub, seen | {target}))
        out.update({n: target for n in names if not n.startswith("_")})
        if all_names is not None:
            out = {n: out.get(n, target) for n in all_names}
        return out

    result = {}
    for r in rows:
        if r["bytes"] > max_file_bytes or (only is not None and r["file_id"] not in only):
            continue
        try:
            data = Path(r["location"]).read_bytes()
        except OSError:
            continue
        if b"import *" not in data and b"import*" not in data:
            continue
        tree = parsed(r)
        if tree is None:
            continue
        mod, is_package = modules[r["file_id"]]
        bound: dict[str, str] = {}
        for target in _star_targets(tree, mod, is_package):
            bound.update(public(dists[r["file_id"]], target, frozenset({mod})))
        if bound:
            result[r["file_id"]] = bound
    return result


def finalize(row: dict, module: str, is_package: bool, result: FileResult, own_tops: set[str], own: str = "",
             stars: dict[str, str] | None = None):
    base = {k: row[k] for k in ("file_id", "source", "repository", "path", "split")}
    base["module"] = module
    targets = []
    imports = []
    for imp in result.imports:
        star = imp.name == "*"
        abs_target = None if star else absolute(imp.target, imp.level, module, is_package)
        targets.append(abs_target)
        imports.append({**base, "line": imp.line, "kind": imp.kind, "imported": "." * imp.level + imp.module,
                        "level": imp.level, "name": imp.name, "asname": imp.asname, "bound": imp.bound,
                        "target": abs_target, "scope": imp.scope, "fallback": imp.fallback, "star": star,
                        "resolvable": abs_target is not None})
    usages = []
    for u in result.usages:
        fqn = import_target = alias = statement = None
        chain, via = u.chain, u.via
        rest = chain.split(".", 1)[1] if chain and "." in chain else None
        if via == "import":
            import_target = targets[u.payload]
            if import_target is not None:
                fqn = f"{import_target}.{rest}" if rest else import_target
            imp = result.imports[u.payload]
            if imp.asname is not None:
                alias, statement = imp.asname, import_statement(imp)
        elif via == "def" and importable(module):  # a script's definitions have no importable name
            fqn = f"{module}.{u.payload}" + (f".{rest}" if rest else "")
        elif via == "builtin":
            fqn = f"builtins.{chain}"
        elif via == "star":  # bound by no statement of the file: by its star import of a corpus module?
            source = (stars or {}).get(u.payload)
            if source is not None:
                via = "import"
                import_target = f"{source}.{u.payload}"
                fqn = f"{import_target}.{rest}" if rest else import_target
            elif u.kind in ("reference", "decorator"):
                continue  # as before: only resolved references and decorators are rows
            else:
                via = None
        usages.append({**base, "sha256": row["sha256"], "line": u.line, "col": u.col, "kind": u.kind, "chain": chain,
                       "attr": u.attr, "fqn": fqn, "category": category(fqn, via, own_tops, own), "via": via,
                       "import_target": import_target, "alias": alias, "import_statement": statement,
                       "enclosing_class": u.enclosing_class, "enclosing_function": u.enclosing_function})
    return imports, usages


def own_label(platform: str | None, own_tops: set[str] | frozenset[str] | None, stdlib: bool = False) -> str | None:
    """A platform label as the inventory records it: `optional_dependency:<module>` is `optional_dependency`
    unless the module is the file's own distribution's (then no label: it is there whenever the file is). In
    the standard library's own files `capability` and `optional_dependency` are no label: the stdlib checker
    (pipeline.extract.stdlib) evaluates them on the interpreter (`if hasattr(os, "fork"):` holds here)."""
    if stdlib and platform is not None and platform.startswith((platforms.CAPABILITY, platforms.OPTIONAL_DEPENDENCY)):
        return None
    if platform is None or not platform.startswith(platforms.OPTIONAL_DEPENDENCY + ":"):
        return platform
    top = platform.split(":", 1)[1]
    return None if own_tops is not None and top in own_tops else platforms.OPTIONAL_DEPENDENCY


def requires_of(result: FileResult, module: str, is_package: bool, available: set[str] | frozenset[str]) -> list[str] | None:
    """The absolute modules the file's top-level imports need (`from a import b`: `a` and `a.b`, which may be a
    submodule), those whose top-level name is in `available` (the standard library, the declared required
    dependencies) left out; None when none is left."""
    out = set()
    for level, written, names in result.requires:
        base = absolute(written, level, module, is_package)
        if base is None or not base:
            continue
        if base.split(".")[0] in available:
            continue
        out.add(base)
        out.update(f"{base}.{n}" for n in names)
    return sorted(out) or None


def aliases_of(result: FileResult, module: str, is_package: bool) -> list[str] | None:
    """`name=fqn` of the module's top-level aliases whose value is a module-level definition of the file or an
    imported name (`OMD = OrderedMultiDict`, `Str = String`, `loads = _json.loads`); builtins and other values
    name nothing of the corpus."""
    defined = {d.qualname for d in result.definitions if d.qualname and "." not in d.qualname}
    imported = {}
    for imp in result.imports:
        if imp.scope == "" and not imp.fallback and imp.name != "*" and imp.bound:
            target = absolute(imp.target, imp.level, module, is_package)
            if target is not None:
                imported[imp.bound] = target
    out = []
    for name, chain in result.aliases:
        head, _, rest = chain.partition(".")
        if name in defined:  # rebound by a definition of its own
            continue
        if head in defined:
            out.append(f"{name}={module}.{chain}")
        elif head in imported:
            out.append(f"{name}={imported[head]}" + (f".{rest}" if rest else ""))
    return sorted(set(out)) or None


def inventory_rows(row: dict, module: str, result: FileResult, own: str = "",
                   own_tops: set[str] | frozenset[str] | None = None, is_package: bool = False,
                   import_names: set[str] | None = None, available: frozenset[str] = frozenset(),
                   script: bool = False) -> list[dict]:
    """`import_names`: the distribution's importable top-level names (`import_tops`; None: all); `available`:
    top-level names that are always there when the file is (the stdlib, its declared required dependencies);
    `script`: a script inside a package (`library.package_scripts`), never library code."""
    out = []
    if not importable(module):
        return out
    own_category = "stdlib" if own == library.STDLIB_DISTRIBUTION else "user_defined"
    is_library = not script and library.library_code(row["path"], module, row.get("location")) and (
        import_names is None or module.split(".")[0] in import_names)
    stdlib = own == library.STDLIB_DISTRIBUTION
    requires = None if stdlib else requires_of(result, module, is_package, available)
    aliases = aliases_of(result, module, is_package)
    dependencies = sorted(available - STDLIB) or None
    names = [f"{name}:{label}" for name, platform in result.platform_names
             for label in [own_label(platform, own_tops, stdlib)] if label is not None]
    for d in result.definitions:
        fqn = f"{module}.{d.qualname}" if d.qualname else module
        out.append({"library": module.split(".")[0], "source": row["source"], "repository": row["repository"],
                    "path": row["path"], "module": module, "qualname": d.qualname,
                    "fqn": fqn, "kind": d.kind,
                    "signature": d.signature, "doc": d.doc, "private": private(fqn),
                    "distribution": own or None, "category": own_category, "library_code": is_library,
                    "platform": own_label(d.platform, own_tops, stdlib) or result.module_platform, "platform_names": (names or None) if not d.qualname else None,
                    "requires": requires if not d.qualname else None, "aliases": aliases if not d.qualname else None,
                    "dependencies": dependencies if not d.qualname else None,
                    "namespace": list(result.namespace) if not d.qualname and result.namespace is not None else None,
                    "exports": list(result.exports) if not d.qualname and result.exports is not None else None})
    return out


TABLES = {"usages": schemas.USAGES, "imports": schemas.IMPORTS, "inventory": schemas.INVENTORY,
          "rejects": schemas.REJECTS}


def _file_key(r: dict) -> tuple:
    return (r["source"], r["repository"], r["path"])


class Stats:
    """The metrics file, counted as the rows stream past (a function of the inputs only; cache hits
    go to the log). Holds only counters and the set of distinct resolved call APIs."""

    def __init__(self):
        self.python_files = self.unique_contents = self.positions_fallback = 0
        self.rejects: Counter = Counter()
        self.usage_kinds: Counter = Counter()
        self.usage_categories: Counter = Counter()
        self.calls = self.calls_resolved = self.imports = self.star_imports = 0
        self.call_apis: set[str] = set()
        self.inventory_kinds: Counter = Counter()

    def add(self, name: str, rows: list[dict]) -> None:
        if name == "usages":
            for u in rows:
                self.usage_kinds[u["kind"]] += 1
                self.usage_categories[u["category"]] += 1
                if u["kind"] in ("call", "method"):
                    self.calls += 1
                    if u["fqn"] is not None:
                        self.calls_resolved += 1
                        self.call_apis.add(u["fqn"])
        elif name == "imports":
            self.imports += len(rows)
            self.star_imports += sum(1 for i in rows if i["star"])
        elif name == "inventory":
            self.inventory_kinds.update(i["kind"] for i in rows)
        elif name == "rejects":
            self.rejects.update(r["reason"] for r in rows)

    def summary(self) -> dict:
        rejects = sum(self.rejects.values())
        return {
            "python_files": self.python_files,
            "unique_contents": self.unique_contents,
            "files_analysed": self.python_files - rejects,
            "rejects": rejects,
            "rejects_by_reason": dict(sorted(self.rejects.items())),
            "positions_from_libcst_fallback": int(self.positions_fallback),
            "usages": sum(self.usage_kinds.values()),
            "usages_by_kind": dict(sorted(self.usage_kinds.items())),
            "usages_by_category": dict(sorted(self.usage_categories.items())),
            "calls": self.calls,
            "calls_resolved": self.calls_resolved,
            "unique_call_apis": len(self.call_apis),
            "unique_call_apis_without_builtins": sum(1 for f in self.call_apis if not f.startswith("builtins.")),
            "imports": self.imports,
            "star_imports": self.star_imports,
            "inventory": sum(self.inventory_kinds.values()),
            "inventory_by_kind": dict(sorted(self.inventory_kinds.items())),
        }


def iter_rows(manifest: pa.Table, workers: int, timeout_s: float, max_file_bytes: int, cache: Cache,
              stats: Stats, hits: list[int] | None = None, stdlib_sources: frozenset[str] = frozenset(),
              per_repository_sources: frozenset[str] = frozenset(), shard: int = 0,
              shards: int = 1, max_tokens: int = 0) -> Iterator[tuple[str, list[dict]]]:
    """(table name, rows) in each table's final order, file by file, as the analyses arrive.
    With shards > 1, the rows of `shard`'s files only (`pipeline.core.shards`); module names,
    distributions and star imports are still resolved against every file, so `merge` of the parts
    is the one-job result.

    Files are walked in (source, repository, path) order, so each file's rows sorted by the table's
    key concatenate to the globally sorted table; the inventory (unique per (source, repository,
    fqn), the first file in path order winning) is emitted per repository when the walk leaves it.
    Memory holds the manifest's metadata, the pool's window, one repository's inventory and the
    outcomes of contents still awaited by a later duplicate file; never the corpus's rows."""
    rows = manifest.filter(pc.equal(manifest.column("language"), "python")).to_pylist()
    rows.sort(key=_file_key)  # stable: the manifest's own order, made explicit
    everything = rows
    # scripts inside a package (a `__main__` guard, nothing of the source imports or names them): never library code,
    # judged over every file (a shard's too)
    in_package_scripts = library.package_scripts(rows)
    # module names and categories by distribution, never by the `repository:` grouping:
    # `dir:2` once cut `pkg/sub/x.py` from `pkg/__init__.py`, so it was module `sub.x` in one grouping only
    dists = {r["file_id"]: library.distribution(r["source"], r["repository"], r["source"] in per_repository_sources,
                                                r["source"] in stdlib_sources) for r in rows}
    by_dist: dict[tuple[str, str], list[str]] = {}
    for r in rows:
        by_dist.setdefault((r["source"], dists[r["file_id"]]), []).append(r["path"])
    packages = {k: package_dirs(v) for k, v in by_dist.items()}
    modules = {r["file_id"]: module_name(r["path"], packages[(r["source"], dists[r["file_id"]])]) for r in rows}
    dist_tops: dict[str, set[str]] = {}
    for r in rows:
        dist_tops.setdefault(dists[r["file_id"]], set()).add(modules[r["file_id"]][0].split(".")[0])
    # what each distribution is imported by (its sdist-root scripts are not), and what is there whenever it is
    import_names = {d: import_tops(paths, packages[(source, d)], d, d == library.STDLIB_DISTRIBUTION)
                    for (source, d), paths in by_dist.items()}
    roots = _roots(rows, dists)
    for (source, d), paths in by_dist.items():  # what the distribution's own metadata declares wins
        declared = set(library.declared_library(roots.get(d)).get("python") or ()) if import_names[d] is not None else set()
        if declared & dist_tops[d]:
            import_names[d] = declared
    available = {d: STDLIB | requirements.declared(roots.get(d)) for d in dist_tops}
    if shards > 1:
        rows = [r for r in rows if sharding.in_shard(r["source"], r["path"], shard, shards)]
        stars = star_names(everything, modules, dists, max_file_bytes, {r["file_id"] for r in rows}, max_tokens)
    else:
        stars = star_names(rows, modules, dists, max_file_bytes, max_tokens=max_tokens)
    del everything

    tasks, remaining = [], Counter()
    for r in rows:
        if r["bytes"] <= max_file_bytes:
            if r["sha256"] not in remaining:
                tasks.append(Task(r["sha256"], r["location"], r["encoding"], max_tokens))
            remaining[r["sha256"]] += 1
    stats.python_files, stats.unique_contents = len(rows), len(tasks)
    arriving = iter_outcomes(tasks, workers, timeout_s, cache, hits)
    held: dict[str, Outcome] = {}  # outcomes that a later file with the same content still needs

    def emit(name: str, out: list[dict]):
        if out:
            stats.add(name, out)
            yield name, out

    repo, inventory = None, {}
    for r in rows:
        if (r["source"], r["repository"]) != repo:
            yield from emit("inventory", [inventory[k] for k in sorted(inventory)])
            repo, inventory = (r["source"], r["repository"]), {}
        reject = None
        if r["bytes"] > max_file_bytes:
            reject = ("too_large", f"{r['bytes']} > extract.max_file_bytes={max_file_bytes}")
        else:
            sha = r["sha256"]
            outcome = held.pop(sha, None)
            if outcome is None:
                task, outcome = next(arriving)
                assert task.sha256 == sha, "outcomes arrive in the walk's order"
            remaining[sha] -= 1
            if remaining[sha]:
                held[sha] = outcome
            if isinstance(outcome, Failed):
                reject = (outcome.reason, outcome.detail)
        if reject:
            yield from emit("rejects", [{"source": r["source"], "repository": r["repository"], "path": r["path"],
                                         "stage": "extract", "reason": reject[0], "detail": reject[1],
                                         "bytes": r["bytes"]}])
            continue
        result: FileResult = outcome.result
        stats.positions_fallback += result.positions_from != "ast" and not r["duplicate"]
        module, is_package = modules[r["file_id"]]
        own = dists[r["file_id"]]
        imp, use = finalize(r, module, is_package, result, dist_tops[own], own, stars.get(r["file_id"]))
        use.sort(key=lambda u: (u["line"], u["col"], u["kind"], u["chain"] or ""))
        imp.sort(key=lambda i: (i["line"], i["name"] or "", i["imported"]))
        yield from emit("imports", imp)
        yield from emit("usages", use)
        if not r["duplicate"]:
            for inv in inventory_rows(r, module, result, own, dist_tops[own], is_package, import_names[own],
                                      available[own], (r["source"], r["path"]) in in_package_scripts):
                # unique per repository (two projects' `tests.conftest` are two modules); within one,
                # the first file in path order wins
                inventory.setdefault(inv["fqn"], inv)
    yield from emit("inventory", [inventory[k] for k in sorted(inventory)])
    next(arriving, None)  # let the generator finish (it reports the cache hits)


def _roots(rows: list[dict], dists: dict[str, str]) -> dict[str, Path]:
    """Each distribution's folder on disk (its files' locations less their paths): where its metadata is."""
    out: dict[str, Path] = {}
    for r in rows:
        dist, location, path = dists[r["file_id"]], r.get("location") or "", r["path"]
        if dist not in out and location.endswith(path):
            out[dist] = Path(location[: len(location) - len(path)] or ".")
    return out


def build(manifest: pa.Table, workers: int, timeout_s: float, max_file_bytes: int, cache: Cache,
          stdlib_sources: frozenset[str] = frozenset(), per_repository_sources: frozenset[str] = frozenset(),
          shard: int = 0, shards: int = 1, max_tokens: int = 0):
    """Every table in memory (tests, small corpora): (tables, metrics, cache hits). `write` streams."""
    stats, hits, parts = Stats(), [], {name: [] for name in TABLES}
    for name, rows in iter_rows(manifest, workers, timeout_s, max_file_bytes, cache, stats, hits, stdlib_sources,
                                per_repository_sources, shard, shards, max_tokens):
        parts[name] += rows
    tables = {name: pa.Table.from_pylist(parts[name], TABLES[name]) for name in TABLES}
    return tables, stats.summary(), hits[0] if hits else 0


def write(manifest: pa.Table, workers: int, timeout_s: float, max_file_bytes: int, cache: Cache,
          paths: dict[str, Path], batch_rows: int = 8192, stdlib_sources: frozenset[str] = frozenset(),
          per_repository_sources: frozenset[str] = frozenset(), shard: int = 0, shards: int = 1,
          max_tokens: int = 0):
    """Stream every table to its Parquet file (`pipeline.io.parquet_stream`: the same bytes as
    `write_parquet` of `build`'s tables, in bounded memory). Returns (metrics, cache hits)."""
    stats, hits = Stats(), []
    with contextlib.ExitStack() as stack:
        outs = {name: stack.enter_context(parquet_stream(paths[name], TABLES[name])) for name in TABLES}
        pending: dict[str, list[dict]] = {name: [] for name in TABLES}
        for name, rows in iter_rows(manifest, workers, timeout_s, max_file_bytes, cache, stats, hits, stdlib_sources,
                                    per_repository_sources, shard, shards, max_tokens):
            pending[name] += rows
            if len(pending[name]) >= batch_rows:
                outs[name].write(pa.Table.from_pylist(pending[name], TABLES[name]))
                pending[name] = []
        for name, rows in pending.items():
            if rows:
                outs[name].write(pa.Table.from_pylist(rows, TABLES[name]))
    return stats.summary(), hits[0] if hits else 0


FILE_ORDER = ["source", "repository", "path"]  # the walk's order; tied files share a path, so one shard holds them


def part_path(metrics: Path, name: str) -> Path:
    """A shard's table beside its metrics file: X.json -> X.<name>.parquet."""
    return metrics.with_suffix(f".{name}.parquet")


def merge(parts: list[Path], manifest: pa.Table, max_file_bytes: int, paths: dict[str, Path],
          tmpdir: Path | None = None) -> dict:
    """Merge the shards' parts (given as their metrics files) into the one-job tables, streaming
    (`pipeline.core.shards.stream_merge`): usages, imports and rejects in the walk's file order, the
    inventory deduplicated again across shards (per repository and fqn, the first file in path
    order wins) and sorted by fqn. The metrics are counted from the merged rows, as `write` counts
    them; the counts no table holds come from the parts (files, libcst fallbacks) and the manifest
    (distinct contents). Returns the metrics."""
    stats = Stats()
    metrics = [json.loads(p.read_text()) for p in parts]
    for name in ("usages", "imports", "rejects"):
        sharding.stream_merge([part_path(p, name) for p in parts], TABLES[name], FILE_ORDER, paths[name],
                              on_batch=lambda b, name=name: stats.add(name, b.to_pylist()), tmpdir=tmpdir)
    inventory_key = ["source", "repository", "fqn"]
    sharding.stream_merge([part_path(p, "inventory") for p in parts], TABLES["inventory"], inventory_key,
                          paths["inventory"], first_of=inventory_key, first_by=["path"],
                          on_batch=lambda b: stats.add("inventory", b.to_pylist()), tmpdir=tmpdir)
    python = manifest.filter(pc.equal(manifest.column("language"), "python"))
    small = python.filter(pc.less_equal(python.column("bytes"), max_file_bytes))
    stats.python_files = sum(m["python_files"] for m in metrics)
    stats.unique_contents = len(pc.unique(small.column("sha256")))
    stats.positions_fallback = sum(m["positions_from_libcst_fallback"] for m in metrics)
    if stats.python_files != python.num_rows:
        raise ValueError(f"the {len(parts)} extract shards cover {stats.python_files} Python files, the manifest "
                         f"{python.num_rows}: give every shard's part to --merge, built from this manifest")
    return stats.summary()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m pipeline.extract.build",
        description="Static API extraction (libcst): imports, resolved call/attribute usages and the library "
        "inventory of every Python file of the manifest; unparsable, too large, too deep or too slow files "
        "go to the rejects table. Each content hash is analysed once and cached.",
    )
    ap.add_argument("--manifest", required=True, type=Path, help="data/manifest.parquet")
    ap.add_argument("--workers", type=int, default=1, help="processes")
    ap.add_argument("--timeout-s", type=float, required=True, help="per-file analysis time cap")
    ap.add_argument("--max-file-bytes", type=int, required=True, help="larger files are rejected (too_large)")
    ap.add_argument("--max-file-tokens", type=int, default=budget.DEFAULT,
                    help="files with more tokens are rejected unparsed (too_complex; extract.max_file_tokens, "
                    f"default {budget.DEFAULT}; 0: no budget)")
    ap.add_argument("--cache", type=Path, default=None, help="per-content-hash cache folder (none: no cache)")
    ap.add_argument("--stdlib-sources", nargs="*", default=[],
                    help="sources that are the interpreter's standard library (`builtin: stdlib`): distribution `stdlib`")
    ap.add_argument("--per-repository-sources", nargs="*", default=[],
                    help="sources holding many projects (jsonl dumps): one distribution per repository, not per source")
    ap.add_argument("--usages", required=True, type=Path)
    ap.add_argument("--imports", required=True, type=Path)
    ap.add_argument("--inventory", required=True, type=Path)
    ap.add_argument("--rejects", required=True, type=Path)
    ap.add_argument("--metrics", required=True, type=Path)
    sharding.add_arguments(ap, "instead of analysing: merge these shards' parts, given as their metrics files "
                           "(X.json beside X.usages.parquet, X.imports.parquet, X.inventory.parquet, X.rejects.parquet)")
    args = ap.parse_args(argv)
    sharding.check_arguments(ap, args)
    logs.setup()
    manifest = read_parquet(args.manifest, schemas.MANIFEST)
    paths = {"usages": args.usages, "imports": args.imports, "inventory": args.inventory, "rejects": args.rejects}
    if args.merge:
        with tempfile.TemporaryDirectory(prefix=".extract-merge-", dir=args.usages.parent
                                         if args.usages.parent.exists() else None) as tmp:
            stats, hits = merge(args.merge, manifest, args.max_file_bytes, paths, Path(tmp)), 0
    else:
        stats, hits = write(manifest, args.workers, args.timeout_s, args.max_file_bytes,
                            Cache(args.cache, args.max_file_tokens), paths,
                            stdlib_sources=frozenset(args.stdlib_sources),
                            per_repository_sources=frozenset(args.per_repository_sources),
                            shard=args.shard, shards=args.shards, max_tokens=args.max_file_tokens)
    write_json(stats, args.metrics)
    log.info("extract: %d files analysed (%d cached), %d rejects, %d usages, %d unique call APIs",
             stats["files_analysed"], hits, stats["rejects"], stats["usages"], stats["unique_call_apis"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
