"""CodeSyntax Java labels against the release's own Java labeller, Eclipse JDT (issue 52 item 2).

The release (dashends/CodeSyntax, `generating_CodeSyntax/`) labels Java in two steps:
1. `Java AST Parser/src/generate_labels_java/main.java`: each method wrapped as `public class A {\\n<method>\\n}`,
   parsed by `ASTParser.newParser(AST.JLS3)` (org.eclipse.jdt.core.dom), an ASTVisitor writing every relation as
   character positions (head start/end, dependent start/end) to `java_node_start_end_position.txt`;
2. `generate_labels_java.py`: positions to token indices (`Visit.get_idx`: the head's first token, the dependent's
   first and last token, opening brackets / newlines skipped at the start, closing brackets dropped at the end, a
   dependent ending on the newline after it in the `with_new_lines` output), keeping 0 < head < start <= end.

This bench runs step 1 as released: the release's main.java itself, read with `git show` from a clone of
github.com/dashends/CodeSyntax that the user supplies (`--codesyntax-git`; its code is never copied here), compiled
by javac against Debian's JDT (`libeclipse-jdt-core-java` 3.32 and the Eclipse runtime jars it needs; the release
shipped JDT 3.26 jars: `--release-jars` uses those from the clone instead). Two source patches only, both printed:
the sample count of its loop (13711 -> the methods drawn) and, for the level named `jls17-modern`, `AST.JLS3` ->
`AST.JLS17` with the compiler options at source level 17 (JLS3 is Java 5: modern JDK methods do not parse there).
Step 2 is `Visit.get_idx` re-stated on our token stream (pipeline/syntax/java.py: the same token strings as javalang
gives, tree-sitter leaves; a token's character offset from its line and column), so the comparison is of relations,
not tokenisers.

Methods: the JDK's `src.zip` under --packages, cut and labelled as the codesyntax family labels them
(`pipeline.syntax.java.label_file`: methods whose tree-sitter tree has no ERROR / MISSING node), a seeded draw.
Per JLS level and variant (`plain`, `with_newlines`): recall (JDT's edges ours has) and precision (our edges JDT
has), over the methods JDT parses without a problem (`clean`; a helper of ours asks JDT for the problems) and over
all; every difference categorised (relation, side, and whether the other side has the edge with another head or
span) and given its cause (CAUSES: the JDT tree shapes ours does not reproduce, `unexplained` for the rest).

Set-up (optional, root; Debian/Ubuntu): `python -m bench.fidelity.codesyntax_jdt --setup` runs apt-get update and
installs the packages in APT_PACKAGES.

Usage: python -m bench.fidelity.codesyntax_jdt --codesyntax-git DIR [--methods 300] [--seed 52]
           [--packages PREFIX ...] [--out docs/results/codesyntax_jdt.json] [--release-jars]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from collections import Counter
from pathlib import Path

from pipeline.core.ids import stable_id, unit_float
from pipeline.corpus.fetch import find_jdk_src_zip
from pipeline.syntax import java as J
from pipeline.syntax.common import CLOSERS, NEWLINE, OPENERS, Sample

MAIN = "generating_CodeSyntax/Java AST Parser/src/generate_labels_java/main.java"
RELEASE_JARS = "generating_CodeSyntax/Java AST Parser"
APT_PACKAGES = ("libeclipse-jdt-core-java", "libequinox-common-java", "libeclipse-core-runtime-java",
                "libeclipse-core-resources-java", "libeclipse-core-jobs-java", "libeclipse-core-contenttype-java",
                "libequinox-preferences-java", "libeclipse-osgi-java", "libeclipse-text-java", "libosgi-compendium-java")
DEBIAN_JARS = ("eclipse-jdt-core", "equinox-common", "eclipse-core-runtime", "eclipse-core-resources",
               "eclipse-core-jobs", "eclipse-core-contenttype", "equinox-preferences", "eclipse-osgi", "eclipse-text",
               "osgi.cmpn", "osgi.core")
LEVELS = {"jls3-as-released": None, "jls17-modern": "17"}
PACKAGES = ("java.base/java/util/concurrent/", "java.base/java/util/regex/", "java.xml/", "java.naming/",
            "java.rmi/", "jdk.httpserver/", "java.scripting/", "jdk.jshell/", "java.compiler/", "jdk.jartool/")

# our helper (not the release's): JDT's problem count for each data/<i>.txt wrapped as main.java wraps it
CHECK = """import org.eclipse.jdt.core.dom.*;
import java.nio.file.*;
public class ParseCheck {
  public static void main(String[] a) throws Exception {
    int n = Integer.parseInt(a[0]);
    for (int i = 0; i < n; i++) {
      String text = new String(Files.readAllBytes(Paths.get("data/" + i + ".txt")), "UTF-8");
      ASTParser p = ASTParser.newParser(%(level)s);
      %(options)s
      p.setSource(("public class A {\\n" + text + "\\n}").toCharArray());
      p.setKind(ASTParser.K_COMPILATION_UNIT);
      CompilationUnit cu = (CompilationUnit) p.createAST(null);
      System.out.println(i + " " + cu.getProblems().length);
    }
  }
}
"""
OPTIONS = ('java.util.Map<String, String> o = org.eclipse.jdt.core.JavaCore.getOptions(); '
           'org.eclipse.jdt.core.JavaCore.setComplianceOptions("%s", o); p.setCompilerOptions(o);')


def setup() -> int:
    """The optional set-up: Debian's JDT and the Eclipse runtime jars its DOM needs (apt-get, as root)."""
    subprocess.run(["apt-get", "update"], check=True)
    subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", *APT_PACKAGES], check=True)
    print("installed:", " ".join(APT_PACKAGES))
    return 0


