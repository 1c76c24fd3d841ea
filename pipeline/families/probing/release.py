"""The probing tasks as the paper's release defines them (Troshin & Chirkova 2022, code:
github.com/serjtroshin/probings4code, `src/struct_probing/code_augs/` and `probings/`), re-implemented
from its procedures; the data-flow task's graph is GraphCodeBERT's DFG extraction (github.com/microsoft/
CodeBERT, `GraphCodeBERT/*/parser/DFG.py`, which the release copies unchanged for Java).

Each snippet is parsed **alone** (the release parses the method text, not its file): the tree's root
is `program` (Java) / `module` (Python). Tokens are the tree's leaves without comments, a string
literal one token (the grammar of the release's time made it a leaf). Random choices are seeded
hashes of the snippet id (the release uses numpy / random state), so a sample is reproducible.

- depth: the longest root-to-identifier path (edges) of the snippet's own tree (`get_depth`);
- dataflow: every DFG entry with a source gives the edge (token, its first source), labels
  `comesFrom` / `computedFrom` (`get_data_flow`); as many `NoEdge` pairs, drawn among the ordered
  pairs of the edges' tokens that are no edge in that direction (`IdentityWithDataFlowGraph`);
- declared (Java): one `int x = e;` / `int x;` local declaration per snippet (not a `for` init, no
  modifiers), `System.out.println(x);` inserted after a `{`, or after a `;` / `}` followed by `}`,
  right of the declaration; `declared` when a declaration of x precedes it in a block enclosing it
  (`UnidentifiedVariablesHard`, `is_left_visible_to_right`); an insertion drops the snippet only where a token of
  the new text is an `ERROR` node (the release's rule: another parse error, e.g. a constructor's, keeps it);
- misuse: up to 3 (identifier occurrence, another identifier of the snippet) pairs per snippet, each
  a misused and a correct sample (`VarMisuseAugmentation`);
- variable_name: one identifier among the release's 50 names per snippet (drawn over occurrences),
  every identifier occurrence of it replaced by `var` (`IdentNamePrediction`);
- path_type: per token, the 0-based child indices from the root of the snippet parsed alone to the
  token's node, every child counted (comments included: `get_node_representations` walks the tree's
  cursor), the node the release's `match_nodes` picks (the deepest node whose span holds the token).

Class lists (path type, variable name): the release's `make_dict` (max_classes 15,
min_samples_per_class 30): the most frequent classes with at least 30 samples are kept, at most 15;
the rest are dropped, except that with fewer than 15 distinct labels the rare ones are merged into one
class (`release_classes`, the release's index arithmetic read literally).
"""

from __future__ import annotations

from dataclasses import dataclass

import tree_sitter

from pipeline.core.ids import stable_id, unit_float

Node = tree_sitter.Node
COMMENTS = frozenset(("comment", "line_comment", "block_comment"))
ATOMIC = {"java": frozenset(("string_literal", "character_literal", "text_block")), "python": frozenset(("string",))}
PLACEHOLDER = "var"
MAX_MISUSES = 3  # the release's MAX_SELECTIONS
# identname.py's TOP_IDENTIFIERS: the 50 most frequent identifiers of the release's Java data
TOP_IDENTIFIERS = ("result", "i", "value", "sb", "name", "c", "response", "key", "s", "builder", "t", "list", "b",
                   "data", "p", "request", "id", "r", "index", "type", "f", "size", "count", "m", "file", "out", "res",
                   "buf", "message", "in", "e", "v", "a", "x", "entry", "reader", "n", "other", "line", "status", "map",
                   "url", "config", "params", "msg", "l", "expected", "val", "conf", "factory")
PRINT = ("System.out.println(", ");")
MIN_CLASS_SAMPLES = 30  # make_dict's min_samples_per_class
OTHER = "<other>"  # the class rare labels merge into when fewer than max_classes labels exist (make_dict)


