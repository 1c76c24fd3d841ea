"""Copy one pinned non-code dataset into data/datasets/<name>/, verifying every file's sha256.

A params.yaml `datasets` entry names a `local` path (a file or a folder) or a `url` (one
archive or file, pinned by its sha256 and cached under corpus.cache_dir like corpus
sources), and pins each file it needs: `files: {relative path: sha256}`. Only pinned files
are copied; others present at the origin are listed in the record, never copied.
Any problem (a missing path, a missing file, a sha256 mismatch) is a one-line error
on stderr and exit status 2, and nothing is copied.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import shutil
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pipeline.corpus.fetch import FetchError, PinMismatch, download
from pipeline.corpus.safety import Limits, extract_archive
from pipeline.io import write_json

log = logging.getLogger("pipeline.datasets.fetch")

# Dataset archives are only ever read for their pinned files; these caps only guard against bombs.
ARCHIVE_LIMITS = Limits(max_file_bytes=1 << 36, max_total_bytes=1 << 38, max_members=1_000_000)


class DatasetError(RuntimeError):
    """The dataset cannot be provided as pinned; the message says what to change."""


@dataclass(frozen=True)
class PinnedFile:
    path: str  # relative path inside the dataset (POSIX)
    sha256: str
    bytes: int


def clean_relative(rel: str, dataset: str) -> str:
    """A pinned path must be a plain relative POSIX path inside the dataset."""
    p = PurePosixPath(rel)
    if not rel or p.is_absolute() or ".." in p.parts or "\\" in rel or rel != str(p):
        raise DatasetError(f"dataset {dataset}: pinned path {rel!r} must be relative, normalised and without '..'")
    return rel


def resolve_path(path: str, bases: list[Path]) -> Path | None:
    """An absolute path as is; a relative one against each base in turn (the first that exists)."""
    p = Path(path).expanduser()
    if p.is_absolute():
        return p if p.exists() else None
    for base in bases:
        if (base / p).exists():
            return (base / p).resolve()
    return None


def _copy_verified(src: Path, dst: Path, expected: str, dataset: str, rel: str) -> int:
    """Copy src to dst hashing the bytes actually copied; raise (and leave no dst) on a mismatch."""
    h = hashlib.sha256()
    size = 0
    dst.parent.mkdir(parents=True, exist_ok=True)
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        while chunk := fin.read(1 << 20):
            h.update(chunk)
            fout.write(chunk)
            size += len(chunk)
    got = h.hexdigest()
    if got != expected.lower():
        dst.unlink()
        raise DatasetError(
            f"dataset {dataset}: {rel}: sha256 mismatch: params.yaml pins {expected.lower()} but {src} has {got}; "
            f"if this new content is intended, update datasets[{dataset}].files[{rel!r}] in params.yaml, "
            "otherwise restore the original file"
        )
    return size


def _listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root).as_posix()) for p in root.rglob("*") if p.is_file())


def _extract(archive: Path, dest: Path, strip_top: bool) -> list:
    """pipeline.corpus.safety's safe extraction (a top folder listed as its own entry is stripped too)."""
    return extract_archive(archive, dest, ARCHIVE_LIMITS, strip_top=strip_top)[0]


def _origin_tree(spec: dict, cache: Path, bases: list[Path], scratch: Path) -> tuple[Path, dict]:
    """The folder (or single file) the pinned files are read from, and the record's origin."""
    name = spec["name"]
    if spec["kind"] == "local":
        root = resolve_path(spec["path"], bases)
        if root is None:
            where = " or ".join(str(b / spec["path"]) for b in bases) if not Path(spec["path"]).is_absolute() else spec["path"]
            raise DatasetError(
                f"dataset {name}: local path {spec['path']!r} not found (looked at {where}); "
                f"point datasets[{name}].path in params.yaml at a copy of it, or remove the entry"
            )
        return root, {"path": spec["path"], "resolved": str(root)}
    if spec["kind"] == "url":
        try:
            archive = download(spec["url"], cache / "downloads", spec["sha256"], f"dataset {name}")
        except PinMismatch as exc:
            raise DatasetError(f"dataset {name}: {exc}; update datasets[{name}].sha256 only if the new file is intended") from exc
        except (FetchError, OSError) as exc:  # unreachable: download's message names the url
            raise DatasetError(f"dataset {name}: {exc}") from exc
        origin = {"url": spec["url"], "sha256": spec["sha256"].lower(), "cached": str(archive)}
        if zipfile.is_zipfile(archive) or tarfile.is_tarfile(archive):
            tree = scratch / "extracted"
            refusals = _extract(archive, tree, spec.get("strip_top", True))
            if refusals:
                log.warning("dataset %s: %d archive members refused (links, odd paths): %s", name, len(refusals),
                            ", ".join(f"{r.path} ({r.reason})" for r in refusals[:5]))
            return tree, origin
        return archive, origin  # a plain file
    raise DatasetError(f"dataset {name}: unknown kind {spec['kind']!r} (local or url)")


