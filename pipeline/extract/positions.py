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


def ast_sequences(tree: ast.Module) -> list[list[ast.AST]]:
    """Calls, maximal attribute chains that are not called, bare-name decorators, import statements."""
    seqs: list[list[ast.AST]] = [[], [], [], []]
    calls, attrs, decos, imports = seqs
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:
        node, skip_attr = stack.pop()
        if isinstance(node, ast.Call):
            calls.append(node)
            stack.append((node.func, True))
            stack.extend((a, False) for a in node.args)
            stack.extend((k, False) for k in node.keywords)
            continue
        if isinstance(node, ast.Attribute):
            if not skip_attr:
                attrs.append(node)
            stack.append((node.value, True) if isinstance(node.value, ast.Attribute) else (node.value, False))
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append(node)
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            decos.extend(d for d in node.decorator_list if isinstance(d, ast.Name))
        stack.extend((child, False) for child in ast.iter_child_nodes(node))
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
