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

GraphCodeBERT's code sees the tree through a view of the grammar of its time: a string literal is
one leaf and a Java comment's type is `comment` (today's tree-sitter-java splits the one and renames
the other). Methods: the JDK's `src.zip` (java.base/java/{util,io,lang,net,text,time}), methods
cut as the pipeline cuts them (tasks.snippets_of_file, <= --max-chars characters, >= 3 tokens), a
seeded draw of --methods. Per task: the agreement of our labels with the release's, before (our
earlier definition, now the named variant) and after, and the label balance of the generator.

Usage: python -m bench.probing_release_agreement --codebert-git DIR --release-git DIR [--methods 400]
"""

from __future__ import annotations

import argparse
import ast
import logging
import subprocess
import sys
import warnings
import zipfile
from collections import Counter

from pipeline.core.ids import unit_float
from pipeline.corpus.fetch import find_jdk_src_zip
from pipeline.families.probing import release as R
from pipeline.families.probing import tasks as T

PACKAGES = ("java/util/", "java/io/", "java/lang/", "java/net/", "java/text/", "java/time/")


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
    """A tree-sitter node as the grammar of 2021 showed it: a string literal one leaf, comments `comment`."""

    __slots__ = ("n",)

    def __init__(self, n):
        self.n = n

    @property
    def type(self):
        return "comment" if self.n.type in R.COMMENTS else self.n.type

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
    """probings4code's `get_data_flow` on GraphCodeBERT's DFG_java: (token, first source) -> kind."""
    root = Old(a.root)
    index = g["tree_to_token_index"](root)
    words = {(tuple(n.start_point), tuple(n.end_point)): a.word(n) for n in a.leaves}  # the token texts (bytes)
    index_to_code = {ix: (i, words.get(ix, "")) for i, ix in enumerate(index)}  # "": a zero-width MISSING leaf
    ours = {ix: k for k, ix in enumerate(words)}  # their token index -> ours (zero-width leaves are none of ours)
    theirs = {i: ours.get(ix) for i, ix in enumerate(index)}
    dfg, _ = g["DFG_java"](root, index_to_code, {})
    out = {}
    for _code, idx, kind, _src, src_idx in sorted(dfg, key=lambda x: x[1]):
        if src_idx and theirs[idx] is not None and theirs[src_idx[0]] is not None:
            out.setdefault((theirs[idx], theirs[src_idx[0]]), kind)
    return out


def agreement(ours: dict, ref: dict) -> tuple[int, int]:
    keys = set(ours) | set(ref)
    return sum(ours.get(k) == ref.get(k) for k in keys), len(keys)


def old_edges(s: T.Snippet, a: R.Alone) -> dict:
    """Our earlier definition (the `dataflow_last_def` variant) on the same leaves, labels renamed."""
    at = {a.span(n): i for i, n in enumerate(a.leaves)}
    names = {"comes_from": "comesFrom", "computed_from": "computedFrom"}
    out = {}
    for (i, j), kind in T.dataflow_edges(s).items():
        x, y = at.get((s.tokens[i].start, s.tokens[i].end)), at.get((s.tokens[j].start, s.tokens[j].end))
        if x is not None and y is not None:
            out[(x, y)] = names[kind]
    return out


class Tok:  # the release's Token: value and node
    def __init__(self, value, node):
        self.value, self.node = value, node


def reference_declared(rel: dict, a: R.Alone, prs) -> tuple[list, list, dict]:
    """The release's candidates, insertion points and label of every (declaration, point) pair."""
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
            cut = a.leaves[pos].end_byte
            new = a.source[:cut] + f" System.out.println({name});".encode() + a.source[cut:]
            root = prs.parse(new).root_node
            if root.has_error:
                labels[(ident, pos)] = None
                continue
            new_tokens = [Tok(n.text.decode("utf-8", "replace"), n) for n in R.leaves(root, "java")]
            shift = lambda p: p if p <= pos else p + 9  # noqa: E731  System . out . println ( x ) ;
            visible = any(rel["is_left_visible_to_right"](new_tokens, shift(t), pos + 7) for t in targets)
            labels[(ident, pos)] = "declared" if visible else "undeclared"
    return decls, sorted(set(starts + ends)), labels


