"""Fetch one pinned source into data/corpus/<name>: verify, cache, extract safely.

Kinds: pypi (sdist by name==version + sha256), npm (package tarball by name@version + the
registry's sha512 `integrity`), git (url + full commit sha), url (archive + sha256), jsonl
(CodeSearchNet-style dump), local (folder, zip, or the built-ins `stdlib` and `jdk`).
Nothing fetched is ever executed or imported: an npm package is only unpacked (its
`package.json` lifecycle scripts are data like the rest; nothing here can run them).
Bad input never stops the run (one bad source must not cost the others): a member or record
that cannot be kept is a reject row; a source that cannot be had as pinned (a download that does
not match its pin, which is never cached or extracted; an unreachable index or url; a commit the
repository lacks; a missing path; a file that is no archive) is a `failed` record with one reject
row and one ERROR line, and the run goes on without it (the Snakefile says so at the end and exits non-zero).
"""

from __future__ import annotations

import argparse
import base64
import binascii
import gzip
import hashlib
import html.parser
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import urllib.parse
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pyarrow as pa

from pipeline import schemas
from pipeline.contamination import provenance
from pipeline.core import logs
from pipeline.corpus.safety import (ArchiveError, Limits, Refusal, Selection, clean_member_name, copy_folder,
                                    extract_archive, folder_members, name_problem, reset_dir)
from pipeline.corpus.safety import shown as shown_name
from pipeline.io import write_json, write_parquet

log = logging.getLogger("pipeline.corpus.fetch")

NETWORK_TIMEOUT_S = 60
LANGUAGE_EXTENSIONS = {"python": ".py", "java": ".java", "javascript": ".js"}
JVM_FOLDERS = ("/usr/lib/jvm", "/usr/local/lib/jvm", "/Library/Java/JavaVirtualMachines")


# A line of a jsonl dump longer than this many times limits.max_file_bytes (plus 64 KiB for the
# other fields) is refused unparsed: JSON escapes make code at most 6x longer (\u0001).
JSONL_LINE_FACTOR = 6


class FetchError(RuntimeError):
    """A source cannot be fetched as pinned; the message says what to change. `reason` is the
    reject row's reason, `member` its path (default: the source's name)."""

    reason = "source_unavailable"

    def __init__(self, message: str, member: str | None = None, reason: str | None = None):
        super().__init__(message)
        self.member = member
        if reason:
            self.reason = reason


class PinMismatch(FetchError):
    """The bytes fetched are not the ones params.yaml pins (nothing was cached or extracted)."""

    reason = "pin_mismatch"

    def __init__(self, message: str, member: str):
        super().__init__(message, member)  # member: what did not match (an archive's name)


@dataclass
class Fetched:
    pin: dict
    refusals: list[Refusal]
    files: int
    bytes: int
    status: str = "ok"  # ok / skipped (a builtin absent by design) / failed (could not be had as pinned)
    origins: pa.Table | None = None
    reason: str = ""  # a failed source's reject reason
    license: str = "unknown"  # SPDX (pipeline.contamination.provenance)
    released: str | None = None  # YYYY-MM-DD of the pinned release, None: unknown
    error: str = ""  # and its one-line message


def file_digest(path: Path, algorithm: str = "sha256") -> str:
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def sha256_file(path: Path) -> str:
    return file_digest(path, "sha256")


def _basename(url_or_path: str) -> str:
    return urllib.parse.urlparse(url_or_path).path.rsplit("/", 1)[-1] or url_or_path


def verify(path: Path, expected: str, what: str, algorithm: str = "sha256", shown: Callable[[str], str] = str,
           member: str | None = None) -> None:
    """Raise PinMismatch unless the file's `algorithm` hex digest is `expected`; `shown` renders
    a hex digest as params.yaml writes it (npm's integrity is base64); `member` names the file
    in the reject row (default: the last part of `what`)."""
    got = file_digest(path, algorithm)
    if got != expected.lower():
        raise PinMismatch(f"{what}: {algorithm} mismatch: params.yaml pins {shown(expected.lower())} "
                          f"but the file has {shown(got)}", member or _basename(what))


