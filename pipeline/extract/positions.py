"""Line and column of the extractor's nodes, from CPython's own parser.

libcst's PositionProvider regenerates the whole module's code with per-node bookkeeping and
costs about twice the parse. CPython's `ast` parses the same file in a tenth of libcst's time
and records positions; the extractor's walker meets calls, maximal attribute chains, bare-name
decorators and import statements in source order, and so does a sort of the same ast nodes by
(start, -end). The two sequences are checked name by name; on any disagreement the caller
falls back to PositionProvider, so positions are always libcst-exact in meaning.
"""

from __future__ import annotations

import ast

from pipeline.extract.visitor import SEQ_ATTRIBUTE, SEQ_CALL, SEQ_DECORATOR_NAME

Position = tuple[int, int]


def _key(node: ast.AST) -> tuple[int, int, int, int]:
    return (node.lineno, node.col_offset, -node.end_lineno, -node.end_col_offset)


def _tail(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


_AST_FIELDS: dict[type, tuple[str, ...]] = {}
_NO_CODE = frozenset({"ctx", "type_comment", "kind"})


def _ast_fields(cls: type) -> tuple[str, ...]:
    names = _AST_FIELDS.get(cls)
    if names is None:
        names = _AST_FIELDS[cls] = tuple(f for f in cls._fields if f not in _NO_CODE)
    return names


def ast_sequences(tree: ast.Module) -> list[list[ast.AST]]:
    """Calls, maximal attribute chains that are not called, bare-name decorators, import statements."""
    calls: list[ast.AST] = []
    attrs: list[ast.AST] = []
    decos: list[ast.AST] = []
    imports: list[ast.AST] = []
    inner: set[int] = set()  # attributes that are a call's callee or another attribute's value
    AST, Call, Attribute, Name = ast.AST, ast.Call, ast.Attribute, ast.Name
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    stack: list[ast.AST] = [tree]
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        node = pop()
        cls = node.__class__
        if cls is Call:
            calls.append(node)
            inner.add(id(node.func))
        elif cls is Attribute:
            attrs.append(node)
            inner.add(id(node.value))
            push(node.value)
            continue
        elif cls is ast.Import or cls is ast.ImportFrom:
            imports.append(node)
            continue
        elif cls in defs:
            decos.extend(d for d in node.decorator_list if d.__class__ is Name)
        for name in _ast_fields(cls):
            value = getattr(node, name)
            if value.__class__ is list:
                extend(v for v in value if isinstance(v, AST))
            elif isinstance(value, AST):
                push(value)
    attrs = [a for a in attrs if id(a) not in inner]
    seqs = [calls, attrs, decos, imports]
    for seq in seqs:
        seq.sort(key=_key)
    return seqs


def _column(lines: list[bytes] | None, line: int, byte_col: int) -> int:
    """ast columns count UTF-8 bytes; libcst's count characters."""
    if lines is None:
        return byte_col
    raw = lines[line - 1] if 0 < line <= len(lines) else b""
    return len(raw[:byte_col].decode("utf-8", "replace")) if not raw.isascii() else byte_col


def match(tree: ast.Module, text: str, tails: list[list[str | None]]) -> list[list[Position]] | None:
    """Positions for each sequence, or None when ast and libcst disagree on the sequences."""
    seqs = ast_sequences(tree)
    if [len(s) for s in seqs] != [len(t) for t in tails]:
        return None
    for seq_id in (SEQ_CALL, SEQ_ATTRIBUTE, SEQ_DECORATOR_NAME):
        nodes = seqs[seq_id] if seq_id != SEQ_CALL else [c.func for c in seqs[SEQ_CALL]]
        if [_tail(n) for n in nodes] != tails[seq_id]:
            return None
    lines = None if text.isascii() else text.encode("utf-8").splitlines()
    return [[(n.lineno, _column(lines, n.lineno, n.col_offset)) for n in seq] for seq in seqs]