@dataclass(frozen=True)
class Alone:
    """A snippet parsed alone: its text, bytes, tree and leaf tokens (in order)."""

    text: str
    source: bytes
    root: Node
    leaves: tuple[Node, ...]
    chars: tuple[int, ...]  # byte offset -> character offset in `text`

    def span(self, node: Node) -> tuple[int, int]:
        return self.chars[node.start_byte], self.chars[node.end_byte]

    def word(self, node: Node) -> str:
        return self.source[node.start_byte:node.end_byte].decode("utf-8", "replace")

    def release_span(self, node: Node) -> tuple[int, int]:
        """The span of the token the release's data gives this leaf: the release's tokens are the whitespace pieces
        of its one-line text (`code.split()`), so a string / character literal holding whitespace is several tokens,
        and `get_data_flow` maps the literal's node to the LAST of them (its loop keeps the last token whose node
        has the leaf's span): that piece, from after the literal's last whitespace character to its end."""
        lo, hi = self.span(node)
        if node.type not in ATOMIC["java"]:
            return lo, hi
        cut = max((k for k, ch in enumerate(self.text[lo:hi]) if ch.isspace()), default=-1)
        return lo + cut + 1, hi


def is_token(node: Node, language: str) -> bool:
    return (node.child_count == 0 or node.type in ATOMIC[language]) and node.type not in COMMENTS