def download(url: str, cache_dir: Path, digest: str, what: str, algorithm: str = "sha256",
             shown: Callable[[str], str] = str) -> Path:
    """Return the cached file for `digest` (hex, of `algorithm`), downloading and verifying it on
    a miss. A file that does not match is deleted, never cached."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / digest.lower()
    if target.exists() and file_digest(target, algorithm) == digest.lower():
        log.info("%s: cached %s", what, target)
        return target
    log.info("%s: downloading %s", what, url)
    fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=".dl.")
    try:
        try:
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=NETWORK_TIMEOUT_S) as resp:
                shutil.copyfileobj(resp, out, 1 << 20)
        except (OSError, ValueError) as exc:  # URLError, HTTPError, timeouts, refused connections, bad urls
            raise FetchError(f"{what}: cannot download {url}: {exc}", _basename(url)) from exc
        verify(Path(tmp), digest, what, algorithm, shown, _basename(url))
        os.replace(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return target


class _Anchors(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self._href: str | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self._href = dict(attrs).get("href")

    def handle_data(self, data):
        if self._href is not None:
            self.links.append((self._href, data.strip()))
            self._href = None


def normalise_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pypi_sdist_url(index_url: str, name: str, version: str) -> tuple[str, str | None]:
    """Find the sdist of name==version on a PEP 503 simple index; return (url, index sha256)."""
    page = f"{index_url.rstrip('/')}/{normalise_name(name)}/"
    if page.startswith("file:"):
        page += "index.html"
    try:
        with urllib.request.urlopen(page, timeout=NETWORK_TIMEOUT_S) as resp:
            text = resp.read().decode("utf-8", "replace")
    except OSError as exc:
        raise FetchError(f"{name}=={version}: cannot read the package index page {page}: {exc}") from exc
    parser = _Anchors()
    parser.feed(text)
    for href, filename in parser.links:
        for ext in (".tar.gz", ".zip"):
            if filename.endswith(ext):
                stem = filename[: -len(ext)]
                pkg, _, ver = stem.rpartition("-")
                if normalise_name(pkg) == normalise_name(name) and ver == version:
                    url = urllib.parse.urljoin(page, href)
                    frag = urllib.parse.urlparse(url).fragment
                    digest = frag.split("=", 1)[1] if frag.startswith("sha256=") else None
                    return url.split("#", 1)[0], digest
    raise FetchError(f"{name}=={version}: no source distribution on {page}; check the name and version")


def fetch_pypi(spec: dict, dest: Path, cache: Path, limits: Limits, sel: Selection) -> Fetched:
    name, _, version = spec["package"].partition("==")
    sha = spec["sha256"].lower()
    cached = cache / "downloads" / sha
    if not (cached.exists() and sha256_file(cached) == sha):
        url, index_sha = pypi_sdist_url(spec.get("index_url", "https://pypi.org/simple"), name, version)
        if index_sha and index_sha != sha:
            raise PinMismatch(
                f"{spec['package']}: sha256 mismatch: params.yaml pins {sha} but the index lists {index_sha}",
                _basename(url),
            )
        download(url, cache / "downloads", sha, spec["package"])
    refusals, files, size = extract_archive(cached, dest, limits, sel, label=f"{name}-{version} sdist")
    return Fetched({"package": spec["package"], "sha256": sha}, refusals, files, size)


NPM_REGISTRY = "https://registry.npmjs.org"
NPM_PACKAGE = re.compile(r"(?P<name>(?:@[A-Za-z0-9][A-Za-z0-9._~-]*/)?[A-Za-z0-9][A-Za-z0-9._~-]*)@(?P<version>[^@\s/]+)")


def npm_integrity_hex(integrity: str, package: str) -> str:
    """The hex sha512 of an npm `dist.integrity` string (`sha512-<base64>`)."""
    algo, _, b64 = integrity.strip().partition("-")
    try:
        raw = base64.b64decode(b64, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if algo != "sha512" or len(raw) != 64:
        raise FetchError(f"{package}: integrity must be the registry's `sha512-<base64>` (dist.integrity of "
                         f"https://registry.npmjs.org/<name>/<version>), got {integrity!r}")
    return raw.hex()


def npm_integrity_of(hex_digest: str) -> str:
    return "sha512-" + base64.b64encode(bytes.fromhex(hex_digest)).decode()


def npm_tarball_url(registry: str, name: str, version: str) -> str:
    """`<registry>/<name>/-/<basename>-<version>.tgz` (scoped `@s/n`: basename `n`). A registry
    without a scheme is a folder (relative to the working directory) laid out the same way."""
    if "://" not in registry:
        registry = Path(registry).resolve().as_uri()
    basename = name.rsplit("/", 1)[-1]
    return f"{registry.rstrip('/')}/{name}/-/{basename}-{version}.tgz"


def fetch_npm(spec: dict, dest: Path, cache: Path, limits: Limits, sel: Selection) -> Fetched:
    """An npm package tarball: verified against its sha512 integrity before anything is unpacked,
    cached by that hash, extracted with the sdists' safe extraction (the `package/` top folder
    stripped). Never installed: no lifecycle script (preinstall/install/postinstall...) can run."""
    m = NPM_PACKAGE.fullmatch(spec["package"])
    if not m:
        raise FetchError(f"npm source {spec['name']}: package must be `name@version` (or `@scope/name@version`), "
                         f"got {spec['package']!r}")
    name, version = m["name"], m["version"]
    digest = npm_integrity_hex(spec["integrity"], spec["package"])
    url = npm_tarball_url(spec.get("registry", NPM_REGISTRY), name, version)
    path = download(url, cache / "npm", digest, f"{spec['package']} ({url})", "sha512", npm_integrity_of)
    refusals, files, size = extract_archive(path, dest, limits, sel, strip_top=True, label=_basename(url))
    return Fetched({"package": spec["package"], "integrity": npm_integrity_of(digest)}, refusals, files, size)


def fetch_url(spec: dict, dest: Path, cache: Path, limits: Limits, sel: Selection) -> Fetched:
    path = download(spec["url"], cache / "downloads", spec["sha256"], spec["url"])
    refusals, files, size = extract_archive(path, dest, limits, sel, label=_basename(spec["url"]))
    return Fetched({"url": spec["url"], "sha256": spec["sha256"].lower()}, refusals, files, size)


def _git(*args: str, cwd: Path | None = None) -> str:
    """Run git with hooks, templates, system config, prompts and submodules out of play. Callers put `--` (or
    `--end-of-options`) before every positional url, path or revision, so none is ever read as an option."""
    env = {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_TEMPLATE_DIR": "",
        "GIT_LFS_SKIP_SMUDGE": "1",
    }
    cmd = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "protocol.ext.allow=never", *args]
    try:
        res = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, errors="replace", timeout=3600)
    except subprocess.TimeoutExpired as exc:
        raise FetchError(f"`{' '.join(cmd)}` ran past an hour") from exc
    if res.returncode:
        raise FetchError(f"`{' '.join(cmd)}` failed: {' '.join(res.stderr.split())}")
    return res.stdout


def fetch_git(spec: dict, dest: Path, cache: Path, limits: Limits, sel: Selection) -> Fetched:
    url, commit = spec["url"], spec["commit"].lower()
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        raise FetchError(f"{url}: commit must be a full 40-hex sha, got {commit!r}")
    bare = cache / "git" / (hashlib.sha256(url.encode()).hexdigest()[:16] + ".git")
    if not bare.exists():
        bare.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=bare.parent, prefix=".clone."))
        try:
            # bare: no checkout, so no checkout hooks, no working-tree filters, no submodules
            _git("clone", "--bare", "--quiet", "--template=", "--no-recurse-submodules", "--", url,
                 str(tmp / "r.git"))
            try:
                os.replace(tmp / "r.git", bare)
            except OSError:  # another job cloned the same url meanwhile (two sources, one repository)
                if not bare.is_dir():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    try:
        _git("cat-file", "-e", "--", f"{commit}^{{commit}}", cwd=bare)
    except FetchError:
        _git("fetch", "--quiet", "--no-recurse-submodules", "--", "origin", commit, cwd=bare)
    resolved = _git("rev-parse", "--verify", "--end-of-options", f"{commit}^{{commit}}", cwd=bare).strip()
    if resolved != commit:
        raise FetchError(f"{url}: asked for {commit} but the repository resolves it to {resolved}")
    with tempfile.TemporaryDirectory() as tmp:
        tar = Path(tmp) / "tree.tar"
        _git("archive", "--format=tar", f"--output={tar}", "--", commit, cwd=bare)
        refusals, files, size = extract_archive(tar, dest, limits, sel, strip_top=False, label=f"git archive {commit}")
    return Fetched({"url": url, "commit": commit}, refusals, files, size)


def _open_maybe_gz(path: Path):
    with open(path, "rb") as f:
        magic = f.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")


def jsonl_lines(path: Path, cap: int):
    """(line number, line bytes or None when longer than `cap`) for each line of a dump, gzipped or
    not, reading at most cap + 1 bytes of a line at once: a gigabyte line is skipped in bounded
    chunks, never held. A dump that breaks off ends with (line number, OSError-like exception)."""
    lineno = 0
    try:
        with _open_maybe_gz(path) as f:
            while line := f.readline(cap + 1):
                lineno += 1
                if len(line) > cap and not line.endswith(b"\n"):
                    while (rest := f.readline(1 << 20)) and not rest.endswith(b"\n"):
                        pass
                    yield lineno, None
                else:
                    yield lineno, line
    except (OSError, EOFError, zlib.error) as exc:  # truncated or corrupt gzip
        yield lineno + 1, exc


def _record(line: bytes) -> tuple[tuple[str, str, str, str] | None, str]:
    """(repo, path, code, language) of a dump line, or (None, why)."""
    try:
        rec = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8: {exc}"
    except RecursionError:
        return None, "nested too deeply to parse"
    except ValueError as exc:
        return None, str(exc)
    if not isinstance(rec, dict):
        return None, f"a JSON {type(rec).__name__}, not an object"
    missing = [k for k in ("repo", "path", "code", "language") if k not in rec]
    if missing:
        return None, f"missing {', '.join(missing)}"
    fields = tuple(rec[k] for k in ("repo", "path", "code", "language"))
    if not all(isinstance(v, str) for v in fields):
        return None, "repo, path, code and language must be strings"
    for key, value in zip(("repo", "path", "code", "language"), fields):
        problem = "" if key == "code" else name_problem(value)
        if key == "path" and not problem:
            clean, why = clean_member_name(value)
            problem = "" if clean == value else f"{why or 'not a normalised relative path'} ({value!r})"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            problem = "a lone surrogate (not text)"
        if problem:
            return None, f"{key}: {problem}"
    return fields, ""


def fetch_jsonl(spec: dict, dest: Path, cache: Path, limits: Limits, sel: Selection) -> Fetched:
    if "url" in spec:
        path = download(spec["url"], cache / "downloads", spec["sha256"], spec["url"])
        label = _basename(spec["url"]) or spec["name"]  # rejects name the dump, never its cache hash
    else:
        path = Path(spec["path"])
        if not path.is_file():
            raise FetchError(f"jsonl source {spec['name']}: {path} does not exist", path.name)
        if "sha256" in spec:
            verify(path, spec["sha256"], str(path))
        label = path.name
    refusals: list[Refusal] = []
    rows = {"location": [], "repository": [], "path": [], "language": []}
    files = total = 0
    capped: str | None = None  # the first record past limits.max_members: later lines are counted, not parsed
    past = 0
    written: set[tuple[str, str]] = set()  # (repository, path) of the records kept
    folders: set[tuple[str, str]] = set()  # and the folders their paths make
    cap = JSONL_LINE_FACTOR * limits.max_file_bytes + 65536
    for lineno, line in jsonl_lines(path, cap):
        where = f"{label}:{lineno}"
        if capped is not None and not isinstance(line, BaseException):
            past += line is None or bool(line.strip())
            continue
        if isinstance(line, BaseException):
            refusals.append(Refusal(where, "corrupt_archive", f"the dump breaks off: {type(line).__name__}: {line}"[:300]))
            break
        if line is None:
            refusals.append(Refusal(where, "too_large", f"line longer than {cap} bytes; not parsed"))
            continue
        if not line.strip():
            continue
        fields, why = _record(line)
        if fields is None:
            refusals.append(Refusal(where, "bad_record", why[:200]))
            continue
        repo, rpath, code, lang = fields
        data = code.encode("utf-8")
        if len(data) > limits.max_file_bytes:
            refusals.append(Refusal(where, "too_large", f"{len(data)} > {limits.max_file_bytes}", len(data)))
            continue
        if not sel.keeps(rpath):
            continue
        # the checks an archive's members get (safety.extract_archive), per repository: a record is one file
        key, ancestors = (repo, rpath), [(repo, rpath[:i]) for i, c in enumerate(rpath) if c == "/"]
        if key in written:
            refusals.append(Refusal(where, "duplicate_member", f"{repo} {rpath}: an earlier record has this repository "
                                    "and path (the first is kept)", len(data)))
            continue
        if key in folders or any(a in written for a in ancestors):
            refusals.append(Refusal(where, "path_collision", f"{repo} {rpath}: a file and a folder of this name "
                                    "(the first is kept)", len(data)))
            continue
        if files >= limits.max_members:
            capped, past = where, 1
            continue
        if total + len(data) > limits.max_total_bytes:
            refusals.append(Refusal(where, "size_limit", f"total would pass {limits.max_total_bytes} "
                                    "(corpus.limits.max_total_bytes)", len(data)))
            continue
        location = f"{files:08d}{LANGUAGE_EXTENSIONS.get(lang.lower(), '.txt')}"
        (dest / location).write_bytes(data)
        for k, v in zip(rows, (location, repo, rpath, lang.lower())):
            rows[k].append(v)
        files += 1
        total += len(data)
        written.add(key)
        folders.update(ancestors)
    if capped is not None:
        refusals.append(Refusal(capped, "member_limit", f"{limits.max_members} records kept (limits.max_members) of "
                                f"{files + past} seen; the other {past} lines were counted, not parsed (raise "
                                "corpus.limits.max_members to keep them)", kept=files, seen=files + past))
    pin = {"path" if "path" in spec else "url": spec.get("path", spec.get("url")), "sha256": sha256_file(path)}
    return Fetched(pin, refusals, files, total, origins=pa.table(rows, schema=schemas.ORIGINS))


def find_jdk_src_zip() -> Path | None:
    """JAVA_HOME's lib/src.zip, else the javac on PATH's, else the first of the usual JVM folders."""
    candidates = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(Path(os.environ["JAVA_HOME"]) / "lib" / "src.zip")
    javac = shutil.which("javac")
    if javac:
        candidates.append(Path(javac).resolve().parent.parent / "lib" / "src.zip")
    for folder in JVM_FOLDERS:
        candidates.extend(sorted(Path(folder).glob("*/lib/src.zip")) if Path(folder).is_dir() else [])
    return next((c for c in candidates if c.is_file()), None)


def jdk_version(src_zip: Path) -> str | None:
    """JAVA_VERSION from the JDK's `release` file beside lib/ (None when it has none)."""
    release = src_zip.parent.parent / "release"
    if release.is_file():
        for line in release.read_text(errors="replace").splitlines():
            if line.startswith("JAVA_VERSION="):
                return line.split("=", 1)[1].strip().strip('"')
    return None


