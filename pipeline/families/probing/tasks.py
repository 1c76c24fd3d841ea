"""The probing task generators (Troshin & Chirkova, "Probing Pretrained Models of Source Codes",
sec. 2), pure functions over one snippet's tree-sitter tree. Java and Python share them.

A snippet is one method (Java) or function (Python) cut from a corpus file: its text is the
source of the node, its tree the node's subtree in the file's parse. Tokens are the tree's
leaves without comments, a string literal being one token. Every span is a [start, end)
character range in the sample's text.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import tree_sitter
import tree_sitter_java
import tree_sitter_python

from pipeline.core.ids import stable_id, unit_float

Node = tree_sitter.Node
COMMENTS = frozenset(("comment", "line_comment", "block_comment"))
ATOMIC = {"java": frozenset(("string_literal", "character_literal", "text_block")),
          "python": frozenset(("string", "concatenated_string"))}
PLACEHOLDER = "var"  # the paper's placeholder for the variable-name task
NOT_VARIABLES = frozenset(("self", "cls"))


def parser(language: str) -> tree_sitter.Parser:
    lang = tree_sitter_java.language() if language == "java" else tree_sitter_python.language()
    return tree_sitter.Parser(tree_sitter.Language(lang))


@dataclass
class Token:
    text: str
    start: int  # characters in the snippet text
    end: int
    path: tuple[int, ...]  # 1-based child indices from the snippet's root (comments not counted)
    node: Node = field(repr=False, default=None)


@dataclass
class Snippet:
    snippet_id: str
    language: str
    text: str
    tokens: list[Token]
    variables: dict[str, list[int]]  # declared name -> indices into tokens of its occurrences, in order
    root: Node | None = field(default=None, repr=False)  # the method's node in the file's tree
    source: bytes = field(default=b"", repr=False)  # the file's bytes (the tree's byte offsets)

    @property
    def depth(self) -> int:
        """The AST depth: edges on the longest root-to-leaf path (the root alone: 0)."""
        return max((len(t.path) for t in self.tokens), default=0)


def _children(node: Node) -> list[Node]:
    return [c for c in node.children if c.type not in COMMENTS]


def _leaves(node: Node, language: str, path: tuple[int, ...] = ()):
    if node.child_count == 0 or node.type in ATOMIC[language]:
        if node.end_byte > node.start_byte:
            yield node, path
        return
    for i, child in enumerate(_children(node), 1):
        yield from _leaves(child, language, path + (i,))


def _declared(node: Node, language: str) -> list[Node]:
    """Identifier nodes that declare a local variable or parameter inside the snippet."""
    out = []
    stack = [node]
    while stack:
        n = stack.pop()
        stack.extend(n.children)
        if language == "java":
            if n.type in ("variable_declarator", "formal_parameter", "catch_formal_parameter", "enhanced_for_statement"):
                name = n.child_by_field_name("name")
                if name is not None and name.type == "identifier":
                    out.append(name)
        else:
            if n.type == "parameters":
                for p in n.named_children:
                    name = p if p.type == "identifier" else p.child_by_field_name("name")
                    if name is None and p.named_children and p.named_children[0].type == "identifier":
                        name = p.named_children[0]
                    if name is not None and name.type == "identifier":
                        out.append(name)
            elif n.type in ("assignment", "augmented_assignment", "for_statement", "for_in_clause"):
                left = n.child_by_field_name("left")
                if left is not None and left.type == "identifier":
                    out.append(left)
    return out


def _is_variable_use(leaf: Node, language: str) -> bool:
    """An identifier leaf that can refer to a local variable (not a member or a call's method name)."""
    if leaf.type != "identifier":
        return False
    parent = leaf.parent
    if parent is None:
        return True
    if language == "java":
        for ptype, fname in (("field_access", "field"), ("method_invocation", "name"), ("method_declaration", "name"),
                             ("constructor_declaration", "name")):
            if parent.type == ptype and parent.child_by_field_name(fname) == leaf:
                return False
    else:
        for ptype, fname in (("attribute", "attribute"), ("keyword_argument", "name"), ("function_definition", "name")):
            if parent.type == ptype and parent.child_by_field_name(fname) == leaf:
                return False
    return True


def snippet(node: Node, source: bytes, language: str, snippet_id: str) -> Snippet:
    """The snippet of `node` (a method or function) of a parsed file `source`."""
    base = node.start_byte
    raw = source[base:node.end_byte]
    text = raw.decode("utf-8", "replace")

    def char(b: int) -> int:
        return len(raw[:b - base].decode("utf-8", "replace"))

    tokens = [Token(leaf.text.decode("utf-8", "replace"), char(leaf.start_byte), char(leaf.end_byte), path, leaf)
              for leaf, path in _leaves(node, language)]
    names = {d.text.decode("utf-8", "replace") for d in _declared(node, language)} - NOT_VARIABLES
    variables: dict[str, list[int]] = {}
    for i, t in enumerate(tokens):
        if t.text in names and _is_variable_use(t.node, language):
            variables.setdefault(t.text, []).append(i)
    return Snippet(snippet_id, language, text, tokens, dict(sorted(variables.items())), node, source)


def snippets_of_file(text: str, language: str, file_id: str, prs: tree_sitter.Parser) -> list[Snippet]:
    """Every method (Java, with a body) or function (Python) not nested in another, without parse errors."""
    source = text.replace("\r\n", "\n").encode("utf-8")
    root = prs.parse(source).root_node
    kinds = (("method_declaration", "constructor_declaration") if language == "java" else ("function_definition",))
    out, stack = [], [root]
    while stack:
        n = stack.pop()
        if n.type in kinds:
            if not n.has_error and (language == "python" or n.child_by_field_name("body") is not None):
                out.append(snippet(n, source, language, stable_id(file_id, n.start_byte)))
            continue  # nested functions belong to their parent's snippet
        stack.extend(reversed(n.children))
    return out


def strip_comments(raw: bytes, comments: list[tuple[int, int]]) -> bytes:
    """`raw` without the byte ranges `comments`: a comment alone on its line(s) goes with its line, one after
    code on a line takes the spaces before it, and one between two tokens leaves one space (`a/*x*/b`, `a /*x*/ b`
    -> `a b`)."""
    out, at = [], 0
    for start, end in sorted(comments):
        line_start = raw.rfind(b"\n", 0, start) + 1
        nl = raw.find(b"\n", end)
        line_end = len(raw) if nl < 0 else nl
        before, after = raw[line_start:start], raw[end:line_end]
        if not before.strip() and not after.strip() and line_start >= at:
            out.append(raw[at:line_start])  # the whole line, its newline included
            at = line_end + 1 if nl >= 0 else line_end
            if nl < 0 and out and out[-1].endswith(b"\n"):
                out[-1] = out[-1][:-1]
            continue
        if not after.strip():  # after code, to the end of the line: the spaces before it go too
            cut = start - (len(before) - len(before.rstrip()))
            out.append(raw[at:max(cut, at)])
        else:
            out.append(raw[at:start])
            prev = raw[start - 1:start]
            if prev and not prev.isspace() and not raw[end:end + 1].isspace():
                out.append(b" ")
            elif prev in (b" ", b"\t"):  # `a /*x*/ b` -> `a b`: the spaces after it go
                while raw[end:end + 1] in (b" ", b"\t"):
                    end += 1
        at = end
    out.append(raw[at:])
    return b"".join(out)


def _wrapped(text: bytes, language: str) -> tuple[bytes, int]:
    """The method text in a context that parses it as a method (Java: a class body; a constructor alone
    does not parse), and the offset of the text in it."""
    if language == "java":
        head = b"class _ {\n"
        return head + text + b"\n}\n", len(head)
    return text, 0


def without_comments(s: Snippet, prs: tree_sitter.Parser) -> Snippet | None:
    """The snippet with its comments removed (`strip_comments`), re-parsed (same id): the release's data (Ahmad
    et al.'s standardised functions) has no comments. None when the text without them no longer parses as one
    method without errors (counted by the caller). Docstrings are strings, not comments: kept."""
    comments, stack = [], [s.root]
    while stack:
        n = stack.pop()
        if n.type in COMMENTS:
            comments.append((n.start_byte - s.root.start_byte, n.end_byte - s.root.start_byte))
        else:
            stack.extend(n.children)
    if not comments:
        return s
    raw = s.source[s.root.start_byte:s.root.end_byte]
    text, base = _wrapped(strip_comments(raw, comments), s.language)
    root = prs.parse(text).root_node
    node = root.descendant_for_byte_range(base, base)
    while node is not None and node.type != s.root.type:
        node = node.parent
    if node is None or node.has_error or node.start_byte != base:
        return None
    return snippet(node, text, s.language, s.snippet_id)


# ----------------------------------------------------------------- the tasks
# Every generator returns sample dicts: item_id, group (the snippet id), text, kind, spans,
# word (the token or name the sample is about), label or target, n_tokens (tokens of the snippet).


def top(counter: Counter, k: int) -> list:
    """The k most frequent keys, ties broken by the key (deterministic)."""
    return [key for key, _ in sorted(counter.items(), key=lambda kv: (-kv[1], str(kv[0])))[:k]]


def path_key(path: tuple[int, ...]) -> str:
    return ",".join(map(str, path))


def path_type(snippets: list[Snippet], k: int = 15) -> list[dict]:
    """Token path type, our variant `path_type_ours` (the release's is release.path_type): one sample
    per token whose path (1-based from the method node, comments not counted) is among the k most frequent."""
    classes = set(top(Counter(path_key(t.path) for s in snippets for t in s.tokens), k))
    return [{"item_id": stable_id("path_type", s.snippet_id, i), "group": s.snippet_id, "text": s.text, "kind": "word",
             "spans": [(t.start, t.end)], "word": t.text, "label": path_key(t.path), "n_tokens": len(s.tokens)}
            for s in snippets for i, t in enumerate(s.tokens) if path_key(t.path) in classes]


def ast_depth(snippets: list[Snippet]) -> list[dict]:
    """AST depth: one sample per snippet, the target its tree's depth."""
    return [{"item_id": stable_id("depth", s.snippet_id), "group": s.snippet_id, "text": s.text, "kind": "snippet",
             "spans": [], "word": None, "target": float(s.depth), "n_tokens": len(s.tokens)} for s in snippets]


def replace(text: str, spans: list[tuple[int, int]], new: str) -> tuple[str, list[tuple[int, int]]]:
    """`text` with every span (sorted, disjoint) replaced by `new`, and the spans of the replacements."""
    out, at, shift, where = [], 0, 0, []
    for a, b in sorted(spans):
        out.append(text[at:a])
        out.append(new)
        where.append((a + shift, a + shift + len(new)))
        shift += len(new) - (b - a)
        at = b
    out.append(text[at:])
    return "".join(out), where


def variable_name(snippets: list[Snippet], k: int = 15) -> list[dict]:
    """Variable name: for a declared name among the k most frequent, every occurrence replaced by
    the placeholder; the feature is the mean over all occurrences (a `span` request)."""
    classes = set(top(Counter(name for s in snippets for name in s.variables), k))
    rows = []
    for s in snippets:
        for name, idx in s.variables.items():
            if name not in classes:
                continue
            text, spans = replace(s.text, [(s.tokens[i].start, s.tokens[i].end) for i in idx], PLACEHOLDER)
            rows.append({"item_id": stable_id("variable_name", s.snippet_id, name), "group": s.snippet_id, "text": text,
                         "kind": "span", "spans": spans, "word": PLACEHOLDER, "label": name, "n_tokens": len(s.tokens)})
    return rows


def misuse(snippets: list[Snippet], seed: int) -> list[dict]:
    """Is variable misused: in a snippet with two or more variables, one use (not a variable's first
    occurrence, its declaration) gets another variable's name; the wrong snippet (label `misused`)
    and the correct one (label `correct`) each give the identifier at that place (a `word` request)."""
    rows = []
    for s in snippets:
        if len(s.variables) < 2:
            continue
        uses = [(name, i) for name, idx in s.variables.items() for i in idx[1:]]
        if not uses:
            continue
        name, i = uses[int(unit_float(seed, "misuse.use", s.snippet_id) * len(uses))]
        others = [n for n in s.variables if n != name]
        other = others[int(unit_float(seed, "misuse.name", s.snippet_id) * len(others))]
        t = s.tokens[i]
        wrong, [span] = replace(s.text, [(t.start, t.end)], other)
        for label, text, sp, word in (("correct", s.text, (t.start, t.end), name), ("misused", wrong, span, other)):
            rows.append({"item_id": stable_id("misuse", s.snippet_id, label), "group": s.snippet_id, "text": text,
                         "kind": "word", "spans": [sp], "word": word, "label": label, "n_tokens": len(s.tokens)})
    return rows


def algorithm(submissions: list[dict], max_chars: int = 1000) -> list[dict]:
    """Algorithm (CodeForces 1671A): accepted vs wrong answer, codes over `max_chars` characters left out."""
    rows = []
    for sub in submissions:
        code = sub["code"]
        if len(code) > max_chars or not code.strip():
            continue
        sid = stable_id("algorithm", sub["sent_id"], code)
        rows.append({"item_id": sid, "group": sid, "text": code, "kind": "snippet", "spans": [], "word": None,
                     "label": "accepted" if sub["target"] == "correct" else "wrong_answer",
                     "n_tokens": len(code.split())})
    return rows




# ----------------------------------------------------------------- is variable declared (sec. 2.3)

PRINT = {"java": ("System.out.println(", ");"), "python": ("print(", ")")}
LITERALS = {"java": frozenset(("decimal_integer_literal", "hex_integer_literal", "octal_integer_literal",
                               "binary_integer_literal", "decimal_floating_point_literal",
                               "hex_floating_point_literal", "string_literal", "character_literal", "true", "false",
                               "null_literal", "text_block")),
            "python": frozenset(("integer", "float", "string", "concatenated_string", "true", "false", "none"))}
FUNCTIONS = {"java": frozenset(("method_declaration", "constructor_declaration")),
             "python": frozenset(("function_definition",))}


@dataclass(frozen=True)
class Declaration:
    """A variable declared in the snippet: its name, where the declaration ends, and its scope
    [scope_start, scope_end) in bytes of the file (a use at a place in it is declared)."""

    name: str
    end: int
    scope_start: int
    scope_end: int


def _walk(node: Node):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def _enclosing(node: Node, types) -> Node | None:
    n = node.parent
    while n is not None and n.type not in types:
        n = n.parent
    return n


def declarations(root: Node, language: str) -> list[Declaration]:
    """Java: a local variable's scope is the rest of its block (a `for` init variable: the `for`
    statement), a parameter's the body, an enhanced-for / catch variable's the body it guards.
    Python (function scope): a parameter or an assignment / `for` target is in scope in the rest of
    its innermost function's body; `except ... as e` only in the handler (Python unbinds it after)."""
    out = []
    for n in _walk(root):
        name = None
        if language == "java":
            if n.type == "variable_declarator" and n.parent is not None and n.parent.type == "local_variable_declaration":
                name, stmt = n.child_by_field_name("name"), n.parent
                owner = stmt.parent
                scope = (stmt.end_byte, owner.end_byte) if owner is not None else None
            elif n.type in ("formal_parameter", "enhanced_for_statement", "catch_formal_parameter"):
                name = n.child_by_field_name("name")
                owner = n.parent if n.type != "enhanced_for_statement" else n
                if n.type == "formal_parameter":
                    owner = _enclosing(n, FUNCTIONS["java"] | {"lambda_expression"})
                elif n.type == "catch_formal_parameter":
                    owner = n.parent
                body = owner.child_by_field_name("body") if owner is not None else None
                scope = (body.start_byte, body.end_byte) if body is not None else None
        else:
            if n.type == "parameters":
                fn = n.parent
                body = fn.child_by_field_name("body") if fn is not None else None
                for p in n.named_children:
                    ident = p if p.type == "identifier" else p.child_by_field_name("name")
                    if ident is None and p.named_children and p.named_children[0].type == "identifier":
                        ident = p.named_children[0]
                    if ident is not None and ident.type == "identifier" and body is not None \
                            and ident.text.decode("utf-8", "replace") not in NOT_VARIABLES:
                        out.append(Declaration(ident.text.decode("utf-8", "replace"), n.end_byte, body.start_byte,
                                               body.end_byte))
                continue
            if n.type in ("assignment", "augmented_assignment", "for_statement"):
                left = n.child_by_field_name("left")
                fn = _enclosing(n, FUNCTIONS["python"])
                body = fn.child_by_field_name("body") if fn is not None else None
                if left is not None and left.type == "identifier" and body is not None:
                    stmt = n.parent if n.type != "for_statement" else n.child_by_field_name("left")
                    name, scope = left, (stmt.end_byte, body.end_byte)
            elif n.type == "as_pattern_target" and n.parent is not None and n.parent.parent is not None \
                    and n.parent.parent.type == "except_clause":
                block = next((c for c in n.parent.parent.named_children if c.type == "block"), None)
                if n.named_children and n.named_children[0].type == "identifier" and block is not None:
                    name, scope = n.named_children[0], (block.start_byte, block.end_byte)
        if name is not None and name.type == "identifier" and scope is not None:
            text = name.text.decode("utf-8", "replace")
            if text not in NOT_VARIABLES:
                out.append(Declaration(text, max(name.end_byte, scope[0]), scope[0], scope[1]))
    return sorted(out, key=lambda d: (d.end, d.name))


JUMPS = frozenset(("return_statement", "raise_statement", "throw_statement", "break_statement", "continue_statement"))


def places(root: Node, language: str) -> list[tuple[int, str]]:
    """Where a statement can be inserted: (byte in the file, indentation) before every statement of
    every block, and before a Java block's closing brace / after a Python function body's end; never
    right after a `return` / `raise` / `throw` / `break` / `continue` (unreachable code)."""
    out = []
    for n in _walk(root):
        if n.type != "block":
            continue
        stmts = [c for c in n.named_children if c.type not in COMMENTS]
        for k, s in enumerate(stmts):
            if k == 0 or stmts[k - 1].type not in JUMPS:
                out.append((s.start_byte, None))
        if stmts and stmts[-1].type in JUMPS:
            continue
        if language == "java" and n.children and n.children[-1].type == "}":
            out.append((n.children[-1].start_byte, None))
        elif language == "python" and stmts and n.parent is not None and n.parent.type == "function_definition":
            out.append((n.end_byte, "end"))
    return sorted(set(out))


def inserted_in_function(source: bytes, base: int, end: int, at: int, text: str, span: tuple[int, int],
                         language: str, prs: tree_sitter.Parser) -> bool | None:
    """The file with the sample's text in place of the snippet, parsed again: None when the snippet
    no longer parses (the insertion broke it), else whether the inserted name is inside the function."""
    new = source[:base] + text.encode("utf-8") + source[end:]
    root = prs.parse(new).root_node
    size = len(text.encode("utf-8"))
    fn = root.descendant_for_byte_range(base, base + size)
    while fn is not None and not (fn.start_byte == base and fn.type in FUNCTIONS[language]):
        fn = fn.parent
    if fn is None or fn.has_error:
        return None
    at_byte = base + len(text[:span[0]].encode("utf-8"))
    return fn.start_byte <= at_byte < fn.end_byte


def insert_use(source: bytes, base: int, at: int, where: str | None, name: str, language: str,
               end: int) -> tuple[str, tuple[int, int]] | None:
    """The snippet (file bytes [base, end)) with a use of `name` inserted at byte `at` (Java:
    `System.out.println(name); ` on the line; Python: `print(name)` as a statement of its own, at the
    place's indentation), and the character span of the inserted name; None where Python has no
    line of its own to put it on."""
    opening, closing = PRINT[language]
    head = source[base:at].decode("utf-8", "replace")
    rest = source[at:end].decode("utf-8", "replace")
    line = source[source.rfind(b"\n", 0, at) + 1:at].decode("utf-8", "replace")
    if language == "java":
        ins, start = f"{opening}{name}{closing} ", len(head) + len(opening)
    elif where == "end":  # after the function body's last statement, at the body's indentation
        body_line = line if not line.strip() else line[: len(line) - len(line.lstrip())]
        indent = body_line if body_line else "    "
        ins, start = f"\n{indent}{opening}{name}{closing}", len(head) + 1 + len(indent) + len(opening)
    elif line.strip():
        return None  # a statement sharing its line (`if a: b = 1`)
    else:
        ins, start = f"{opening}{name}{closing}\n{line}", len(head) + len(opening)
    return head + ins + rest, (start, start + len(name))


def declared_samples(node: Node, source: bytes, language: str, snippet_id: str, n_tokens: int, seed: int) -> list[dict]:
    """Is variable declared: per declaration, a use of its name inserted at a random place after the
    declaration (seeded by snippet and declaration); label `declared` when some declaration of
    that name has the place in its scope, else `undeclared`. The feature: the inserted name."""
    decls = declarations(node, language)
    spots = [p for p in places(node, language) if node.start_byte < p[0] <= node.end_byte]
    prs = parser(language)
    rows = []
    for k, d in enumerate(decls):
        after = [p for p in spots if p[0] >= d.end]
        made = None
        while after and made is None:
            pick = int(unit_float(seed, "declared.place", snippet_id, k, d.name, len(after)) * len(after))
            at, where = after.pop(pick)
            made = insert_use(source, node.start_byte, at, where, d.name, language, node.end_byte)
            if made is not None:  # a sample that does not parse, or lands outside the function: the next place
                in_function = inserted_in_function(source, node.start_byte, node.end_byte, at, *made, language, prs)
                made = made if in_function else None
        if made is None:
            continue
        text, span = made
        inside = any(o.name == d.name and o.scope_start <= at < o.scope_end and at >= o.end for o in decls)
        if where == "end":  # after the body: in scope of the function-wide declarations only
            inside = any(o.name == d.name and o.scope_start <= at <= o.scope_end and at >= o.end for o in decls)
        rows.append({"item_id": stable_id("declared", snippet_id, k, d.name), "group": snippet_id, "text": text,
                     "kind": "word", "spans": [span], "word": d.name,
                     "label": "declared" if inside else "undeclared", "n_tokens": n_tokens})
    return rows


# ----------------------------------------------------------------- data-flow edges (sec. 2.4)

def _value_tokens(s: "Snippet", node: Node, language: str, variables: set[int]) -> list[int]:
    """Indices of the variable occurrences and literals inside `node` (the sources of a value)."""
    lo, hi = node.start_byte, node.end_byte
    return [i for i, t in enumerate(s.tokens) if lo <= t.node.start_byte and t.node.end_byte <= hi
            and (i in variables or t.node.type in LITERALS[language])]


def dataflow_edges(s: "Snippet") -> dict[tuple[int, int], str]:
    """GraphCodeBERT-style data-flow edges between token indices, (dependent, source) -> kind:
    `computed_from` from an assignment's / initialised declaration's target to every variable or
    literal of its value (augmented `a += b`: to b; an enhanced for's variable: to the iterable's);
    `comes_from` from a variable's use to its last definition before it in text order (a
    definition takes effect after its value is read: in `x = x + 1` the right x comes from the
    previous definition)."""
    lang = s.language
    occ = {i for idx in s.variables.values() for i in idx}
    edges: dict[tuple[int, int], str] = {}
    defs: dict[int, int] = {}  # target token -> byte from which the definition holds
    for i in sorted(occ):
        node = s.tokens[i].node
        parent = node.parent
        value = None
        if parent is None:
            continue
        if lang == "java":
            if parent.type == "variable_declarator" and parent.child_by_field_name("name") == node:
                value = parent.child_by_field_name("value")
                defs[i] = parent.end_byte
            elif parent.type == "assignment_expression" and parent.child_by_field_name("left") == node:
                value = parent.child_by_field_name("right")
                defs[i] = parent.end_byte
            elif parent.type == "enhanced_for_statement" and parent.child_by_field_name("name") == node:
                value = parent.child_by_field_name("value")
                defs[i] = node.end_byte
            elif parent.type in ("formal_parameter", "catch_formal_parameter") \
                    and parent.child_by_field_name("name") == node:
                defs[i] = node.end_byte
        else:
            if parent.type in ("assignment", "augmented_assignment", "for_statement") \
                    and parent.child_by_field_name("left") == node:
                value = parent.child_by_field_name("right")
                defs[i] = parent.end_byte if parent.type != "for_statement" else node.end_byte
            elif parent.type in ("parameters", "default_parameter", "typed_parameter", "typed_default_parameter",
                                 "list_splat_pattern", "dictionary_splat_pattern"):
                if parent.type in ("default_parameter", "typed_default_parameter"):
                    if parent.child_by_field_name("name") != node:
                        continue
                defs[i] = node.end_byte
        if value is not None:
            for j in _value_tokens(s, value, lang, occ):
                edges[(i, j)] = "computed_from"
    for name, idx in s.variables.items():
        for i in idx:
            if i in defs:
                continue
            start = s.tokens[i].node.start_byte
            before = [d for d in idx if d in defs and defs[d] <= start]
            if before:
                edges[(i, max(before, key=lambda d: (defs[d], d)))] = "comes_from"
    return edges


def dataflow(snippets: list[Snippet], seed: int) -> list[dict]:
    """Edge prediction in the data-flow graph: every edge of `dataflow_edges` as a token pair
    (dependent, source), and as many `no_edge` pairs drawn (seeded) among the snippet's variable
    occurrences and literals that have no edge either way. Feature: the two tokens' means, concatenated."""
    rows = []
    for s in snippets:
        edges = dataflow_edges(s)
        if not edges:
            continue
        occ = {i for idx in s.variables.values() for i in idx}
        nodes = sorted(occ | {i for i, t in enumerate(s.tokens) if t.node.type in LITERALS[s.language]})
        linked = {frozenset(e) for e in edges}
        free = [(a, b) for a in nodes for b in nodes if a != b and frozenset((a, b)) not in linked]
        free.sort(key=lambda p: unit_float(seed, "dataflow.neg", s.snippet_id, *p))
        pairs = [(p, kind) for p, kind in sorted(edges.items())] + [(p, "no_edge") for p in free[:len(edges)]]
        for (a, b), kind in pairs:
            ta, tb = s.tokens[a], s.tokens[b]
            rows.append({"item_id": stable_id("dataflow", s.snippet_id, a, b), "group": s.snippet_id, "text": s.text,
                         "kind": "pair", "spans": [(ta.start, ta.end), (tb.start, tb.end)],
                         "word": f"{ta.text} {tb.text}", "label": kind, "n_tokens": len(s.tokens)})
    return rows


def declared(snippets: list[Snippet], seed: int) -> list[dict]:
    """Is variable declared, over snippets that carry their tree (`Snippet.root`)."""
    rows = []
    for s in snippets:
        if s.root is not None:
            rows.extend(declared_samples(s.root, s.source, s.language, s.snippet_id, len(s.tokens), seed))
    return rows


GENERATORS = ("path_type", "depth", "declared", "dataflow", "variable_name", "misuse",  # the release's (release.py)
              "path_type_ours", "depth_any_leaf", "declared_every", "dataflow_last_def", "variable_name_declared",
              "misuse_declared",
              # the release's on the grammar it ran on (generate.release_parser_task; Java)
              *(f"{t}_release_parser" for t in ("path_type", "depth", "declared", "dataflow", "variable_name", "misuse")))