def leaves(node: Node, language: str) -> list[Node]:
    """GraphCodeBERT's `tree_to_token_index`: the token nodes in order (zero-width MISSING ones left out)."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        if is_token(n, language):
            if n.end_byte > n.start_byte:
                out.append(n)
        elif n.type not in COMMENTS:
            stack.extend(reversed(n.children))
    return out


def alone(text: str, language: str, prs: tree_sitter.Parser) -> Alone:
    source = text.encode("utf-8")
    chars = [0] * (len(source) + 1)
    # byte -> char: every byte of a character maps to the character's index, the end to len(text)
    pos = 0
    for i, ch in enumerate(text):
        for _ in range(len(ch.encode("utf-8"))):
            chars[pos] = i
            pos += 1
    chars[len(source)] = len(text)
    root = prs.parse(source).root_node
    return Alone(text, source, root, tuple(leaves(root, language)), tuple(chars))


# ----------------------------------------------------------------- AST depth (get_depth)

def depth(a: Alone) -> int:
    """Edges on the longest path from the root to an `identifier` node (0 without identifiers)."""
    best, stack = 0, [(a.root, 0)]
    while stack:
        n, d = stack.pop()
        if n.type == "identifier":
            best = max(best, d)
        stack.extend((c, d + 1) for c in n.children)
    return best


# ----------------------------------------------------------------- GraphCodeBERT's DFG

Entry = tuple[str, int, str, list, list]  # (token text, token index, kind, source texts, source indices)


def _dedup(dfg: list[Entry]) -> list[Entry]:
    """GraphCodeBERT's merge of a loop's two passes: one entry per (text, index, kind), sources united."""
    merged: dict[tuple, list] = {}
    for code, idx, kind, codes, idxs in dfg:
        key = (code, idx, kind)
        if key not in merged:
            merged[key] = [codes, idxs]
        else:
            merged[key] = [sorted(set(merged[key][0] + codes)), sorted(set(merged[key][1] + idxs))]
    out = [(k[0], k[1], k[2], v[0], v[1]) for k, v in sorted(merged.items(), key=lambda kv: kv[0][1])]
    return sorted(out, key=lambda x: x[1])


def _merge_states(others: list[dict]) -> dict:
    new: dict[str, list] = {}
    for dic in others:
        for key in dic:
            new[key] = dic[key].copy() if key not in new else new[key] + dic[key]
    return {k: sorted(set(v)) for k, v in new.items()}


class DataFlow:
    """GraphCodeBERT's `DFG_java` / `DFG_python` over one snippet's tree (read from its definition)."""

    def __init__(self, a: Alone, language: str):
        self.language = language
        self.a = a
        self.index = {(n.start_byte, n.end_byte): (i, a.word(n)) for i, n in enumerate(a.leaves)}

    def variables(self, node: Node) -> list[tuple[int, str]]:
        """`tree_to_variable_index`: the tokens under `node` whose type is not their text."""
        out, stack = [], [node]
        while stack:
            n = stack.pop()
            if is_token(n, self.language):
                got = self.index.get((n.start_byte, n.end_byte))
                if got is not None and n.type != got[1]:
                    out.append(got)
            elif n.type not in COMMENTS:
                stack.extend(reversed(n.children))
        return out

    def graph(self) -> list[Entry]:
        run = self.java if self.language == "java" else self.python
        return sorted(run(self.a.root, {})[0], key=lambda x: x[1])

    def _leaf(self, node: Node, states: dict):
        got = self.index.get((node.start_byte, node.end_byte))
        if got is None or node.type == got[1]:
            return [], states
        idx, code = got
        if code in states:
            return [(code, idx, "comesFrom", [code], states[code].copy())], states
        if node.type == "identifier":
            states[code] = [idx]
        return [(code, idx, "comesFrom", [], [])], states

    def _define(self, run, node: Node, states: dict, kind: str):
        """A declarator / default parameter: `name = value` (comesFrom), or `name` alone."""
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        dfg = []
        if value is None:
            for idx, code in self.variables(name):
                dfg.append((code, idx, kind, [], []))
                states[code] = [idx]
            return sorted(dfg, key=lambda x: x[1]), states
        names, values = self.variables(name), self.variables(value)
        temp, states = run(value, states)
        dfg += temp
        for idx1, code1 in names:
            for idx2, code2 in values:
                dfg.append((code1, idx1, kind, [code2], [idx2]))
            states[code1] = [idx1]
        return sorted(dfg, key=lambda x: x[1]), states

    def _if(self, run, node: Node, states: dict, branch_types, if_types):
        dfg, current, others, flag, tag = [], states.copy(), [], False, "else" in node.type
        for child in node.children:
            if "else" in child.type:
                tag = True
            if child.type not in branch_types and not flag:
                temp, current = run(child, current)
            else:
                flag = flag or if_types
                temp, new = run(child, states)
                others.append(new)
            dfg += temp
        others.append(current)
        if not tag:
            others.append(states)
        return sorted(dfg, key=lambda x: x[1]), _merge_states(others)

    def java(self, node: Node, states: dict):
        states = states.copy()
        t = node.type
        if is_token(node, "java"):
            return self._leaf(node, states)
        if t == "variable_declarator":
            return self._define(self.java, node, states, "comesFrom")
        if t == "assignment_expression":
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            dfg, states = self.java(right, states)
            values = self.variables(right)
            for idx1, code1 in self.variables(left):
                for idx2, code2 in values:
                    dfg.append((code1, idx1, "computedFrom", [code2], [idx2]))
                states[code1] = [idx1]
            return sorted(dfg, key=lambda x: x[1]), states
        if t == "update_expression":
            dfg, found = [], self.variables(node)
            for idx1, code1 in found:
                for idx2, code2 in found:
                    dfg.append((code1, idx1, "computedFrom", [code2], [idx2]))
                states[code1] = [idx1]
            return sorted(dfg, key=lambda x: x[1]), states
        if t in ("if_statement", "else"):
            return self._if(self.java, node, states, ("if_statement", "else"), True)
        if t == "for_statement":
            dfg = []
            for child in node.children:
                temp, states = self.java(child, states)
                dfg += temp
            flag = False
            for child in node.children:
                if flag:
                    temp, states = self.java(child, states)
                    dfg += temp
                elif child.type == "local_variable_declaration":
                    flag = True
            return _dedup(dfg), states
        if t == "enhanced_for_statement":
            name, value, body = (node.child_by_field_name(f) for f in ("name", "value", "body"))
            dfg = []
            for _ in range(2):
                temp, states = self.java(value, states)
                dfg += temp
                values = self.variables(value)
                for idx1, code1 in self.variables(name):
                    for idx2, code2 in values:
                        dfg.append((code1, idx1, "computedFrom", [code2], [idx2]))
                    states[code1] = [idx1]
                temp, states = self.java(body, states)
                dfg += temp
            return _dedup(dfg), states
        if t == "while_statement":
            return self._loop_twice(self.java, node, states)
        dfg = []
        for child in node.children:
            temp, states = self.java(child, states)
            dfg += temp
        return sorted(dfg, key=lambda x: x[1]), states

    def _loop_twice(self, walk, node: Node, states: dict):
        """A while loop, walked twice so definitions at its end reach uses at its start (as DFG.py does)."""
        dfg = []
        for _ in range(2):
            for child in node.children:
                temp, states = walk(child, states)
                dfg += temp
        return _dedup(dfg), states

    def _py_pairs(self, node: Node):
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        lefts = [x for x in left.children if x.type != ","]
        rights = [x for x in right.children if x.type != ","]
        if len(rights) != len(lefts):
            lefts, rights = [left], [right]
        return lefts or [left], rights or [right]

    def _py_assign(self, lefts, rights, states):
        dfg = []
        for n in rights:
            temp, states = self.python(n, states)
            dfg += temp
        for left, right in zip(lefts, rights):
            values = self.variables(right)
            for idx1, code1 in self.variables(left):
                dfg.append((code1, idx1, "computedFrom", [c for _, c in values], [i for i, _ in values]))
                states[code1] = [idx1]
        return dfg, states

    def python(self, node: Node, states: dict):
        states = states.copy()
        t = node.type
        if is_token(node, "python"):
            return self._leaf(node, states)
        if t == "default_parameter":
            return self._define(self.python, node, states, "comesFrom")
        if t in ("assignment", "augmented_assignment", "for_in_clause"):
            if t == "for_in_clause":
                lefts, rights = [node.child_by_field_name("left")], [node.children[-1]]
            else:
                if node.child_by_field_name("right") is None:
                    return [], states
                lefts, rights = self._py_pairs(node)
            dfg, states = self._py_assign(lefts, rights, states)
            return sorted(dfg, key=lambda x: x[1]), states
        if t == "if_statement":
            return self._if(self.python, node, states, ("elif_clause", "else_clause"), False)
        if t == "for_statement":
            dfg = []
            for _ in range(2):
                lefts, rights = self._py_pairs(node)
                temp, states = self._py_assign(lefts, rights, states)
                dfg += temp
                if node.children[-1].type == "block":
                    temp, states = self.python(node.children[-1], states)
                    dfg += temp
            return _dedup(dfg), states
        if t == "while_statement":
            return self._loop_twice(self.python, node, states)
        dfg = []
        first = [c for c in node.children if c.type == "for_in_clause"]
        for child in first + [c for c in node.children if c.type != "for_in_clause"]:
            temp, states = self.python(child, states)
            dfg += temp
        return sorted(dfg, key=lambda x: x[1]), states


def dataflow_edges(a: Alone, language: str) -> dict[tuple[int, int], str]:
    """(token, source) -> `comesFrom` / `computedFrom`, leaf indices. Java: the release's
    `get_data_flow` (each entry's first source). Python (no release): every source of an entry (a
    Python `computedFrom` entry lists the whole right-hand side, a Java one a single token)."""
    edges: dict[tuple[int, int], str] = {}
    for _code, idx, kind, _codes, idxs in DataFlow(a, language).graph():
        for src in (idxs[:1] if language == "java" else idxs):
            edges.setdefault((idx, src), kind)
    return edges


def dataflow_edges_release_text(a: Alone, prs) -> dict[tuple[int, int], str]:
    """Java data-flow edges as the release's `get_data_flow` computes them on its data, leaf indices of `a`: the tree of
    the one-line text (`one_line`: the release's data is whitespace-joined tokens), each token's name read as
    `index_to_code_token` reads it, from the text re-joined on single spaces (`" ".join(t.value for t in tokens)`, its
    tokens the text's whitespace pieces) at the tree's columns. Where a string literal holds a run of whitespace (or a
    name is not ASCII: columns are bytes) the later names are read shifted: a release artefact, kept. A snippet one
    line cannot hold keeps `dataflow_edges` of its own tree."""
    got = one_line(a)
    if got is None:
        return dataflow_edges(a, "java")
    sent, starts = got
    b = alone(sent, "java", prs)
    joined = " ".join(sent.split())
    flow = DataFlow(b, "java")
    flow.index = {(n.start_byte, n.end_byte): (i, joined[n.start_point[1]:n.end_point[1]]) for i, n in enumerate(b.leaves)}
    ours = {start: k for k, start in enumerate(starts)}
    to_a = [ours.get(b.span(n)[0]) for n in b.leaves]
    edges: dict[tuple[int, int], str] = {}
    for _code, idx, kind, _codes, idxs in flow.graph():
        if idxs and to_a[idx] is not None and to_a[idxs[0]] is not None:
            edges.setdefault((to_a[idx], to_a[idxs[0]]), kind)
    return edges


def dataflow(snippets, seed: int, prs: tree_sitter.Parser, split_strings: bool = False) -> list[dict]:
    """Data-flow edges as the release samples them: every edge, and as many `NoEdge` ordered pairs
    of the edges' tokens (seeded), with no edge in that direction. `split_strings` (Java; the `release` tasks): a
    string literal holding whitespace is the token the release's data makes of it, its last whitespace piece
    (`Alone.release_span`); such a row carries `_string_piece` (counted in the generator's summary, then dropped);
    and the edges are the release's on its text (`dataflow_edges_release_text`)."""
    rows = []
    for s in snippets:
        a = alone(s.text, s.language, prs)
        split = split_strings and s.language == "java"
        edges = dataflow_edges_release_text(a, prs) if split else dataflow_edges(a, s.language)
        if not edges:
            continue
        nodes = sorted({i for e in edges for i in e})
        free = [(i, j) for i in nodes for j in nodes if i != j and (i, j) not in edges]
        free.sort(key=lambda p: unit_float(seed, "dataflow.neg", s.snippet_id, *p))
        pairs = sorted(edges.items()) + [(p, "NoEdge") for p in sorted(free[:len(edges)])]
        for (i, j), kind in pairs:
            spans = [a.span(a.leaves[i]), a.span(a.leaves[j])]
            row = {"item_id": stable_id("dataflow", s.snippet_id, i, j), "group": s.snippet_id, "text": s.text,
                   "kind": "pair", "spans": spans, "word": f"{a.word(a.leaves[i])} {a.word(a.leaves[j])}",
                   "label": kind, "n_tokens": len(a.leaves)}
            if split:
                pieces = [a.release_span(a.leaves[i]), a.release_span(a.leaves[j])]
                if pieces != spans:
                    row.update(spans=pieces, word=" ".join(s.text[lo:hi] for lo, hi in pieces), _string_piece=True)
            rows.append(row)
    return rows


# ----------------------------------------------------------------- is variable declared (Java)

def local_declarations(a: Alone) -> list[Node]:
    """The release's `get_identifier_declarations_with_expr` then `..._without_expr`
    (only_int_types=False): a local variable declaration outside a `for` header whose second child
    is a declarator `x = e` or, with `;` third, a bare `x`."""
    found = []
    stack = [a.root]
    while stack:
        n = stack.pop()
        stack.extend(reversed(n.children))
        if n.type == "local_variable_declaration" and n.parent is not None and n.parent.type != "for_statement":
            found.append(n)
    with_expr, without = [], []
    for n in found:
        ch = n.children
        if len(ch) < 2 or ch[1].type != "variable_declarator":
            continue
        d = ch[1].children
        if len(d) > 2 and d[0].type == "identifier" and d[1].type == "=":
            with_expr.append(n)
        elif len(ch) > 2 and ch[2].type == ";" and len(d) == 1 and d[0].type == "identifier":
            without.append(n)
    return with_expr + without


def insertion_points(a: Alone) -> list[int]:
    """Leaf indices after which the release inserts: `{`, and `;` or `}` followed by `}`."""
    t = [n.type for n in a.leaves]
    return [i for i, k in enumerate(t) if k == "{" or (k in (";", "}") and i + 1 < len(t) and t[i + 1] == "}")]


def _blocks(node: Node) -> list[tuple[int, int]]:
    out = []
    while node is not None:
        if node.type == "block":
            out.append((node.start_byte, node.end_byte))
        node = node.parent
    return out


def visible(left: Node, right: Node) -> bool:
    """`is_left_visible_to_right`: left precedes right and left's innermost block encloses right."""
    lb = _blocks(left)
    return (not lb or lb[0] in _blocks(right)) and left.start_byte < right.start_byte


def insert_print(a: Alone, decls: list[Node], d: Node, at: int, prs: tree_sitter.Parser):
    """`System.out.println(name);` inserted after leaf `at` for declaration `d`: (new text, the
    inserted name's character span, label), or None when a token of the new text is an `ERROR` (`error_token`)."""
    name = a.word(d.children[1].children[0])
    cut = a.leaves[at].end_byte
    ins = f" {PRINT[0]}{name}{PRINT[1]}".encode()
    new = a.source[:cut] + ins + a.source[cut:]
    root = prs.parse(new).root_node
    if error_token(root):
        return None
    used = cut + 1 + len(PRINT[0])
    size = len(name.encode())
    use = root.descendant_for_byte_range(used, used + size)
    targets = []  # every identifier `name` inside a declaration of `name`, found again in the new tree
    for o in decls:
        if a.word(o.children[1].children[0]) != name:
            continue
        stack = [o]
        while stack:
            n = stack.pop()
            stack.extend(n.children)
            if n.type == "identifier" and a.word(n) == name:
                b = n.start_byte + (len(ins) if n.start_byte >= cut else 0)
                targets.append(root.descendant_for_byte_range(b, b + size))
    label = "declared" if any(visible(t, use) for t in targets) else "undeclared"
    start = len(new[:used].decode("utf-8", "replace"))
    return new.decode("utf-8", "replace"), (start, start + len(name)), label


def error_token(root: Node) -> bool:
    """The release's drop rule for an insertion: a token of the new text whose node is an `ERROR` (`"ERROR" in
    [tok.node.type for tok in new_code_tokens]`, each token matched to the smallest node holding it): an `ERROR`
    node without children. Other parse errors (a MISSING node, an `ERROR` around ordinary tokens, as a constructor
    parsed alone has) keep the sample, as the release keeps it."""
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "ERROR" and n.child_count == 0 and n.end_byte > n.start_byte:
            return True
        stack.extend(n.children)
    return False


def declaration_end(a: Alone, d: Node) -> int:
    """The index of the declaration's last leaf (its `;`)."""
    return max(i for i, n in enumerate(a.leaves) if n.start_byte >= d.start_byte and n.end_byte <= d.end_byte)


def declared_sample(s, a: Alone, seed: int, prs: tree_sitter.Parser) -> dict | None:
    """One declaration drawn (seeded), one insertion point right of it drawn (seeded)."""
    decls = local_declarations(a)
    if not decls:
        return None
    d = decls[int(unit_float(seed, "declared.decl", s.snippet_id) * len(decls))]
    spots = [i for i in insertion_points(a) if i > declaration_end(a, d)]
    if not spots:
        return None
    made = insert_print(a, decls, d, spots[int(unit_float(seed, "declared.place", s.snippet_id) * len(spots))], prs)
    if made is None:
        return None
    text, span, label = made
    return {"item_id": stable_id("declared", s.snippet_id), "group": s.snippet_id, "text": text, "kind": "word",
            "spans": [span], "word": text[span[0]:span[1]], "label": label, "n_tokens": len(a.leaves)}


def declared(snippets, seed: int, prs: tree_sitter.Parser) -> list[dict]:
    """Is variable declared as the release samples it: Java only (one sample per snippet at most)."""
    rows = []
    for s in snippets:
        if s.language == "java":
            row = declared_sample(s, alone(s.text, "java", prs), seed, prs)
            if row is not None:
                rows.append(row)
    return rows


# ----------------------------------------------------------------- misuse, variable name, depth

def _identifiers(a: Alone) -> list[int]:
    return [i for i, n in enumerate(a.leaves) if n.type == "identifier"]


def _replace(text: str, spans: list[tuple[int, int]], new: str) -> tuple[str, list[tuple[int, int]]]:
    out, at, shift, where = [], 0, 0, []
    for x, y in sorted(spans):
        out += [text[at:x], new]
        where.append((x + shift, x + shift + len(new)))
        shift += len(new) - (y - x)
        at = y
    out.append(text[at:])
    return "".join(out), where


def misuse(snippets, seed: int, prs: tree_sitter.Parser) -> list[dict]:
    """Up to 3 (identifier occurrence, another identifier name of the snippet) pairs per snippet,
    drawn (seeded) among all such pairs; each a `misused` sample (the name replaced) and a `correct`
    one (the original text), the feature the identifier at that place."""
    rows = []
    for s in snippets:
        a = alone(s.text, s.language, prs)
        ids = _identifiers(a)
        names = list(dict.fromkeys(a.word(a.leaves[i]) for i in ids))
        pairs = [(i, o) for i in ids for o in names if o != a.word(a.leaves[i])]
        pairs.sort(key=lambda p: unit_float(seed, "misuse.pair", s.snippet_id, *p))
        for i, other in pairs[:MAX_MISUSES]:
            span, name = a.span(a.leaves[i]), a.word(a.leaves[i])
            wrong, [wspan] = _replace(s.text, [span], other)
            for label, text, sp, word in (("misused", wrong, wspan, other), ("correct", s.text, span, name)):
                rows.append({"item_id": stable_id("misuse", s.snippet_id, i, other, label), "group": s.snippet_id,
                             "text": text, "kind": "word", "spans": [sp], "word": word, "label": label,
                             "n_tokens": len(a.leaves)})
    return rows


def variable_name(snippets, seed: int, prs: tree_sitter.Parser) -> list[dict]:
    """One of the release's 50 names per snippet, drawn over its identifier occurrences (seeded);
    every identifier occurrence of it replaced by `var`; the feature the mean over them."""
    top = frozenset(TOP_IDENTIFIERS)
    rows = []
    for s in snippets:
        a = alone(s.text, s.language, prs)
        occ = [i for i in _identifiers(a) if a.word(a.leaves[i]) in top]
        if not occ:
            continue
        name = a.word(a.leaves[occ[int(unit_float(seed, "variable_name", s.snippet_id) * len(occ))]])
        spans = [a.span(a.leaves[i]) for i in _identifiers(a) if a.word(a.leaves[i]) == name]
        text, where = _replace(s.text, spans, PLACEHOLDER)
        rows.append({"item_id": stable_id("variable_name", s.snippet_id), "group": s.snippet_id, "text": text,
                     "kind": "span", "spans": where, "word": PLACEHOLDER, "label": name, "n_tokens": len(a.leaves)})
    return rows


def ast_depth(snippets, prs: tree_sitter.Parser) -> list[dict]:
    """AST depth as the release computes it (`get_depth`), one sample per snippet."""
    rows = []
    for s in snippets:
        a = alone(s.text, s.language, prs)
        rows.append({"item_id": stable_id("depth", s.snippet_id), "group": s.snippet_id, "text": s.text,
                     "kind": "snippet", "spans": [], "word": None, "target": float(depth(a)), "n_tokens": len(a.leaves)})
    return rows


# ----------------------------------------------------------------- class lists (make_dict), path type

def release_classes(labels, max_classes: int = 15, min_samples: int = MIN_CLASS_SAMPLES) -> dict[str, str | None]:
    """The release's `make_dict` then its `y < max_classes` filter, label -> the class it is probed as,
    or None (dropped). Labels in order of frequency (ties: by label, the release's by first appearance
    in its shuffled train split); each with >= `min_samples` samples takes the next class index, each
    rarer one the index `min(max_classes, distinct labels)`; indices >= `max_classes` are dropped. So:
    the (at most) `max_classes` most frequent labels with >= `min_samples` samples are kept, and the
    rare ones are dropped, unless fewer than `max_classes` distinct labels exist: then the rare ones
    share one index below `max_classes` and are kept as one merged class (`OTHER`)."""
    counts: dict[str, int] = {}
    for y in labels:
        counts[y] = counts.get(y, 0) + 1
    n_classes = min(max_classes, len(counts))
    out: dict[str, str | None] = {}
    index = 0
    for y, c in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0]))):
        if c < min_samples:
            out[y] = OTHER if n_classes < max_classes else None
            continue
        out[y] = y if index < max_classes else None
        index += 1
    return out


