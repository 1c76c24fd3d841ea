"""Train the byte-level BPE tokenizer the pipeline's code LMs share, on the train split only."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from pipeline.core import logs
from pipeline.io import atomic_path, write_json
from pipeline.models.data import select_files

log = logging.getLogger("pipeline.models.tokenizer_train")

# RoBERTa's special tokens and ids: <s>=0 <pad>=1 </s>=2 <unk>=3 <mask>=4.
SPECIAL_TOKENS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
# T5's sentinel names: the encoder-decoder's tokenizer appends <extra_id_0>, <extra_id_1>, … after
# the shared vocabulary (pipeline.models.train.pretrained_tokenizer); this file never holds them.
SENTINEL = "<extra_id_{}>"
TOKENIZER_FILE = "tokenizer.json"
RECORD_FILE = "record.json"


def train_bpe(texts, vocab_size: int, min_frequency: int) -> Tokenizer:
    """Byte-level BPE (GPT-2/RoBERTa style): every byte is in the alphabet, so nothing is <unk>."""
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m pipeline.models.tokenizer_train",
        description="Train a byte-level BPE tokenizer on the manifest's train split (non-duplicate files, "
        "seeded order, byte cap) and write <out>/tokenizer.json plus a record of what it saw.",
    )
    ap.add_argument("--manifest", required=True, type=Path)
    ap.add_argument("--data", required=True, help='training.data params as JSON: {"languages", "max_train_bytes", ...}')
    ap.add_argument("--tokenizer", required=True, help='training.tokenizer params as JSON: {"vocab_size", "min_frequency"}')
    ap.add_argument("--seed", required=True, type=int)
    ap.add_argument("--out", required=True, type=Path, help="output folder")
    args = ap.parse_args(argv)
    logs.setup()
    data, params = json.loads(args.data), json.loads(args.tokenizer)
    selection = select_files(args.manifest, "train", data["languages"], data["max_train_bytes"], args.seed)
    if not selection.file_ids:
        raise SystemExit("no train-split files to train the tokenizer on (is the manifest empty?)")
    log.info("training BPE (vocab %d) on %d files, %d bytes", params["vocab_size"], len(selection.file_ids), selection.bytes)
    tok = train_bpe(selection.texts(), params["vocab_size"], params["min_frequency"])
    args.out.mkdir(parents=True, exist_ok=True)
    with atomic_path(args.out / TOKENIZER_FILE) as tmp:
        tok.save(str(tmp))
    write_json({"vocab_size": tok.get_vocab_size(), "requested_vocab_size": params["vocab_size"],
                "min_frequency": params["min_frequency"], "train_data": selection.describe(data["languages"])},
               args.out / RECORD_FILE)
    log.info("tokenizer: %d tokens", tok.get_vocab_size())
    return 0


if __name__ == "__main__":
    sys.exit(main())
