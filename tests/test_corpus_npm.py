"""The npm source kind: a package tarball pinned by the registry's sha512 integrity, verified
before anything is unpacked, extracted safely without its `package/` folder, never installed."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline.config import ParamsError, validate
from pipeline.corpus.fetch import FetchError, fetch, npm_integrity_hex, npm_tarball_url
from pipeline.corpus.safety import Limits
from tests.conftest import REPO, default_params
from tests.fixture_corpus import lifecycle_package_json, npm_integrity, npm_tarball, publish_npm

LIMITS = Limits(max_file_bytes=10_000, max_total_bytes=100_000, max_members=50)
INDEX_JS = b"const fs = require('fs');\nmodule.exports = function greet(name) { return 'hi ' + name; };\n"
# what `npm install` would run; written as a module too, so a require() of the package would also leave it
INSTALL_JS = "require('fs').writeFileSync({marker!r}, 'install.js ran');\n"


def package_files(marker: Path) -> dict[str, bytes]:
    return {
        "package.json": lifecycle_package_json("greet", "1.0.0", marker),
        "index.js": INDEX_JS,
        "scripts/install.js": INSTALL_JS.format(marker=str(marker)).encode(),
        "test/greet.test.js": b"require('../index.js');\n",
    }


def run_fetch(spec: dict, tmp: Path, tag: str = "t"):
    return fetch(spec, LIMITS, tmp / tag / "tree", tmp / tag / "record.json", tmp / tag / "rejects.parquet",
                 tmp / "cache")


def tree_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_integrity_round_trips_and_tarball_urls():
    data = npm_tarball({"index.js": b"x\n"})
    import hashlib

    assert npm_integrity_hex(npm_integrity(data), "p@1") == hashlib.sha512(data).hexdigest()
    assert npm_tarball_url("https://registry.npmjs.org", "express", "4.21.2") == \
        "https://registry.npmjs.org/express/-/express-4.21.2.tgz"
    assert npm_tarball_url("https://registry.npmjs.org/", "@babel/core", "7.0.0") == \
        "https://registry.npmjs.org/@babel/core/-/core-7.0.0.tgz"
    assert npm_tarball_url("file:///srv/reg", "a", "1.0.0-beta.1") == "file:///srv/reg/a/-/a-1.0.0-beta.1.tgz"
    for bad in ("sha1-AAAA", "sha512-notbase64!", "sha512-" + "A" * 20 + "=="):
        with pytest.raises(FetchError, match="integrity must be"):
            npm_integrity_hex(bad, "p@1")


def test_npm_package_verified_extracted_without_package_folder_and_cached(tmp_path):
    marker = tmp_path / "MARKER"
    registry = tmp_path / "registry"
    integrity = publish_npm(registry, "greet", "1.0.0", package_files(marker))
    spec = {"name": "greet", "kind": "npm", "package": "greet@1.0.0", "integrity": integrity,
            "registry": registry.as_uri(), "exclude": ["test/*"]}
    result = run_fetch(spec, tmp_path)
    tree = tmp_path / "t" / "tree"
    assert tree_files(tree) == ["index.js", "package.json", "scripts/install.js"]
    assert (tree / "index.js").read_bytes() == INDEX_JS
    assert (result.files, result.bytes, result.refusals) == (3, sum((tree / f).stat().st_size for f in tree_files(tree)), [])
    record = json.loads((tmp_path / "t" / "record.json").read_text())
    assert record["pin"] == {"package": "greet@1.0.0", "integrity": integrity}
    assert record["status"] == "ok" and record["kind"] == "npm"
    # cached by the tarball's sha512; a second fetch needs no registry at all
    assert [p.name for p in (tmp_path / "cache" / "npm").iterdir()] == [npm_integrity_hex(integrity, "")]
    (registry / "greet" / "-" / "greet-1.0.0.tgz").unlink()
    again = run_fetch(spec, tmp_path, "t2")
    assert again.files == 3 and tree_files(tmp_path / "t2" / "tree") == tree_files(tree)
    # nothing ran: no lifecycle script, no module of the package
    assert not list(tmp_path.glob("MARKER*"))


def test_scoped_package_and_a_registry_folder_path(tmp_path, monkeypatch):
    integrity = publish_npm(tmp_path / "reg", "@acme/util", "2.0.1", {"lib/util.js": b"export const a = 1;\n"})
    monkeypatch.chdir(tmp_path)  # a registry without a scheme is a folder, relative to the working directory
    spec = {"name": "acme-util", "kind": "npm", "package": "@acme/util@2.0.1", "integrity": integrity,
            "registry": "reg"}
    result = run_fetch(spec, tmp_path)
    assert result.files == 1 and tree_files(tmp_path / "t" / "tree") == ["lib/util.js"]


def test_bad_integrity_is_a_clear_error_and_a_reject_and_nothing_is_extracted(tmp_path):
    marker = tmp_path / "MARKER"
    registry = tmp_path / "registry"
    good = publish_npm(registry, "greet", "1.0.0", package_files(marker))
    wrong = npm_integrity(b"some other tarball")
    spec = {"name": "greet", "kind": "npm", "package": "greet@1.0.0", "integrity": wrong,
            "registry": registry.as_uri()}
    result = run_fetch(spec, tmp_path)  # the run goes on without the source (issue 15 item 5)
    assert (result.status, result.reason) == ("failed", "pin_mismatch")
    message = result.error
    assert "\n" not in message and "sha512 mismatch" in message and wrong in message and good in message
    assert message.startswith("greet@1.0.0 (")
    # nothing extracted, nothing cached
    assert tree_files(tmp_path / "t" / "tree") == []
    assert not (tmp_path / "cache" / "npm" / npm_integrity_hex(wrong, "")).exists()
    assert list((tmp_path / "cache" / "npm").iterdir()) == []
    # one reject row, and a record that says why
    rows = pq.read_table(tmp_path / "t" / "rejects.parquet").to_pylist()
    assert [(r["source"], r["path"], r["stage"], r["reason"]) for r in rows] == [
        ("greet", "greet-1.0.0.tgz", "fetch", "pin_mismatch")]
    assert rows[0]["detail"] == message
    record = json.loads((tmp_path / "t" / "record.json").read_text())
    assert (record["status"], record["reason"], record["files"]) == ("failed", "pin_mismatch", 0)
    # the command line: exit status 0 (the run goes on), the one line, no traceback (as for a pypi sha256 mismatch)
    res = subprocess.run([sys.executable, "-m", "pipeline.corpus.fetch", "--spec", json.dumps(spec),
                          "--limits", json.dumps(LIMITS.__dict__), "--cache", str(tmp_path / "cache"),
                          "--dest", str(tmp_path / "cli" / "tree"), "--record", str(tmp_path / "cli" / "r.json"),
                          "--rejects", str(tmp_path / "cli" / "r.parquet"), "--origins", str(tmp_path / "cli" / "o.parquet")],
                         capture_output=True, text=True, cwd=REPO)
    assert res.returncode == 0 and "sha512 mismatch" in res.stderr and "Traceback" not in res.stderr
    assert tree_files(tmp_path / "cli" / "tree") == []
    assert not list(tmp_path.glob("MARKER*"))


def test_missing_package_is_a_clear_error(tmp_path):
    spec = {"name": "nope", "kind": "npm", "package": "nope@1.0.0", "integrity": npm_integrity(b"x"),
            "registry": (tmp_path / "empty").as_uri()}
    result = run_fetch(spec, tmp_path)
    assert (result.status, result.reason) == ("failed", "source_unavailable")
    assert re.match(r"nope@1.0.0 \(.*\): cannot download .*nope-1.0.0.tgz", result.error)


def test_params_schema_knows_the_npm_kind():
    params = default_params()
    npm = [s for s in params["corpus"]["sources"] if s["kind"] == "npm"]
    assert len(npm) >= 3 and "javascript" in params["manifest"]["languages"]
    validate(params)
    for broken in [{"integrity": None}, {"package": "express==4.21.2"}, {"integrity": "sha1-abc"}]:
        p = default_params()
        entry = next(s for s in p["corpus"]["sources"] if s["kind"] == "npm")
        for k, v in broken.items():
            if v is None:
                del entry[k]
            else:
                entry[k] = v
        with pytest.raises(ParamsError):
            validate(p)


def test_the_test_configurations_npm_package_rebuilds_byte_identically(tmp_path):
    import yaml

    from tests.fixture_corpus import TEST_NPM_FILES, TEST_NPM_PACKAGE

    name, version = TEST_NPM_PACKAGE
    integrity = publish_npm(tmp_path, name, version, TEST_NPM_FILES)
    rel = f"{name}/-/{name}-{version}.tgz"
    assert (tmp_path / rel).read_bytes() == (REPO / ".test" / "npm" / rel).read_bytes()
    entry = next(s for s in yaml.safe_load((REPO / ".test" / "params.yaml").read_text())["corpus"]["sources"]
                 if s["kind"] == "npm")
    assert (entry["package"], entry["integrity"], entry["registry"]) == (f"{name}@{version}", integrity, "npm")


def test_a_failed_fetch_says_why_on_the_console(tmp_path):
    """Issue 13 item 14: through real Snakemake, the one-line reason of a failed job reaches the console (the
    workflow profile's show-failed-logs), not only logs/fetch/<source>.log."""
    from tests.conftest import snakemake, write_params

    registry = tmp_path / "registry"
    publish_npm(registry, "greet", "1.0.0", package_files(tmp_path / "MARKER"))
    spec = {"name": "greet", "kind": "npm", "package": "greet@1.0.0",
            "integrity": npm_integrity(b"some other tarball"), "registry": registry.as_uri()}
    work = tmp_path / "work"
    write_params(work, [spec])
    res = snakemake(work, "data/sources/greet.json", check=False)
    assert res.returncode != 0
    console = res.stdout + res.stderr
    assert "sha512 mismatch" in console, console[-3000:]
