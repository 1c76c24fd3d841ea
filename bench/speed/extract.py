"""API extraction speed, four ways on the same files in one run: bare `ast.parse`, bare
`libcst.parse_module`, a straightforward libcst QualifiedNameProvider extractor, and ours
(`pipeline.extract.analyse.analyse_source`: ast + libcst parse, one walk, resolution, positions).

    python -m bench.speed.extract [--files 60] [--repeat 3]

Files: every k-th unique Python file of data/manifest.parquet (the stdlib when there is no
manifest). Prints seconds, files/s and the ratios the spec targets: ours / bare libcst parse
(target <= 1.5) and QualifiedNameProvider / ours (target >= 5). Ours pauses the cyclic garbage
collector while it analyses a file (the trees are acyclic), so the parse is also timed that way.
"""

from __future__ import annotations

import argparse
import ast
import sys
import sysconfig
import time
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider, QualifiedNameProvider

from pipeline.extract.analyse import analyse_source, gc_paused


class QualifiedNameExtractor(cst.CSTVisitor):
    """The textbook libcst way: metadata providers resolve every call's qualified names and position."""

    METADATA_DEPENDENCIES = (QualifiedNameProvider, PositionProvider)

    def __init__(self):
        self.calls = []

    def visit_Call(self, node: cst.Call) -> None:
        names = self.get_metadata(QualifiedNameProvider, node.func, set())
        pos = self.get_metadata(PositionProvider, node).start
        self.calls.append((sorted(n.name for n in names), pos.line, pos.column))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.get_metadata(QualifiedNameProvider, node, set())


def qualified_name_extract(text: str) -> list:
    visitor = QualifiedNameExtractor()
    MetadataWrapper(cst.parse_module(text)).visit(visitor)
    return visitor.calls


def parse_gc_paused(text: str) -> cst.Module:
    with gc_paused():
        return cst.parse_module(text)


def sample(n: int) -> list[str]:
    manifest = Path("data/manifest.parquet")
    if manifest.exists():
        import pyarrow.parquet as pq

        rows = [r for r in pq.read_table(manifest).to_pylist() if r["language"] == "python" and not r["duplicate"]]
        rows.sort(key=lambda r: r["sha256"])  # a spread over sources and sizes, stable
        step = max(1, len(rows) // n)
        texts = []
        for r in rows[::step][:n]:
            text = Path(r["location"]).read_bytes().decode(r["encoding"])
            try:
                ast.parse(text)
            except (SyntaxError, RecursionError, ValueError):
                continue
            texts.append(text)
        return texts
    files = sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py"))[:n]
    return [f.read_text(encoding="utf-8", errors="replace") for f in files]


def timed(fn, texts: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for t in texts:
            fn(t)
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.speed.extract", description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=60, help="files to time (every k-th of the manifest)")
    ap.add_argument("--repeat", type=int, default=3, help="best of this many passes (QualifiedNameProvider: one)")
    args = ap.parse_args(argv)
    texts = sample(args.files)
    size = sum(len(t) for t in texts)
    print(f"{len(texts)} files, {size / 1e6:.2f} MB of source", flush=True)
    results = {}
    for name, fn in (("ast.parse", ast.parse), ("libcst.parse_module", cst.parse_module),
                     ("libcst.parse_module, gc paused", parse_gc_paused),
                     ("ours (analyse_source)", analyse_source), ("QualifiedNameProvider", qualified_name_extract)):
        # the slow reference is timed once: its ratio is far from the target either way
        results[name] = timed(fn, texts, 1 if fn is qualified_name_extract else args.repeat)
        print(f"{name:32s} {results[name]:8.2f} s  {len(texts) / results[name]:8.1f} files/s", flush=True)
    ours, parse = results["ours (analyse_source)"], results["libcst.parse_module"]
    print(f"ours / libcst parse            = {ours / parse:.2f}x  (target <= 1.5)")
    print(f"ours / libcst parse, gc paused = {ours / results['libcst.parse_module, gc paused']:.2f}x"
          "  (ours pauses the cyclic gc per file; this is the like-for-like figure)")
    print(f"QualifiedNameProvider / ours   = {results['QualifiedNameProvider'] / ours:.1f}x  (target >= 5)")
    print(f"libcst parse / ast.parse       = {parse / results['ast.parse']:.1f}x")
    print(f"QualifiedNameProvider / ast    = {results['QualifiedNameProvider'] / results['ast.parse']:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