def fetch_local(spec: dict, dest: Path, cache: Path, limits: Limits, sel: Selection) -> Fetched:
    builtin = spec.get("builtin")
    if builtin == "stdlib":
        root = Path(sysconfig.get_paths()["stdlib"])
        pin = {"builtin": "stdlib", "python": sys.version.split()[0], "implementation": sys.implementation.name}
    elif builtin == "jdk":
        root = find_jdk_src_zip()
        if root is None:
            return Fetched({"builtin": "jdk"}, [Refusal("lib/src.zip", "source_unavailable",
                           "no JDK src.zip under JAVA_HOME, the javac on PATH or /usr/lib/jvm; "
                           "install a JDK with sources (e.g. apt-get install openjdk-17-source) or set JAVA_HOME")],
                           0, 0, status="skipped")
        # node-independent: the archive's content and the JDK's version, not where this node keeps it
        pin = {"builtin": "jdk", "sha256": sha256_file(root), "java_version": jdk_version(root),
               "java_version_date": provenance.jdk_version_date(root)}
        log.info("jdk: %s", root)
    else:
        root = Path(spec["path"]).expanduser()
        if not root.exists():
            raise FetchError(f"local source {spec['name']}: {root} does not exist", root.name)
        pin = {"path": str(root)}
        pin.update(verify_local(spec, root))
    if root.is_dir():
        refusals, files, size = copy_folder(root, dest, limits, sel)
    else:
        refusals, files, size = extract_archive(root, dest, limits, sel, strip_top=False)
    return Fetched(pin, refusals, files, size)


