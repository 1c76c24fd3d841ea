"""Python samples and their CodeSyntax relations, from `ast` and `tokenize`.

Tokens are everything `tokenize.generate_tokens` yields (NEWLINE, NL, INDENT, DEDENT,
COMMENT and ENDMARKER included), as in the paper's dataset. A node is located by
its exact start and end positions in that stream (ast column offsets are UTF-8 bytes,
tokenize's are characters, so non-ASCII lines are converted), rather than by
re-tokenizing the code before every node as the paper's release does.
"""

from __future__ import annotations

import ast
import io
import tokenize
from functools import lru_cache
from typing import Iterator

from pipeline.syntax.common import CLOSERS, NEWLINE, OPENERS, EdgeSink, Failure, Sample

# Tokens that mark layout, never the start or end of a node.
LAYOUT = frozenset((tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER))
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class PythonTokens:
    """The token stream of one sample and the paper's head/dependent rules over it."""

    def __init__(self, code: str, with_newlines: bool):
        self.with_newlines = with_newlines
        self.code_lines = code.split("\n")
        self.strings: list[str] = []
        self.kinds: list[str] = []
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.start_at: dict[tuple[int, int], int] = {}
        self.end_at: dict[tuple[int, int], int] = {}
        strings, kinds, rows, cols = self.strings.append, self.kinds.append, self.rows.append, self.cols.append
        start_at, end_at, names = self.start_at, self.end_at, tokenize.tok_name
        for i, (kind, string, start, end, _) in enumerate(tokenize.generate_tokens(io.StringIO(code).readline)):
            strings(string)
            kinds(names[kind])
            rows(start[0])
            cols(start[1])
            if kind in LAYOUT or not string:
                continue
            if start not in start_at:
                start_at[start] = i
            end_at[end] = i

    def _char_col(self, row: int, byte_col: int) -> int:
        line = self.code_lines[row - 1]
        return byte_col if line.isascii() else len(line.encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def _start(self, row: int, byte_col: int) -> int | None:
        """Index of the token starting at the node position (`_char_col` inlined: the hot path)."""
        line = self.code_lines[row - 1]
        if not line.isascii():
            byte_col = len(line.encode("utf-8")[:byte_col].decode("utf-8", "replace"))
        return self.start_at.get((row, byte_col))

    def first(self, node: ast.AST | list | None) -> int | None:
        """Index of the node's first token, leading brackets skipped unless immediately closed.

        A node that does not start at a token of its own (an expression inside an
        f-string, one STRING token in Python 3.11) has no index and so no edges.
        """
        if isinstance(node, list):
            node = node[0] if node else None
        if isinstance(node, ast.comprehension):
            node = node.target
        if node is None:
            return None
        i = self._start(node.lineno, node.col_offset)
        if i is None:
            return None
        s = self.strings
        while s[i] in OPENERS and s[i + 1] not in CLOSERS:
            i += 1
        return i

    def last(self, node: ast.AST | list | None) -> int | None:
        """Index of the node's last token: the following newline in the with-newlines
        variant, otherwise with trailing closing brackets dropped."""
        if isinstance(node, list):
            node = node[-1] if node else None
        if isinstance(node, ast.comprehension):
            node = node.iter
        if node is None:
            return None
        i = self.end_at.get((node.end_lineno, self._char_col(node.end_lineno, node.end_col_offset)))
        if i is None:
            return None
        s = self.strings
        if self.with_newlines and i + 1 < len(s) and s[i + 1] == NEWLINE:
            return i + 1
        while i > 0 and s[i] in CLOSERS:
            i -= 1
        return i


class PythonRelations:
    """One visit of a function's body; one method per node type that has relations."""

    def __init__(self, tokens: PythonTokens):
        self.t = tokens
        self.sink = EdgeSink()

    def edge(self, relation: str, head: int | None, dep_first: ast.AST | list | None,
             dep_last: ast.AST | list | None = None) -> None:
        if dep_first is None or (isinstance(dep_first, list) and not dep_first):
            return
        self.sink.add(relation, head, self.t.first(dep_first), self.t.last(dep_first if dep_last is None else dep_last))

    def visit_function(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """The paper labels a function's body only: no edges in its decorators or signature."""
        for statement in function.body:
            self.visit(statement)

    def visit(self, node: ast.AST) -> None:
        cls = type(node)
        if cls in FUNCTIONS:
            self.visit_function(node)
            return
        method, has_position, fields = _node_type(cls)
        if method is not None:
            method(self, node)
        head = _UNSET  # the node's first token, looked up once for all its children
        for name in fields:
            value = getattr(node, name, None)
            for child in value if isinstance(value, list) else (value,):
                if isinstance(child, ast.AST):
                    if has_position and type(child) not in FUNCTIONS and _node_type(type(child))[1]:
                        if head is _UNSET:
                            head = self.t.first(node)
                        self.edge("children:parent->child", head, child)
                    self.visit(child)

    # --- one method per node type, as in the paper's inventory -------------------------------

    def rel_If(self, node: ast.If) -> None:
        f = self.t.first
        head = f(node)  # the `if` (or `elif`) keyword
        if node.orelse:
            lo, hi = self.t.last(node.body[-1]), f(node.orelse[0])
            if lo is not None and hi is not None:
                for i in range(lo + 1, hi + 1):
                    if self.t.strings[i] in ("else", "elif"):
                        self.sink.add("If:if->else", head, i, i)
                        break
        self.edge("If:if->test", head, node.test)
        self.edge("If:if->body", head, node.body)
        self.edge("If:test->body", f(node.test), node.body)
        self.edge("If:test->orelse", f(node.test), node.orelse)
        self.edge("If:body->orelse", f(node.body), node.orelse)

    def rel_Call(self, node: ast.Call) -> None:
        callee = self.t.last(node.func)  # Call:func->* is headed by the callee's last token
        self.edge("Call:func->args", callee, node.args)
        self.edge("Call:func->keywords", callee, node.keywords)
        if node.args:
            self.edge("Call:args->keywords", self.t.first(node.args), node.keywords)

    def rel_Assign(self, node: ast.Assign) -> None:
        self.edge("Assign:target->value", self.t.first(node.targets[0]), node.value)

    def rel_AugAssign(self, node: ast.AugAssign) -> None:
        self.edge("AugAssign:target->value", self.t.first(node.target), node.value)

    def rel_While(self, node: ast.While) -> None:
        head = self.t.first(node)
        self.edge("While:while->test", head, node.test)
        self.edge("While:while->body", head, node.body)
        self.edge("While:test->body", self.t.first(node.test), node.body)

    def rel_For(self, node: ast.For) -> None:
        f = self.t.first
        head = f(node)
        self.edge("For:for->body", head, node.body)
        self.edge("For:for->target", head, node.target)
        self.edge("For:for->iter", head, node.iter)
        self.edge("For:target->iter", f(node.target), node.iter)
        self.edge("For:target->body", f(node.target), node.body)
        self.edge("For:iter->body", f(node.iter), node.body)

    def rel_BinOp(self, node: ast.BinOp) -> None:
        self.edge("BinOp:left->right", self.t.first(node.left), node.right)

    def rel_BoolOp(self, node: ast.BoolOp) -> None:
        if len(node.values) >= 2:
            self.edge("BoolOp:value->value", self.t.first(node.values[0]), node.values[1])

    def rel_Compare(self, node: ast.Compare) -> None:
        self.edge("Compare:left->comparator", self.t.first(node.left), node.comparators)

    def rel_Try(self, node: ast.Try | ast.TryStar) -> None:
        f = self.t.first
        if node.handlers:
            self.edge("Try:body->handler", f(node.body), node.handlers)
            self.edge("Try:handler->orelse", f(node.handlers), node.orelse)
            self.edge("Try:handler->finalbody", f(node.handlers), node.finalbody)
        self.edge("Try:body->orelse", f(node.body), node.orelse)
        self.edge("Try:body->finalbody", f(node.body), node.finalbody)

    rel_TryStar = rel_Try

    def rel_IfExp(self, node: ast.IfExp) -> None:
        f = self.t.first
        self.edge("IfExp:body->test", f(node.body), node.test)
        self.edge("IfExp:test->orelse", f(node.test), node.orelse)
        self.edge("IfExp:body->orelse", f(node.body), node.orelse)

    def rel_Attribute(self, node: ast.Attribute) -> None:
        attr = self.t.last(node)
        if self.t.with_newlines and attr is not None and self.t.strings[attr] == NEWLINE:
            attr -= 1  # the attribute name itself, not the newline after it
        self.sink.add("Attribute:value->attr", self.t.first(node.value), attr, attr)

    def rel_Dict(self, node: ast.Dict) -> None:
        for key, value in zip(node.keys, node.values):
            if key is not None:
                self.edge("Dict:key->value", self.t.first(key), value)

    def rel_Subscript(self, node: ast.Subscript) -> None:
        self.edge("Subscript:value->slice", self.t.first(node.value), node.slice)

    def rel_Slice(self, node: ast.Slice) -> None:
        if node.lower is not None:
            self.edge("Slice:lower->upper", self.t.first(node.lower), node.upper)

    def rel_With(self, node: ast.With) -> None:
        self.edge("With:item->body", self.t.first(node.items[0].context_expr), node.body)

    def _element_generator(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp) -> None:
        # A generator span runs from the first `for` target to the last generator's iterable.
        self.edge(type(node).__name__ + ":elt->generator", self.t.first(node.elt), node.generators)

    rel_ListComp = rel_SetComp = rel_GeneratorExp = _element_generator

    def rel_DictComp(self, node: ast.DictComp) -> None:
        f = self.t.first
        self.edge("DictComp:key->value", f(node.key), node.value)
        self.edge("DictComp:key->generator", f(node.key), node.generators)
        self.edge("DictComp:value->generator", f(node.value), node.generators)

    def rel_comprehension(self, node: ast.comprehension) -> None:
        self.edge("comprehension:target->iter", self.t.first(node.target), node.iter)


_UNSET = object()


@lru_cache(maxsize=None)
def _node_type(cls: type) -> tuple:
    """Per ast node type: its `rel_*` method (or None), whether it has a position, and its fields."""
    return getattr(PythonRelations, "rel_" + cls.__name__, None), "lineno" in cls._attributes, cls._fields


def normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def functions(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function or method not nested in another function, with its qualified name."""
    stack: list[tuple[str, ast.AST]] = [("", tree)]
    while stack:
        prefix, node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, FUNCTIONS):
                yield prefix + child.name, child
            elif isinstance(child, ast.ClassDef):
                stack.append((prefix + child.name + ".", child))
            elif isinstance(child, ast.stmt):
                stack.append((prefix, child))


def cut(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[int, str]:
    """The function's lines (decorators included), dedented by the `def` line's indentation."""
    start = min([d.lineno for d in node.decorator_list] + [node.lineno])
    def_line = lines[node.lineno - 1]
    indent = def_line[: len(def_line) - len(def_line.lstrip(" \t\f"))]
    out = []
    for line in lines[start - 1 : node.end_lineno]:
        if line.startswith(indent):
            out.append(line[len(indent):])
        elif not line.strip():
            out.append("")
        else:
            out.append(line)  # a continuation line of a string or bracket: left as written
    return start, "\n".join(out) + "\n"


def label_function(name: str, start: int, code: str, max_tokens: int, with_newlines: bool) -> Sample | Failure:
    try:
        tokens = PythonTokens(code, with_newlines)
    except (tokenize.TokenError, SyntaxError) as exc:
        return Failure(name, start, "syntax_error", f"tokenize: {exc}"[:300])
    if len(tokens.strings) > max_tokens:
        return Failure(name, start, "too_many_tokens", f"{len(tokens.strings)} > {max_tokens}")
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return Failure(name, start, "syntax_error", f"{type(exc).__name__}: {exc}"[:300])
    if len(tree.body) != 1 or not isinstance(tree.body[0], FUNCTIONS):
        return Failure(name, start, "syntax_error", "the cut text is not one function")
    relations = PythonRelations(tokens)
    relations.visit_function(tree.body[0])
    return Sample(name, start, code, tokens.strings, tokens.kinds, tokens.rows, tokens.cols, relations.sink.edges)


def label_file(text: str, max_tokens: int, with_newlines: bool) -> list[Sample | Failure]:
    """Samples (or failures) for every function of a file; one failure if the file does not parse."""
    text = normalise_newlines(text)
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        return [Failure("", 0, "syntax_error", f"{type(exc).__name__}: {exc}"[:300])]
    except (RecursionError, MemoryError) as exc:
        return [Failure("", 0, "too_deep", type(exc).__name__)]
    lines = text.split("\n")
    out: list[Sample | Failure] = []
    for name, node in functions(tree):
        start, code = cut(lines, node)
        try:
            out.append(label_function(name, start, code, max_tokens, with_newlines))
        except (RecursionError, MemoryError) as exc:
            out.append(Failure(name, start, "too_deep", type(exc).__name__))
    return out
