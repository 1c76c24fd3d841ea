"""Java samples and their CodeSyntax relations, from tree-sitter-java.

Tokens are tree-sitter's leaf tokens without comments, a string literal being one
token (as javalang, the paper's tokenizer, has it). Relations follow the paper's
Eclipse JDT labeller on the analogous tree-sitter nodes; a method whose subtree
holds an ERROR or MISSING node is rejected rather than labelled from a guessed tree.
"""

from __future__ import annotations

from typing import Iterator

import tree_sitter
import tree_sitter_java

from pipeline.syntax.common import CLOSERS, NEWLINE, OPENERS, EdgeSink, Failure, Sample

COMMENTS = frozenset(("line_comment", "block_comment"))
ATOMIC = frozenset(("string_literal", "character_literal"))  # one token each, as javalang has them
METHODS = frozenset(("method_declaration", "constructor_declaration", "compact_constructor_declaration"))
TYPES = frozenset(("class_declaration", "interface_declaration", "enum_declaration", "record_declaration",
                   "annotation_type_declaration"))

Node = tree_sitter.Node


def java_parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_java.language()))


# Grouping nodes that JDT does not have: their children count as the grandparent's. `throws`: JDT's
# MethodDeclaration holds its thrown exception types directly; `finally_clause`: JDT's TryStatement holds its
# finally Block directly; `annotation_argument_list`: JDT's SingleMemberAnnotation holds its value and its
# NormalAnnotation its member-value pairs directly (checked against Eclipse JDT's AST on JDK methods: README
# "Java against JDT").
FLATTENED = frozenset(("argument_list", "formal_parameters", "type_arguments", "type_parameters", "modifiers",
                       "class_body", "interface_body", "enum_body", "switch_block", "switch_block_statement_group",
                       "resource_specification", "inferred_parameters", "dimensions", "throws", "finally_clause",
                       "annotation_argument_list"))


# Statements whose condition tree-sitter wraps in a parenthesized_expression: JDT's IfStatement, WhileStatement,
# DoStatement, SwitchStatement and SynchronizedStatement hold the expression inside the parentheses, so its span ends
# before the `)` (which matters in the with-newlines variant: `if (a)` + line break ends on `a`, not on `) \n`).
CONDITIONED = frozenset(("if_statement", "while_statement", "do_statement", "switch_expression", "switch_statement",
                         "synchronized_statement"))


def named(node: Node | None) -> list[Node]:
    """The named children that carry syntax (comments are tokens of no one)."""
    return [] if node is None else [c for c in node.named_children if c.type not in COMMENTS]


def unwrapped(parent: Node, child: Node | None) -> Node | None:
    """A statement's condition as JDT has it: the expression inside tree-sitter's parenthesized_expression."""
    if child is not None and child.type == "parenthesized_expression" and parent.type in CONDITIONED:
        inner = named(child)
        if len(inner) == 1:
            return inner[0]
    return child


def ast_children(node: Node) -> list[Node]:
    """Children as JDT would have them: grouping nodes replaced by their own children, a statement's condition
    without its parentheses."""
    out = []
    for child in named(node):
        out.extend(ast_children(child) if child.type in FLATTENED else [unwrapped(node, child)])
    return out


def condition(node: Node) -> Node | None:
    return unwrapped(node, node.child_by_field_name("condition"))


