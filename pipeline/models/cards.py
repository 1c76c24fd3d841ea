"""Model cards: one small JSON record per zoo model (where it came from, a hash of its weights,
its size and shape, what it was trained on) that later tables join on by model name."""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import logging
import sys
from pathlib import Path

from pipeline.core import logs
from pipeline.io import write_json
from pipeline.models import weights
from pipeline.models.zoo import WEIGHT_FILES, ModelEntry, load_model, parse_zoo

log = logging.getLogger("pipeline.models.cards")

CARD_FILE = "card.json"
TRAINING_FILE = "training.json"  # loss curve and wall time of a pipeline-trained model


def weights_sha256(folder: str | Path) -> str:
    """sha256 over the folder's weight files (names and bytes, in name order): equal weights, equal hash."""
    h = hashlib.sha256()
    files = sorted(p for p in Path(folder).iterdir() if p.name in WEIGHT_FILES or p.name.endswith(".safetensors"))
    for p in files:
        h.update(p.name.encode() + b"\0")
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def shape_of(config) -> dict:
    """Layers, heads, sizes from any config (GPT-2 and T5 name them differently; attribute_map covers most)."""
    def first(*names):
        return next((getattr(config, n) for n in names if getattr(config, n, None) is not None), None)

    return {
        "model_type": config.model_type,
        "architectures": list(config.architectures or []),
        "layers": first("num_hidden_layers", "num_layers", "n_layer"),
        "decoder_layers": first("num_decoder_layers", "decoder_layers") if config.is_encoder_decoder else None,
        "heads": first("num_attention_heads", "n_head"),
        "hidden_size": first("hidden_size", "d_model", "n_embd"),
        "vocab_size": config.vocab_size,
        "max_positions": first("max_position_embeddings", "n_positions"),
    }


def origin_of(entry: ModelEntry, location: str) -> dict:
    """Machine-independent provenance: package name+version, hub id+commit, or a folder."""
    if entry.kind == "package":
        return {"package": entry.value, "version": importlib.metadata.version(entry.value)}
    if entry.kind == "hub":
        parts = Path(location).parts
        commit = parts[parts.index("snapshots") + 1] if "snapshots" in parts else entry.revision
        return {"hub_id": entry.hub_id, "revision": commit}
    if entry.kind == "path":
        return {"path": entry.value}
    if entry.kind == "gguf":
        return {"gguf": entry.value, "sha256": entry.sha256, "folder": f"data/models/{entry.name}"}
    return {"folder": f"data/models/{entry.name}"}


def scoring_of(entry: ModelEntry, tokenizer) -> dict:
    """The start-token policy this model's scoring uses (pipeline.models.start.start_policy) and its
    tokenizer's class."""
    from pipeline.models.start import start_policy

    return {"tokenizer_class": type(tokenizer).__name__,
            **start_policy(tokenizer, entry.model_family, entry.scoring).describe()}


def card_for(entry: ModelEntry, model, location: str, extra: dict | None = None, tokenizer=None) -> dict:
    parameters = sum(p.numel() for p in model.parameters())
    return {
        "name": entry.name,
        "source": entry.source,
        "family": entry.model_family,
        "max_length": entry.max_length,
        **({"max_length_from": entry.max_length_from} if entry.max_length_from else {}),
        "origin": origin_of(entry, location),
        "weights_sha256": weights_sha256(location),
        "parameters": parameters,
        **shape_of(model.config),
        "random": entry.kind == "random",
        **({"scoring": scoring_of(entry, tokenizer)} if tokenizer is not None else {}),
        **(extra or {}),
    }


def local_folder(entry: ModelEntry, location: str) -> str:
    """The folder holding the weights: a hub id resolves to its snapshot in the local cache."""
    if entry.kind != "hub":
        return location
    from huggingface_hub import snapshot_download

    return snapshot_download(entry.hub_id, revision=entry.revision, local_files_only=True)


def describe_external(entry: ModelEntry, out: Path, planned: str = "") -> dict:
    """Card of a model the pipeline does not build (package, hub, path): loaded once to count its parameters.

    A `path:` model's card records the content digest of the folder it loaded (pipeline.models.weights:
    every file's sha256 and their total), hashed here byte for byte; `planned` is the digest Snakemake
    planned the job with ("sha256:<hex>"), and a folder that no longer matches it is refused."""
    content = None
    if entry.kind == "path":
        content = weights.digest(weights.check_folder(entry.name, entry.value))
        if planned and planned != "sha256:" + content["sha256"]:
            raise weights.WeightsError(
                f"models.zoo[{entry.name}]: the folder {entry.value} changed after Snakemake planned this job "
                f"(planned {planned}, now sha256:{content['sha256']}); run snakemake (or dvc repro) again")
    loaded = load_model(entry, device="cpu", dtype="float32")
    card = card_for(entry, loaded.model, local_folder(entry, loaded.location), {"train_data": None, **loaded.loading},
                    tokenizer=loaded.tokenizer)
    if content is not None:
        card["origin"] = {**card["origin"], "sha256": content["sha256"], "files": content["files"]}
    write_json(card, out / CARD_FILE)
    return card


def report(model_dirs: list[Path], evals: list[Path]) -> dict:
    """reports/metrics/models.json: per model its size and test perplexity, and for each random
    twin the ratio of its perplexity to its trained counterpart's. No wall time: this file is compared across builds
    (byte-identical from the same inputs); a trained model's seconds stay in its folder's training.json."""
    models = {}
    for folder in model_dirs:
        path = folder / CARD_FILE
        card = json.loads(path.read_text())
        models[card["name"]] = {"source": card["source"], "family": card["family"], "parameters": card["parameters"],
                                "vocab_size": card["vocab_size"], "layers": card["layers"], "heads": card["heads"]}
    for path in evals:
        ev = json.loads(path.read_text())
        models[ev["name"]].update({"test_perplexity": ev["perplexity"], "test_tokens_scored": ev["tokens_scored"]})
    for name, m in models.items():
        if m["source"].startswith("random:"):
            twin = models.get(m["source"].split(":", 1)[1], {})
            if m.get("test_perplexity") and twin.get("test_perplexity"):
                m["perplexity_ratio_to_twin"] = m["test_perplexity"] / twin["test_perplexity"]
    return {"models": dict(sorted(models.items()))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.models.cards",
                                 description="Write model cards of external zoo models, or the zoo's metrics report.")
    sub = ap.add_subparsers(dest="command", required=True)
    d = sub.add_parser("describe", help="card of a package/hub/path model: <out>/card.json")
    d.add_argument("--zoo", required=True, help="models.zoo as JSON")
    d.add_argument("--name", required=True)
    d.add_argument("--weights", default="", help="a path: model's planned content digest, sha256:<hex> (refused "
                   "when the folder no longer matches it); empty: not checked")
    d.add_argument("--out", required=True, type=Path, help="the model's folder under data/models")
    r = sub.add_parser("report", help="aggregate cards and evaluations into reports/metrics/models.json")
    r.add_argument("--models", nargs="+", required=True, type=Path, help="model folders (each with card.json)")
    r.add_argument("--evals", nargs="*", default=[], type=Path)
    r.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    logs.setup()
    if args.command == "describe":
        entry = parse_zoo(json.loads(args.zoo))[args.name]
        try:
            card = describe_external(entry, args.out, args.weights)
        except weights.WeightsError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        log.info("%s: %d parameters", entry.name, card["parameters"])
    else:
        write_json(report(args.models, args.evals), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
