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
    return Snippet(snippet_id, language, text, tokens, dict(sorted(variables.items())))


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


# ----------------------------------------------------------------- the tasks
# Every generator returns sample dicts: item_id, group (the snippet id), text, kind, spans,
# word (the token or name the sample is about), label or target, n_tokens (tokens of the snippet).


def top(counter: Counter, k: int) -> list:
    """The k most frequent keys, ties broken by the key (deterministic)."""
    return [key for key, _ in sorted(counter.items(), key=lambda kv: (-kv[1], str(kv[0])))[:k]]


def path_key(path: tuple[int, ...]) -> str:
    return ",".join(map(str, path))


def path_type(snippets: list[Snippet], k: int = 15) -> list[dict]:
    """Token path type: one sample per token whose root-to-token path is among the k most frequent."""
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


GENERATORS = ("path_type", "depth", "variable_name", "misuse")