def one_line(a: R.Alone) -> tuple[str, list[int]] | None:
    """The snippet as the release's data has it: its tokens (comments included) joined by single
    spaces on one line (`match_nodes` reads columns), a `//` comment written `/* */` so it ends where it
    did; and the offset of each of our tokens (comments are none) in it. None where one line cannot
    hold the snippet (a token spanning lines, a line comment holding `*/`)."""
    parts, starts, at, stack = [], [], 0, [a.root]
    while stack:
        n = stack.pop()
        if R.is_token(n, "java") or n.type in R.COMMENTS:
            word = a.word(n)
            if n.type in R.COMMENTS:
                if word.startswith("//"):
                    if "*/" in word:
                        return None
                    word = "/*" + word[2:].rstrip("\r\n") + " */"
                word = " ".join(word.split())
            elif "\n" in word or not word:
                if not word:
                    continue
                return None
            else:
                starts.append(at)
            parts.append(word)
            at += len(word) + 1
        else:
            stack.extend(reversed(n.children))
    return " ".join(parts), starts


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


def methods(n: int, max_chars: int, seed: int) -> list[T.Snippet]:
    src = find_jdk_src_zip()
    if src is None:
        raise SystemExit("no JDK src.zip found (JAVA_HOME, javac on PATH, /usr/lib/jvm): install a JDK with sources")
    prs = T.parser("java")
    found = []
    with zipfile.ZipFile(src) as z:
        for name in sorted(z.namelist()):
            if name.endswith(".java") and any(f"java.base/{p}" in name for p in PACKAGES):
                text = z.read(name).decode("utf-8", "replace")
                found += [s for s in T.snippets_of_file(text, "java", name, prs)
                          if len(s.text) <= max_chars and len(s.tokens) >= 3]
    found.sort(key=lambda s: unit_float(seed, "snippet", s.snippet_id))
    return sorted(found[:n], key=lambda s: s.snippet_id)