class JavaTokens:
    """The token stream of one method and the paper's head/dependent rules over it."""

    def __init__(self, method: Node, source: bytes, with_newlines: bool):
        self.with_newlines = with_newlines
        self.strings: list[str] = []
        self.kinds: list[str] = []
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.start_at: dict[int, int] = {}
        self.end_at: dict[int, int] = {}
        self.source = source
        self.base_row, self.base_col = method.start_point
        self._row, self._at = self.base_row, method.start_byte - method.start_point[1]
        # the current line's column, counted incrementally (characters up to byte _col_at): a token's
        # column costs the bytes since the previous token, not the whole line (a one-line method of
        # 1 MB stays linear)
        self._col, self._col_at = 0, self._at
        self.skip = OPENERS | {NEWLINE} if with_newlines else OPENERS
        previous_end = None
        for leaf in self._leaves(method):
            if with_newlines and previous_end is not None:
                gap = source[previous_end:leaf.start_byte]
                at = previous_end
                for _ in range(gap.count(b"\n")):
                    at = source.index(b"\n", at)
                    self._append(NEWLINE, "NEWLINE", at, at + 1)
                    at += 1
            self.start_at[leaf.start_byte] = len(self.strings)
            self.end_at[leaf.end_byte] = len(self.strings)
            self._append(leaf.text.decode("utf-8", "replace"), leaf.type, leaf.start_byte, leaf.end_byte)
            previous_end = leaf.end_byte

    def _leaves(self, node: Node) -> Iterator[Node]:
        stack = [node]
        while stack:
            n = stack.pop()
            if n.type in COMMENTS:
                continue
            if n.child_count == 0 or n.type in ATOMIC:
                yield n
            else:
                stack.extend(reversed(n.children))

    def _append(self, text: str, kind: str, start: int, end: int) -> None:
        # Tokens come in source order, so look only at the bytes since the previous one.
        newlines = self.source.count(b"\n", self._at, start)
        if newlines:
            self._row += newlines
            self._col, self._col_at = 0, self.source.rfind(b"\n", self._at, start) + 1
        self._at = start
        self._col += len(self.source[self._col_at:start].decode("utf-8", "replace"))
        self._col_at = start
        col = self._col
        self.strings.append(text)
        self.kinds.append(kind)
        self.rows.append(self._row - self.base_row + 1)
        self.cols.append(col - self.base_col if self._row == self.base_row else col)

    def first(self, node: Node | None) -> int | None:
        """The node's first token, skipping opening brackets; none if a closer follows one."""
        if node is None:
            return None
        i = self.start_at.get(node.start_byte)
        if i is None:
            return None
        s = self.strings
        while s[i] in self.skip:
            i += 1
            if i >= len(s) or s[i] in CLOSERS:
                return None
        return i

    def last(self, node: Node | None, before_semicolon: bool = False) -> int | None:
        """The node's last token: the following newline in the with-newlines variant,
        otherwise with closing brackets dropped; none if an opener is reached."""
        if node is None:
            return None
        i = self.end_at.get(node.end_byte)
        if i is None:
            return None
        if before_semicolon and self.strings[i] == ";":
            i -= 1
        return self.end(i)

    def end(self, i: int) -> int | None:
        """A dependent span's end given its last token `i`, by the release's `get_idx`: with newlines, the newline
        token right after it, if there is one; then closing brackets dropped, and no span (none) when that reaches
        an opener or, with newlines, a newline token (`{ ... \n }` followed by anything but a line break: the
        release drops such a span in its with-newlines labels)."""
        s = self.strings
        if self.with_newlines and i + 1 < len(s) and s[i + 1] == NEWLINE:
            return i + 1
        while s[i] in CLOSERS:
            i -= 1
            if s[i] in self.skip:
                return None
        return i


