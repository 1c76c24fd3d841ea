"""First-seen per function and API: for a source with `history` (older pinned releases, oldest first), every
Python function of its pinned release is marked with the first release, of the history and itself, that holds
the same function (the same normalised AST: positions, comments, formatting and the docstring left out), and
every API it defines (module.qualname, and the names a package's __init__ re-exports) with the first release
that defines that name. A function that changed gets the release it changed in; one that was removed is
counted, never labelled (no item can come from it). Files are parsed with `ast` (data, never imported).

A JDK source (`builtin: jdk`, `--since`) has no history: its APIs are dated by the JDK's own `@since` Javadoc tags
instead (pipeline.contamination.since), into the same `first_seen_apis` table with `date_basis = since_tag`."""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import hashlib
import json
import logging
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from pipeline import schemas
from pipeline.contamination import since
from pipeline.core import logs
from pipeline.io import read_parquet, write_json, write_parquet

log = logging.getLogger("pipeline.contamination.firstseen")

FUNCTIONS = pa.schema([
    pa.field("source", pa.string(), nullable=False),  # the corpus source (one with history)
    pa.field("file_id", pa.string(), nullable=False),  # the manifest's file of the current release
    pa.field("path", pa.string(), nullable=False),  # relative to the source root
    pa.field("function", pa.string(), nullable=False),  # qualname in the file (`C.m`, `f.<locals>.g`): items key on it
    pa.field("ast_hash", pa.string(), nullable=False),  # sha256 of the normalised AST (no positions, no docstring)
    pa.field("first_version", pa.string(), nullable=False),  # the first pinned release holding this exact function
    pa.field("first_released", pa.date32(), nullable=True),  # that release's pinned date
    pa.field("name_version", pa.string(), nullable=False),  # the first release defining this qualname (any body)
    pa.field("status", pa.string(), nullable=False),  # unchanged / changed / added: against the oldest release
])

APIS = pa.schema([
    pa.field("source", pa.string(), nullable=False),  # the corpus source (one with history, or a JDK)
    pa.field("api", pa.string(), nullable=False),  # module.qualname (or a package's re-exported name); Java: fqn.member
    pa.field("first_version", pa.string(), nullable=False),  # the first release defining this name
    pa.field("first_released", pa.date32(), nullable=True),  # that release's date (pinned; a JDK's: its GA date)
    # how that release was found: `first_seen` (the pinned releases compared), `since_tag` (a JDK's own @since
    # Javadoc tags: pipeline.contamination.since); both a first release, not an upper bound
    pa.field("date_basis", pa.string(), nullable=False),
])


@dataclass(frozen=True)
class Release:
    version: str
    released: dt.date | None
    files: dict[str, bytes]  # path relative to the source root -> bytes (Python files only)


def _strip_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[1:]
    return body


class _Normalise(ast.NodeTransformer):
    def _drop_doc(self, node):
        self.generic_visit(node)
        node.body = _strip_docstring(node.body) or [ast.Pass()]
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _drop_doc


def ast_hash(node: ast.AST) -> str:
    """The sha256 of a function's AST without positions, comments, formatting or docstrings."""
    import copy
    clean = _Normalise().visit(copy.deepcopy(node))
    return hashlib.sha256(ast.dump(clean, annotate_fields=True, include_attributes=False).encode()).hexdigest()


def module_of(path: str) -> str | None:
    """The dotted module of a file path in a source (`src/` dropped, `__init__` is its package); None: not Python."""
    if not path.endswith(".py"):
        return None
    parts = path[:-3].split("/")
    if parts[0] == "src" and len(parts) > 1:
        parts = parts[1:]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) if parts and all(p.isidentifier() for p in parts) else None


