"""One file's text -> its path-independent analysis (what the per-content-hash cache holds)."""

from __future__ import annotations

import ast
import builtins
import gc
import warnings
from contextlib import contextmanager
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from pipeline.extract import positions
from pipeline.extract.stdlib import module_namespace
from pipeline.extract.visitor import BIND_BUILTIN, BIND_DEF, BIND_IMPORT, BIND_STAR, SEQ_IMPORT, Extractor

BUILTINS = frozenset(dir(builtins))

# `UsageRecord.via` -> `FileUsage.via`; local bindings and unresolved names map to None.
# "star": bound by no statement of the file, which star-imports (the build resolves it, or leaves it None).
VIA = {BIND_IMPORT: "import", BIND_DEF: "def", BIND_BUILTIN: "builtin", BIND_STAR: "star"}


class Rejected(Exception):
    """The file cannot be analysed; `reason` is a schemas.REJECT_REASONS code."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason, self.detail = reason, detail


@dataclass(frozen=True, slots=True)
class FileImport:
    """One name an import statement binds (a star import: one record, name "*")."""

    kind: str  # "import" or "from"
    module: str  # as written, without leading dots ("" for `from . import x`)
    level: int  # leading dots
    name: str | None  # from-imports: the imported name ("*" for a star import)
    asname: str | None
    bound: str | None  # the name the statement binds (None for a star import)
    target: str  # what `bound` denotes, relative to `level`
    scope: str  # enclosing qualname, "" at module level
    fallback: bool  # inside an except handler
    line: int


@dataclass(frozen=True, slots=True)
class FileUsage:
    """One call, method call, decorator or imported-member reference."""

    kind: str  # call, method, reference, decorator
    chain: str | None  # the written dotted name chain; None when the callee is not a name chain
    attr: str | None  # last attribute of a callee that is not a name chain
    line: int
    col: int
    enclosing_class: str | None
    enclosing_function: str | None
    via: str | None  # "import", "def", "builtin", "star" (maybe from a star import) or None (a local or unresolved name)
    payload: object  # via "import": index into FileResult.imports; "def": qualname; "builtin"/"star": name


@dataclass(frozen=True, slots=True)
class FileDefinition:
    """One module- or class-level definition (private ones too: `schemas.INVENTORY.private` flags them)."""

    qualname: str  # "" for the module itself
    kind: str  # module, class, function, method
    signature: str
    doc: str | None  # first docstring sentence
    platform: str | None = None  # defined only under a platform guard (pipeline.extract.platforms): "windows", ...


@dataclass(frozen=True, slots=True)
class FileResult:
    """Everything path-independent about one file's text: what the per-content-hash cache holds."""

    imports: tuple[FileImport, ...]
    usages: tuple[FileUsage, ...]
    definitions: tuple[FileDefinition, ...]
    star_import: bool
    positions_from: str  # "ast" (matched) or "libcst" (PositionProvider fallback)
    # module-level names every binding of which is platform-guarded, (name, platform) sorted
    platform_names: tuple[tuple[str, str], ...] = ()
    module_platform: str | None = None  # the module imports a Windows-only module at top level
    # (level, module as written, imported names) of each top-level import statement (not under `if`/`try`)
    requires: tuple[tuple[int, str, tuple[str, ...]], ...] = ()
    aliases: tuple[tuple[str, str], ...] = ()  # top-level `name = a.b`: (name, the chain as written)
    # the names the module binds once it has run, star imports aside (None: it makes names at run time), and its
    # literal `__all__` (None: none, or not literal): `pipeline.extract.stdlib.module_namespace`
    namespace: tuple[str, ...] | None = None
    exports: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class Analysed:
    """The file was analysed (one outcome of `pipeline.extract.build.analyse_file`; the cache holds these)."""

    result: FileResult


@dataclass(frozen=True, slots=True)
class Failed:
    """The file goes to the rejects table; `cacheable` failures depend on the bytes only (not on
    a time limit or a crash), so the cache keeps them."""

    reason: str  # a schemas.REJECT_REASONS code
    detail: str
    cacheable: bool