def classpath(release_git: str, release_jars: bool, work: Path) -> str:
    if release_jars:
        names = subprocess.run(["git", "-C", release_git, "ls-tree", "--name-only", "HEAD", RELEASE_JARS + "/"],
                               check=True, capture_output=True, text=True).stdout.split()
        jars = []
        for name in (n for n in names if n.endswith(".jar")):
            out = work / "jars" / Path(name).name
            out.parent.mkdir(exist_ok=True)
            out.write_bytes(subprocess.run(["git", "-C", release_git, "show", f"HEAD:{name}"], check=True,
                                           capture_output=True).stdout)
            jars.append(str(out))
        return ":".join(jars)
    missing = [j for j in DEBIAN_JARS if not Path(f"/usr/share/java/{j}.jar").exists()]
    if missing:
        raise SystemExit(f"JDT's jars are missing ({', '.join(missing)} in /usr/share/java): run "
                         "`python -m bench.fidelity.codesyntax_jdt --setup` (apt-get, root), or pass --release-jars")
    return ":".join(f"/usr/share/java/{j}.jar" for j in DEBIAN_JARS)


def patched_main(source: str, n: int, level: str | None) -> str:
    """The release's main.java with its loop bound set to `n` and, for a modern level, JLS17 at source level 17."""
    out, k = re.subn(r"i<13711;", f"i<{n};", source)
    if k != 1:
        raise SystemExit("the release's main.java has no `i<13711;` loop bound: another revision of the release?")
    if level:
        out, k = re.subn(r"ASTParser parser = ASTParser\.newParser\(AST\.JLS3\);",
                         f"ASTParser parser = ASTParser.newParser(AST.JLS{level}); " + OPTIONS.replace("p.", "parser.")
                         % level, out)
        if k != 1:
            raise SystemExit("the release's main.java has no `ASTParser.newParser(AST.JLS3)` call")
    return out