def _parse(data: bytes) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def functions_of(tree: ast.Module) -> dict[str, ast.AST]:
    """qualname (`C.m`, `f.<locals>.g`, as the extraction names them) -> function node (the first of a name wins)."""
    out: dict[str, ast.AST] = {}

    def walk(node, prefix: str):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                out.setdefault(name, child)
                walk(child, name + ".<locals>.")
            elif isinstance(child, ast.ClassDef):
                walk(child, prefix + child.name + ".")
            else:
                walk(child, prefix)

    walk(tree, "")
    return out


def apis_of(path: str, tree: ast.Module) -> set[str]:
    """The names a module defines (functions, classes, methods: module.qualname) and, for a package's
    __init__, the names it re-exports from its own submodules (`from .api import get` -> `pkg.get`)."""
    module = module_of(path)
    if module is None:
        return set()
    out: set[str] = set()

    def walk(node, prefix: str):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(f"{module}.{prefix}{child.name}")
                if isinstance(child, ast.ClassDef):
                    walk(child, prefix + child.name + ".")
            elif not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                walk(child, prefix)

    walk(tree, "")
    if path.endswith("__init__.py"):
        top = module.split(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level > 0 or (node.module or "").split(".")[0] == top):
                out.update(f"{module}.{a.asname or a.name}" for a in node.names if a.name != "*")
    return out


def _unit(path: str) -> str:
    """Where a function lives across releases: its module (a package moved under src/ stays the same), else its path."""
    return module_of(path) or path


def release_index(release: Release) -> tuple[dict[str, set[str]], set[str], set[str]]:
    """(module -> {qualname}, every function hash, every API) of one release."""
    names: dict[str, set[str]] = {}
    hashes: set[str] = set()
    apis: set[str] = set()
    for path, data in sorted(release.files.items()):
        tree = _parse(data)
        if tree is None:
            continue
        funcs = functions_of(tree)
        names.setdefault(_unit(path), set()).update(funcs)
        hashes.update(ast_hash(n) for n in funcs.values())
        apis |= apis_of(path, tree)
    return names, hashes, apis


def first_seen(source: str, history: list[Release], current: Release, file_ids: dict[str, str]) -> tuple[list[dict], list[dict], dict]:
    """Function and API rows of the current release (`file_ids`: its path -> manifest file_id) and a summary."""
    indexed = [release_index(r) for r in history]
    rows, per_version = [], {}
    oldest_names = {(p, q) for p, qs in indexed[0][0].items() for q in qs} if indexed else set()
    current_funcs_all: set[tuple[str, str]] = set()
    for path, data in sorted(current.files.items()):
        tree = _parse(data) if path in file_ids else None
        if tree is None:
            continue
        for qualname, node in functions_of(tree).items():
            current_funcs_all.add((_unit(path), qualname))
            h = ast_hash(node)
            first = next((r for r, (_, hashes, _) in zip(history, indexed) if h in hashes), current)
            named = next((r for r, (names, _, _) in zip(history, indexed) if qualname in names.get(_unit(path), ())), current)
            status = ("added" if (_unit(path), qualname) not in oldest_names else
                      "unchanged" if h in indexed[0][1] else "changed")
            rows.append({"source": source, "file_id": file_ids[path], "path": path, "function": qualname, "ast_hash": h,
                         "first_version": first.version, "first_released": first.released,
                         "name_version": named.version, "status": status})
            per_version[first.version] = per_version.get(first.version, 0) + 1
    current_apis: set[str] = set()
    for path, data in sorted(current.files.items()):
        tree = _parse(data) if path in file_ids else None
        if tree is not None:
            current_apis |= apis_of(path, tree)
    apis = []
    for api in sorted(current_apis):
        first = next((r for r, (_, _, defined) in zip(history, indexed) if api in defined), current)
        apis.append({"source": source, "api": api, "first_version": first.version, "first_released": first.released,
                     "date_basis": "first_seen"})
    removed = sorted({(p, q) for names, _, _ in indexed for p, qs in names.items() for q in qs} - current_funcs_all)
    summary = {"versions": [r.version for r in [*history, current]], "functions": len(rows),
               "functions_by_first_version": dict(sorted(per_version.items())),
               "functions_by_status": {s: sum(r["status"] == s for r in rows) for s in ("unchanged", "changed", "added")},
               "removed_functions": len(removed), "apis": len(apis),
               "apis_by_first_version": {v: sum(a["first_version"] == v for a in apis) for v in [r.version for r in [*history, current]]}}
    return rows, apis, summary