def tree_sha256(root: Path) -> str:
    """The pin of a local folder: the sha256 of one line per entry, in sorted order, of its kind, its
    path and its content's sha256 (a link: its target), links never followed. Any added, removed,
    renamed or edited file changes it; timestamps and permissions do not."""
    h = hashlib.sha256()
    for m in folder_members(root):
        if m.kind == "file":
            assert m.open is not None
            with m.open() as f:
                content = hashlib.file_digest(f, "sha256").hexdigest()
        else:
            content = m.link_target
        h.update(f"{m.kind}\0{m.name}\0{content}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def verify_local(spec: dict, root: Path) -> dict:
    """Check a local source's pin like the downloads' (a zip or tar by `sha256`, a folder by
    `tree_sha256`); raise PinMismatch naming the value to pin. A zip or tar without `sha256` is refused
    (naming the value to pin) unless its entry says `unpinned: true`: then it is read, and its record says
    `unpinned`. Returns the pin record's hash fields."""
    what = f"local source {spec['name']} ({root})"
    if root.is_file():
        if "tree_sha256" in spec:
            raise FetchError(f"{what}: tree_sha256 pins a folder, but this is a file; pin it by `sha256: "
                             f"{sha256_file(root)}`", root.name, reason="pin_mismatch")
        if "sha256" in spec:
            verify(root, spec["sha256"], what, member=root.name)
            return {"sha256": sha256_file(root)}
        got = sha256_file(root)
        if not spec.get("unpinned"):  # every archive is pinned, as the downloads are
            raise FetchError(f"{what}: a zip or tar must be pinned: add `sha256: {got}` to its entry (or "
                             "`unpinned: true` to build from it unpinned knowingly)", root.name, reason="unpinned")
        log.warning("%s is not pinned (unpinned: true): built from its current content, sha256 %s; recorded as "
                    "unpinned", what, got)
        return {"sha256": got, "unpinned": True}
    got = tree_sha256(root)
    if "sha256" in spec:
        raise FetchError(f"{what}: sha256 pins a file, but this is a folder; pin a folder by `tree_sha256: {got}`",
                         root.name, reason="pin_mismatch")
    if "tree_sha256" in spec and spec["tree_sha256"].lower() != got:
        raise PinMismatch(f"{what}: tree_sha256 mismatch: params.yaml pins {spec['tree_sha256'].lower()} but the "
                          f"folder has {got}; pin the new value only if the change is intended", root.name)
    return {"tree_sha256": got}


FETCHERS = {"pypi": fetch_pypi, "npm": fetch_npm, "git": fetch_git, "url": fetch_url, "jsonl": fetch_jsonl, "local": fetch_local}


def fetch(spec: dict, limits: Limits, dest: Path, record: Path, rejects: Path, cache: Path,
          origins: Path | None = None) -> Fetched:
    """Fetch `spec` into `dest`, then write its pin record, its refusals and (when given) where a
    jsonl source's files came from (`origins`, empty for other kinds: it is never inside `dest`,
    so no file of the corpus can pose as it). A source that cannot be had as pinned is a `failed`
    record with one reject row and an empty `dest`, not an exception."""
    reset_dir(dest)
    sel = Selection(spec.get("include", []), spec.get("exclude", []))
    try:
        try:
            result = FETCHERS[spec["kind"]](spec, dest, cache, limits, sel)
        except ArchiveError as exc:
            raise FetchError(f"{spec['name']}: {exc}", reason="bad_archive") from exc
    except FetchError as exc:
        reset_dir(dest)
        message = " ".join(str(exc).split())
        result = Fetched({}, [Refusal(shown_name(exc.member or spec["name"]), exc.reason, message)], 0, 0,
                         status="failed", reason=exc.reason, error=message)
        log.error("source %s failed (%s), the run goes on without it: %s", spec["name"], exc.reason, message)
    if result.status == "skipped":
        log.warning("source %s skipped: %s", spec["name"], result.refusals[0].detail)
    elif result.status == "ok":
        by_reason: dict[str, list[Refusal]] = {}
        for r in result.refusals:
            by_reason.setdefault(r.reason, []).append(r)
        for reason, rows in sorted(by_reason.items()):
            first = rows[0]
            log.warning("source %s: %d refused as %s (first: %s%s)", spec["name"], len(rows), reason, first.path,
                        f": {first.detail}" if first.detail else "")
    if origins is not None:
        write_parquet(result.origins if result.origins is not None else schemas.ORIGINS.empty_table(), origins,
                      schemas.ORIGINS)
    if result.status == "ok":
        result.license = provenance.license_of(spec, _archive_of(spec, cache))
        result.released = provenance.released_of(spec, result.pin)
    _write_outcome(spec, result, record, rejects)
    log.info("%s: %d files, %d bytes, %d refused", spec["name"], result.files, result.bytes, len(result.refusals))
    return result


def _archive_of(spec: dict, cache: Path) -> Path | None:
    """The verified archive a source was extracted from (where its license metadata is read), None for a folder,
    a clone or a dump."""
    if spec["kind"] in ("pypi", "url"):
        return cache / "downloads" / spec["sha256"].lower()
    if spec["kind"] == "npm":
        return cache / "npm" / npm_integrity_hex(spec["integrity"], spec["package"])
    if spec["kind"] == "local" and not spec.get("builtin") and Path(spec["path"]).expanduser().is_file():
        return Path(spec["path"]).expanduser()
    return None


def _write_outcome(spec: dict, result: Fetched, record: Path, rejects: Path) -> None:
    """The source's pin record (JSON) and its refused members (Parquet, core REJECTS schema)."""
    repo = spec.get("repository", spec["name"])
    table = pa.table(
        {
            "source": [spec["name"]] * len(result.refusals),
            "repository": [None if repo == "top_dir" or repo.startswith("dir:") else repo] * len(result.refusals),
            "path": [r.path for r in result.refusals],
            "stage": ["fetch"] * len(result.refusals),
            "reason": [r.reason for r in result.refusals],
            "detail": [r.detail or None for r in result.refusals],
            "bytes": [r.bytes for r in result.refusals],
        },
        schema=schemas.REJECTS,
    )
    write_parquet(table, rejects, schemas.REJECTS)
    outcome = {"name": spec["name"], "kind": spec["kind"], "status": result.status, "pin": result.pin,
               "files": result.files, "bytes": result.bytes, "refused": len(result.refusals),
               # every cap that left members out, with what it kept of what it saw (reports/metrics/manifest.json)
               "caps": [{"reason": r.reason, "path": r.path, "kept": r.kept, "seen": r.seen}
                        for r in result.refusals if r.seen is not None]}
    if result.status == "failed":
        outcome.update(reason=result.reason, error=result.error)
    else:  # provenance (docs/contamination.md): SPDX license, release date of what was fetched (null: unknown)
        outcome.update(license=result.license, released=result.released)
    write_json(outcome, record)


def failed_sources(records: list[Path]) -> list[str]:
    """One line per source whose record says it failed (for the end of a run)."""
    lines = []
    for path in records:
        if path.exists():
            rec = json.loads(path.read_text())
            if rec.get("status") == "failed":
                lines.append(f"source {rec['name']} was left out ({rec.get('reason')}): {rec.get('error')}; fix its "
                             f"params.yaml entry (or what it points at), then rerun with `-R {path.as_posix()}`")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m pipeline.corpus.fetch",
        description="Fetch one pinned corpus source (an entry of params.yaml corpus.sources) "
        "into a folder, verifying its pin and recording refused members.",
    )
    ap.add_argument("--spec", required=True, help="the source entry as JSON")
    ap.add_argument("--limits", required=True, help="corpus.limits as JSON")
    ap.add_argument("--cache", required=True, type=Path, help="download and clone cache (kept across runs)")
    ap.add_argument("--dest", required=True, type=Path, help="folder to fill (emptied first)")
    ap.add_argument("--record", required=True, type=Path, help="pin record to write (JSON)")
    ap.add_argument("--rejects", required=True, type=Path, help="refused members to write (Parquet)")
    ap.add_argument("--origins", required=True, type=Path,
                    help="where a jsonl source's files came from (Parquet; empty for other kinds)")
    args = ap.parse_args(argv)
    logs.setup()
    fetch(json.loads(args.spec), Limits(**json.loads(args.limits)), args.dest, args.record, args.rejects, args.cache,
          args.origins)
    return 0


if __name__ == "__main__":
    sys.exit(main())