def run_jdt(main_src: str, methods: list[Sample], level: str | None, cp: str, work: Path) -> tuple[dict, dict]:
    """The release's main.java (patched) and our ParseCheck at `level` on the methods: positions per method (the
    release's output lines `reln head_start head_end dep_start dep_end`) and JDT's problem count per method."""
    run = work / (f"jls{level}" if level else "jls3")
    (run / "data").mkdir(parents=True, exist_ok=True)
    (run / "src" / "generate_labels_java").mkdir(parents=True, exist_ok=True)
    for i, s in enumerate(methods):
        # the release's Scanner reads lines and joins them with "\n": a trailing newline is dropped
        (run / "data" / f"{i}.txt").write_text(s.code.rstrip("\n"), encoding="utf-8")
    (run / "src" / "generate_labels_java" / "main.java").write_text(patched_main(main_src, len(methods), level))
    (run / "src" / "ParseCheck.java").write_text(CHECK % {
        "level": f"AST.JLS{level}" if level else "AST.JLS3", "options": OPTIONS % level if level else ""})
    subprocess.run(["javac", "-nowarn", "-encoding", "UTF-8", "-cp", cp, "-d", str(run / "classes"),
                    str(run / "src" / "generate_labels_java" / "main.java"), str(run / "src" / "ParseCheck.java")],
                   check=True, capture_output=True)
    java = ["java", "-cp", f"{run / 'classes'}:{cp}"]
    subprocess.run([*java, "generate_labels_java.main"], cwd=run, check=True, capture_output=True)
    problems = dict(tuple(map(int, line.split())) for line in subprocess.run(
        [*java, "ParseCheck", str(len(methods))], cwd=run, check=True, capture_output=True, text=True).stdout.split("\n")
        if line.strip())
    positions: dict[int, list[str]] = {}
    current, cache = 0, []
    for line in (run / "java_node_start_end_position.txt").read_text().split("\n"):  # the release's reader
        if line.isdigit():
            positions[current], cache, current = cache, [], int(line)
        elif line != "":
            cache.append(line)
    positions[current] = cache
    return positions, problems


def offsets(s: Sample) -> list[int]:
    """Each token's character offset in the method's code (lines 1-based, columns 0-based)."""
    starts = [0]
    for line in s.code.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    return [starts[r - 1] + c for r, c in zip(s.lines, s.cols)]


class Indexer:
    """The release's `Visit.get_idx` / `add_idx_tuple` (generate_labels_java.py) on our token stream."""

    def __init__(self, s: Sample, with_newlines: bool):
        self.tokens, self.at, self.newlines = s.tokens, offsets(s), with_newlines
        self.open, self.close = OPENERS | {NEWLINE}, CLOSERS

    def prev(self, position: int) -> int:  # tokens before the position (newline tokens included)
        return sum(1 for a in self.at if a < position)

    def idx(self, start: int, end: int, first: bool) -> int | None:
        t, n = self.tokens, len(self.tokens)
        count_prev = self.prev(start)
        try:
            if first:
                count = 1
                while t[count_prev + count - 1] in self.open:
                    count += 1
                    if t[count_prev + count - 1] in self.close:
                        return None
            else:
                count = sum(1 for k in range(count_prev, n) if self.at[k] < end) if count_prev < n else 0
                if self.newlines and count_prev + count < n and t[count_prev + count] == NEWLINE:
                    count += 1
                while t[count_prev + count - 1] in self.close:
                    count -= 1
                    if t[count_prev + count - 1] in self.open:
                        return None
        except IndexError:
            return None
        return count_prev + count - 1

    def edge(self, line: str) -> tuple | None:
        reln, hs, he, ds, de = line.split(" ")
        head, start, stop = self.idx(int(hs), int(he), True), self.idx(int(ds), int(de), True), \
            self.idx(int(ds), int(de), False)
        if None in (head, start, stop) or not (0 < head < start <= stop):
            return None
        return reln, head, start, stop


def category(edge: tuple, other: set, side: str) -> str:
    reln, head, start, stop = edge
    same_dep = any(o[0] == reln and o[2] == start and o[3] == stop for o in other)
    same_head = any(o[0] == reln and o[1] == head and o[2] == start for o in other)
    near = any(o[0] == reln and o[1] == head for o in other)
    shape = ("other head" if same_dep else "other end" if same_head else "other span" if near else "absent")
    return f"{reln} | only {side} | {shape}"


