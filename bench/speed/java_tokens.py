"""Java tokenising on one-line methods: linear in line length (issue 15 item 8).

A minified or generated Java method can sit on one line of a megabyte. The old tokenizer
decoded the whole line prefix for every token's column (quadratic: 75-100 s for a 960 KB
method); `JavaTokens` now counts columns incrementally. Baseline, measured in the same run:
the previous `_append` (kept below as `QuadraticJavaTokens`), on the same methods; the tokens,
lines and columns of both are checked equal before any time is printed.

Usage: python -m bench.speed.java_tokens [--sizes 10000 50000 200000] [--big 960000]
"""

from __future__ import annotations

import argparse
import time

from pipeline.syntax.java import JavaTokens, java_parser


class QuadraticJavaTokens(JavaTokens):
    def _append(self, text: str, kind: str, start: int, end: int) -> None:  # the previous implementation
        self._row += self.source.count(b"\n", self._at, start)
        self._at = start
        line_start = self.source.rfind(b"\n", 0, start) + 1
        col = len(self.source[line_start:start].decode("utf-8", "replace"))
        self.strings.append(text)
        self.kinds.append(kind)
        self.rows.append(self._row - self.base_row + 1)
        self.cols.append(col - self.base_col if self._row == self.base_row else col)


def one_line_method(chars: int) -> bytes:
    stmts, i = [], 0
    while sum(map(len, stmts)) < chars:
        stmts.append(f"x{i} = y + \"é{i}\";")
        i += 1
    return ("class A { void f() { " + " ".join(stmts) + " } }\n").encode()


def method_node(source: bytes):
    root = java_parser().parse(source).root_node
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "method_declaration":
            return n
        stack.extend(n.children)
    raise ValueError("no method")


def timed(cls, node, source) -> tuple[float, JavaTokens]:
    start = time.perf_counter()
    toks = cls(node, source, False)
    return time.perf_counter() - start, toks


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.speed.java_tokens", description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000, 200_000], help="bytes per method, both sides")
    ap.add_argument("--big", type=int, default=960_000, help="a method this long is tokenised by the new side only")
    args = ap.parse_args(argv)
    print(f"{'bytes':>9s} {'tokens':>8s} {'ours s':>8s} {'old s':>8s} {'ratio':>8s}")
    for size in args.sizes:
        source = one_line_method(size)
        node = method_node(source)
        t_new, new = timed(JavaTokens, node, source)
        t_old, old = timed(QuadraticJavaTokens, node, source)
        assert (new.strings, new.rows, new.cols) == (old.strings, old.rows, old.cols), "outputs differ"
        print(f"{len(source):9,d} {len(new.strings):8,d} {t_new:8.3f} {t_old:8.3f} {t_old / t_new:7.1f}x", flush=True)
    if args.big:
        source = one_line_method(args.big)
        t_new, new = timed(JavaTokens, method_node(source), source)
        print(f"{len(source):9,d} {len(new.strings):8,d} {t_new:8.3f}        -        -   (old: 75-100 s in the issue)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
