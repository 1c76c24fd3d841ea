"""Inference precision: the runtime's scoring and feature paths at float32 against bfloat16 and
float16, one model, one run, the same inputs.

Loads one model folder (a trained zoo model such as data/models/code-clm, or any Hugging Face folder)
once per precision through the pipeline's own loader (`pipeline.models.zoo.load_model`, `dtype=`) and
times, on whatever device there is (cuda when present, else the CPU, float32 only: float16 is refused
there and bfloat16 on most CPUs is slower, not faster):

- scoring: `pipeline.runtime.plan.candidate_jobs` + `pipeline.runtime.scorer.score_candidates`, the path apiquiz and
  apirec rank candidates with (pseudo-log-likelihood for masked LMs, the shared-prefix KV cache for
  causal LMs, log p(target | source) for encoder-decoders): one identifier of a line of code masked
  out, the gold and `--candidates - 1` other identifiers ranked as its fill;
- features: `pipeline.runtime.features.pooled_vectors`, the path probing and idbench read (every
  layer mean-pooled over a snippet and over one identifier in it).

The inputs are the text of this repository's own `pipeline/` sources (read as text, never imported,
so the same inputs on every machine with this checkout). Prints each precision's throughput and its
ratio against float32 measured in the same run, peak GPU memory, and how far the lower precisions are
from float32: the gold's rank (max |change|, share of items whose gold rank or top-1 changes), the
log-likelihoods (max and mean |difference|), and the pooled features as stored (float16 on disk:
max |difference|, worst relative L2 error and cosine, beside float16 storage's own rounding error).

Needs only torch, transformers, tokenizers, numpy and pyarrow (no Snakemake, DuckDB, YAML):

    python3 bench/gpu/precision.py --model data/models/code-clm --device cuda
    python3 bench/gpu/precision.py --model data/models/code-mlm [--items 512 --texts 1024 --token-budget 65536]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # run as a script (python3 bench/gpu/precision.py) or as -m bench.gpu.precision
    sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import torch  # noqa: E402

IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]{2,}\b")
ARCHITECTURES = (("ForMaskedLM", "masked-lm"), ("ForCausalLM", "causal-lm"), ("LMHeadModel", "causal-lm"),
                 ("ForConditionalGeneration", "encoder-decoder"), ("Seq2SeqLM", "encoder-decoder"))


def describe(folder: Path, family: str | None, max_length: int | None) -> tuple[str, int]:
    """The model family and max_length: the flags, else the pipeline's card.json, else config.json."""
    card = json.loads((folder / "card.json").read_text()) if (folder / "card.json").is_file() else {}
    config = json.loads((folder / "config.json").read_text())
    if family is None:
        family = card.get("family")
    if family is None:
        arch = " ".join(config.get("architectures") or [])
        family = next((f for suffix, f in ARCHITECTURES if suffix in arch), "encoder-only")
    if max_length is None:
        # the position table's size under any of its config names (GPT-2 writes n_positions / n_ctx); RoBERTa-style
        # tables keep 2 rows for the padding offset, hence the -2
        positions = next((int(config[k]) for k in ("max_position_embeddings", "n_positions", "n_ctx") if config.get(k)),
                         514)
        max_length = card.get("max_length") or min(positions - 2, 512)
        if config.get("model_type") == "t5":
            max_length = card.get("max_length") or 512
    return family, int(max_length)


def windows(n: int, lines: int = 8) -> list[str]:
    """`n` snippets of `lines` lines of this repository's pipeline/ sources, in a fixed order."""
    out: list[str] = []
    for path in sorted((REPO / "pipeline").rglob("*.py")):
        text = path.read_text(encoding="utf-8").splitlines()
        for at in range(0, len(text) - lines + 1, lines):
            chunk = "\n".join(text[at: at + lines])
            if len(IDENT.findall(chunk)) >= 4 and len(chunk) <= 600:
                out.append(chunk)
    random.Random(0).shuffle(out)
    return out[:n]


