"""`python -m pipeline.corpus refresh --after YYYY-MM-DD`: pin, for every PyPI and npm source, the newest release
published after a date (a model's training cutoff), so a benchmark built from it holds code the model cannot
have read, and is itself pinned and rebuildable.

For each source it reads the index (PyPI's JSON API `<pypi>/<name>/json`; npm's packument `<registry>/<name>`, or
`<folder>/<name>/index.json` for a file:// registry), takes the newest final release (no pre-release, not yanked;
PyPI: one with an sdist) whose upload time is after the date, downloads it, checks its hash against the index's
and keeps it in the download cache (where the build's fetch finds it, so the build needs no network), and writes
a params overlay: `corpus.sources` with the new exact pin (`package`, `sha256` / `integrity`, `released`) and the
old pin appended to `history`. Sources with no release after the date, and the other kinds, are kept as they were
(listed on stderr). Build with `snakemake --configfile params.yaml <overlay>`: the overlay's corpus.sources replaces
the list. Nothing at build time resolves a version."""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import hashlib
import json
import logging
import os
import sys
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

import yaml
from packaging.version import InvalidVersion, Version

from pipeline.core import logs
from pipeline.corpus.fetch import NETWORK_TIMEOUT_S, NPM_PACKAGE, NPM_REGISTRY, npm_integrity_hex
from pipeline.io import atomic_path

log = logging.getLogger("pipeline.corpus.refresh")

PYPI_JSON = "https://pypi.org/pypi"


class RefreshError(RuntimeError):
    pass


def _read(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=NETWORK_TIMEOUT_S) as resp:
            return resp.read()
    except (OSError, ValueError) as exc:
        raise RefreshError(f"cannot read {url}: {exc}") from exc


def _base(url: str) -> str:
    """An index given as a folder is a file:// URL."""
    return url.rstrip("/") if "://" in url else Path(url).resolve().as_uri()


def _day(timestamp: str) -> dt.date:
    return dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00")).astimezone(dt.timezone.utc).date()


def _final(version: str) -> Version | None:
    try:
        v = Version(version)
    except InvalidVersion:
        return None
    return None if v.is_prerelease or v.is_devrelease else v


def newest_pypi(index: str, name: str, after: dt.date, above: str | None = None) -> dict | None:
    """{version, url, sha256, released} of the newest final sdist of `name` uploaded after `after` and newer than
    `above` (the pinned version: an old version uploaded again later is no refresh); None: none."""
    doc = f"{_base(index)}/{urllib.parse.quote(name)}/json"
    data = json.loads(_read(doc))
    best = None
    for version, files in (data.get("releases") or {}).items():
        v = _final(version)
        sdists = [f for f in files or [] if f.get("packagetype") == "sdist" and not f.get("yanked")]
        if v is None or not sdists or (_final(above or "") and v <= _final(above)):
            continue
        f = sdists[0]
        day = _day(f["upload_time_iso_8601"])
        if day > after and (best is None or v > best[0]):
            best = (v, {"version": version, "url": urllib.parse.urljoin(doc, f["url"]), "sha256": f["digests"]["sha256"].lower(),
                        "released": day.isoformat()})
    return best[1] if best else None


def newest_npm(registry: str, name: str, after: dt.date, above: str | None = None) -> dict | None:
    """{version, url, integrity, released} of the newest final version of `name` published after `after` and newer
    than `above` (npm's `time` of an old version can be later than a newer one's)."""
    base = _base(registry)
    doc = f"{base}/{name}/index.json" if base.startswith("file:") else f"{base}/{name.replace('/', '%2f')}"
    data = json.loads(_read(doc))
    times, best = data.get("time") or {}, None
    for version, meta in (data.get("versions") or {}).items():
        v = _final(version)
        if v is None or version not in times or meta.get("deprecated") or (_final(above or "") and v <= _final(above)):
            continue
        day = _day(times[version])
        if day > after and (best is None or v > best[0]):
            dist = meta.get("dist") or {}
            best = (v, {"version": version, "url": urllib.parse.urljoin(doc, dist["tarball"]),
                        "integrity": dist["integrity"], "released": day.isoformat()})
    return best[1] if best else None