def balance(rows: list[dict]) -> str:
    c = Counter(r["label"] for r in rows)
    total = sum(c.values())
    return ", ".join(f"{k} {v} ({v / total:.1%})" for k, v in c.most_common()) + f"; n={total}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--codebert-git", required=True, help="a clone of github.com/microsoft/CodeBERT")
    ap.add_argument("--release-git", required=True, help="a clone of github.com/serjtroshin/probings4code")
    ap.add_argument("--methods", type=int, default=400)
    ap.add_argument("--max-chars", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
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
    prs = T.parser("java")
    snippets = methods(args.methods, args.max_chars, args.seed)
    print(f"{len(snippets)} JDK methods (<= {args.max_chars} characters), seed {args.seed}")
    tally: dict[str, list[int]] = {k: [0, 0] for k in ("dataflow", "dataflow_before", "depth", "depth_before",
                                                       "declared", "declared_drop", "decl_candidates",
                                                       "misuse", "variable_name", "path_type", "path_type_before",
                                                       "path_type_skipped", "class_rule")}

    def add(key, ok, n=1):
        tally[key][0] += ok
        tally[key][1] += n

    path_labels, name_labels = [], []
    for s in snippets:
        a = R.alone(s.text, "java", prs)
        ref_paths = reference_paths(rel, a, prs)
        ours_paths = [p for _, p in R.token_paths(a, "java")]
        path_labels += [R.path_key(p) for p in ours_paths]
        add("path_type_skipped", ref_paths is None)
        if ref_paths is not None:
            add("path_type", sum(x == y for x, y in zip(ours_paths, ref_paths)), len(ref_paths))
            before = {(t.start, t.end): (0, *(i - 1 for i in t.path)) for t in s.tokens}  # ours, in the release's form
            add("path_type_before", sum(before.get(a.span(n)) == y for n, y in zip(a.leaves, ref_paths)),
                len(ref_paths))
        ref = reference_dataflow(g, a)
        add("dataflow", *agreement(R.dataflow_edges(a, "java"), ref))
        add("dataflow_before", *agreement(old_edges(s, a), ref))
        reps = [p for p in rel["get_node_representations"](prs.parse(a.source)) if p.node.type == "identifier"]
        ref_depth = max((len(p.representation) for p in reps), default=0)
        add("depth", R.depth(a) == ref_depth)
        add("depth_before", s.depth == ref_depth)
        decls, _points, labels = reference_declared(rel, a, prs)
        ours = R.local_declarations(a)
        ours_at = {next(i for i, n in enumerate(a.leaves) if n == d.children[1].children[0]): d for d in ours}
        add("decl_candidates", sorted(ours_at) == sorted(i for i, _ in decls))
        for (ident, pos), label in labels.items():
            d = ours_at.get(ident)
            made = R.insert_print(a, ours, d, pos, prs) if d is not None else None
            if label is None or made is None:
                add("declared_drop", (label is None) == (made is None))
                continue
            add("declared", made[2] == label)
        ids = [i for i, n in enumerate(a.leaves) if n.type == "identifier"]
        ref_pairs = {(i, o) for i in ids for o in {a.word(a.leaves[j]) for j in ids} if o != a.word(a.leaves[i])}
        rows = R.misuse([s], args.seed, prs)
        at = {a.span(a.leaves[i]): i for i in ids}
        got = {(at.get(tuple(right["spans"][0])), wrong["word"]) for wrong, right in zip(rows[::2], rows[1::2])}
        add("misuse", got <= ref_pairs and len(got) == min(3, len(ref_pairs)))
        top = rel["TOP_IDENTIFIERS"]
        cands = {a.word(a.leaves[i]) for i in ids if a.word(a.leaves[i]) in top}
        [vn] = R.variable_name([s], args.seed, prs) or [None]
        name_labels += [vn["label"]] if vn is not None else []
        add("variable_name", (vn is None and not cands) or (vn is not None and vn["label"] in cands and len(vn["spans"])
                                                          == sum(a.word(a.leaves[i]) == vn["label"] for i in ids)))

    # the class rule (make_dict) on the labels of these methods and on cases that reach its every branch
    cases = {"path_type": path_labels, "variable_name": name_labels,
             "20 labels, 3 with >= 30": (["a"] * 40 + ["b"] * 35 + ["c"] * 30 + ["d"] * 29
                                         + [f"z{i}" for i in range(16)]),
             "3 labels, 2 rare (merged)": ["a"] * 40 + ["b"] * 5 + ["c"] * 2,
             "17 labels with >= 30": [f"k{i:02d}" for i in range(17) for _ in range(30 + 17 - i)]}
    fates = {}
    for name, labels in cases.items():
        ref, ours = reference_class_fate(rel, labels), our_class_fate(labels)
        add("class_rule", sum(ref[y] == ours[y] for y in ref), len(ref))
        fates[name] = Counter(ours.values())
    print("\n| task | agreement with the release (after) | before (our earlier definition) | unit |")
    print("|---|---|---|---|")
    for key, before, unit in (("dataflow", "dataflow_before", "edge labels over the union of both edge sets"),
                              ("depth", "depth_before", "methods with the same depth"),
                              ("declared", None, "(declaration, insertion point) labels, both parsed"),
                              ("declared_drop", None, "insertions dropped by both or neither"),
                              ("decl_candidates", None, "methods with the same candidate declarations"),
                              ("misuse", None, "methods whose drawn pairs are release pairs, min(3, all) of them"),
                              ("variable_name", None, "methods whose label and replaced set are the release's"),
                              ("path_type", "path_type_before", "token paths (get_node_representations + match_nodes)"),
                              ("path_type_skipped", None, "methods one line cannot hold (not compared)"),
                              ("class_rule", None, "labels whose fate (kept / merged / dropped) is make_dict's")):
        ok, n = tally[key]
        b = f"{tally[before][0] / tally[before][1]:.1%} ({tally[before][0]}/{tally[before][1]})" if before else "-"
        if not n:
            print(f"| {key} | none (0) | {b} | {unit} |")
            continue
        print(f"| {key} | {ok / max(n, 1):.1%} ({ok}/{n}) | {b} | {unit} |")
    print("\nlabel balance of the generators on these methods (seed", args.seed, ")")
    for name, rows in (("dataflow", R.dataflow(snippets, args.seed, prs)), ("declared", R.declared(snippets, args.seed, prs)),
                       ("misuse", R.misuse(snippets, args.seed, prs)),
                       ("variable_name", R.variable_name(snippets, args.seed, prs)),
                       ("declared_every (ours)", T.declared(snippets, args.seed)),
                       ("dataflow_last_def (ours)", T.dataflow(snippets, args.seed))):
        if name.startswith("variable"):
            c = Counter(r["label"] for r in rows)
            print(f"- {name}: {len(rows)} samples, {len(c)} classes, top {c.most_common(3)}")
        else:
            print(f"- {name}: {balance(rows)}")
    for name, fate in fates.items():
        print(f"- class rule, {name}: " + ", ".join(f"{k} {v}" for k, v in sorted(fate.items())))
    kept, info = R.apply_classes(R.path_type(snippets, prs), 15, R.MIN_CLASS_SAMPLES)
    print(f"- path_type: {len(path_labels)} tokens, {info['labels_before']} paths, kept {len(kept)} samples in "
          f"{info['classes']} classes; {balance(kept)}")
    depths = [r["target"] for r in R.ast_depth(snippets, prs)]
    print(f"- depth: mean {sum(depths) / len(depths):.2f}, min {min(depths):.0f}, max {max(depths):.0f}; n={len(depths)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