def _python_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.py"))
            if p.is_file() and not p.is_symlink()}


def _date(value: str | None) -> dt.date | None:
    return dt.date.fromisoformat(value) if value else None


def version_of(package: str) -> str:
    return package.split("==", 1)[1] if "==" in package else package.rsplit("@", 1)[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.contamination.firstseen",
                                 description="Mark every function and API of the sources with `history` with the "
                                 "first pinned release it appears in.")
    ap.add_argument("--manifest", required=True, type=Path)
    ap.add_argument("--sources", required=True, help="JSON: [{name, package, released, history: [{package, released, "
                    "tree, record}]}] for each source with history")
    ap.add_argument("--since", default="[]", help="JSON: [name] of the JDK sources (`builtin: jdk`), whose APIs are "
                    "dated by their own @since tags (pipeline.contamination.since)")
    ap.add_argument("--functions", required=True, type=Path)
    ap.add_argument("--apis", required=True, type=Path)
    ap.add_argument("--metrics", required=True, type=Path)
    args = ap.parse_args(argv)
    logs.setup()
    manifest = read_parquet(args.manifest, schemas.MANIFEST).to_pylist()
    functions, apis, summary = [], [], {}
    for spec in json.loads(args.sources):
        mine = [r for r in manifest if r["source"] == spec["name"] and r["language"] == "python"]
        file_ids = {r["path"]: r["file_id"] for r in mine}
        current = Release(version_of(spec["package"]), _date(spec.get("released")),
                          {r["path"]: Path(r["location"]).read_bytes() for r in mine})
        history = []
        for old in spec["history"]:
            record = json.loads(Path(old["record"]).read_text())
            if record.get("status") != "ok":
                raise SystemExit(f"{spec['name']}: history release {old['package']} was not fetched ({record.get('error')}); "
                                 "fix its pin in corpus.sources[].history or remove it")
            history.append(Release(version_of(old["package"]), _date(old.get("released")), _python_files(Path(old["tree"]))))
        rows, defined, summary[spec["name"]] = first_seen(spec["name"], history, current, file_ids)
        functions += rows
        apis += defined
        log.info("%s: %d functions, first seen %s; %d removed", spec["name"], len(rows),
                 summary[spec["name"]]["functions_by_first_version"], summary[spec["name"]]["removed_functions"])
    for name in json.loads(args.since):
        mine = [r for r in manifest if r["source"] == name and r["language"] == "java"]
        pinned = min((r["released"] for r in mine if r["released"] is not None), default=None)
        defs, tags = since.dated_definitions((r["path"], Path(r["location"]).read_bytes()) for r in mine)
        defined = since.api_rows(name, defs, pinned)
        apis += defined
        summary[name] = {"since_tags": since.summary(defs, tags, defined)}
        log.info("%s: %d of %d definitions dated by @since tags (%d of %d API names); %d tags unparsable",
                 name, summary[name]["since_tags"]["definitions_dated"], len(defs), len(defined),
                 summary[name]["since_tags"]["apis"], summary[name]["since_tags"]["tags_unparsable"])
    functions.sort(key=lambda r: (r["source"], r["path"], r["function"]))
    write_parquet(pa.Table.from_pylist(functions, schema=FUNCTIONS), args.functions, FUNCTIONS)
    write_parquet(pa.Table.from_pylist(apis, schema=APIS), args.apis, APIS)
    write_json(summary, args.metrics)
    return 0


if __name__ == "__main__":
    sys.exit(main())
