"""The release's parser runtime: py-tree-sitter 0.19.0 with tree-sitter-java ac14b4b, for the `*_release_parser` tasks.

probings4code pins `tree-sitter==0.19.0` (its requirements) and builds tree-sitter-java's head of May 2022, ac14b4b.
The grammar alone is not enough: a method parsed alone has a parse error (the grammar reads `void f(...)` as a
local declaration), and the C runtime bundled with py-tree-sitter 0.19.0 recovers from it differently from the
pipeline's tree-sitter 0.26.1 in ~4.5% of JDK methods (18/400, 15 with `throws`), which moved depth and path-type
labels (96.0% / 95.9% agreement). So those trees are made by the release's runtime itself:

- the runtime lives in its own environment, `.fidelity/ts019-venv` (git-ignored), made by ONE command,
  `make fidelity-env` (`python -m bench.fidelity.env`; part of `make install`): a venv of
  this interpreter with `tree-sitter==0.19.0` built from its PyPI sdist by the C compiler, pinned by sha256
  (requirements-ts019.txt);
- the grammar is the same `languages.so` grammar.py loads (tree-sitter-languages 1.5.0, built from tree-sitter-java
  ac14b4b; ABI 13, which the 0.19 runtime reads: its LANGUAGE_VERSION is 13);
- `ts019_server.py` runs in that environment and parses each text sent to it; its trees come back whole (types,
  spans, points, MISSING / named / error flags, field names) as `Node019` objects with the attributes release.py
  and the release's code read (`children`, `parent`, `child_by_field_name`, `descendant_for_byte_range`, `walk()`,
  ...). So the labels are release.py's, run on the release runtime's trees. No network.
"""

from __future__ import annotations

import argparse
import atexit
import functools
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
ENV = REPO / ".fidelity" / "ts019-venv"
REQUIREMENTS = REPO / "requirements-ts019.txt"
SERVER = Path(__file__).with_name("ts019_server.py")
VERSION = "0.19.0"
MAKE = "make fidelity-env (python -m bench.fidelity.env)"


class RuntimeUnavailable(RuntimeError):
    """The release's runtime environment is missing or broken."""


def env_python(env: Path = ENV) -> Path:
    return env / "bin" / "python"


def check(env: Path = ENV) -> str | None:
    """None when `env` imports tree_sitter 0.19.0, else a one-line reason with what to do."""
    py = env_python(env)
    if not py.exists():
        return f"no release runtime environment at {env}: run `{MAKE}`"
    probe = subprocess.run([str(py), "-c", "import importlib.metadata as m, tree_sitter; "
                            "print(m.version('tree_sitter'))"], capture_output=True, text=True)
    got = probe.stdout.strip()
    if probe.returncode or got != VERSION:
        return (f"the release runtime environment at {env} has tree_sitter {got or 'none'} "
                f"({(probe.stderr.strip().splitlines() or [''])[-1]}), expected {VERSION}: run `{MAKE}`")
    return None


def make_env(env: Path = ENV, log=print) -> Path:
    """`env` made when missing or broken: a venv of this interpreter, tree-sitter 0.19.0 built from its sdist."""
    if check(env) is None:
        return env_python(env)
    log(f"making the release runtime environment {env} (tree-sitter {VERSION} from its sdist, C compiler)")
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(env)], check=True)
    subprocess.run([str(env_python(env)), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                    "--no-binary", ":all:", "--require-hashes", "-r", str(REQUIREMENTS)], check=True)
    reason = check(env)
    if reason:
        raise RuntimeUnavailable(reason)
    return env_python(env)


class Node019:
    """A node of a tree the 0.19 runtime parsed (the attributes of tree_sitter.Node that the labels read)."""

    __slots__ = ("tree", "id", "type", "is_named", "is_missing", "has_error", "start_byte", "end_byte",
                 "start_point", "end_point", "children", "parent", "_fields")

    @property
    def child_count(self) -> int:
        return len(self.children)

    @property
    def named_children(self) -> list[Node019]:
        return [c for c in self.children if c.is_named]

    @property
    def text(self) -> bytes:
        return self.tree.source[self.start_byte:self.end_byte]

    def child_by_field_name(self, name: str) -> Node019 | None:
        i = self._fields.get(name)
        return None if i is None else self.children[i]

    def descendant_for_byte_range(self, start: int, end: int) -> Node019:
        """tree-sitter's `ts_node_descendant_for_byte_range`: descend into the first child that ends at or after
        `end` (and after `start`) and starts at or before `start`, while there is one; the deepest such node."""
        node, descended = self, True
        while descended:
            descended = False
            for c in node.children:
                if c.end_byte < end or c.end_byte <= start:
                    continue
                if start < c.start_byte:
                    break
                node, descended = c, True
                break
        return node

    def walk(self) -> Cursor019:
        return Cursor019(self)

    def __eq__(self, other) -> bool:
        return isinstance(other, Node019) and other.tree is self.tree and other.id == self.id

    def __hash__(self) -> int:
        return hash((id(self.tree), self.id))

    def __repr__(self) -> str:
        return f"<Node019 {self.type} {self.start_point}-{self.end_point}>"