class JavaRelations:
    """One walk over a method's named nodes; one method per node type that has relations."""

    def __init__(self, tokens: JavaTokens):
        self.t = tokens
        self.sink = EdgeSink()

    def edge(self, relation: str, head: int | None, first: Node | None, last: Node | None = None,
             before_semicolon: bool = False) -> None:
        if first is None:
            return
        last = last or first
        if last.type == "switch_label" and last.next_sibling is not None and last.next_sibling.type == ":":
            last = last.next_sibling  # JDT's SwitchCase ends on its `:` (tree-sitter leaves it a sibling)
        self.sink.add(relation, head, self.t.first(first), self.t.last(last, before_semicolon))

    def visit(self, root: Node) -> None:
        stack = [root]
        while stack:
            node = stack.pop()
            method = getattr(self, "rel_" + node.type, None)
            if method is not None:
                method(node)
            if node.type in ATOMIC:
                continue
            children = ast_children(node)
            head = self.t.first(node)
            for child in children:
                semi = node.type == "for_statement" and child.type == "local_variable_declaration"
                self.edge("children:parent->child", head, child, before_semicolon=semi)
            stack.extend(reversed(children))

    def rel_if_statement(self, node: Node) -> None:
        f = self.t.first
        head = f(node)  # the `if` keyword
        test, body, orelse = condition(node), node.child_by_field_name("consequence"), \
            node.child_by_field_name("alternative")
        if orelse is not None:
            keyword = next((c for c in node.children if c.type == "else"), None)
            at = None if keyword is None else self.t.start_at.get(keyword.start_byte)
            if at is not None:  # `else`, or `else \n` with newlines
                self.sink.add("If:if->else", head, at, self.t.end(at))
        self.edge("If:if->test", head, test)
        self.edge("If:if->body", head, body)
        self.edge("If:test->body", f(test), body)
        self.edge("If:test->orelse", f(test), orelse)
        self.edge("If:body->orelse", f(body), orelse)

    def rel_method_invocation(self, node: Node) -> None:
        receiver = node.child_by_field_name("object")
        if receiver is not None and receiver.type == "super":
            return  # JDT's SuperMethodInvocation, which the paper does not label
        name = self.t.first(node.child_by_field_name("name"))
        args = named(node.child_by_field_name("arguments"))
        if args:
            self.edge("Call:func->args", name, args[0], args[-1])
        if receiver is not None:
            self.sink.add("Attribute:value->attr", self.t.first(receiver), name, name)

    def rel_assignment_expression(self, node: Node) -> None:
        self.edge("Assign:target->value", self.t.first(node.child_by_field_name("left")),
                  node.child_by_field_name("right"))

    def rel_while_statement(self, node: Node) -> None:
        head, test, body = self.t.first(node), condition(node), node.child_by_field_name("body")
        self.edge("While:while->test", head, test)
        self.edge("While:while->body", head, body)
        self.edge("While:test->body", self.t.first(test), body)

    def rel_for_statement(self, node: Node) -> None:
        f = self.t.first
        head = f(node)
        inits, updates = node.children_by_field_name("init"), node.children_by_field_name("update")
        test, body = node.child_by_field_name("condition"), node.child_by_field_name("body")
        init_first, init_last = (inits[0], inits[-1]) if inits else (None, None)
        upd_first, upd_last = (updates[0], updates[-1]) if updates else (None, None)
        # A declaration initializer ends before its `;`, as JDT's VariableDeclarationExpression does.
        semi = init_last is not None and init_last.type == "local_variable_declaration"
        self.edge("For:for->body", head, body)
        self.edge("For:for->test", head, test)
        self.edge("For:for->initializers", head, init_first, init_last, before_semicolon=semi)
        self.edge("For:for->updaters", head, upd_first, upd_last)
        if test is not None:
            if inits:
                self.edge("For:initializers->test", f(init_first), test)
            self.edge("For:test->updaters", f(test), upd_first, upd_last)
            self.edge("For:test->body", f(test), body)
        if inits:
            self.edge("For:initializers->updaters", f(init_first), upd_first, upd_last)
            self.edge("For:initializers->body", f(init_first), body)
        self.edge("For:updaters->body", f(upd_first), body)

    def rel_try_statement(self, node: Node) -> None:
        f = self.t.first
        body = node.child_by_field_name("body")
        handlers = [c for c in node.named_children if c.type == "catch_clause"]
        final = next((c for c in node.named_children if c.type == "finally_clause"), None)
        final_block = next((c for c in named(final) if c.type == "block"), None)
        self.edge("Try:body->finalbody", f(body), final_block)
        if handlers:
            self.edge("Try:handler->finalbody", f(handlers[0]), final_block)
            self.edge("Try:body->handler", f(body), handlers[0], handlers[-1])

    rel_try_with_resources_statement = rel_try_statement

    def rel_ternary_expression(self, node: Node) -> None:
        f = self.t.first
        test, body, orelse = (node.child_by_field_name(n) for n in ("condition", "consequence", "alternative"))
        self.edge("IfExp:test->body", f(test), body)
        self.edge("IfExp:test->orelse", f(test), orelse)
        self.edge("IfExp:body->orelse", f(body), orelse)

    def rel_do_statement(self, node: Node) -> None:
        head, body, test = self.t.first(node), node.child_by_field_name("body"), condition(node)
        self.edge("Do:body->test", self.t.first(body), test)
        self.edge("Do:do->body", head, body)
        self.edge("Do:do->test", head, test)

    def rel_switch_expression(self, node: Node) -> None:
        head, expr = self.t.first(node), condition(node)
        groups = named(node.child_by_field_name("body"))
        self.edge("Switch:switch->expr", head, expr)
        if groups:
            self.edge("Switch:expr->statement", self.t.first(expr), groups[0], groups[-1])
            self.edge("Switch:switch->statement", head, groups[0], groups[-1])

    rel_switch_statement = rel_switch_expression

    def rel_array_access(self, node: Node) -> None:
        self.edge("Subscript:value->slice", self.t.first(node.child_by_field_name("array")),
                  node.child_by_field_name("index"))

    def rel_labeled_statement(self, node: Node) -> None:
        parts = named(node)
        if len(parts) >= 2:
            self.edge("LabeledStatement:label->body", self.t.first(parts[0]), parts[-1])

    def rel_instanceof_expression(self, node: Node) -> None:
        self.edge("InstanceofExpr:expr->type", self.t.first(node.child_by_field_name("left")),
                  node.child_by_field_name("right"))

    def rel_binary_expression(self, node: Node) -> None:
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        operator = node.child_by_field_name("operator").type
        if left.type == "binary_expression" and left.child_by_field_name("operator").type == operator:
            return  # `a + b + c` is one JDT InfixExpression whose left->right edge is a->b
        self.edge("InfixExpr:left->right", self.t.first(left), right)


