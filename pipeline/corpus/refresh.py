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


def pypi_releases(index: str, name: str) -> list[dict]:
    """Every final release of `name` with an sdist that is not yanked, oldest version first: {version, url, sha256,
    released} (the index's upload day of the sdist)."""
    doc = f"{_base(index)}/{urllib.parse.quote(name)}/json"
    data = json.loads(_read(doc))
    out = []
    for version, files in (data.get("releases") or {}).items():
        v = _final(version)
        sdists = [f for f in files or [] if f.get("packagetype") == "sdist" and not f.get("yanked")]
        if v is None or not sdists:
            continue
        f = sdists[0]
        out.append((v, {"version": version, "url": urllib.parse.urljoin(doc, f["url"]),
                        "sha256": f["digests"]["sha256"].lower(), "released": _day(f["upload_time_iso_8601"]).isoformat()}))
    return [r for _, r in sorted(out, key=lambda vr: vr[0])]


def npm_releases(registry: str, name: str) -> list[dict]:
    """Every final, not deprecated version of `name` with a `time`, oldest version first: {version, url, integrity,
    released}."""
    base = _base(registry)
    doc = f"{base}/{name}/index.json" if base.startswith("file:") else f"{base}/{name.replace('/', '%2f')}"
    data = json.loads(_read(doc))
    times, out = data.get("time") or {}, []
    for version, meta in (data.get("versions") or {}).items():
        v = _final(version)
        if v is None or version not in times or meta.get("deprecated"):
            continue
        dist = meta.get("dist") or {}
        out.append((v, {"version": version, "url": urllib.parse.urljoin(doc, dist["tarball"]),
                        "integrity": dist["integrity"], "released": _day(times[version]).isoformat()}))
    return [r for _, r in sorted(out, key=lambda vr: vr[0])]


def _newest(releases: list[dict], after: dt.date, above: str | None) -> dict | None:
    """The newest release uploaded after `after` and newer than `above` (the pinned version: an old version uploaded
    again later is no refresh; npm's `time` of an old version can be later than a newer one's)."""
    floor = _final(above or "")
    fresh = [r for r in releases if dt.date.fromisoformat(r["released"]) > after
             and (floor is None or Version(r["version"]) > floor)]
    return fresh[-1] if fresh else None


def newest_pypi(index: str, name: str, after: dt.date, above: str | None = None) -> dict | None:
    """{version, url, sha256, released} of the newest final sdist of `name` uploaded after `after` and newer than
    `above`; None: none."""
    return _newest(pypi_releases(index, name), after, above)


def newest_npm(registry: str, name: str, after: dt.date, above: str | None = None) -> dict | None:
    """{version, url, integrity, released} of the newest final version of `name` published after `after` and newer
    than `above`."""
    return _newest(npm_releases(registry, name), after, above)


def between(releases: list[dict], low: str, high: str) -> list[dict]:
    """The releases strictly between two versions, oldest first."""
    lo, hi = Version(low), Version(high)
    return [r for r in releases if lo < Version(r["version"]) < hi]


def _name_version(spec_or_pin: dict) -> tuple[str, str]:
    package = spec_or_pin["package"]
    if "==" in package:
        name, _, version = package.partition("==")
        return name, version
    m = NPM_PACKAGE.fullmatch(package)
    if not m:
        raise RefreshError(f"package {package!r} is neither name==version nor name@version")
    return m["name"], m["version"]


def history_gaps(spec: dict, releases: list[dict]) -> list[str]:
    """The index's final releases between a source's oldest pinned history release and its pin that neither its
    history nor its `history_skipped` names: a history with a gap dates code first seen in a skipped release by the
    next pinned one (werkzeug 3.0.6 -> 3.1.3 skipped 3.1.0, uploaded before SmolLM2's release)."""
    if not spec.get("history"):
        return []
    pinned = {Version(_name_version(h)[1]) for h in spec["history"]} | {Version(_name_version(spec)[1])}
    skipped = {Version(str(v)) for v in spec.get("history_skipped") or []}
    low, high = min(pinned), Version(_name_version(spec)[1])
    return [r["version"] for r in releases
            if low < Version(r["version"]) < high and Version(r["version"]) not in pinned | skipped]


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


def releases_of(spec: dict, pypi: str | None, npm: str | None) -> list[dict] | None:
    """The index's release list of a pypi or npm source (None: another kind, which has no index)."""
    if spec["kind"] == "pypi":
        return pypi_releases(pypi or PYPI_JSON, _name_version(spec)[0])
    if spec["kind"] == "npm":
        return npm_releases(npm or spec.get("registry", NPM_REGISTRY), _name_version(spec)[0])
    return None


def _pin(spec: dict, release: dict, cache: Path) -> dict:
    """A release pinned as params write it (package, the index's hash, released), downloaded and checked against
    that hash into the download cache, where the build's fetch finds it."""
    name = _name_version(spec)[0]
    if spec["kind"] == "pypi":
        download(release["url"], cache / "downloads", "sha256", release["sha256"], f"{name}=={release['version']}")
        return {"package": f"{name}=={release['version']}", "sha256": release["sha256"], "released": release["released"]}
    download(release["url"], cache / "npm", "sha512", npm_integrity_hex(release["integrity"], name),
             f"{name}@{release['version']}")
    return {"package": f"{name}@{release['version']}", "integrity": release["integrity"], "released": release["released"]}