def apply_classes(rows: list[dict], max_classes: int, min_samples: int) -> tuple[list[dict], dict]:
    """`rows` relabelled by `release_classes` over their labels (dropped rows left out), and a summary of
    what the class rule did (kept classes, merged labels, dropped samples: counted, never silent)."""
    mapping = release_classes([r["label"] for r in rows], max_classes, min_samples)
    kept = [{**r, "label": mapping[r["label"]]} for r in rows if mapping[r["label"]] is not None]
    merged = sorted(y for y, m in mapping.items() if m == OTHER)
    info = {"labels_before": len(mapping), "classes": len({r["label"] for r in kept}),
            "merged_into_other": merged, "dropped_samples": len(rows) - len(kept),
            "dropped_labels": sorted(str(y) for y, m in mapping.items() if m is None),
            "max_classes": max_classes, "min_class_samples": min_samples}
    return kept, info


def node_paths(root: Node):
    """`get_node_representations`: every node with its 0-based child indices from `root`, all
    children counted (comments and punctuation included), in preorder."""
    stack = [(root, ())]
    while stack:
        n, path = stack.pop()
        yield n, path
        stack.extend((c, path + (i,)) for i, c in reversed(list(enumerate(n.children))))


def token_paths(a: Alone, language: str) -> list[tuple[Node, tuple[int, ...]]]:
    """Each token (leaf, a string literal one token, comments not tokens) with the release's path:
    the node whose span holds the token and has no child holding it is the token's own node."""
    paths = {n.id: p for n, p in node_paths(a.root)}
    return [(n, paths[n.id]) for n in a.leaves]


