"""Train the pipeline's small code LMs (RoBERTa-style masked LM, GPT-2-style causal LM, T5-style
encoder-decoder with span corruption) with a plain, seeded torch loop, and make random twins of
any zoo entry.

Why not Trainer/accelerate: a loop this small is easy to make bit-for-bit deterministic on CPU
(one seed, fixed threads, deterministic algorithms), and nothing is hidden from the card.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from tqdm import tqdm

from pipeline.core import logs
from pipeline.io import atomic_path, write_json
from pipeline.models import cards
from pipeline.models.data import batch_order, blocks, read_ranges, select_files, token_stream
from pipeline.models.entries import OBJECTIVES
from pipeline.models.tokenizer_train import RECORD_FILE, SENTINEL, SPECIAL_TOKENS, TOKENIZER_FILE
from pipeline.models.zoo import ModelEntry, auto_class, locate, parse_zoo, pick_device

log = logging.getLogger("pipeline.models.train")

BOS, PAD, EOS, UNK, MASK = range(5)  # ids of SPECIAL_TOKENS


@dataclass(frozen=True)
class TrainParams:
    """params.yaml `training` (minus tokenizer and data), one set for both objectives."""

    layers: int
    hidden_size: int
    heads: int
    intermediate_size: int
    seq_length: int
    batch_size: int
    steps: int
    learning_rate: float
    warmup_steps: int
    weight_decay: float
    dropout: float
    mlm_probability: float
    eval_every: int
    eval_blocks: int
    schedule: str = "linear"  # learning rate after warmup: linear or cosine decay to zero
    noise_density: float = 0.15  # seq2seq span corruption (T5): share of tokens in noise spans
    mean_noise_span_length: float = 3.0  # and their mean length
    mlm_architecture: str = "roberta"  # masked LM: roberta (post-LN, BERT's) or roberta-prelayernorm (pre-LN)


def span_counts(length: int, noise_density: float, mean_span: float) -> tuple[int, int]:
    """T5's counts for a block of `length` tokens: noise tokens (at least 1, at most length - 2) and
    noise spans (at least 1, at most one per two non-noise tokens so a non-noise span can follow each)."""
    noise = min(max(int(round(length * noise_density)), 1), length - 2)
    spans = max(1, int(round(noise / mean_span)))
    return noise, min(spans, noise, (length - noise) - 1)


def sentinel_tokens(p: TrainParams) -> list[str]:
    """The encoder-decoder's sentinels, T5's names: one per noise span of a training block, and one
    that closes the last span in the target."""
    return [SENTINEL.format(i) for i in range(span_counts(p.seq_length, p.noise_density, p.mean_noise_span_length)[1] + 1)]


def seed_everything(seed: int, threads: int) -> None:
    """Same seed and thread count on CPU => identical weights (checked by tests/test_training.py)."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # required by deterministic cuBLAS
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True, warn_only=True)


def pretrained_tokenizer(tokenizer_dir: Path, objective: str, max_length: int, sentinels: list[str] = ()):
    """The shared BPE wrapped for transformers: the masked LM's adds <s> … </s> like RoBERTa's,
    the causal LM's adds nothing (GPT-2 style), the encoder-decoder's ends every text with </s> and
    gains the sentinels after the shared vocabulary (T5 style; the shared tokenizer file is unchanged,
    so the masked and causal LMs are not retrained when an encoder-decoder joins the zoo)."""
    from tokenizers import Tokenizer
    from tokenizers.processors import TemplateProcessing
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer.from_file(str(tokenizer_dir / TOKENIZER_FILE))
    if objective == "mlm":
        tok.post_processor = TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
                                                special_tokens=[("<s>", BOS), ("</s>", EOS)])
    elif objective == "seq2seq":
        tok.post_processor = TemplateProcessing(single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", EOS)])
    bos, pad, eos, unk, mask = SPECIAL_TOKENS
    extra = {"mask_token": mask, "cls_token": bos, "sep_token": eos} if objective == "mlm" else {}
    if objective == "seq2seq":
        extra = {"extra_special_tokens": list(sentinels)}
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=bos, eos_token=eos, unk_token=unk, pad_token=pad,
                                   model_max_length=max_length, **extra)