Outcome = Analysed | Failed


def _syntax_detail(exc: BaseException) -> str:
    line = getattr(exc, "lineno", None)
    return (f"line {line}: " if line else "") + str(getattr(exc, "msg", exc))[:300]


@contextmanager
def gc_paused():
    """libcst and ast trees hold no reference cycles, so reference counting frees them; the cyclic
    collector would otherwise rescan hundreds of thousands of fresh nodes several times per file,
    which costs more than our whole walk."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def analyse_source(text: str, libcst_positions: bool = False) -> FileResult:
    """Parse with CPython first: it rejects Python 2 code and excessive nesting cheaply and safely
    (libcst's native parser overflows its stack on a 10,000-deep expression), and gives positions.
    `libcst_positions` takes them from libcst's PositionProvider instead (the slow reference)."""
    with gc_paused():
        return _analyse(text, libcst_positions)


def _analyse(text: str, libcst_positions: bool) -> FileResult:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (RecursionError, MemoryError) as exc:
        raise Rejected("too_deep", f"ast: {type(exc).__name__}: {str(exc)[:200]}") from None
    except SyntaxError as exc:
        if "too many nested" in str(exc) or "too complex" in str(exc):
            raise Rejected("too_deep", f"ast: {_syntax_detail(exc)}") from None
        raise Rejected("syntax_error", f"ast: {_syntax_detail(exc)}") from None
    except ValueError as exc:  # e.g. source with NUL bytes
        raise Rejected("syntax_error", f"ast: {exc}"[:300]) from None
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        raise Rejected("syntax_error", f"libcst: line {exc.raw_line}: {exc.message}"[:300]) from None
    except RecursionError as exc:
        raise Rejected("too_deep", f"libcst: {exc}"[:300]) from None
    try:
        ex = Extractor(BUILTINS)
        analysis = ex.analyse(module)
    except RecursionError as exc:
        raise Rejected("too_deep", f"extract: {exc}"[:300]) from None
    pos = None if libcst_positions else positions.match(tree, text, ex.tails)
    source = "ast"
    if pos is None:
        source = "libcst"
        provided = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        pos = [[], [], [], []]
        for u in analysis.usages:
            start = provided[u.node].start
            pos[u.seq].append((u.index, (start.line, start.column)))
        pos = [dict(p) for p in pos]
        import_lines = _import_lines_from_libcst(module, provided)
    else:
        import_lines = pos[SEQ_IMPORT]
    usages = []
    for u in analysis.usages:
        via = VIA.get(u.via)
        if u.kind == "reference" and via not in ("import", "star"):
            continue  # attribute chains are kept when they name an imported module's member
        if u.kind == "decorator" and via is None:
            continue
        line, col = pos[u.seq][u.index]
        chain = ".".join(u.chain) if u.chain else None
        usages.append(FileUsage(u.kind, chain, u.attr, line, col, u.enclosing_class, u.enclosing_function, via,
                                u.payload))
    imports = tuple(
        FileImport(r.kind, r.module, r.level, r.name, r.asname, r.bound, r.target, r.scope, r.fallback,
                   import_lines[r.seq_index][0])
        for r in analysis.imports
    )
    definitions = tuple(FileDefinition(d.qualname, d.kind, d.signature, d.doc, d.platform)
                        for d in analysis.definitions)
    namespace, exports = module_namespace(text, tree)
    return FileResult(imports, tuple(usages), definitions, analysis.star_import, source,
                      tuple(sorted(analysis.platform_names.items())), analysis.module_platform,
                      analysis.requires, analysis.aliases, namespace, exports)


def _import_lines_from_libcst(module: cst.Module, provided) -> list[tuple[int, int]]:
    out = []

    class Imports(cst.CSTVisitor):
        def visit_Import(self, node):
            out.append((provided[node].start.line, provided[node].start.column))

        def visit_ImportFrom(self, node):
            out.append((provided[node].start.line, provided[node].start.column))

    module.visit(Imports())
    return out
