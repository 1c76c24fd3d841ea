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
from pipeline.extract.visitor import BIND_DEF, BIND_IMPORT, SEQ_IMPORT, Extractor

BUILTINS = frozenset(dir(builtins))

VIA = {BIND_IMPORT: "import", BIND_DEF: "def", -2: "builtin"}


class Rejected(Exception):
    """The file cannot be analysed; `reason` is a schemas.REJECT_REASONS code."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason, self.detail = reason, detail


@dataclass(frozen=True)
class FileResult:
    # (kind, module, level, name, asname, bound, target, scope, fallback, line)
    imports: tuple[tuple, ...]
    # (kind, chain, attr, line, col, enclosing_class, enclosing_function, via, payload)
    usages: tuple[tuple, ...]
    # (qualname, kind, signature, doc)
    definitions: tuple[tuple, ...]
    star_import: bool
    positions_from: str  # "ast" (matched) or "libcst" (PositionProvider fallback)


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
        if u.kind == "reference" and via != "import":
            continue  # attribute chains are kept when they name an imported module's member
        if u.kind == "decorator" and via is None:
            continue
        line, col = pos[u.seq][u.index]
        chain = ".".join(u.chain) if u.chain else None
        usages.append((u.kind, chain, u.attr, line, col, u.enclosing_class, u.enclosing_function, via, u.payload))
    imports = tuple(
        (r.kind, r.module, r.level, r.name, r.asname, r.bound, r.target, r.scope, r.fallback,
         import_lines[r.seq_index][0])
        for r in analysis.imports
    )
    definitions = tuple((d.qualname, d.kind, d.signature, d.doc) for d in analysis.definitions)
    return FileResult(imports, tuple(usages), definitions, analysis.star_import, source)


def _import_lines_from_libcst(module: cst.Module, provided) -> list[tuple[int, int]]:
    out = []

    class Imports(cst.CSTVisitor):
        def visit_Import(self, node):
            out.append((provided[node].start.line, provided[node].start.column))

        def visit_ImportFrom(self, node):
            out.append((provided[node].start.line, provided[node].start.column))

    module.visit(Imports())
    return out