# Why the two sides differ where JDT parses the method without a problem: the tree shapes of JDT's DOM that ours does
# not reproduce (README "Java against the release's JDT labeller"), named from the tokens around the edge; an edge
# none of them matches is `unexplained`. In a method JDT flags a problem in, every difference is `jdt problem`.
CAUSES = {
    "infix chain": "InfixExpr: JDT nests a same-operator chain whose operand is another operator's expression, or "
                   "one that starts with string literals; ours always flattens it (extended operands)",
    "array creation": "ArrayCreation / ArrayType / ArrayInitializer nest their type, dimensions and initializer "
                      "otherwise than tree-sitter's array_creation_expression",
    "enhanced for": "EnhancedForStatement holds a SingleVariableDeclaration (`T x`); tree-sitter's enhanced_for_statement "
                    "holds the type and name directly",
    "wildcard": "WildcardType's bound (`? super T`): tree-sitter has a `super` node of its own",
    "qualified this": "ThisExpression's qualifier (`Outer.this`)",
    "jdt problem": "JDT flags a problem in the method at this level and labels its recovered tree",
    "unexplained": "none of the above",
}


def cause(edge: tuple, tokens: list[str], clean: bool) -> str:
    """The named cause of one difference (CAUSES), from the tokens around it."""
    if not clean:
        return "jdt problem"
    reln, head, start, _ = edge
    t = tokens
    if reln == "InfixExpr:left->right":
        return "infix chain"
    if t[head] == "?":
        return "wildcard"
    if t[start] == "this" and t[start - 1] == ".":
        return "qualified this"
    if t[head] == "new" or t[head - 1] == "new":
        return "array creation"
    k = head
    while k > 0 and t[k] != "for" and head - k < 6:
        k -= 1
    window = t[k:k + 10]
    if t[k] == "for" and window[1:2] == ["("] and ":" in window and start < k + window.index(":"):
        return "enhanced for"
    return "unexplained"


