"""Agreement of the probing tasks' labels with the paper's release, on real Java methods (issue 22).

The reference is the release's own code, read from its sources and run on the same trees (never our
re-implementation): GraphCodeBERT's `DFG_java` / `tree_to_token_index` / `tree_to_variable_index`
(microsoft/CodeBERT `GraphCodeBERT/codesearch/parser/`, which probings4code copies unchanged) and
probings4code's `get_node_representations` (depth), `get_identifier_declarations_with_expr` /
`..._without_expr`, `find_*`, `is_left_visible_to_right` (declared) and `TOP_IDENTIFIERS` (variable
name), `get_node_representations` with `match_tokens.match_nodes` (path type: each token's node and
its path, run on the snippet's tokens joined on one line as the release's data is) and
`TokensClassificationProbingTask.make_dict` (the class list of path type and variable name).
Only the few inline lines of the release's `__call__`s (insertion points, the data-flow
edge extraction, misuse pairs) are restated here. The sources are read with `git show` from the
two repositories' clones (`--codebert-git`, `--release-git`: a bare or normal clone of
github.com/microsoft/CodeBERT and github.com/serjtroshin/probings4code).

Two grammars: today's tree-sitter-java (the pinned `tree-sitter-java` package) and the one the release ran on,
tree-sitter-java ac14b4b (2022-05, ABI 13: `pipeline/families/probing/grammar.py`, from tree-sitter-languages
1.5.0). ac14b4b parses a method alone as a local variable declaration + `ERROR(formal_parameters)` + block, makes a
string literal one leaf and names comments `line_comment` / `block_comment` (as today's grammar does: GraphCodeBERT's
code, which skips only a node typed `comment`, would count them as tokens; the release's data has no comments).
GraphCodeBERT's code sees each tree with string / character literals as leaves (`Old`). The release's code runs on
either grammar; ours in both variants: `release` (release.py on today's grammar) and `release_parser` (release.py
on ac14b4b, the `*_release_parser` tasks). A `declared` insertion is dropped by the reference as the release drops
it: its tokens joined on one line, matched to nodes by `match_nodes`, dropped when one is an `ERROR`.

Methods: the JDK's `src.zip` under --packages (default: java.base/java/{util,io,lang,net,text,time}, the first
measurement's; `NEW_PACKAGES` the second's), cut as the pipeline cuts them (tasks.snippets_of_file, <= --max-chars
characters, >= 3 tokens), a seeded draw of --methods, without their comments (the pipeline's default;
--keep-comments keeps them). Per task: the agreement of each variant with the release's code on each grammar, and
the label balance of each variant's generators.

Usage: python -m bench.fidelity.probing_release_agreement --codebert-git DIR --release-git DIR [--methods 400]
           [--packages PREFIX ...] [--seed N] [--keep-comments] [--out FILE.json]
       python -m bench.fidelity.probing_release_agreement --render FILE.json   (the README's table)

Issue 52: the release's runtime. The reference also runs on py-tree-sitter 0.19.0's runtime (the release's pin, its
own environment: `make fidelity-env`, pipeline/families/probing/runtime019.py), the runtime the `release_parser`
labels are now made on; data flow is also compared with the release's own `get_data_flow` (dfg.py) on its whitespace
tokens, with and without the string literals that hold whitespace.
"""

from __future__ import annotations

import argparse
import ast
import bisect
import json
import logging
import subprocess
import sys
import warnings
import zipfile
from collections import Counter

from pipeline.core.ids import unit_float
from pipeline.corpus.fetch import find_jdk_src_zip
from pipeline.families.probing import grammar as G
from pipeline.families.probing import runtime019 as RT
from pipeline.families.probing import release as R
from pipeline.families.probing import tasks as T

# the methods of the first measurement (issue 22); the second drew from other modules (README, "Agreement")
PACKAGES = tuple(f"java.base/java/{p}/" for p in ("util", "io", "lang", "net", "text", "time"))
NEW_PACKAGES = ("java.base/java/nio/", "java.base/java/security/", "java.base/java/math/", "java.sql/",
                "java.logging/", "java.net.http/", "java.prefs/", "java.management/")


REFERENCES = {"today": "tree-sitter 0.26.1 + tree-sitter-java 0.23.5 (the pipeline's)",
              "release": "py-tree-sitter 0.19.0's runtime + tree-sitter-java ac14b4b (the release as it ran; "
                         "make fidelity-env)",
              "ac14b4b-on-0.26": "tree-sitter 0.26.1's runtime + tree-sitter-java ac14b4b"}