def model_config(objective: str, vocab_size: int, p: TrainParams):
    from transformers import GPT2Config, RobertaConfig, RobertaPreLayerNormConfig, T5Config

    if objective == "seq2seq":  # `layers` in the encoder and as many in the decoder; T5's relative positions
        return T5Config(vocab_size=vocab_size, d_model=p.hidden_size, d_kv=p.hidden_size // p.heads, d_ff=p.intermediate_size,
                        num_layers=p.layers, num_decoder_layers=p.layers, num_heads=p.heads, dropout_rate=p.dropout,
                        feed_forward_proj="relu", pad_token_id=PAD, eos_token_id=EOS, decoder_start_token_id=PAD,
                        bos_token_id=None)

    if objective == "mlm":
        if p.mlm_architecture not in ("roberta", "roberta-prelayernorm"):
            raise SystemExit(f"training.model.mlm_architecture: {p.mlm_architecture!r} is not roberta or roberta-prelayernorm")
        config_class = RobertaPreLayerNormConfig if p.mlm_architecture == "roberta-prelayernorm" else RobertaConfig
        return config_class(vocab_size=vocab_size, hidden_size=p.hidden_size, num_hidden_layers=p.layers,
                             num_attention_heads=p.heads, intermediate_size=p.intermediate_size,
                             max_position_embeddings=p.seq_length + 2, type_vocab_size=1,
                             hidden_dropout_prob=p.dropout, attention_probs_dropout_prob=p.dropout,
                             bos_token_id=BOS, pad_token_id=PAD, eos_token_id=EOS)
    return GPT2Config(vocab_size=vocab_size, n_embd=p.hidden_size, n_layer=p.layers, n_head=p.heads,
                      n_inner=p.intermediate_size, n_positions=p.seq_length, resid_pdrop=p.dropout,
                      embd_pdrop=p.dropout, attn_pdrop=p.dropout, bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD)


def mask_for_training(batch: torch.Tensor, probability: float, vocab_size: int, generator: torch.Generator):
    """BERT's recipe: pick `probability` of the non-special tokens; of those 80% -> <mask>,
    10% -> a random token, 10% unchanged. Labels are -100 where nothing is predicted."""
    special = batch < len(SPECIAL_TOKENS)
    picked = (torch.rand(batch.shape, generator=generator) < probability) & ~special
    labels = torch.where(picked, batch, torch.full_like(batch, -100))
    roll = torch.rand(batch.shape, generator=generator)
    inputs = batch.clone()
    inputs[picked & (roll < 0.8)] = MASK
    randomised = picked & (roll >= 0.8) & (roll < 0.9)
    inputs[randomised] = torch.randint(len(SPECIAL_TOKENS), vocab_size, batch.shape, generator=generator)[randomised]
    return inputs, labels


def wrap_for_mlm(content: torch.Tensor, bos: int, eos: int) -> torch.Tensor:
    """<s> block </s>, as the masked LM's tokenizer frames every input."""
    n = content.shape[0]
    return torch.cat([torch.full((n, 1), bos), content, torch.full((n, 1), eos)], dim=1)


def segment(items: int, segments: int, generator: torch.Generator) -> list[int]:
    """`items` split into `segments` runs of at least one, uniformly over the cut points (T5's
    _random_segmentation)."""
    cuts = (torch.randperm(items - 1, generator=generator)[: segments - 1].sort().values + 1).tolist()
    bounds = [0, *cuts, items]
    return [b - a for a, b in zip(bounds, bounds[1:])]


