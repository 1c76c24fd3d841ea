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
import hashlib
import keyword
import logging
import pickle
import signal
import sys
from collections import Counter
from dataclasses import dataclass
from functools import partial
from importlib.metadata import version as package_version
from pathlib import Path, PurePosixPath

import pyarrow as pa
import pyarrow.compute as pc

from pipeline import schemas
from pipeline.core import logs
from pipeline.core.pool import hard_limit, imap_files
from pipeline.extract import analyse
from pipeline.extract.visitor import private
from pipeline.extract.analyse import Analysed, Failed, FileImport, FileResult, Outcome, Rejected
from pipeline.io import atomic_path, read_parquet, write_json, write_parquet

log = logging.getLogger("pipeline.extract.build")

CHUNK = 16
STDLIB = frozenset(sys.stdlib_module_names) | {"builtins"}
_CODE = ("visitor.py", "positions.py", "analyse.py")


def extractor_version() -> str:
    """Changes whenever the analysis code, libcst or the interpreter changes: the cache key."""
    h = hashlib.sha256(f"{package_version('libcst')}\0{sys.version}".encode())
    for name in _CODE:
        h.update((Path(__file__).parent / name).read_bytes())
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


def hard_limit_s(timeout_s: float) -> float:
    """CPU seconds after which a worker analysing one file is ended (native code included)."""
    return timeout_s * 1.25 + 1


def analyse_file(location: str, encoding: str, timeout_s: float) -> Outcome:
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
        return analyse_file(task.location, task.encoding, timeout_s)


def _timed_out(timeout_s: float, task: Task) -> Outcome:
    return Failed("timeout", f"> {timeout_s} s (ended inside native code after {hard_limit_s(timeout_s):g} CPU s)", False)


def _crashed(task: Task) -> Outcome:
    return Failed("worker_crash", "the analysing process died", False)


class Cache:
    """One pickle per content hash, under the extractor version; written atomically."""

    def __init__(self, root: Path | None):
        self.root = root / extractor_version() if root else None

    def _path(self, sha: str) -> Path:
        return self.root / sha[:2] / f"{sha}.pkl"

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