def one_line(a: Alone) -> tuple[str, list[int]] | None:
    """The snippet as the release's data has it: its tokens (comments included) joined by single spaces on one line,
    a `//` comment written `/* */` so that it ends where it did; and the character offset of each of `a.leaves` in
    it. None where one line cannot hold the snippet (a token spanning lines, a line comment holding `*/`)."""
    parts, starts, at, stack = [], [], 0, [a.root]
    while stack:
        n = stack.pop()
        if n.type in COMMENTS or (n.child_count == 0 or n.type in ATOMIC["java"]):
            word = a.word(n)
            if n.type in COMMENTS:
                if word.startswith("//"):
                    if "*/" in word:
                        return None
                    word = "/*" + word[2:].rstrip("\r\n") + " */"
                word = " ".join(word.split())
            elif not word:
                continue
            elif "\n" in word:
                return None
            else:
                starts.append(at)
            parts.append(word)
            at += len(word) + 1
        else:
            stack.extend(reversed(n.children))
    return " ".join(parts), starts


def token_paths_one_line(a: Alone, prs) -> list[tuple[Node, tuple[int, ...]]]:
    """Each of `a.leaves` with the path the release gives it: the path of its token in the tree of the one-line text
    (`one_line`; the release's data is whitespace-joined tokens on one line, and the parser's error recovery weighs
    the bytes between tokens), the node starting where the token does, else the smallest node holding its span.
    Java; a snippet one line cannot hold keeps the paths of its own tree."""
    got = one_line(a)
    if got is None:
        return token_paths(a, "java")
    text, starts = got
    b = alone(text, "java", prs)
    paths = {n.id: p for n, p in node_paths(b.root)}
    first = {b.span(n)[0]: n for n in b.leaves}
    out = []
    for n, start in zip(a.leaves, starts):
        node = first.get(start)
        if node is None:
            lo = len(text[:start].encode("utf-8"))
            node = b.root.descendant_for_byte_range(lo, lo + n.end_byte - n.start_byte)
        out.append((n, paths[node.id]))
    return out


def path_key(path: tuple[int, ...]) -> str:
    return ",".join(map(str, path))


def path_type(snippets, prs: tree_sitter.Parser, one_line_text: bool = False) -> list[dict]:
    """Token path type as the release defines it: one sample per token, its label the release's path
    (`token_paths`; with `one_line_text`, Java, the path in the tree of the one-line text, `token_paths_one_line`,
    as the release parsed its data); the class list is `apply_classes` over all of them (generate.py)."""
    rows = []
    for s in snippets:
        a = alone(s.text, s.language, prs)
        got = token_paths_one_line(a, prs) if one_line_text and s.language == "java" else token_paths(a, s.language)
        for i, (n, path) in enumerate(got):
            rows.append({"item_id": stable_id("path_type", s.snippet_id, i), "group": s.snippet_id, "text": s.text,
                         "kind": "word", "spans": [a.span(n)], "word": a.word(n), "label": path_key(path),
                         "n_tokens": len(a.leaves)})
    return rows
