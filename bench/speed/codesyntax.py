"""CodeSyntax labelling throughput: ours (one tokenize pass, positions looked up) against a
per-node re-tokenizing labeller (the paper's release's approach: for every node, tokenize
the code before it to find its index), on the same functions, one core.

    python -m bench.speed.codesyntax [--files 60]
"""

from __future__ import annotations

import argparse
import ast
import io
import time
import tokenize

import pyarrow.compute as pc

from pipeline import schemas
from pipeline.io import read_parquet
from pipeline.manifest import read_text
from pipeline.syntax import python


def retokenizing_index(code: str, tokens: list[str], node: ast.AST) -> int:
    """Index of the node's first token, found by tokenizing everything before it (baseline)."""
    lines = code.split("\n")
    prefix = "\n".join(lines[: node.lineno - 1] + [lines[node.lineno - 1][: node.col_offset] + "_End_"])
    count = 0
    try:
        for tok, ref in zip(tokenize.generate_tokens(io.StringIO(prefix).readline), tokens):
            if tok.string != ref:
                break
            count += 1
    except (tokenize.TokenError, SyntaxError):
        pass
    return count


def baseline_label(code: str) -> int:
    tokens = [t.string for t in tokenize.generate_tokens(io.StringIO(code).readline)]
    n = 0
    for node in ast.walk(ast.parse(code)):
        if "lineno" in node._attributes:
            retokenizing_index(code, tokens, node)
            n += 1
    return n


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--manifest", default="data/manifest.parquet")
    ap.add_argument("--files", type=int, default=60)
    args = ap.parse_args(argv)
    m = read_parquet(args.manifest, schemas.MANIFEST)
    m = m.filter(pc.and_(pc.equal(m.column("language"), "python"), pc.invert(m.column("duplicate"))))
    rows = m.sort_by("file_id").to_pylist()[: args.files]
    codes = []
    for row in rows:
        text = python.normalise_newlines(read_text(row))
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        lines = text.split("\n")
        codes += [python.cut(lines, node)[1] for _, node in python.functions(tree)]
    t0 = time.process_time()
    for code in codes:
        python.label_function("f", 1, code, 10**9, False)
    ours = len(codes) / (time.process_time() - t0)
    sub = codes[: max(1, len(codes) // 10)]
    t0 = time.process_time()
    for code in sub:
        baseline_label(code)
    base = len(sub) / (time.process_time() - t0)
    print(f"functions: {len(codes)} (baseline on {len(sub)})")
    print(f"ours:     {ours:8.1f} functions/s per core (CPU time)")
    print(f"baseline: {base:8.1f} functions/s per core (per-node re-tokenizing)")
    print(f"ratio:    {ours / base:8.1f}x")


if __name__ == "__main__":
    main()