def analyse_all(tasks: list[Task], workers: int, timeout_s: float, cache: Cache) -> tuple[dict[str, Outcome], int]:
    """Outcome per content hash. Returns (outcomes, cache hits). A worker that dies (a native
    crash) costs only its own file: that one is rejected as `worker_crash`, the rest goes on."""
    outcomes: dict[str, Outcome] = {}
    todo = []
    for task in tasks:
        hit = cache.get(task.sha256)
        if hit is not None:
            outcomes[task.sha256] = hit
        else:
            todo.append(task)
    hits = len(outcomes)
    size = max(1, min(CHUNK, len(todo) // (4 * workers)))  # small corpora still spread over the pool
    done = imap_files(partial(_analyse_task, timeout_s), todo, workers, chunksize=size, desc="extract",
                      on_crash=_crashed, on_timeout=partial(_timed_out, timeout_s))
    for task, outcome in zip(todo, done):
        outcomes[task.sha256] = outcome
        cache.put(task.sha256, outcome)
    return outcomes, hits


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


def category(fqn: str | None, via: str | None, repo_tops: set[str]) -> str:
    if fqn is None:
        return "unknown"
    top = fqn.split(".", 1)[0]
    if via == "def" or top in repo_tops:
        return "user_defined"
    if top in STDLIB:
        return "stdlib"
    return "third_party"


def import_statement(imp: FileImport) -> str | None:
    if imp.asname is None:
        return None
    written = "." * imp.level + imp.module
    if imp.kind == "import":
        return f"import {written} as {imp.asname}"
    return f"from {written} import {imp.name} as {imp.asname}"


def finalize(row: dict, module: str, is_package: bool, result: FileResult, repo_tops: set[str]):
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
        usages.append({**base, "sha256": row["sha256"], "line": u.line, "col": u.col, "kind": u.kind, "chain": chain,
                       "attr": u.attr, "fqn": fqn, "category": category(fqn, via, repo_tops), "via": via,
                       "import_target": import_target, "alias": alias, "import_statement": statement,
                       "enclosing_class": u.enclosing_class, "enclosing_function": u.enclosing_function})
    return imports, usages


def inventory_rows(row: dict, module: str, result: FileResult) -> list[dict]:
    out = []
    if not importable(module):
        return out
    for d in result.definitions:
        fqn = f"{module}.{d.qualname}" if d.qualname else module
        out.append({"library": module.split(".")[0], "source": row["source"], "repository": row["repository"],
                    "path": row["path"], "module": module, "qualname": d.qualname,
                    "fqn": fqn, "kind": d.kind,
                    "signature": d.signature, "doc": d.doc, "private": private(fqn)})
    return out


def build(manifest: pa.Table, workers: int, timeout_s: float, max_file_bytes: int, cache: Cache):
    rows = manifest.filter(pc.equal(manifest.column("language"), "python")).to_pylist()
    by_repo: dict[tuple[str, str], list[str]] = {}
    for r in rows:
        by_repo.setdefault((r["source"], r["repository"]), []).append(r["path"])
    packages = {k: package_dirs(v) for k, v in by_repo.items()}
    modules = {r["file_id"]: module_name(r["path"], packages[(r["source"], r["repository"])]) for r in rows}
    repo_tops: dict[tuple[str, str], set[str]] = {}
    for r in rows:
        repo_tops.setdefault((r["source"], r["repository"]), set()).add(modules[r["file_id"]][0].split(".")[0])

    tasks, seen = [], set()
    for r in rows:
        if r["bytes"] <= max_file_bytes and r["sha256"] not in seen:
            seen.add(r["sha256"])
            tasks.append(Task(r["sha256"], r["location"], r["encoding"]))
    outcomes, hits = analyse_all(tasks, workers, timeout_s, cache)

    imports, usages, inventory, rejects = [], [], {}, []
    positions_fallback = 0
    for r in rows:
        reject = None
        if r["bytes"] > max_file_bytes:
            reject = ("too_large", f"{r['bytes']} > extract.max_file_bytes={max_file_bytes}")
        else:
            outcome = outcomes[r["sha256"]]
            if isinstance(outcome, Failed):
                reject = (outcome.reason, outcome.detail)
        if reject:
            rejects.append({"source": r["source"], "repository": r["repository"], "path": r["path"],
                            "stage": "extract", "reason": reject[0], "detail": reject[1], "bytes": r["bytes"]})
            continue
        result: FileResult = outcome.result
        positions_fallback += result.positions_from != "ast" and not r["duplicate"]
        module, is_package = modules[r["file_id"]]
        imp, use = finalize(r, module, is_package, result, repo_tops[(r["source"], r["repository"])])
        imports += imp
        usages += use
        if not r["duplicate"]:
            for inv in inventory_rows(r, module, result):
                # unique per repository (two projects' `tests.conftest` are two modules); within one,
                # the first file in path order wins (rows come in (source, repository, path) order)
                inventory.setdefault((inv["source"], inv["repository"], inv["fqn"]), inv)
    usages.sort(key=lambda u: (u["source"], u["repository"], u["path"], u["line"], u["col"], u["kind"], u["chain"] or ""))
    imports.sort(key=lambda i: (i["source"], i["repository"], i["path"], i["line"], i["name"] or "", i["imported"]))
    rejects.sort(key=lambda x: (x["source"], x["repository"], x["path"]))
    tables = {
        "usages": pa.Table.from_pylist(usages, schemas.USAGES),
        "imports": pa.Table.from_pylist(imports, schemas.IMPORTS),
        "inventory": pa.Table.from_pylist([inventory[k] for k in sorted(inventory)], schemas.INVENTORY),
        "rejects": pa.Table.from_pylist(rejects, schemas.REJECTS),
    }
    stats = summary(rows, tasks, positions_fallback, tables)
    return tables, stats, hits


def summary(rows, tasks, positions_fallback, tables) -> dict:
    """The metrics file: a function of the inputs only (cache hits go to the log)."""
    usages = tables["usages"]
    calls = usages.filter(pc.is_in(usages.column("kind"), pa.array(["call", "method"])))
    resolved = calls.filter(pc.is_valid(calls.column("fqn")))
    fqns = set(resolved.column("fqn").to_pylist())
    return {
        "python_files": len(rows),
        "unique_contents": len(tasks),
        "files_analysed": len(rows) - tables["rejects"].num_rows,
        "rejects": tables["rejects"].num_rows,
        "rejects_by_reason": dict(sorted(Counter(tables["rejects"].column("reason").to_pylist()).items())),
        "positions_from_libcst_fallback": int(positions_fallback),
        "usages": usages.num_rows,
        "usages_by_kind": dict(sorted(Counter(usages.column("kind").to_pylist()).items())),
        "usages_by_category": dict(sorted(Counter(usages.column("category").to_pylist()).items())),
        "calls": calls.num_rows,
        "calls_resolved": resolved.num_rows,
        "unique_call_apis": len(fqns),
        "unique_call_apis_without_builtins": sum(1 for f in fqns if not f.startswith("builtins.")),
        "imports": tables["imports"].num_rows,
        "star_imports": int(pc.sum(tables["imports"].column("star")).as_py() or 0),
        "inventory": tables["inventory"].num_rows,
        "inventory_by_kind": dict(sorted(Counter(tables["inventory"].column("kind").to_pylist()).items())),
    }


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
    ap.add_argument("--cache", type=Path, default=None, help="per-content-hash cache folder (none: no cache)")
    ap.add_argument("--usages", required=True, type=Path)
    ap.add_argument("--imports", required=True, type=Path)
    ap.add_argument("--inventory", required=True, type=Path)
    ap.add_argument("--rejects", required=True, type=Path)
    ap.add_argument("--metrics", required=True, type=Path)
    args = ap.parse_args(argv)
    logs.setup()
    manifest = read_parquet(args.manifest, schemas.MANIFEST)
    tables, stats, hits = build(manifest, args.workers, args.timeout_s, args.max_file_bytes, Cache(args.cache))
    write_parquet(tables["usages"], args.usages, schemas.USAGES)
    write_parquet(tables["imports"], args.imports, schemas.IMPORTS)
    write_parquet(tables["inventory"], args.inventory, schemas.INVENTORY)
    write_parquet(tables["rejects"], args.rejects, schemas.REJECTS)
    write_json(stats, args.metrics)
    log.info("extract: %d files analysed (%d cached), %d rejects, %d usages, %d unique call APIs",
             stats["files_analysed"], hits, stats["rejects"], stats["usages"], stats["unique_call_apis"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