def fetch_dataset(spec: dict, dest: Path, record: Path, cache: Path, bases: list[Path]) -> list[PinnedFile]:
    """Verify and copy the pinned files of `spec` into `dest` (replaced atomically), then write `record`."""
    name = spec["name"]
    files = {clean_relative(rel, name): sha for rel, sha in sorted(spec["files"].items())}
    if not files:
        raise DatasetError(f"dataset {name}: `files` pins nothing; list every file the benchmark reads with its sha256")
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=f".{dest.name}.") as tmp:
        tmp = Path(tmp)
        root, origin = _origin_tree(spec, cache, bases, tmp)
        staging = tmp / "staging"
        staging.mkdir()
        if root.is_file():
            if len(files) != 1:
                raise DatasetError(f"dataset {name}: the origin is a single file, so `files` must pin exactly one name")
            sources = {next(iter(files)): root}
            present: list[str] = []
        else:
            sources = {rel: root / rel for rel in files}
            present = _listing(root)
        pinned = []
        for rel, sha in files.items():
            src = sources[rel]
            if not src.is_file():
                raise DatasetError(f"dataset {name}: pinned file {rel} is missing from {root}; "
                                   f"restore it or remove it from datasets[{name}].files")
            size = _copy_verified(src, staging / rel, sha, name, rel)
            pinned.append(PinnedFile(rel, sha.lower(), size))
        unpinned = [p for p in present if p not in files]
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(staging, dest)
    write_json(
        {
            "name": name,
            "kind": spec["kind"],
            "origin": origin,
            "files": [{"path": p.path, "sha256": p.sha256, "bytes": p.bytes} for p in pinned],
            "file_count": len(pinned),
            "bytes": sum(p.bytes for p in pinned),
            "unpinned_not_copied": unpinned,
        },
        record,
    )
    log.info("dataset %s: %d files (%d bytes) verified and copied; %d unpinned files not copied",
             name, len(pinned), sum(p.bytes for p in pinned), len(unpinned))
    return pinned


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m pipeline.datasets.fetch",
        description="Copy one pinned non-code dataset (an entry of params.yaml `datasets`) into a folder. "
        "Every file listed under `files` is verified against its sha256 while it is copied; files at the "
        "origin that are not pinned are listed in the record and not copied. A relative local `path` is "
        "looked up against each --base in turn (the workflow's working directory first, then the "
        "repository's folder). Errors (missing path, missing file, sha256 mismatch) print one line on "
        "stderr and exit with status 2; nothing is copied then.",
    )
    ap.add_argument("--spec", required=True, help="the dataset entry as JSON: {name, kind: local|url, path|url+sha256, files}")
    ap.add_argument("--dest", required=True, type=Path, help="folder to fill (replaced atomically): data/datasets/<name>")
    ap.add_argument("--record", required=True, type=Path, help="record to write (JSON): pins, bytes, resolved origin")
    ap.add_argument("--cache", type=Path, default=Path("data/cache"), help="download cache for url datasets (corpus.cache_dir)")
    ap.add_argument("--base", type=Path, action="append", default=None,
                    help="folder a relative local path is resolved against (repeatable; default: the current folder)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        spec = json.loads(args.spec)
        fetch_dataset(spec, args.dest, args.record, args.cache, args.base or [Path.cwd()])
    except (DatasetError, json.JSONDecodeError, KeyError) as exc:
        msg = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
        print(f"error: {msg}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