def methods(n: int, seed: int, packages) -> list[tuple[str, Sample, Sample]]:
    """A seeded draw of `n` JDK methods with a body and no parse error (the candidates of every file under `packages`
    listed from one parse), then labelled in both variants (a method over 512 tokens is a reject and left out)."""
    src = find_jdk_src_zip()
    if src is None:
        raise SystemExit("no JDK src.zip found (JAVA_HOME, javac on PATH, /usr/lib/jvm): install a JDK with sources")
    prs = J.java_parser()
    found = []
    with zipfile.ZipFile(src) as z:
        names = [m for m in sorted(z.namelist()) if m.endswith(".java") and any(p in m for p in packages)]
        for name in names:
            source = z.read(name).decode("utf-8", "replace").replace("\r\n", "\n").encode("utf-8")
            for function, node in J.methods(prs.parse(source).root_node):
                if node.child_by_field_name("body") is not None and not node.has_error:
                    found.append((stable_id(name, function, node.start_point[0] + 1), name, function,
                                  node.start_point[0] + 1))
        found.sort(key=lambda m: unit_float(seed, "jdt", m[0]))
        drawn: dict[str, dict] = {}
        for key, name, function, line in found[:n]:
            drawn.setdefault(name, {})[(function, line)] = key
        out = []
        for name, wanted in sorted(drawn.items()):
            text = z.read(name).decode("utf-8", "replace")
            both = [{(s.function, s.start_line): s for s in J.label_file(text, 512, newlines, prs)
                     if isinstance(s, Sample) and (s.function, s.start_line) in wanted} for newlines in (False, True)]
            out += [(key, both[0][m], both[1][m]) for m, key in wanted.items() if m in both[0] and m in both[1]]
    return sorted(out, key=lambda m: m[0])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--setup", action="store_true", help="install Debian's JDT and its runtime jars (apt-get, root)")
    ap.add_argument("--codesyntax-git", help="a clone of github.com/dashends/CodeSyntax (the release's main.java)")
    ap.add_argument("--methods", type=int, default=300)
    ap.add_argument("--seed", type=int, default=52)
    ap.add_argument("--packages", nargs="+", default=list(PACKAGES))
    ap.add_argument("--release-jars", action="store_true", help="the release's own JDT 3.26 jars from the clone")
    ap.add_argument("--examples", type=int, default=2, help="examples printed per difference category")
    ap.add_argument("--out", help="write the figures as JSON here (e.g. docs/results/codesyntax_jdt.json)")
    args = ap.parse_args(argv)
    if args.setup:
        return setup()
    if not args.codesyntax_git:
        ap.error("--codesyntax-git is required (a clone of github.com/dashends/CodeSyntax)")
    main_src = subprocess.run(["git", "-C", args.codesyntax_git, "show", f"HEAD:{MAIN}"], check=True,
                              capture_output=True, text=True).stdout
    drawn = methods(args.methods, args.seed, args.packages)
    print(f"{len(drawn)} JDK methods of {', '.join(args.packages)} (codesyntax's Java labeller: no parse error), "
          f"seed {args.seed}")
    result = {"bench": "bench.fidelity.codesyntax_jdt", "methods": len(drawn), "seed": args.seed, "causes": CAUSES,
              "packages": args.packages, "jdt": "release jars (3.26)" if args.release_jars else
              "Debian libeclipse-jdt-core-java 3.32", "codesyntax_commit": subprocess.run(
                  ["git", "-C", args.codesyntax_git, "rev-parse", "HEAD"], check=True, capture_output=True,
                  text=True).stdout.strip(), "levels": {}}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cp = classpath(args.codesyntax_git, args.release_jars, work)
        for level_name, level in LEVELS.items():
            positions, problems = run_jdt(main_src, [m[1] for m in drawn], level, cp, work)
            clean = {i for i in range(len(drawn)) if problems.get(i, 1) == 0}
            print(f"\n## {level_name}: JDT parses {len(clean)} / {len(drawn)} methods without a problem")
            result["levels"][level_name] = {"clean": len(clean), "methods": len(drawn), "variants": {}}
            for variant, pick in (("plain", 1), ("with_newlines", 2)):
                cells = {}
                for subset, ids in (("clean", sorted(clean)), ("all", range(len(drawn)))):
                    both = only_jdt = only_ours = 0
                    cats: Counter = Counter()
                    causes: Counter = Counter()
                    examples: dict[str, list] = {}
                    for i in ids:
                        s = drawn[i][pick]
                        ix = Indexer(s, variant == "with_newlines")
                        jdt = {e for e in (ix.edge(line) for line in positions.get(i, [])) if e is not None}
                        ours = {(e.relation, e.head, e.dep_start, e.dep_end) for e in s.edges}
                        both += len(jdt & ours)
                        only_jdt += len(jdt - ours)
                        only_ours += len(ours - jdt)
                        for side, diff, other in (("JDT", jdt - ours, ours), ("ours", ours - jdt, jdt)):
                            for e in sorted(diff):
                                c = category(e, other, side)
                                cats[c] += 1
                                causes[f"{cause(e, s.tokens, i in clean)} | only {side}"] += 1
                                if len(examples.setdefault(c, [])) < args.examples:
                                    examples[c].append(f"{s.function}: {e[0]} head {s.tokens[e[1]]!r} dep "
                                                       f"{' '.join(s.tokens[e[2]:e[3] + 1])[:80]!r}")
                    recall = both / (both + only_jdt) if both + only_jdt else None
                    precision = both / (both + only_ours) if both + only_ours else None
                    cells[subset] = {"methods": len(ids), "both": both, "only_jdt": only_jdt, "only_ours": only_ours,
                                     "recall": recall, "precision": precision,
                                     "differences": [{"category": c, "edges": k, "examples": examples[c]}
                                                     for c, k in cats.most_common()],
                                     "causes": dict(sorted(causes.items()))}
                    print(f"- {variant}, {subset} methods ({len(ids)}): recall {recall:.2%} ({both} / "
                          f"{both + only_jdt}), precision {precision:.2%} ({both} / {both + only_ours})")
                    print("    causes: " + ", ".join(f"{c} {k}" for c, k in sorted(causes.items())))
                    if subset == "clean":
                        for c, k in cats.most_common():
                            print(f"    {k:5d}  {c}   e.g. {examples[c][0]}")
                result["levels"][level_name]["variants"][variant] = cells
    if args.out:
        tmp = args.out + ".tmp"
        Path(tmp).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, args.out)
        print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