def quizzes(texts: list[str], n: int, candidates: int, seed: int = 0) -> list[tuple[str, list[str], str, int]]:
    """(prefix, fills, suffix, gold index): the last identifier of a snippet's line, to be ranked among others."""
    rng = random.Random(seed)
    vocab = sorted({m.group(0) for t in texts for m in IDENT.finditer(t)})
    out = []
    for t in texts:
        found = list(IDENT.finditer(t))
        m = found[len(found) // 2]
        end_of_line = t.find("\n", m.end())
        prefix, gold = t[: m.start()], m.group(0)
        suffix = t[m.end(): end_of_line if end_of_line >= 0 else len(t)]
        others = rng.sample([v for v in vocab if v != gold], candidates - 1)
        fills = sorted([gold, *others])
        out.append((prefix, fills, suffix, fills.index(gold)))
        if len(out) == n:
            break
    return out


def feature_requests(texts: list[str]):
    from pipeline.runtime.features import FeatureRequest

    reqs = []
    for i, t in enumerate(texts):
        m = IDENT.search(t)
        reqs.append(FeatureRequest(f"{i:05d}.snippet", t, "snippet"))
        reqs.append(FeatureRequest(f"{i:05d}.word", t, "word", ((m.start(), m.end()),)))
    return reqs


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn, device: torch.device, repeat: int):
    """(best wall seconds of `repeat` calls after one warm-up call, the last result)."""
    result = fn()
    best = float("inf")
    for _ in range(repeat):
        sync(device)
        start = time.perf_counter()
        result = fn()
        sync(device)
        best = min(best, time.perf_counter() - start)
    return best, result


def run_precision(args, entry, dtype: str, device: str, quiz, requests) -> dict:
    from pipeline.models.zoo import load_model
    from pipeline.runtime.features import pooled_vectors
    from pipeline.runtime.plan import candidate_jobs
    from pipeline.runtime.protocols import rank_of
    from pipeline.runtime.scorer import Scorer, score_candidates

    loaded = load_model(entry, device=device, dtype=dtype, models_dir=args.model.parent)
    dev = loaded.device
    if dev.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(dev)
    out: dict = {"dtype": dtype, "device": str(dev), "weights_dtype": str(next(loaded.model.parameters()).dtype)}
    if entry.model_family != "encoder-only":
        scorer = Scorer(loaded, args.token_budget)
        plans, kept, over = [], [], 0
        for q, (prefix, fills, suffix, gold) in enumerate(quiz):
            made = candidate_jobs(scorer, entry.model_family, prefix, fills, suffix)
            if made is not None and any(len(job[0]) > entry.max_length for job in made[0]):
                over += 1  # a causal text of exactly max_length tokens, plus the BOS candidate_jobs adds after its check
            elif made is not None:
                plans.append((made[0], made[1], len(fills)))
                kept.append(q)
        seconds, scores = timed(lambda: score_candidates(scorer, entry.model_family, plans), dev, args.repeat)
        ranks, tops = [], []
        for q, s in zip(kept, scores):
            rank, order = rank_of(s, quiz[q][1], quiz[q][3])
            ranks.append(rank)
            tops.append(order[0])
        out["scoring"] = {"items": len(plans), "sequences": sum(len(j) for j, _, _ in plans), "seconds": seconds,
                          "items_per_s": len(plans) / seconds, "over_max_length": over, "kept": kept, "scores": scores, "ranks": ranks,
                          "tops": tops}
        if args.full_head and entry.model_family == "causal-lm":
            # the same requests with the LM head over every position and a plain log-softmax (head_only=False):
            # what the scored-positions head and the fused cross-entropy save, and that they change no score
            full = Scorer(loaded, args.token_budget, head_only=False)
            full_seconds, full_scores = timed(lambda: score_candidates(full, entry.model_family, plans), dev,
                                              args.repeat)
            diff = max((abs(a - b) for x, y in zip(scores, full_scores) for a, b in zip(x, y)), default=0.0)
            same_rank = sum(rank_of(f, quiz[q][1], quiz[q][3])[0] == r for q, f, r in zip(kept, full_scores, ranks))
            out["scoring"].update(full_head_seconds=full_seconds, full_head_max_abs_diff=float(diff),
                                  full_head_same_gold_rank=int(same_rank))
    seconds, pooled = timed(lambda: pooled_vectors(loaded, requests, args.token_budget), dev, args.repeat)
    out["features"] = {"requests": len(requests), "texts": len({r.text for r in requests}), "seconds": seconds,
                       "texts_per_s": len({r.text for r in requests}) / seconds, "vectors": pooled.vectors,
                       "failed": len(pooled.failed)}
    if dev.type == "cuda":
        out["peak_mib"] = torch.cuda.max_memory_allocated(dev) / 2**20
    del loaded
    return out


