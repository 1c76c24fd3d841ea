"""Content digests of a `path:` model's folder: what Snakemake reruns on and what the model card records.

A `path:` zoo entry names a folder the pipeline does not build, so no rule's output vouches for it. Its
content is hashed instead: every file under the folder (recursively, symlinks followed, hidden files and
folders such as `.cache/` or `.git/` left out), each by its relative name and sha256, and a total over
the sorted `<sha256>  <name>` lines (`sha256sum`'s format). Equal content gives an equal digest wherever
the folder lies and whatever its files' mtimes; one changed byte (weights, config, tokenizer) changes it.

Snakemake plans with `planned()`: the rule `external_model` takes the digest as a param (a new digest
reruns the card and everything downstream of it) and the folder as an `ancient()` input (its mtime is
ignored: a `touch` reruns nothing). Planning hashes only files whose (size, mtime_ns, inode) changed since
the last digest, kept per model in data/cache/weights/<name>.json; the card job hashes every byte it
loads and refuses weights that differ from the planned digest (they changed after planning).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from pipeline.io import write_json

CACHE_DIR = Path("data/cache/weights")
# a file modified this recently may change again within its mtime's resolution: hash it, never cache it
RACY_SECONDS = 2.0


class WeightsError(ValueError):
    """A `path:` model's folder is missing or holds no Hugging Face model."""


def folder_of(value: str) -> Path:
    """The folder a `path:<value>` source names (relative to the working directory; `~` expanded)."""
    return Path(os.path.expanduser(value))


def check_folder(name: str, value: str) -> Path:
    folder = folder_of(value)
    if not (folder / "config.json").is_file():
        where = "" if folder.is_absolute() else f" (relative to the working directory {os.getcwd()})"
        raise WeightsError(f"models.zoo[{name}]: source path:{value} is not a Hugging Face model folder (no "
                           f"config.json in {folder}{where}); save the model there (`save_pretrained`) or fix the "
                           f"path in params.yaml")
    return folder


def files_of(folder: Path) -> list[str]:
    """The folder's files as sorted relative POSIX names, hidden files and folders left out."""
    found = []
    for root, dirs, files in os.walk(folder, followlinks=True):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        rel = Path(root).relative_to(folder)
        found += [(rel / f).as_posix() for f in files if not f.startswith(".")]
    return sorted(found)


def file_sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def total_of(files: list[dict]) -> str:
    return hashlib.sha256("".join(f"{f['sha256']}  {f['path']}\n" for f in files).encode()).hexdigest()


def _stat_key(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def _read_cache(path: Path | None, folder: Path) -> dict:
    if path is None or not path.is_file():
        return {}
    try:
        cached = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}  # a damaged cache only costs a rehash
    return cached.get("files", {}) if cached.get("folder") == str(folder.resolve()) else {}


def digest(folder: str | Path, cache: Path | None = None) -> dict:
    """{"sha256": total, "files": [{"path", "bytes", "sha256"}, ...]} of the folder's content.

    With `cache`, a file whose (size, mtime_ns, inode) equal the cached ones is not read again; the cache
    is rewritten (atomically) when anything in it changed. Without it, every byte is read."""
    folder = Path(folder)
    old = _read_cache(cache, folder)
    now = time.time_ns()
    files, keep = [], {}
    for rel in files_of(folder):
        st = os.stat(folder / rel)
        key = _stat_key(st)
        hit = old.get(rel)
        sha = hit[3] if hit and hit[:3] == key else file_sha256(folder / rel)
        if now - st.st_mtime_ns > RACY_SECONDS * 1e9:
            keep[rel] = [*key, sha]
        files.append({"path": rel, "bytes": st.st_size, "sha256": sha})
    if not files:
        raise WeightsError(f"{folder} holds no file to hash")
    if cache is not None and keep != old:
        write_json({"folder": str(folder.resolve()), "files": keep}, cache)
    return {"sha256": total_of(files), "files": files}


def planned(name: str, value: str) -> str:
    """The digest Snakemake plans a `path:` model's jobs with ("sha256:<hex>"), through the model's cache."""
    folder = check_folder(name, value)
    return "sha256:" + digest(folder, CACHE_DIR / f"{name}.json")["sha256"]