def download(url: str, folder: Path, algorithm: str, digest_hex: str, what: str) -> Path:
    """The file at `url` in `folder/<digest>` (the fetch stage's cache layout), verified against the index's hash."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / digest_hex
    if target.exists() and hashlib.file_digest(target.open("rb"), algorithm).hexdigest() == digest_hex:
        return target
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".refresh.")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(_read(url))
        with open(tmp, "rb") as f:
            got = hashlib.file_digest(f, algorithm).hexdigest()
        if got != digest_hex:
            raise RefreshError(f"{what}: {url} has {algorithm} {got}, the index says {digest_hex}; not pinned")
        os.replace(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return target


def refresh_source(spec: dict, after: dt.date, cache: Path, pypi: str | None, npm: str | None) -> tuple[dict, str]:
    """The source's entry pinned to its newest release after `after` (its old pin appended to `history`), and a
    one-line account of what was done."""
    old = {k: spec[k] for k in ("package", "sha256", "integrity", "released", "index_url", "registry") if k in spec}
    if spec["kind"] == "pypi":
        name, _, version = spec["package"].partition("==")
        new = newest_pypi(pypi or PYPI_JSON, name, after, version)
        if new is None:
            return spec, f"{spec['name']}: no sdist of {name} newer than {version} released after {after}; kept {spec['package']}"
        download(new["url"], cache / "downloads", "sha256", new["sha256"], f"{name}=={new['version']}")
        pin = {"package": f"{name}=={new['version']}", "sha256": new["sha256"], "released": new["released"]}
    elif spec["kind"] == "npm":
        m = NPM_PACKAGE.fullmatch(spec["package"])
        if not m:
            raise RefreshError(f"{spec['name']}: package {spec['package']!r} is not name@version")
        name = m["name"]
        new = newest_npm(npm or spec.get("registry", NPM_REGISTRY), name, after, m["version"])
        if new is None:
            return spec, f"{spec['name']}: no version of {name} newer than {m['version']} published after {after}; kept {spec['package']}"
        download(new["url"], cache / "npm", "sha512", npm_integrity_hex(new["integrity"], name),
                 f"{name}@{new['version']}")
        pin = {"package": f"{name}@{new['version']}", "integrity": new["integrity"], "released": new["released"]}
    else:
        return spec, f"{spec['name']}: a {spec['kind']} source has no index to refresh from; kept as it is"
    if pin["package"] == spec["package"]:
        return spec, f"{spec['name']}: {spec['package']} is already the newest release after {after}"
    if "released" not in old:
        raise RefreshError(f"{spec['name']}: its pin has no `released:` date, so it cannot join the history; add it "
                           "(the index's upload date of the pinned file) and rerun")
    # a `license:` override was about the old release: the new one's own metadata is read again at fetch
    out = {k: v for k, v in spec.items() if k not in ("package", "sha256", "integrity", "released", "history", "license")}
    out.update(pin)
    out["history"] = [*spec.get("history", []), old]
    note = f"; its license override ({spec['license']}) dropped: the new release's metadata decides" if "license" in spec else ""
    return out, f"{spec['name']}: {spec['package']} ({old.get('released')}) -> {pin['package']} ({pin['released']}){note}"


def refresh(params: dict, after: dt.date, cache: Path, pypi: str | None = None, npm: str | None = None,
            only: list[str] | None = None) -> tuple[dict, list[str]]:
    """The overlay ({"corpus": {"sources": [...]}}) and one line per source."""
    sources, lines = [], []
    for spec in params["corpus"]["sources"]:
        if only and spec["name"] not in only:
            sources.append(spec)
            continue
        new, line = refresh_source(spec, after, cache, pypi, npm)
        sources.append(new)
        lines.append(line)
    return {"corpus": {"sources": sources}}, lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.corpus refresh", description=__doc__.split("\n\n")[0])
    ap.add_argument("--after", required=True, type=dt.date.fromisoformat, help="YYYY-MM-DD: pin releases after it")
    ap.add_argument("--params", type=Path, default=Path("params.yaml"), help="the params whose sources are refreshed")
    ap.add_argument("--out", type=Path, required=True, help="the overlay to write (YAML)")
    ap.add_argument("--cache", type=Path, default=None, help="download cache (default: the params' corpus.cache_dir)")
    ap.add_argument("--pypi", default=None, help=f"PyPI JSON API base (default {PYPI_JSON}; a folder or file:// URL "
                    "laid out as <name>/json)")
    ap.add_argument("--npm", default=None, help="npm registry (default: each source's registry, else "
                    f"{NPM_REGISTRY}; a folder or file:// URL laid out as <name>/index.json and its tarballs)")
    ap.add_argument("--source", action="append", default=None, help="refresh only this source (repeatable)")
    args = ap.parse_args(argv)
    logs.setup()
    params = yaml.safe_load(args.params.read_text())
    cache = args.cache or Path(params["corpus"]["cache_dir"])
    try:
        overlay, lines = refresh(params, args.after, cache, args.pypi, args.npm, args.source)
    except RefreshError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for line in lines:
        print(line, file=sys.stderr)
    header = (f"# Written by `python -m pipeline.corpus refresh --after {args.after.isoformat()}`: every PyPI and npm "
              "source pinned to its newest\n# release after that date, the old pin kept as `history`. Build with\n"
              f"# `snakemake --configfile params.yaml {args.out.as_posix()}` (this corpus.sources replaces params.yaml's).\n")
    text = header + yaml.safe_dump(overlay, sort_keys=False, width=120, allow_unicode=True)
    with atomic_path(args.out) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