def git_show(repo: str, path: str) -> str:
    return subprocess.run(["git", "-C", repo, "show", f"HEAD:{path}"], check=True, capture_output=True,
                          text=True).stdout


def load(source: str, names: list[str], namespace: dict) -> dict:
    """Exec the named top-level functions / classes / assignments of `source` into `namespace`."""
    tree = ast.parse(source)
    keep = [n for n in tree.body if (isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name in names)
            or (isinstance(n, ast.Assign) and any(getattr(t, "id", None) in names for t in n.targets))]
    missing = set(names) - {getattr(n, "name", None) or n.targets[0].id for n in keep}
    if missing:
        raise SystemExit(f"not found in the reference source: {sorted(missing)}")
    exec(compile(ast.Module(keep, []), "<reference>", "exec"), namespace)  # noqa: S102 (the reference's code)
    return namespace


class Old:
    """A tree-sitter node as GraphCodeBERT's code expects it: a string / character literal one leaf (the grammar
    of the release's time made it one; today's gives it children). Comments keep the grammar's names
    (`line_comment` / `block_comment` in both tree-sitter-java ac14b4b and today's): GraphCodeBERT's
    `tree_to_token_index` skips only a node typed `comment`, so on text with comments it counts them as tokens, as
    the release's code would have (its data has no comments)."""

    __slots__ = ("n",)

    def __init__(self, n):
        self.n = n

    def __eq__(self, other):  # the release's match_nodes finds its node again by ==
        return isinstance(other, Old) and other.n == self.n

    def __hash__(self):
        return hash((self.n.start_byte, self.n.end_byte, self.n.type))

    @property
    def type(self):
        return self.n.type

    @property
    def children(self):
        return [] if self.n.type in R.ATOMIC["java"] else [Old(c) for c in self.n.children]

    def child_by_field_name(self, name):
        c = self.n.child_by_field_name(name)
        return None if c is None else Old(c)

    @property
    def start_point(self):
        return tuple(self.n.start_point)

    @property
    def end_point(self):
        return tuple(self.n.end_point)


def reference_dataflow(g: dict, a: R.Alone) -> dict:
    """probings4code's `get_data_flow` on GraphCodeBERT's DFG_java: (token span, first source's span) -> kind."""
    root = Old(a.root)
    index = g["tree_to_token_index"](root)
    words = {(tuple(n.start_point), tuple(n.end_point)): a.word(n) for n in a.leaves}  # the token texts (bytes)
    spans = {(tuple(n.start_point), tuple(n.end_point)): a.span(n) for n in a.leaves}
    index_to_code = {ix: (i, words.get(ix, "")) for i, ix in enumerate(index)}  # "": a zero-width MISSING leaf
    theirs = {i: spans.get(ix) for i, ix in enumerate(index)}  # their token index -> our token's span
    dfg, _ = g["DFG_java"](root, index_to_code, {})
    out = {}
    for _code, idx, kind, _src, src_idx in sorted(dfg, key=lambda x: x[1]):
        if src_idx and theirs[idx] is not None and theirs[src_idx[0]] is not None:
            out.setdefault((theirs[idx], theirs[src_idx[0]]), kind)
    return out


class OldTree:
    """A tree whose nodes are `Old` (a string literal one leaf), walked by a cursor, for the release's code."""

    def __init__(self, tree):
        self.root_node = Old(tree.root_node)

    def walk(self):
        return RT.Cursor019(self.root_node)


class _Nowhere:  # the node of a whitespace token match_nodes found none for
    start_point = end_point = (-1, -1)
    type = ""