def compare(base: dict, other: dict) -> dict:
    """How far `other` (a lower precision) is from `base` (float32)."""
    cmp: dict = {}
    if "scoring" in base:
        b, o = base["scoring"], other["scoring"]
        assert b["kept"] == o["kept"]
        drank = np.abs(np.asarray(b["ranks"]) - np.asarray(o["ranks"]))
        dscore = np.abs(np.concatenate([np.asarray(x) - np.asarray(y) for x, y in zip(b["scores"], o["scores"])]))
        cmp.update(max_rank_change=int(drank.max(initial=0)), rank_changed=float((drank > 0).mean()),
                   top1_changed=float(np.mean(np.asarray(b["tops"]) != np.asarray(o["tops"]))),
                   max_abs_logprob_diff=float(dscore.max(initial=0)), mean_abs_logprob_diff=float(dscore.mean()))
    bv, ov = base["features"]["vectors"], other["features"]["vectors"]
    common = sorted(set(bv) & set(ov))
    if common:
        x = np.stack([bv[i] for i in common]).astype(np.float32)  # [items, layers, dim]
        y = np.stack([ov[i] for i in common]).astype(np.float32)
        xs, ys = x.astype(np.float16).astype(np.float32), y.astype(np.float16).astype(np.float32)  # as stored
        norm = np.linalg.norm(xs, axis=-1)
        rel = np.linalg.norm(xs - ys, axis=-1) / np.maximum(norm, 1e-12)
        cos = (xs * ys).sum(-1) / np.maximum(norm * np.linalg.norm(ys, axis=-1), 1e-12)
        cmp.update(feature_vectors=len(common), feature_max_abs_diff=float(np.abs(xs - ys).max()),
                   feature_max_rel_l2=float(rel.max()), feature_min_cosine=float(cos.min()),
                   float16_storage_max_abs_err=float(np.abs(xs - x).max()),
                   feature_scale_max_abs=float(np.abs(x).max()))
    cmp["features_only_in_one"] = len(set(bv) ^ set(ov))
    return cmp


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, default=Path("data/models/code-clm"),
                    help="a model folder (config.json + weights + tokenizer); default: the default build's code-clm")
    ap.add_argument("--device", default="auto", help="auto (cuda when present), cuda, cuda:N, cpu")
    ap.add_argument("--family", choices=["masked-lm", "causal-lm", "encoder-decoder", "encoder-only"],
                    help="default: card.json's, else from config.json's architectures")
    ap.add_argument("--max-length", type=int, help="tokens per input (default: card.json's, else the model's)")
    ap.add_argument("--items", type=int, default=256, help="ranking items (one masked identifier each)")
    ap.add_argument("--candidates", type=int, default=20, help="fills ranked per item, the gold among them")
    ap.add_argument("--texts", type=int, default=512, help="snippets for the feature path (2 requests each)")
    ap.add_argument("--batch-size", type=int, default=128, help="rows per batch (the zoo entry's batch_size)")
    ap.add_argument("--token-budget", type=int, default=8192, help="padded tokens per batch (inference.token_budget)")
    ap.add_argument("--repeat", type=int, default=3, help="timed calls per path (best kept), after one warm-up")
    ap.add_argument("--dtypes", default=None, help="comma-separated; default float32,bfloat16,float16 on cuda, "
                    "float32 on the CPU")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    ap.add_argument("--full-head", action="store_true", help="causal LMs: also score with the LM head over every "
                    "position (head_only=False) and compare time and scores with the scored-positions path")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args(argv)

    from pipeline.models.entries import ModelEntry
    from pipeline.models.zoo import pick_device

    if args.threads:
        torch.set_num_threads(args.threads)
    folder = args.model.resolve()
    if not (folder / "config.json").is_file():
        print(f"{args.model} holds no model (config.json): build one (`snakemake data/models/code-clm --cores 2`) "
              "or pass --model FOLDER; skipped")
        return 0
    family, max_length = describe(folder, args.family, args.max_length)
    entry = ModelEntry(name=folder.name, source=f"path:{folder}", model_family=family, max_length=max_length,
                       batch_size=args.batch_size)
    device = pick_device(None if args.device == "auto" else args.device)
    dtypes = (args.dtypes.split(",") if args.dtypes
              else ["float32", "bfloat16", "float16"] if device.type == "cuda" else ["float32"])
    texts = windows(max(args.items, args.texts))
    quiz = quizzes(texts, args.items, args.candidates)
    requests = feature_requests(texts[: args.texts])
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"{folder.name} ({family}, max_length {max_length}) on {device} [{gpu}], torch {torch.__version__}, "
          f"batch_size {args.batch_size}, token_budget {args.token_budget}; {len(quiz)} items x {args.candidates} "
          f"candidates, {len(requests)} feature requests on {args.texts} snippets; best of {args.repeat}")
    runs = [run_precision(args, entry, d, str(device), quiz, requests) for d in dtypes]
    base = runs[0]
    report = {"model": str(folder), "family": family, "device": str(device), "gpu": gpu, "torch": torch.__version__,
              "runs": []}
    for r in runs:
        row = {"dtype": r["dtype"], "weights_dtype": r["weights_dtype"], "peak_mib": r.get("peak_mib")}
        if "scoring" in r:
            row.update(scoring_items_per_s=r["scoring"]["items_per_s"], scoring_sequences=r["scoring"]["sequences"],
                       scoring_speedup=base["scoring"]["seconds"] / r["scoring"]["seconds"],
                       scored_items=r["scoring"]["items"], over_max_length=r["scoring"]["over_max_length"])
        row.update(features_texts_per_s=r["features"]["texts_per_s"],
                   features_speedup=base["features"]["seconds"] / r["features"]["seconds"],
                   features_failed=r["features"]["failed"])
        if r is not base:
            row.update(compare(base, r))
        report["runs"].append(row)
        line = f"{r['dtype']:>9}:"
        if "scoring" in r:
            line += (f" scoring {row['scoring_items_per_s']:8.1f} items/s (x{row['scoring_speedup']:.2f} vs "
                     f"{base['dtype']}, {row['scored_items']} items, {row['scoring_sequences']} sequences"
                     + (f", {row['over_max_length']} left out: longer than max_length with the BOS" if row["over_max_length"] else "")
                     + ");")
        if "full_head_seconds" in r.get("scoring", {}):
            sc = r["scoring"]
            row.update(full_head_speedup=sc["full_head_seconds"] / sc["seconds"],
                       full_head_max_abs_diff=sc["full_head_max_abs_diff"],
                       full_head_same_gold_rank=sc["full_head_same_gold_rank"])
            line += (f" full-head path {sc['full_head_seconds']:.3f} s vs {sc['seconds']:.3f} s (scored positions "
                     f"x{row['full_head_speedup']:.2f}; max |diff| {row['full_head_max_abs_diff']:.2e}, gold rank equal "
                     f"{row['full_head_same_gold_rank']}/{row['scored_items']});")
        line += f" features {row['features_texts_per_s']:8.1f} texts/s (x{row['features_speedup']:.2f})"
        if row["peak_mib"] is not None:
            line += f"; peak {row['peak_mib']:.0f} MiB"
        print(line)
        if r is not base:
            if "max_rank_change" in row:
                print(f"{'':>10} ranks vs {base['dtype']}: max |gold rank change| {row['max_rank_change']}, gold rank "
                      f"changed on {row['rank_changed']:.1%} of items, top-1 on {row['top1_changed']:.1%}; "
                      f"|log-likelihood diff| max {row['max_abs_logprob_diff']:.4f}, mean {row['mean_abs_logprob_diff']:.5f}")
            if "feature_max_abs_diff" in row:
                print(f"{'':>10} features (float16 as stored) vs {base['dtype']}: max |diff| "
                      f"{row['feature_max_abs_diff']:.4g} (values up to {row['feature_scale_max_abs']:.3g}; float16 "
                      f"storage alone {row['float16_storage_max_abs_err']:.3g}), max relative L2 "
                      f"{row['feature_max_rel_l2']:.3g}, min cosine {row['feature_min_cosine']:.5f}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