class Cursor019:
    """`TreeCursor` over a tree of nodes with `children` (a Node019 tree, or any node wrapper: the release's
    `traverse_tree` / `get_node_representations` walk it)."""

    def __init__(self, root):
        self.node, self._stack = root, []  # (parent, index of the current node among its children)

    def goto_first_child(self) -> bool:
        children = self.node.children
        if not children:
            return False
        self._stack.append((self.node, 0))
        self.node = children[0]
        return True

    def goto_next_sibling(self) -> bool:
        if not self._stack:
            return False
        parent, i = self._stack[-1]
        siblings = parent.children
        if i + 1 >= len(siblings):
            return False
        self._stack[-1] = (parent, i + 1)
        self.node = siblings[i + 1]
        return True

    def goto_parent(self) -> bool:
        if not self._stack:
            return False
        self.node = self._stack.pop()[0]
        return True


class Tree019:
    def __init__(self, source: bytes, rows: list):
        self.source = source
        nodes = []
        stack: list[list] = []  # [node, children still to come]
        for i, (kind, flags, sb, eb, sr, sc, er, ec, count, fields) in enumerate(rows):
            n = Node019()
            n.tree, n.id, n.type = self, i, kind
            n.is_named, n.is_missing, n.has_error = bool(flags & 1), bool(flags & 2), bool(flags & 4)
            n.start_byte, n.end_byte, n.start_point, n.end_point = sb, eb, (sr, sc), (er, ec)
            n.children, n._fields = [], fields
            n.parent = stack[-1][0] if stack else None
            if stack:
                stack[-1][0].children.append(n)
                stack[-1][1] -= 1
            nodes.append(n)
            stack.append([n, count])
            while stack and stack[-1][1] == 0:
                stack.pop()
        self.root_node = nodes[0]

    def walk(self) -> Cursor019:
        return Cursor019(self.root_node)


class Parser019:
    """A parser whose `parse(bytes)` returns the 0.19 runtime's tree (tree-sitter-java ac14b4b), parsed by one
    server process in the pinned environment."""

    def __init__(self, env: Path = ENV):
        from pipeline.families.probing import grammar  # the grammar's shared library and its field names

        reason = check(env)
        if reason:
            raise RuntimeUnavailable(f"the *_release_parser probing tasks parse with the release's runtime: {reason}"
                                     " (or drop them from probing.tasks)")
        lang = grammar.java_language()
        fields = [lang.field_name_for_id(i) for i in range(1, lang.field_count + 1)]
        self.proc = subprocess.Popen([str(env_python(env)), "-I", str(SERVER), str(grammar.library()), "java", *fields],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={"PATH": os.defpath})
        atexit.register(self.close)

    def parse(self, source: bytes) -> Tree019:
        self.proc.stdin.write(struct.pack(">I", len(source)) + source)
        self.proc.stdin.flush()
        head = self.proc.stdout.read(4)
        if len(head) < 4:
            raise RuntimeUnavailable(f"the release runtime's tree server stopped (exit {self.proc.poll()}): "
                                     f"check `{MAKE}`")
        return Tree019(source, json.loads(self.proc.stdout.read(struct.unpack(">I", head)[0])))

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait()


@functools.lru_cache(maxsize=1)
def java_parser() -> Parser019:
    """The release's runtime on the release's Java grammar (one server per process)."""
    return Parser019()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--make", action="store_true", help=f"make {ENV.relative_to(REPO)} when missing or broken")
    ap.add_argument("--check", action="store_true", help="exit 1 with the reason when the environment is unusable")
    args = ap.parse_args(argv)
    if args.make:
        print(make_env())
        return 0
    reason = check()
    print(reason or f"{env_python()}: tree_sitter {VERSION}")
    return 1 if reason else 0


if __name__ == "__main__":
    sys.exit(main())