def refresh_source(spec: dict, after: dt.date, cache: Path, pypi: str | None, npm: str | None) -> tuple[dict, str]:
    """The source's entry pinned to its newest release after `after`, its old pin and every release between the
    two appended to `history` (each pinned: a history without gaps), and a one-line account of what was done."""
    old = {k: spec[k] for k in ("package", "sha256", "integrity", "released", "index_url", "registry") if k in spec}
    if spec["kind"] not in ("pypi", "npm"):
        return spec, f"{spec['name']}: a {spec['kind']} source has no index to refresh from; kept as it is"
    name, version = _name_version(spec)
    releases = releases_of(spec, pypi, npm)
    new = _newest(releases, after, version)
    if new is None:
        return spec, f"{spec['name']}: no release of {name} newer than {version} published after {after}; kept {spec['package']}"
    pin = _pin(spec, new, cache)
    if pin["package"] == spec["package"]:
        return spec, f"{spec['name']}: {spec['package']} is already the newest release after {after}"
    if "released" not in old:
        raise RefreshError(f"{spec['name']}: its pin has no `released:` date, so it cannot join the history; add it "
                           "(the index's upload date of the pinned file) and rerun")
    # a `license:` override was about the old release: the new one's own metadata is read again at fetch
    out = {k: v for k, v in spec.items() if k not in ("package", "sha256", "integrity", "released", "history", "license")}
    out.update(pin)
    # every release between the old pin and the new one joins the history, pinned: first-seen is then the earliest
    # release holding a definition, never the next release that happens to be pinned
    middle = [_pin(spec, r, cache) for r in between(releases, version, new["version"])]
    out["history"] = [*spec.get("history", []), old, *middle]
    gaps = history_gaps(out, releases)
    if gaps:
        raise RefreshError(f"{spec['name']}: its history skips {', '.join(gaps)} (between its oldest pinned release and "
                           "the new pin); pin them in corpus.sources[].history, or list them in history_skipped")
    note = f"; its license override ({spec['license']}) dropped: the new release's metadata decides" if "license" in spec else ""
    return out, (f"{spec['name']}: {spec['package']} ({old.get('released')}) -> {pin['package']} ({pin['released']}), "
                 f"{len(middle)} release(s) between pinned as history{note}")


def refresh(params: dict, after: dt.date, cache: Path, pypi: str | None = None, npm: str | None = None,
            only: list[str] | None = None) -> tuple[dict, list[str]]:
    """The overlay ({"corpus": {"sources": [...]}}) and one line per source."""
    sources, lines = [], []
    for spec in params["corpus"]["sources"]:
        if only and spec["name"] not in only:
            sources.append(spec)
            continue
        new, line = refresh_source(spec, after, cache, pypi, npm)
        if new is spec and spec.get("history"):  # kept: its own history is checked all the same
            check_history(spec, pypi, npm)
        sources.append(new)
        lines.append(line)
    return {"corpus": {"sources": sources}}, lines


def check_history(spec: dict, pypi: str | None = None, npm: str | None = None) -> None:
    """Refuse a source whose history skips a release of the index (not listed in `history_skipped`), or whose
    history pins a hash other than the index's."""
    releases = releases_of(spec, pypi, npm)
    if releases is None:
        return
    gaps = history_gaps(spec, releases)
    if gaps:
        raise RefreshError(f"{spec['name']}: its history skips {', '.join(gaps)} (between its oldest pinned release "
                           f"and {spec['package']}); pin them in corpus.sources[].history (python -m pipeline.corpus "
                           "refresh writes them), or list them in history_skipped")
    index = {r["version"]: r for r in releases}
    for pin in [*spec["history"], spec]:
        version = _name_version(pin)[1]
        want = index.get(version, {}).get("sha256" if spec["kind"] == "pypi" else "integrity")
        have = pin.get("sha256" if spec["kind"] == "pypi" else "integrity")
        if want is None or (have and have.lower() != want.lower()) \
                or (pin.get("released") and pin["released"] != index[version]["released"]):
            raise RefreshError(f"{spec['name']}: {pin['package']} is pinned as {have} ({pin.get('released')}); the index "
                               f"has {want} ({index.get(version, {}).get('released')})")


def check(params: dict, pypi: str | None = None, npm: str | None = None, only: list[str] | None = None) -> list[str]:
    """One line per source with history: checked against its index (RefreshError on the first bad one)."""
    lines = []
    for spec in params["corpus"]["sources"]:
        if spec.get("history") and (not only or spec["name"] in only):
            check_history(spec, pypi, npm)
            lines.append(f"{spec['name']}: {len(spec['history'])} history release(s), no gap, hashes and dates as the "
                         "index's")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.corpus refresh", description=__doc__.split("\n\n")[0])
    ap.add_argument("--after", type=dt.date.fromisoformat, help="YYYY-MM-DD: pin releases after it")
    ap.add_argument("--check", action="store_true", help="write nothing: check every source's history against its "
                    "index (no release skipped unless listed in history_skipped; hashes and dates as the index's)")
    ap.add_argument("--params", type=Path, default=Path("params.yaml"), help="the params whose sources are refreshed")
    ap.add_argument("--out", type=Path, help="the overlay to write (YAML)")
    ap.add_argument("--cache", type=Path, default=None, help="download cache (default: the params' corpus.cache_dir)")
    ap.add_argument("--pypi", default=None, help=f"PyPI JSON API base (default {PYPI_JSON}; a folder or file:// URL "
                    "laid out as <name>/json)")
    ap.add_argument("--npm", default=None, help="npm registry (default: each source's registry, else "
                    f"{NPM_REGISTRY}; a folder or file:// URL laid out as <name>/index.json and its tarballs)")
    ap.add_argument("--source", action="append", default=None, help="refresh only this source (repeatable)")
    args = ap.parse_args(argv)
    logs.setup()
    params = yaml.safe_load(args.params.read_text())
    if args.check:
        try:
            lines = check(params, args.pypi, args.npm, args.source)
        except RefreshError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print("\n".join(lines))
        return 0
    if args.after is None or args.out is None:
        ap.error("--after and --out are needed (or --check)")
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
