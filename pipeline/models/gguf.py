"""GGUF model sources: a quantized GGUF file (inside an installed distribution, or at a path), pinned by
its sha256 and converted once into a standard Hugging Face folder under data/models/<name>.

`python -m pipeline.models.gguf --zoo <json> --name <model> --out data/models/<model>`:

1. finds the file (`gguf:<distribution>`: the one .gguf file the distribution ships, or
   `gguf:<distribution>/<file>.gguf` when it ships several; `gguf:<path>.gguf`: a file) and checks its
   sha256 against the zoo entry's `sha256` (a mismatch is an error naming both hashes);
2. loads it through transformers' GGUF support (`gguf_file=`: the tensors are dequantized to float32);
3. copies the weights into a fresh model built from the same config (transformers refuses to
   `save_pretrained` a GGUF-loaded model as is) and saves it in float32 with the tokenizer GGUF carries;
4. writes the card: the GGUF file's sha256, quantization (file type and tensor types), the conversion.

The converted weights are a dequantization: the same numbers the quantized model computes with, in
float32 (no precision is added back). Conversion costs about 20 CPU seconds for SmolLM2-135M.
"""

from __future__ import annotations

import argparse
import collections
import importlib.metadata
import json
import logging
import sys
from pathlib import Path

from pipeline.core import logs
from pipeline.models.weights import file_sha256
from pipeline.io import write_json
from pipeline.models.entries import ModelEntry, parse_zoo
from pipeline.models.locate import ModelUnavailable, _is_distribution, gguf_file  # noqa: F401 (re-exported)
from pipeline.models.zoo import _tied_names

log = logging.getLogger("pipeline.models.gguf")

CONVERTED_DTYPE = "float32"


def quantization(path: Path) -> dict:
    """The file's declared type (llama.cpp's `general.file_type`) and how many tensors each type stores."""
    import gguf

    reader = gguf.GGUFReader(str(path))
    field = reader.fields.get("general.file_type")
    file_type = None
    if field is not None:
        code = int(field.contents())
        try:
            file_type = gguf.LlamaFileType(code).name.removeprefix("MOSTLY_")
        except ValueError:
            file_type = str(code)
    types = collections.Counter(t.tensor_type.name for t in reader.tensors)
    return {"file_type": file_type, "tensor_types": dict(sorted(types.items()))}


def convert(entry: ModelEntry, out: Path) -> dict:
    """Check, dequantize and save `entry`'s GGUF file as a standard folder `out`; returns its card."""
    import torch
    import transformers

    from pipeline.models import cards
    from pipeline.models.zoo import auto_class

    path, origin = gguf_file(entry.value)
    digest = file_sha256(path)
    if digest != entry.sha256:
        raise ValueError(f"models.zoo[{entry.name}]: {path.name} has sha256 {digest}, the zoo pins {entry.sha256}; "
                         f"a different file: check where it came from, then update `sha256`")
    cls = auto_class(entry.model_family)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    loaded = cls.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
    config = loaded.config
    for attr in ("quantization_config", "_name_or_path"):
        if hasattr(config, attr):
            delattr(config, attr)
    torch.manual_seed(0)  # the fresh model's init is overwritten; seeded anyway
    model = cls.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    missing = [k for k in missing if k not in _tied_names(model)]
    if missing or unexpected:
        raise ValueError(f"{entry.name}: GGUF weights do not fill a {type(model).__name__}: missing {missing}, "
                         f"unexpected {unexpected}")
    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    card = cards.card_for(entry, model, str(out), {
        "train_data": None,
        "gguf": {"origin": origin, "file": path.name, "sha256": digest, **quantization(path),
                 "conversion": {"tool": f"transformers {transformers.__version__} gguf_file= "
                                        f"(gguf {importlib.metadata.version('gguf')})",
                                "dtype": CONVERTED_DTYPE, "dequantized": True}},
    }, tokenizer=tokenizer)
    write_json(card, out / cards.CARD_FILE)
    return card


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.models.gguf",
                                 description="Convert a `gguf:` zoo entry's GGUF file (checked against its sha256) "
                                             "into a standard Hugging Face folder with its card.")
    ap.add_argument("--zoo", required=True, help="models.zoo as JSON")
    ap.add_argument("--name", required=True, help="the gguf: entry")
    ap.add_argument("--out", required=True, type=Path, help="the model's folder under data/models")
    args = ap.parse_args(argv)
    logs.setup()
    entry = parse_zoo(json.loads(args.zoo))[args.name]
    if entry.kind != "gguf":
        ap.error(f"{entry.name} is a {entry.kind}: source, not gguf:")
    card = convert(entry, args.out)
    log.info("%s: %d parameters from %s (%s)", entry.name, card["parameters"], card["gguf"]["file"],
             card["gguf"]["file_type"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