def corrupt_spans(batch: torch.Tensor, noise_density: float, mean_span: float, sentinels: list[int],
                  generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """T5 span corruption of every row (the T5 paper's format): noise spans (T5's counts, random
    lengths) become sentinels <extra_id_0>, <extra_id_1>, … in the input; the target is each sentinel
    followed by the span it hides, then the next sentinel closing the last span, then </s>:
    `Thank you <X> me to your party <Y> week.` -> `<X> for inviting <Y> last <Z>`. Non-noise text
    always follows the last span (T5's code ends a block on a noise span instead), so a one-span
    input `prefix <extra_id_0> suffix </s>` with target `<extra_id_0> fill <extra_id_1> </s>` (how the
    families score candidates) is in the training distribution. Every row has the same counts, so
    inputs and targets need no padding. `sentinels`: the ids of <extra_id_0>, <extra_id_1>, … (one
    more than the spans)."""
    length = batch.shape[1]
    noise, spans = span_counts(length, noise_density, mean_span)
    spans = min(spans, len(sentinels) - 1)
    inputs, targets = [], []
    for row in batch.tolist():
        noise_runs = segment(noise, spans, generator)
        kept_runs = segment(length - noise, spans + 1, generator)
        src, tgt, at = [], [], 0
        for i in range(spans):
            src += row[at: at + kept_runs[i]] + [sentinels[i]]
            at += kept_runs[i]
            tgt += [sentinels[i]] + row[at: at + noise_runs[i]]
            at += noise_runs[i]
        inputs.append(src + row[at:] + [EOS])
        targets.append(tgt + [sentinels[spans], EOS])
    return torch.tensor(inputs, dtype=torch.long), torch.tensor(targets, dtype=torch.long)


def mlm_loss(model, inputs: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """RobertaForMaskedLM's loss with the LM head run on the masked positions only (the same number:
    cross-entropy is per position; the vocabulary projection of the other 85% is skipped)."""
    hidden = model.base_model(input_ids=inputs, attention_mask=attention_mask).last_hidden_state
    picked = labels != -100
    return torch.nn.functional.cross_entropy(model.lm_head(hidden[picked]).float(), labels[picked])


def loss_of(model, objective: str, batch: torch.Tensor, p: TrainParams, vocab_size: int, generator: torch.Generator):
    attention_mask = (batch != PAD).long()  # padding only occurs in the one block of a tiny corpus
    if objective == "mlm":
        inputs, labels = mask_for_training(batch.cpu(), p.mlm_probability, vocab_size, generator)  # CPU generator:
        # the same masks on every device
        return mlm_loss(model, inputs.to(batch.device), attention_mask, labels.to(batch.device))
    if objective == "seq2seq":
        n = len(sentinel_tokens(p))  # the sentinels end the vocabulary
        inputs, targets = corrupt_spans(batch.cpu(), p.noise_density, p.mean_noise_span_length,
                                        list(range(vocab_size - n, vocab_size)), generator)
        inputs, targets = inputs.to(batch.device), targets.to(batch.device)
        return model(input_ids=inputs, attention_mask=(inputs != PAD).long(),
                     labels=targets.masked_fill(targets == PAD, -100)).loss
    return model(input_ids=batch, attention_mask=attention_mask, labels=batch.masked_fill(batch == PAD, -100)).loss


def lr_factor(step: int, p: TrainParams) -> float:
    """Linear warmup over `warmup_steps`, then linear or cosine decay to zero at `steps`."""
    if step < p.warmup_steps:
        return (step + 1) / p.warmup_steps
    done = min(1.0, (step - p.warmup_steps) / max(p.steps - p.warmup_steps, 1))
    return 0.5 * (1.0 + math.cos(math.pi * done)) if p.schedule == "cosine" else 1.0 - done


def train(objective: str, p: TrainParams, train_blocks: torch.Tensor, valid_blocks: torch.Tensor, vocab_size: int,
          seed: int, device: torch.device):
    """The loop: AdamW, linear warmup then linear or cosine decay, gradient clipping at 1, seeded batch order."""
    model = auto_class(OBJECTIVES[objective]).from_config(model_config(objective, vocab_size, p))
    model.to(device).train()
    decay = [w for n, w in model.named_parameters() if w.dim() >= 2]
    no_decay = [w for n, w in model.named_parameters() if w.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": p.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=p.learning_rate)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, p))
    mask_gen = torch.Generator().manual_seed(seed + 1)
    curve = {"step": [], "train_loss": [], "eval_step": [], "valid_loss": []}
    batches = batch_order(train_blocks.shape[0], p.batch_size, p.steps, seed)  # the card recomputes it (read_ranges)
    for step, idx in tqdm(enumerate(batches), total=p.steps, desc=f"train {objective}", file=sys.stderr, mininterval=5):
        batch = train_blocks[idx].to(device)
        loss = loss_of(model, objective, batch, p, vocab_size, mask_gen)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        curve["step"].append(step + 1)
        curve["train_loss"].append(round(loss.item(), 5))
        if valid_blocks.shape[0] and ((step + 1) % p.eval_every == 0 or step + 1 == p.steps):
            curve["eval_step"].append(step + 1)
            curve["valid_loss"].append(round(eval_loss(model, objective, valid_blocks, p, vocab_size, seed, device), 5))
            model.train()
    model.eval()
    return model, curve


def eval_loss(model, objective: str, valid_blocks: torch.Tensor, p: TrainParams, vocab_size: int, seed: int,
              device: torch.device) -> float:
    """Mean loss on fixed validation blocks, with the same masks at every evaluation."""
    model.eval()
    gen = torch.Generator().manual_seed(seed + 2)
    total, n = 0.0, 0
    with torch.inference_mode():
        for i in range(0, valid_blocks.shape[0], p.batch_size):
            batch = valid_blocks[i: i + p.batch_size]
            total += loss_of(model, objective, batch.to(device), p, vocab_size, gen).item() * batch.shape[0]
            n += batch.shape[0]
    return total / n


def plot_curve(curve: dict, title: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    ax.plot(curve["step"], curve["train_loss"], lw=0.8, alpha=0.6, label="train (batch)")
    if curve["eval_step"]:
        ax.plot(curve["eval_step"], curve["valid_loss"], "o-", lw=1.5, label="valid split")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats/token)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", metadata={"Software": None})
    plt.close(fig)


def run_training(entry: ModelEntry, manifest: Path, tokenizer_dir: Path, data: dict, p: TrainParams, seed: int,
                 threads: int, device: str, out: Path, figure: Path) -> dict:
    objective = entry.value
    seed_everything(seed, threads)
    dev = pick_device(device)
    tokenizer = pretrained_tokenizer(tokenizer_dir, objective, p.seq_length,
                                     sentinel_tokens(p) if objective == "seq2seq" else [])
    content_length = p.seq_length - 2 if objective == "mlm" else p.seq_length
    train_sel = select_files(manifest, "train", data["languages"], data["max_train_bytes"], seed)
    valid_sel = select_files(manifest, "valid", data["languages"], data["max_eval_bytes"], seed)
    train_blocks = blocks(token_stream(tokenizer, train_sel.texts(), EOS), content_length, pad_id=PAD)
    valid_blocks = blocks(token_stream(tokenizer, valid_sel.texts(), EOS), content_length, p.eval_blocks)
    if objective == "mlm":
        train_blocks, valid_blocks = wrap_for_mlm(train_blocks, BOS, EOS), wrap_for_mlm(valid_blocks, BOS, EOS)
    if train_blocks.shape[0] == 0:
        raise SystemExit(f"{entry.name}: the train split has no text in {data['languages']} to train on")
    log.info("%s: %d train blocks, %d valid blocks of %d tokens, %d steps on %s", entry.name, train_blocks.shape[0],
             valid_blocks.shape[0], p.seq_length, p.steps, dev)
    started = time.perf_counter()
    model, curve = train(objective, p, train_blocks, valid_blocks, len(tokenizer), seed, dev)
    seconds = time.perf_counter() - started
    out.mkdir(parents=True, exist_ok=True)
    model.to("cpu").save_pretrained(out)
    tokenizer.save_pretrained(out)
    record = json.loads((tokenizer_dir / RECORD_FILE).read_text())
    tokens_seen = p.steps * p.batch_size * p.seq_length
    # `read`: exactly the text the model read (the blocks its batches drew, mapped back to line/column
    # ranges of the selected files): whether a model saw a given span of the corpus is computed from it, per
    # model. `split_*`: the whole train split in these languages, for comparison.
    drawn = set().union(*batch_order(train_blocks.shape[0], p.batch_size, p.steps, seed))
    split = select_files(manifest, "train", data["languages"], 1 << 62, seed)
    card = cards.card_for(entry, model, str(out), {
        "seed": seed,
        # full_epoch: every block was in some batch, so every selected file was seen (all but the stream's
        # ragged tail of < seq_length tokens).
        "train_data": {**train_sel.describe(data["languages"]), "tokens": int(train_blocks.numel()),
                       "tokens_seen": tokens_seen, "epochs": round(tokens_seen / train_blocks.numel(), 3),
                       "full_epoch": p.steps * p.batch_size >= train_blocks.shape[0],
                       "split_files": len(split.file_ids), "split_bytes": split.bytes,
                       "read": read_ranges(tokenizer, train_sel, train_sel.texts(), content_length, EOS, drawn)},
        "tokenizer": {"kind": "byte-level BPE", "vocab_size": record["vocab_size"], "train_data": record["train_data"]},
        "training": {"objective": objective, **vars(p)},
    }, tokenizer=tokenizer)
    write_json(card, out / cards.CARD_FILE)
    write_json({**curve, "seconds": seconds, "device": str(dev), "threads": threads,
                "tokens_per_second": tokens_seen / seconds}, out / cards.TRAINING_FILE)
    plot_curve(curve, f"{entry.name} ({objective}, {card['parameters'] / 1e6:.2f}M parameters)", figure)
    log.info("%s: %.0f s, last valid loss %s", entry.name, seconds, curve["valid_loss"][-1:] or "n/a")
    return card


def make_random_twin(entry: ModelEntry, twin: ModelEntry, seed: int, models_dir: Path, out: Path) -> dict:
    """Same config and tokenizer as the twin, weights from a seeded `from_config` init."""
    from transformers import AutoConfig, AutoTokenizer

    loc = locate(twin, models_dir)
    config = AutoConfig.from_pretrained(loc.target, local_files_only=loc.local_files_only, revision=loc.revision)
    tokenizer = AutoTokenizer.from_pretrained(loc.target, local_files_only=loc.local_files_only, revision=loc.revision)
    torch.manual_seed(seed)
    model = auto_class(entry.model_family).from_config(config)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    card = cards.card_for(entry, model, str(out), {"seed": seed, "twin_of": twin.name, "train_data": None},
                          tokenizer=tokenizer)
    write_json(card, out / cards.CARD_FILE)
    return card


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.models.train",
                                 description="Train a `trained:` zoo model, or make a `random:` twin, into its folder.")
    sub = ap.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="train a trained:mlm / trained:causal / trained:seq2seq entry on the train split")
    t.add_argument("--zoo", required=True, help="models.zoo as JSON")
    t.add_argument("--name", required=True)
    t.add_argument("--manifest", required=True, type=Path)
    t.add_argument("--tokenizer", required=True, type=Path, help="folder written by pipeline.models.tokenizer_train")
    t.add_argument("--data", required=True, help="training.data as JSON")
    t.add_argument("--params", required=True, help="training.model as JSON (sizes, steps, lr, ...)")
    t.add_argument("--seed", required=True, type=int)
    t.add_argument("--threads", type=int, default=1, help="torch CPU threads (fixed, for determinism)")
    t.add_argument("--device", default="auto", help="auto (cuda when present), cpu, cuda, cuda:1, ...")
    t.add_argument("--out", required=True, type=Path)
    t.add_argument("--figure", required=True, type=Path, help="loss curve PNG")
    r = sub.add_parser("random", help="make the random twin of another zoo entry")
    r.add_argument("--zoo", required=True, help="models.zoo as JSON")
    r.add_argument("--name", required=True)
    r.add_argument("--seed", required=True, type=int)
    r.add_argument("--models-dir", default=Path("data/models"), type=Path)
    r.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    logs.setup()
    zoo = parse_zoo(json.loads(args.zoo))
    entry = zoo[args.name]
    if args.command == "train":
        card = run_training(entry, args.manifest, args.tokenizer, json.loads(args.data),
                            TrainParams(**json.loads(args.params)), args.seed, args.threads, args.device, args.out,
                            args.figure)
    else:
        card = make_random_twin(entry, zoo[entry.value], args.seed, args.models_dir, args.out)
    log.info("%s: %d parameters, weights %s", entry.name, card["parameters"], card["weights_sha256"][:12])
    return 0


if __name__ == "__main__":
    sys.exit(main())