def methods(root: Node) -> Iterator[tuple[str, Node]]:
    """Every method or constructor of a type (not one inside another method's body), qualified."""
    stack: list[tuple[str, Node]] = [("", root)]
    while stack:
        prefix, node = stack.pop()
        for child in reversed(node.named_children):
            if child.type in METHODS:
                name = child.child_by_field_name("name")
                yield prefix + (name.text.decode("utf-8", "replace") if name else child.type), child
            elif child.type in TYPES:
                name = child.child_by_field_name("name")
                stack.append((prefix + (name.text.decode("utf-8", "replace") if name else "?") + ".", child))
            elif child.type not in COMMENTS:
                stack.append((prefix, child))


def label_method(name: str, node: Node, source: bytes, max_tokens: int, with_newlines: bool) -> Sample | Failure | None:
    start = node.start_point[0] + 1
    body = node.child_by_field_name("body")
    if body is None:
        return None  # abstract or interface method: no body, nothing to label
    if node.has_error:
        return Failure(name, start, "parse_error", "tree-sitter ERROR or MISSING node inside the method")
    tokens = JavaTokens(node, source, with_newlines)
    if len(tokens.strings) > max_tokens:
        return Failure(name, start, "too_many_tokens", f"{len(tokens.strings)} > {max_tokens}")
    relations = JavaRelations(tokens)
    relations.visit(node)
    code = source[node.start_byte:node.end_byte].decode("utf-8", "replace") + "\n"
    return Sample(name, start, code, tokens.strings, tokens.kinds, tokens.rows, tokens.cols, relations.sink.edges)


def label_file(text: str, max_tokens: int, with_newlines: bool, parser: tree_sitter.Parser) -> list[Sample | Failure]:
    source = text.replace("\r\n", "\n").encode("utf-8")
    tree = parser.parse(source)
    out: list[Sample | Failure] = []
    for name, node in sorted(methods(tree.root_node), key=lambda m: m[1].start_byte):
        result = label_method(name, node, source, max_tokens, with_newlines)
        if result is not None:
            out.append(result)
    return out
