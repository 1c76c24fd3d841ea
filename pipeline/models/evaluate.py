"""Held-out perplexity of a zoo model on the test split, each model with its own tokenizer.

Causal LMs: exp of the mean next-token cross-entropy over every predicted position.
Masked LMs: exp of the mean cross-entropy over masked positions, with a fixed seeded masking
(15% of non-special tokens, all replaced by the mask token), so a model and its random twin
(same tokenizer) are scored on exactly the same masks. Encoder-only and encoder-decoder models
get no perplexity (no LM head / no single-sequence objective): null with the reason.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
from pathlib import Path

import torch

from pipeline.core import logs
from pipeline.io import write_json
from pipeline.models.data import blocks, select_files, token_stream
from pipeline.models.train import corrupt_spans
from pipeline.models.zoo import LoadedModel, load_model, parse_zoo, sentinels

MEAN_NOISE_SPAN = 3.0  # T5's mean span length, for the encoder-decoders' span-corruption perplexity

log = logging.getLogger("pipeline.models.evaluate")


def eval_mask(batch: torch.Tensor, special: torch.Tensor, probability: float, mask_id: int, generator: torch.Generator):
    """Seeded masking for scoring: every picked token becomes the mask token; at least one per row."""
    picked = (torch.rand(batch.shape, generator=generator) < probability) & ~special
    none = ~picked.any(dim=1)
    if none.any():  # the first non-special token of a row that drew no mask
        first = (~special).int().argmax(dim=1)
        picked[none, first[none]] = True
    inputs = batch.clone()
    inputs[picked] = mask_id
    return inputs, torch.where(picked, batch, torch.full_like(batch, -100))


def framing_of(tok) -> tuple[list[int], list[int]]:
    """The special tokens a tokenizer puts before and after one text (<s> … </s>, [CLS] … [SEP]), read
    off by encoding a probe with and without them (transformers 5 tokenizers expose no such method)."""
    bare = tok("x", add_special_tokens=False)["input_ids"]
    full = tok("x", add_special_tokens=True)["input_ids"]
    start = next(i for i in range(len(full) - len(bare) + 1) if full[i: i + len(bare)] == bare)
    return full[:start], full[start + len(bare):]


# At most this many logits (floats) per forward pass: a block's row of logits is block_length x vocabulary
# (SmolLM2: 256 x 49,152 = 12.6M floats, 50 MB), so its batch of 16 made 0.8 GB of logits and their copies,
# a peak RSS of 6.5 GB. Rows per pass = this over one row's logits (at least 1, at most the batch size);
# small models' passes are unchanged.
LOGITS_BUDGET = 1 << 25


def rows_per_pass(lm: LoadedModel, length: int) -> int:
    vocab = int(getattr(lm.model.config, "vocab_size", 0) or len(lm.tokenizer))
    return max(1, min(lm.entry.batch_size, LOGITS_BUDGET // max(1, length * vocab)))


def span_perplexity(lm: LoadedModel, texts, block_length: int, max_blocks: int, seed: int, noise_density: float) -> dict:
    """Encoder-decoders: perplexity of the span-corruption targets (sentinel, span, …, </s>) given the
    corrupted blocks; corruption drawn once for all blocks from the seed (no dependence on batch size)."""
    tok = lm.tokenizer
    ids = [tok.convert_tokens_to_ids(t) for t in sentinels(tok)]
    content = blocks(token_stream(tok, texts, tok.eos_token_id), block_length, max_blocks)
    if not ids or content.shape[0] == 0:
        return {"perplexity": None, "tokens_scored": 0, "blocks": int(content.shape[0]), "block_length": block_length}
    inputs_all, targets_all = corrupt_spans(content, noise_density, MEAN_NOISE_SPAN, ids, torch.Generator().manual_seed(seed))
    nll, count = 0.0, 0
    step = rows_per_pass(lm, targets_all.shape[1])
    for i in range(0, inputs_all.shape[0], step):
        inputs, targets = inputs_all[i: i + step], targets_all[i: i + step]
        logits = lm(input_ids=inputs, labels=targets).logits.float().cpu()
        nll += torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum").item()
        count += int(targets.numel())
    return {"perplexity": math.exp(nll / count), "tokens_scored": count, "blocks": int(inputs_all.shape[0]),
            "block_length": block_length}


def perplexity(lm: LoadedModel, texts, block_length: int, max_blocks: int, seed: int, mlm_probability: float) -> dict:
    if lm.model_family == "encoder-decoder":
        return span_perplexity(lm, texts, block_length, max_blocks, seed, mlm_probability)
    tok = lm.tokenizer
    masked = lm.model_family == "masked-lm"
    separator = tok.sep_token_id if masked else tok.eos_token_id
    prefix, suffix = framing_of(tok) if masked else ([], [])
    content = blocks(token_stream(tok, texts, separator), block_length - len(prefix) - len(suffix), max_blocks)
    if masked:
        n = content.shape[0]
        data = torch.cat([torch.tensor([prefix] * n, dtype=torch.long).view(n, len(prefix)), content,
                          torch.tensor([suffix] * n, dtype=torch.long).view(n, len(suffix))], dim=1)
        special = torch.zeros(data.shape, dtype=torch.bool)
        special[:, : len(prefix)] = True
        special[:, data.shape[1] - len(suffix):] = True
        # masks drawn once for all blocks, so the score does not depend on the batch size
        inputs_all, labels_all = eval_mask(data, special, mlm_probability, tok.mask_token_id,
                                           torch.Generator().manual_seed(seed))
    else:
        inputs_all = labels_all = content
    nll, count = 0.0, 0
    step = rows_per_pass(lm, inputs_all.shape[1])
    for i in range(0, inputs_all.shape[0], step):
        inputs, labels = inputs_all[i: i + step], labels_all[i: i + step]
        logits = lm(input_ids=inputs).logits.float().cpu()
        if not masked:  # position t predicts token t+1
            logits, labels = logits[:, :-1], labels[:, 1:]
        picked = labels != -100
        nll += torch.nn.functional.cross_entropy(logits[picked], labels[picked], reduction="sum").item()
        count += int(picked.sum())
    return {"perplexity": math.exp(nll / count) if count else None, "tokens_scored": count, "blocks": int(inputs_all.shape[0]),
            "block_length": block_length}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.models.evaluate",
                                 description="Test-split perplexity of one zoo model (null for families without an LM objective).")
    ap.add_argument("--zoo", required=True, help="models.zoo as JSON")
    ap.add_argument("--name", required=True)
    ap.add_argument("--manifest", required=True, type=Path)
    ap.add_argument("--data", required=True, help="training.data as JSON (languages, max_eval_bytes)")
    ap.add_argument("--evaluation", required=True, help="training.evaluation as JSON (max_blocks, mlm_probability)")
    ap.add_argument("--seed", required=True, type=int)
    ap.add_argument("--models-dir", default=Path("data/models"), type=Path)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    logs.setup()
    torch.set_num_threads(args.threads)
    entry = parse_zoo(json.loads(args.zoo))[args.name]
    data, ev = json.loads(args.data), json.loads(args.evaluation)
    result = {"name": entry.name, "split": "test", "perplexity": None, "tokens_scored": 0}
    if entry.model_family in ("masked-lm", "causal-lm", "encoder-decoder"):
        lm = load_model(entry, device=args.device, models_dir=args.models_dir)
        selection = select_files(args.manifest, "test", data["languages"], data["max_eval_bytes"], args.seed)
        blocks = min(ev["max_blocks"], entry.eval_blocks) if entry.eval_blocks else ev["max_blocks"]
        result.update(perplexity(lm, selection.texts(), entry.max_length, blocks, args.seed, ev["mlm_probability"]))
        result["test_data"] = selection.describe(data["languages"])
        log.info("%s: test perplexity %.3f over %d tokens", entry.name, result["perplexity"] or float("nan"), result["tokens_scored"])
    else:
        result["reason"] = f"no perplexity for the {entry.model_family} family"
    write_json(result, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