def reference_dataflow_tokens(d: dict, rel: dict, a: R.Alone, prs, wrap: bool) -> dict | None:
    """The release's own `get_data_flow` (dfg.py, with its own `DFG_java`) on the release's tokens: the whitespace
    pieces of the one-line text (`code.split()`: a string literal holding whitespace is several tokens), each with its
    node by `match_nodes`, and the tree of the one-line text. -> {(token span, source span): kind}, spans in the
    snippet's raw text; None where one line cannot hold it. `wrap`: today's grammar, string literals as leaves."""
    got = one_line(a)
    if got is None:
        return None
    sent, starts = got
    tree = OldTree(prs.parse(sent.encode())) if wrap else prs.parse(sent.encode())
    nodes = list(rel["get_node_representations"](tree))
    words = sent.split()
    align = rel["match_nodes"](sent, words, nodes)
    tokens = [Tok(w, nodes[align[k]].node if k in align else _Nowhere()) for k, w in enumerate(words)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        edges = d["get_data_flow"](tokens, tree)
    spans = rel["_get_token_spans"](sent, words)
    ours = list(zip(starts, a.leaves))  # in text order: starts increase

    def raw(k):  # a whitespace token's span in the raw text (inside one of our tokens), or None (a comment)
        lo, hi = spans[k]
        i = bisect.bisect_right(starts, lo) - 1
        if i < 0:
            return None
        start, leaf = ours[i]
        base = a.span(leaf)[0]
        return (base + lo - start, base + hi - start) if lo - start < len(a.word(leaf)) else None

    out = {}
    for i, j, kind in edges:
        key = (raw(i), raw(j))
        if None not in key:
            out.setdefault(key, kind)
    return out


def our_dataflow_spans(a: R.Alone, split: bool, prs) -> dict:
    """Our edges keyed by their tokens' spans; `split`: as the `release` tasks label (the release's token of a
    whitespace-holding literal, the edges of the release's text: release.dataflow_edges_release_text), else the
    edges of the raw text's tree, literals whole (before issue 52)."""
    if split:
        return {(a.release_span(a.leaves[i]), a.release_span(a.leaves[j])): k
                for (i, j), k in R.dataflow_edges_release_text(a, prs).items()}
    return {(a.span(a.leaves[i]), a.span(a.leaves[j])): k for (i, j), k in R.dataflow_edges(a, "java").items()}


def string_spans(a: R.Alone) -> list[tuple[int, int]]:
    """The spans of the snippet's string / character literals that hold whitespace."""
    return [a.span(n) for n in a.leaves if n.type in R.ATOMIC["java"] and any(ch.isspace() for ch in a.word(n))]


def split_by_strings(ours: dict, ref: dict, strings) -> tuple[dict, dict, dict, dict]:
    """(ours, ref) restricted to the edges touching a whitespace-holding literal, then to the others."""
    def touches(key):
        return any(lo <= s[0] < hi for s in key for lo, hi in strings)
    return ({k: v for k, v in ours.items() if touches(k)}, {k: v for k, v in ref.items() if touches(k)},
            {k: v for k, v in ours.items() if not touches(k)}, {k: v for k, v in ref.items() if not touches(k)})


def our_dataflow(a: R.Alone) -> dict:
    return {(a.span(a.leaves[i]), a.span(a.leaves[j])): k for (i, j), k in R.dataflow_edges(a, "java").items()}


def agreement(ours: dict, ref: dict) -> tuple[int, int]:
    keys = set(ours) | set(ref)
    return sum(ours.get(k) == ref.get(k) for k in keys), len(keys)


class Tok:  # the release's Token: value and node
    def __init__(self, value, node):
        self.value, self.node = value, node


def release_error_token(rel: dict, prs, new: bytes) -> bool | None:
    """The release's drop rule, run as the release runs it: the new text's tokens joined on one line (`one_line`),
    parsed, each whitespace token matched to its node by `match_nodes`, dropped when one is an `ERROR` (`"ERROR"
    in [tok.node.type for tok in new_code_tokens]`, undeclared_hard.py). None: one line cannot hold the text."""
    got = one_line(R.alone(new.decode("utf-8", "replace"), "java", prs))
    if got is None:
        return None
    sent, _ = got
    nodes = list(rel["get_node_representations"](prs.parse(sent.encode())))
    align = rel["match_nodes"](sent, sent.split(), nodes)
    return any(nodes[j].node.type == "ERROR" for j in align.values())


def reference_declared(rel: dict, a: R.Alone, prs) -> tuple[list, dict]:
    """The release's candidates (the declared name's span) and the label of every (declaration, insertion point)
    pair, keyed by (name span, point's token span); None where the release drops the insertion."""
    tokens = [Tok(a.word(n), n) for n in a.leaves]
    decls = rel["get_identifier_declarations_with_expr"](tokens, a.root, only_int_types=False)
    decls += rel["get_identifier_declarations_without_expr"](tokens, a.root, only_int_types=False)
    types = [t.node.type for t in tokens]
    starts = [i for i, k in enumerate(types) if k == "{"]
    ends = [i for i, k in enumerate(types) if k in (";", "}") and i + 1 < len(types) and types[i + 1] == "}"]
    labels = {}
    for ident, block in decls:
        name = tokens[ident].value
        same = [b for i, b in decls if tokens[i].value == name]
        targets = {p for b in same for p in b if tokens[p].node.type == "identifier" and tokens[p].value == name}
        for pos in [p for p in starts + ends if p > block[-1]]:
            key = (a.span(a.leaves[ident]), a.span(a.leaves[pos]))
            cut = a.leaves[pos].end_byte
            new = a.source[:cut] + f" System.out.println({name});".encode() + a.source[cut:]
            if release_error_token(rel, prs, new) is not False:
                labels[key] = None
                continue
            root = prs.parse(new).root_node
            new_tokens = [Tok(n.text.decode("utf-8", "replace"), n) for n in R.leaves(root, "java")]
            shift = lambda p: p if p <= pos else p + 9  # noqa: E731  System . out . println ( x ) ;
            visible = any(rel["is_left_visible_to_right"](new_tokens, shift(t), pos + 7) for t in targets)
            labels[key] = "declared" if visible else "undeclared"
    return sorted(a.span(a.leaves[i]) for i, _ in decls), labels


def our_declared(a: R.Alone, prs) -> tuple[list, dict]:
    """Ours (release.py) on the same pairs: candidates by name span, labels by (name span, point span)."""
    decls = R.local_declarations(a)
    at = {a.span(d.children[1].children[0]): d for d in decls}
    labels = {}
    for d in decls:
        end = R.declaration_end(a, d)
        for pos in R.insertion_points(a):
            if pos > end:
                made = R.insert_print(a, decls, d, pos, prs)
                labels[(a.span(d.children[1].children[0]), a.span(a.leaves[pos]))] = None if made is None else made[2]
    return sorted(at), labels


def one_line(a: R.Alone) -> tuple[str, list[int]] | None:
    """The snippet as the release's data has it (release.one_line): its tokens joined by single spaces on one line."""
    return R.one_line(a)


def reference_paths(rel: dict, a: R.Alone, prs) -> list[tuple[int, ...]] | None:
    """The release's path of each of our tokens: `get_node_representations` over the tree of the
    one-line text and `match_nodes` from its whitespace tokens to nodes (the token starting where ours does)."""
    got = one_line(a)
    if got is None:
        return None
    sent, starts = got
    nodes = list(rel["get_node_representations"](prs.parse(sent.encode())))
    words = sent.split()
    align = rel["match_nodes"](sent, words, nodes)
    at = {span[0]: k for k, span in enumerate(rel["_get_token_spans"](sent, words))}
    return [tuple(nodes[align[at[x]]].representation) for x in starts]


def reference_class_fate(rel: dict, labels: list, max_classes: int = 15) -> dict:
    """The release's `make_dict` (exec'd) then its `y < max_classes` filter: label -> kept / merged / dropped."""
    cls = rel["TokensClassificationProbingTask"]
    task = cls.__new__(cls)
    task._get_target, task.skip_label = (lambda y: [y]), None
    r2id = task.make_dict(labels, max_classes)
    rare = min(max_classes, len(set(labels)))
    # a rare label takes index `rare`: kept (one merged class) when below max_classes, else filtered
    return {y: "dropped" if i >= max_classes else "merged" if i == rare else "kept" for y, i in r2id.items()}


def our_class_fate(labels: list, max_classes: int = 15) -> dict:
    return {y: "dropped" if m is None else "merged" if m == R.OTHER else "kept"
            for y, m in R.release_classes(labels, max_classes).items()}


def methods(n: int, max_chars: int, seed: int, packages=PACKAGES, keep_comments: bool = False) -> list[T.Snippet]:
    """A seeded draw of `n` methods of the JDK's `src.zip` under `packages` (module/package prefixes), cut as the
    pipeline cuts them, without their comments unless `keep_comments` (the pipeline's default)."""
    src = find_jdk_src_zip()
    if src is None:
        raise SystemExit("no JDK src.zip found (JAVA_HOME, javac on PATH, /usr/lib/jvm): install a JDK with sources")
    prs = T.parser("java")
    found = []
    with zipfile.ZipFile(src) as z:
        for name in sorted(z.namelist()):
            if name.endswith(".java") and any(p in name for p in packages):
                text = z.read(name).decode("utf-8", "replace")
                found += [s for s in T.snippets_of_file(text, "java", name, prs)
                          if len(s.text) <= max_chars and len(s.tokens) >= 3]
    found.sort(key=lambda s: unit_float(seed, "snippet", s.snippet_id))
    picked = sorted(found[:n], key=lambda s: s.snippet_id)
    if not keep_comments and hasattr(T, "without_comments"):
        picked = [w for w in (T.without_comments(s, prs) for s in picked) if w is not None]
    return picked


def balance(rows: list[dict]) -> str:
    c = Counter(r["label"] for r in rows)
    total = sum(c.values())
    return ", ".join(f"{k} {v} ({v / total:.1%})" for k, v in c.most_common()) + f"; n={total}"


def render(result: dict) -> str:
    """The README's table from a results file: per task, `release_parser` against the release's code on the
    release's runtime, `release` against it on today's, and `release_parser` against it on ac14b4b inside 0.26.1."""
    cell = {(c["variant"], c["reference"], c["task"]): (c["agree"], c["n"]) for c in result["cells"]}
    cols = (("release_parser", "release"), ("release", "release"), ("release", "today"),
            ("release_parser", "ac14b4b-on-0.26"))
    heads = ("`release_parser` vs the release on 0.19 + ac14b4b (as it ran)", "`release` vs the release as it ran",
             "`release` vs the release on today's", "`release_parser` vs the release on ac14b4b in 0.26.1 (before)")
    lines = ["| task | " + " | ".join(heads) + " | unit |", "|---|" + "---|" * (len(cols) + 1)]
    for task in dict.fromkeys(c["task"] for c in result["cells"]):  # the bench's task order
        unit = result["units"][task]
        row = []
        for v, r in cols:
            ok, n = cell[(v, r, task)]
            row.append(f"{ok / n:.1%} ({ok:,} / {n:,})" if n else "none")
        lines.append(f"| {task} | " + " | ".join(row) + f" | {unit} |")
    rule = result["class_rule"]
    lines.append(f"| class_rule | {rule['agree'] / rule['n']:.1%} ({rule['agree']:,} / {rule['n']:,}) | | | | "
                 "labels whose fate (kept / merged / dropped) is make_dict's (grammar-free) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--render"]:  # the README's table from a results file
        print(render(json.loads(open(argv[1]).read())))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--codebert-git", required=True, help="a clone of github.com/microsoft/CodeBERT")
    ap.add_argument("--release-git", required=True, help="a clone of github.com/serjtroshin/probings4code")
    ap.add_argument("--methods", type=int, default=400)
    ap.add_argument("--max-chars", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--packages", nargs="+", default=list(PACKAGES),
                    help="src.zip path prefixes the methods are drawn from (default: the first measurement's; "
                    f"the second's: {' '.join(NEW_PACKAGES)})")
    ap.add_argument("--keep-comments", action="store_true",
                    help="keep the methods' comments (the pipeline's probing.keep_comments); default: removed")
    ap.add_argument("--out", help="write the agreement table as JSON here (e.g. docs/results/probing_release_agreement.json)")
    args = ap.parse_args(argv)
    g = load(git_show(args.codebert_git, "GraphCodeBERT/codesearch/parser/DFG.py"), ["DFG_java"], {})
    load(git_show(args.codebert_git, "GraphCodeBERT/codesearch/parser/utils.py"),
         ["tree_to_token_index", "tree_to_variable_index"], g)
    g["DFG_java"].__globals__.update(g)
    base = "src/struct_probing/"
    rel: dict = {"List": list, "Tuple": tuple, "Node": object, "Tree": object, "Token": Tok}
    load(git_show(args.release_git, base + "code_augs/constants.py"), ["TokenTypes", "NodeTypes"], rel)
    load(git_show(args.release_git, base + "utils/code_parser.py"), ["traverse_tree"], rel)
    load(git_show(args.release_git, base + "utils/tree_representation.py"),
         ["NodeRepresentation", "get_node_representations", "is_identifier"], rel)
    load(git_show(args.release_git, base + "code_augs/aug.py"),
         ["find_node_pos_in_tokens", "find_all_token_pos_in_node", "get_identifier_declarations_with_expr",
          "get_identifier_declarations_without_expr"], rel)
    load(git_show(args.release_git, base + "code_augs/undeclared_hard.py"),
         ["get_root_path", "is_left_visible_to_right"], rel)
    load(git_show(args.release_git, base + "code_augs/identname.py"), ["TOP_IDENTIFIERS"], rel)
    rel.update({"Optional": None, "Any": object, "Callable": object, "Dict": dict, "Hashable": object,
                "Iterable": object, "Union": object, "Sample": object, "ProbingTask": object, "ProbingDataset": object,
                "ProbingNgramDataset": object, "TokenClassificationLinearModel": object, "Counter": Counter,
                "logging": logging, "warnings": warnings})
    load(git_show(args.release_git, base + "utils/match_tokens.py"),
         ["_get_token_spans", "_get_shortest_overlaping_node", "match_nodes"], rel)
    load(git_show(args.release_git, base + "probings/token_classification.py"),
         ["TokensClassificationProbingTask"], rel)
    # the runtimes the reference (the release's code) runs on: today's (tree-sitter 0.26.1, tree-sitter-java 0.23.5),
    # the release's as it ran (py-tree-sitter 0.19.0's runtime + tree-sitter-java ac14b4b, the pinned environment
    # `make fidelity-env`: runtime019.py), and the release's grammar on today's runtime (what `release_parser` was
    # labelled on before issue 52: it recovers from the bare method's parse error differently in ~4.5% of methods)
    # the release's data-flow extraction as it ran: dfg.py's own DFG_java and get_data_flow, with the CodeBLEU /
    # GraphCodeBERT parser utilities it imports (tree_to_token_index, tree_to_variable_index, index_to_code_token)
    d: dict = {"warnings": warnings}
    load(git_show(args.codebert_git, "GraphCodeBERT/codesearch/parser/utils.py"),
         ["tree_to_token_index", "tree_to_variable_index", "index_to_code_token"], d)
    load(git_show(args.release_git, base + "code_augs/dfg.py"), ["DFG_java", "get_data_flow"], d)
    grammars = {"today": T.parser("java"), "release": RT.java_parser(), "ac14b4b-on-0.26": G.java_parser()}
    snippets = methods(args.methods, args.max_chars, args.seed, args.packages, args.keep_comments)
    print(f"{len(snippets)} JDK methods (<= {args.max_chars} characters) of {', '.join(args.packages)}, seed "
          f"{args.seed}, comments {'kept' if args.keep_comments else 'removed'}")
    # ours: `release` labels on today's grammar, `release_parser` labels on the release's grammar (tree-sitter-java
    # ac14b4b); the reference: the release's code on either grammar
    variants = {"release": "today", "release_parser": "release"}
    cells = [(v, ref) for v in variants for ref in grammars]
    tasks = ("dataflow", "dataflow_tokens", "dataflow_tokens_unsplit", "dataflow_strings", "dataflow_strings_unsplit",
             "dataflow_no_strings", "string_methods", "depth", "depth_one_line", "declared", "declared_drop", "decl_candidates", "misuse", "variable_name",
             "path_type", "path_type_skipped")
    tally = {(c, k): [0, 0] for c in cells for k in tasks}

    def add(cell, key, ok, n=1):
        tally[(cell, key)][0] += ok
        tally[(cell, key)][1] += n

    path_labels = {v: [] for v in variants}
    for s in snippets:
        ours_alone = {v: R.alone(s.text, "java", grammars[g]) for v, g in variants.items()}
        for ref_name, ref_prs in grammars.items():
            a = R.alone(s.text, "java", ref_prs)  # the reference's tree of the same text
            ref_paths = reference_paths(rel, a, ref_prs)
            ref_df = reference_dataflow(g, a)
            reps = [p for p in rel["get_node_representations"](ref_prs.parse(a.source)) if p.node.type == "identifier"]
            ref_depth = max((len(p.representation) for p in reps), default=0)
            # the same on the tree of the one-line text (the release's data is whitespace-joined tokens on one line)
            line = one_line(a)
            reps = [] if line is None else [p for p in rel["get_node_representations"](ref_prs.parse(line[0].encode()))
                                             if p.node.type == "identifier"]
            ref_depth_line = None if line is None else max((len(p.representation) for p in reps), default=0)
            ref_decls, ref_labels = reference_declared(rel, a, ref_prs)
            ref_tok = reference_dataflow_tokens(d, rel, a, ref_prs, wrap=ref_name == "today")
            ids = [n for n in a.leaves if n.type == "identifier"]
            ref_pairs = {(a.span(n), o) for n in ids for o in {a.word(m) for m in ids} if o != a.word(n)}
            cands = {a.word(n) for n in ids if a.word(n) in rel["TOP_IDENTIFIERS"]}
            for v, ours in ours_alone.items():
                cell, prs = (v, ref_name), grammars[variants[v]]
                # as the generators label: `release_parser` on the tree of the one-line text (generate.py)
                got = R.token_paths_one_line(ours, prs) if v == "release_parser" else R.token_paths(ours, "java")
                ours_paths = {ours.span(n): p for n, p in got}
                if ref_name == "today":
                    path_labels[v] += [R.path_key(p) for p in ours_paths.values()]
                add(cell, "path_type_skipped", ref_paths is None)
                if ref_paths is not None:
                    add(cell, "path_type", sum(ours_paths.get(a.span(n)) == y for n, y in zip(a.leaves, ref_paths)),
                        len(ref_paths))
                add(cell, "dataflow", *agreement(our_dataflow(ours), ref_df))
                if ref_tok is not None:  # the release's tokens: ours with (release variant) and without the split
                    strings = string_spans(ours)
                    add(cell, "string_methods", bool(strings))
                    for split, suffix in ((True, ""), (False, "_unsplit")):
                        o = our_dataflow_spans(ours, split, prs)
                        add(cell, "dataflow_tokens" + suffix, *agreement(o, ref_tok))
                        o_s, r_s, o_n, r_n = split_by_strings(o, ref_tok, strings)
                        add(cell, "dataflow_strings" + suffix, *agreement(o_s, r_s))
                        if split:
                            add(cell, "dataflow_no_strings", *agreement(o_n, r_n))
                add(cell, "depth", R.depth(ours) == ref_depth)
                if ref_depth_line is not None:
                    add(cell, "depth_one_line", R.depth(ours) == ref_depth_line)
                decls, labels = our_declared(ours, prs)
                add(cell, "decl_candidates", decls == ref_decls)
                for key, label in ref_labels.items():
                    got = labels.get(key, "absent")
                    if label is None or got is None:
                        add(cell, "declared_drop", (label is None) == (got is None))
                    else:
                        add(cell, "declared", got == label)
                rows = R.misuse([s], args.seed, prs)
                got = {(tuple(right["spans"][0]), wrong["word"]) for wrong, right in zip(rows[::2], rows[1::2])}
                add(cell, "misuse", got <= ref_pairs and len(got) == min(3, len(ref_pairs)))
                [vn] = R.variable_name([s], args.seed, prs) or [None]
                add(cell, "variable_name", (vn is None and not cands) or (
                    vn is not None and vn["label"] in cands
                    and len(vn["spans"]) == sum(a.word(n) == vn["label"] for n in ids)))

    # the class rule (make_dict) on the labels of these methods and on cases that reach its every branch
    cases = {"path_type": path_labels["release"], "path_type (release_parser)": path_labels["release_parser"],
             "20 labels, 3 with >= 30": (["a"] * 40 + ["b"] * 35 + ["c"] * 30 + ["d"] * 29
                                         + [f"z{i}" for i in range(16)]),
             "3 labels, 2 rare (merged)": ["a"] * 40 + ["b"] * 5 + ["c"] * 2,
             "17 labels with >= 30": [f"k{i:02d}" for i in range(17) for _ in range(30 + 17 - i)]}
    rule = [0, 0]
    for name, labels in cases.items():
        ref, ours = reference_class_fate(rel, labels), our_class_fate(labels)
        rule[0] += sum(ref[y] == ours[y] for y in ref)
        rule[1] += len(ref)
    units = {"dataflow": "edge labels over the union of both edge sets (GraphCodeBERT's DFG_java on the raw text's tree)",
             "dataflow_tokens": "edge labels, the release's get_data_flow on its whitespace tokens of the one-line text "
                                "(ours: a whitespace-holding literal's last piece, as the release)",
             "dataflow_tokens_unsplit": "the same, ours keeping such a literal whole (before issue 52)",
             "dataflow_strings": "dataflow_tokens over the edges touching a whitespace-holding literal",
             "dataflow_strings_unsplit": "the same, ours keeping the literal whole",
             "dataflow_no_strings": "dataflow_tokens over the other edges",
             "string_methods": "share of methods with a string / character literal holding whitespace", "depth": "methods with the same depth",
             "depth_one_line": "methods with the depth the release's code gives the one-line text",
             "declared": "(declaration, insertion point) labels, kept by both",
             "declared_drop": "insertions dropped by both or neither",
             "decl_candidates": "methods with the same candidate declarations",
             "misuse": "methods whose drawn pairs are release pairs, min(3, all) of them",
             "variable_name": "methods whose label and replaced set are the release's",
             "path_type": "token paths (get_node_representations + match_nodes)",
             "path_type_skipped": "methods one line cannot hold (not compared)"}
    print("\nagreement of our labels with the release's code (columns: our variant vs the release's code on a grammar;"
          " `release grammar` = tree-sitter-java ac14b4b, the one the release pins)\n")
    print("| task | " + " | ".join(f"`{v}` vs release code on {r} grammar" for v, r in cells) + " | unit |")
    print("|---|" + "---|" * len(cells) + "---|")
    for key in tasks:
        row = []
        for c in cells:
            ok, n = tally[(c, key)]
            row.append(f"{ok / n:.1%} ({ok}/{n})" if n else "none (0)")
        print(f"| {key} | " + " | ".join(row) + f" | {units[key]} |")
    print(f"| class_rule | {rule[0] / rule[1]:.1%} ({rule[0]}/{rule[1]}) (grammar-free) |" + " |" * (len(cells) - 1)
          + " labels whose fate (kept / merged / dropped) is make_dict's |")
    if args.out:
        rev = lambda repo: subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], check=True, capture_output=True,  # noqa: E731
                                          text=True).stdout.strip()
        result = {"bench": "bench.fidelity.probing_release_agreement", "methods": len(snippets), "seed": args.seed,
                  "max_chars": args.max_chars, "packages": args.packages, "keep_comments": args.keep_comments,
                  "release_commit": rev(args.release_git), "codebert_commit": rev(args.codebert_git),
                  "references": REFERENCES, "variants": {v: REFERENCES[g] for v, g in variants.items()},
                  "units": units, "class_rule": {"agree": rule[0], "n": rule[1]},
                  "cells": [{"variant": v, "reference": r, "task": k, "agree": tally[((v, r), k)][0],
                             "n": tally[((v, r), k)][1]} for (v, r) in cells for k in tasks]}
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(result, f, indent=1, sort_keys=True)
            f.write("\n")
        __import__("os").replace(tmp, args.out)
        print(f"\nwrote {args.out}")
    for v, gname in variants.items():
        prs = grammars[gname]
        print(f"\nlabel balance of the `{v}` generators ({gname} grammar) on these methods (seed {args.seed})")
        for name, rows in (("dataflow", R.dataflow(snippets, args.seed, prs)),
                           ("declared", R.declared(snippets, args.seed, prs)),
                           ("misuse", R.misuse(snippets, args.seed, prs))):
            print(f"- {name}: {balance(rows)}; snippets with a sample: {len({r['group'] for r in rows})}")
        rows = R.variable_name(snippets, args.seed, prs)
        c = Counter(r["label"] for r in rows)
        print(f"- variable_name: {len(rows)} samples, {len(c)} classes, top {c.most_common(3)}")
        kept, info = R.apply_classes(R.path_type(snippets, prs, one_line_text=v == "release_parser"), 15,
                                     R.MIN_CLASS_SAMPLES)
        print(f"- path_type: {len(path_labels[v])} tokens, {info['labels_before']} paths, kept {len(kept)} samples in "
              f"{info['classes']} classes; largest {max(Counter(r['label'] for r in kept).values(), default=0) / max(len(kept), 1):.1%}")
        depths = [r["target"] for r in R.ast_depth(snippets, prs)]
        print(f"- depth: mean {sum(depths) / len(depths):.2f}, min {min(depths):.0f}, max {max(depths):.0f}; n={len(depths)}")
    constructors = [s for s in snippets if s.root.type == "constructor_declaration"]
    got = {r["group"] for r in R.declared(constructors, args.seed, grammars["today"])}
    decl = [s for s in constructors if R.local_declarations(R.alone(s.text, "java", grammars["today"]))]
    print(f"\nconstructors: {len(constructors)}, with a local declaration {len(decl)}, giving a `declared` sample "
          f"{len(got)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
