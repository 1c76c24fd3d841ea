"""Malicious and broken inputs: each refused with a recorded reason, nothing escapes, nothing runs."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline.corpus import fetch as fetch_mod
from pipeline.corpus.fetch import FetchError, fetch, fetch_git, fetch_local
from pipeline.corpus.safety import Limits, Selection, copy_folder, extract_archive
from pipeline.manifest.scan import scan_file
from tests.conftest import git
from tests.fixture_corpus import NOT_UTF8, add_tar_file, make_sdist_index

LIMITS = Limits(max_file_bytes=1000, max_total_bytes=10_000, max_members=50)


def reasons(refusals) -> dict[str, str]:
    return {r.path: r.reason for r in refusals}


def test_tar_with_parent_and_absolute_members(tmp_path):
    archive = tmp_path / "evil.tar"
    with tarfile.open(archive, "w") as tar:
        add_tar_file(tar, "pkg/ok.py", b"x = 1\n")
        add_tar_file(tar, "pkg/../../up.py", b"bad\n")
        add_tar_file(tar, "../up2.py", b"bad\n")
        add_tar_file(tar, "/etc/abs.py", b"bad\n")
        add_tar_file(tar, "pkg/hard", b"", type=tarfile.LNKTYPE, linkname="../../outside")
        add_tar_file(tar, "pkg/dev", b"", type=tarfile.CHRTYPE)
        add_tar_file(tar, "pkg/fifo", b"", type=tarfile.FIFOTYPE)
    dest = tmp_path / "out" / "tree"
    refusals, files, size = extract_archive(archive, dest, LIMITS, strip_top=False)
    assert reasons(refusals) == {
        "pkg/../../up.py": "parent_traversal",
        "../up2.py": "parent_traversal",
        "/etc/abs.py": "absolute_path",
        "pkg/hard": "link_escapes_tree",
        "pkg/dev": "special_file",
        "pkg/fifo": "special_file",
    }
    assert (files, size) == (1, 6)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()) == [
        "evil.tar", "out/tree/pkg/ok.py"]


def test_zip_with_symlink_out_of_tree(tmp_path):
    archive = tmp_path / "links.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("proj/a.py", b"a = 1\n")
        for name, target in [("proj/escape", "../../../../etc/passwd"), ("proj/inside", "a.py")]:
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
    dest = tmp_path / "tree"
    refusals, files, _ = extract_archive(archive, dest, LIMITS)
    assert reasons(refusals) == {"escape": "link_escapes_tree", "inside": "link_internal"}
    assert files == 1
    assert not [p for p in dest.rglob("*") if p.is_symlink()]
    assert (dest / "a.py").read_bytes() == b"a = 1\n"


def test_local_folder_links_are_not_followed(tmp_path):
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "a.py").write_text("a = 1\n")
    secret = tmp_path / "secret.py"
    secret.write_text("password = 1\n")
    (src / "pkg" / "out.py").symlink_to(secret)
    (src / "pkg" / "same.py").symlink_to("a.py")
    (src / "dirlink").symlink_to(tmp_path)
    refusals, files, _ = copy_folder(src, tmp_path / "copy", LIMITS)
    assert reasons(refusals) == {"pkg/out.py": "link_escapes_tree", "pkg/same.py": "link_internal",
                                 "dirlink": "link_escapes_tree"}
    assert files == 1
    assert not (tmp_path / "copy" / "pkg" / "out.py").exists()


def test_caps_on_members_total_and_file_size(tmp_path):
    archive = tmp_path / "many.tar"
    with tarfile.open(archive, "w") as tar:
        add_tar_file(tar, "big.py", b"#" * 1001)
        for i in range(60):
            add_tar_file(tar, f"f{i:02d}.py", b"#" * 100)
    refusals, files, size = extract_archive(archive, tmp_path / "t", Limits(1000, 10_000, 50), strip_top=False)
    by_reason = {}
    for r in refusals:
        by_reason.setdefault(r.reason, []).append(r.path)
    assert by_reason["too_large"] == ["big.py"]
    assert files == 50 and size == 5000
    assert by_reason["member_limit"] == ["f50.py"]  # one row naming how many more were left out
    refusals, files, size = extract_archive(archive, tmp_path / "u", Limits(1000, 2000, 500), strip_top=False)
    assert files == 20 and size == 2000
    assert sum(r.reason == "size_limit" for r in refusals) == 40


def test_selection_globs(tmp_path):
    archive = tmp_path / "sel.tar"
    with tarfile.open(archive, "w") as tar:
        for name in ("a/x.py", "a/test/y.py", "b/z.py"):
            add_tar_file(tar, name, b"pass\n")
    extract_archive(archive, tmp_path / "t", LIMITS, Selection(include=["a/*"], exclude=["a/test/*"]), strip_top=False)
    assert [p.relative_to(tmp_path / "t").as_posix() for p in (tmp_path / "t").rglob("*.py")] == ["a/x.py"]


@pytest.mark.parametrize("fmt", ["tar", "zip"])
def test_top_folder_listed_as_its_own_entry_is_stripped(tmp_path, fmt):
    """Issue 13 item 11: h11's sdist (and click's, requests', ...) lists `h11-0.14.0/` as an entry of
    its own; the prefix must still be stripped, so `docs/*` excludes match and `dir:N` sees the project."""
    files = [("h11-0.14.0/h11/__init__.py", b"x = 1\n"), ("h11-0.14.0/docs/conf.py", b"y = 2\n"),
             ("h11-0.14.0/setup.py", b"z = 3\n")]
    archive = tmp_path / f"h11.{fmt}"
    if fmt == "tar":
        with tarfile.open(archive, "w") as tar:
            add_tar_file(tar, "h11-0.14.0", b"", type=tarfile.DIRTYPE)
            add_tar_file(tar, "h11-0.14.0/h11", b"", type=tarfile.DIRTYPE)
            for name, data in files:
                add_tar_file(tar, name, data)
    else:
        with zipfile.ZipFile(archive, "w") as zf:
            zf.writestr("h11-0.14.0/", b"")
            for name, data in files:
                zf.writestr(name, data)
    dest = tmp_path / "t"
    refusals, n, _ = extract_archive(archive, dest, LIMITS, Selection(exclude=["docs/*"]))
    assert refusals == [] and n == 2
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == [
        "h11/__init__.py", "setup.py"]


def test_single_top_level_file_is_not_a_top_folder(tmp_path):
    archive = tmp_path / "one.tar"
    with tarfile.open(archive, "w") as tar:
        add_tar_file(tar, "solo.py", b"x = 1\n")
    dest = tmp_path / "t"
    extract_archive(archive, dest, LIMITS)
    assert (dest / "solo.py").is_file()


def _hook_env(tmp_path: Path) -> tuple[dict, Path]:
    """A git config whose hooks (via core.hooksPath and a template dir) write a marker file."""
    marker = tmp_path / "HOOK_RAN"
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for name in ("post-checkout", "reference-transaction", "post-merge", "pre-commit", "fsmonitor-watchman"):
        hook = hooks / name
        hook.write_text(f"#!/bin/sh\necho {name} >> {marker}\n")
        hook.chmod(0o755)
    template = tmp_path / "template"
    (template / "hooks").mkdir(parents=True)
    for hook in hooks.iterdir():
        (template / "hooks" / hook.name).write_bytes(hook.read_bytes())
        (template / "hooks" / hook.name).chmod(0o755)
    config = tmp_path / "gitconfig"
    config.write_text(f"[core]\n\thooksPath = {hooks}\n[init]\n\ttemplateDir = {template}\n")
    return {"GIT_CONFIG_GLOBAL": str(config)}, marker


def test_git_hooks_never_run_and_pinned_commit_is_used(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    (repo / "a.py").write_text("v = 1\n")
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "one", cwd=repo)
    pinned = git("rev-parse", "HEAD", cwd=repo)
    (repo / "a.py").write_text("v = 2\n")
    git("commit", "-qam", "two", cwd=repo)
    env, marker = _hook_env(tmp_path)
    # the hooks are real: a plain clone with this config runs them
    git("clone", "-q", repo.as_uri(), str(tmp_path / "plain"), cwd=tmp_path, env=env)
    assert marker.exists()
    marker.unlink()
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    result = fetch_git({"url": repo.as_uri(), "commit": pinned}, tmp_path / "tree", tmp_path / "cache", LIMITS,
                       Selection())
    assert not marker.exists()
    assert (tmp_path / "tree" / "a.py").read_text() == "v = 1\n"
    assert result.pin == {"url": repo.as_uri(), "commit": pinned}
    # a second fetch is served from the cached clone, even with the remote gone
    os.rename(repo, tmp_path / "gone")
    fetch_git({"url": repo.as_uri(), "commit": pinned}, tmp_path / "tree2", tmp_path / "cache", LIMITS, Selection())
    assert (tmp_path / "tree2" / "a.py").read_text() == "v = 1\n" and not marker.exists()


def test_git_unknown_commit_is_a_clear_error(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    (repo / "a.py").write_text("v = 1\n")
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "one", cwd=repo)
    with pytest.raises(FetchError, match="failed"):
        fetch_git({"url": repo.as_uri(), "commit": "0" * 40}, tmp_path / "t", tmp_path / "c", LIMITS, Selection())
    with pytest.raises(FetchError, match="full 40-hex sha"):
        fetch_git({"url": repo.as_uri(), "commit": "abc123"}, tmp_path / "t", tmp_path / "c", LIMITS, Selection())


def test_hash_mismatch_names_both_hashes(tmp_path):
    """A wrong pin: nothing extracted or cached, a failed record and a pin_mismatch row naming both
    hashes, and the run goes on (issue 15 item 5: tests/test_hostile.py has every such case)."""
    index, good = make_sdist_index(tmp_path / "idx")
    wrong = "0" * 64
    spec = {"name": "demo", "kind": "pypi", "package": "demo==1.0", "sha256": wrong, "index_url": index}
    result = fetch(spec, LIMITS, tmp_path / "t", tmp_path / "r.json", tmp_path / "r.parquet", tmp_path / "cache")
    assert result.status == "failed" and wrong in result.error and good in result.error
    assert [(r["reason"], r["detail"]) for r in pq.read_table(tmp_path / "r.parquet").to_pylist()] == [
        ("pin_mismatch", result.error)]
    # an archive by URL with a wrong pin: the download is verified and not cached
    url_spec = {"name": "u", "kind": "url", "url": f"{index.rsplit('/simple', 1)[0]}/files/demo-1.0.tar.gz",
                "sha256": wrong}
    result = fetch(url_spec, LIMITS, tmp_path / "u", tmp_path / "u.json", tmp_path / "u.parquet", tmp_path / "cache")
    assert result.reason == "pin_mismatch" and wrong in result.error and good in result.error
    assert not (tmp_path / "cache" / "downloads" / wrong).exists() and list((tmp_path / "u").iterdir()) == []
    # the command line says so on one line, without a traceback, and exits 0 (the run goes on)
    import json

    res = subprocess.run([sys.executable, "-m", "pipeline.corpus.fetch", "--spec", json.dumps(spec),
                          "--limits", json.dumps(LIMITS.__dict__), "--cache", str(tmp_path / "cache"),
                          "--dest", str(tmp_path / "t2"), "--record", str(tmp_path / "r2.json"),
                          "--rejects", str(tmp_path / "r2.parquet"), "--origins", str(tmp_path / "o2.parquet")],
                         capture_output=True, text=True)
    assert res.returncode == 0 and "sha256 mismatch" in res.stderr and "Traceback" not in res.stderr
    assert json.loads((tmp_path / "r2.json").read_text())["status"] == "failed"


def test_missing_jdk_is_a_warning_and_a_reject(tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nojdk"))
    monkeypatch.setenv("PATH", str(tmp_path))  # no javac
    monkeypatch.setattr(fetch_mod, "JVM_FOLDERS", (str(tmp_path / "jvm"),))
    spec = {"name": "jdk", "kind": "local", "builtin": "jdk", "repository": "top_dir"}
    result = fetch(spec, LIMITS, tmp_path / "t", tmp_path / "jdk.json", tmp_path / "jdk.parquet", tmp_path / "c")
    assert result.status == "skipped" and result.files == 0
    rows = pq.read_table(tmp_path / "jdk.parquet").to_pylist()
    assert [(r["reason"], r["stage"]) for r in rows] == [("source_unavailable", "fetch")]
    assert "JAVA_HOME" in rows[0]["detail"]


def test_jdk_found_from_java_home(tmp_path, monkeypatch):
    home = tmp_path / "jdk"
    (home / "lib").mkdir(parents=True)
    with zipfile.ZipFile(home / "lib" / "src.zip", "w") as zf:
        zf.writestr("java.base/java/util/List.java", "package java.util;\ninterface List {}\n")
    monkeypatch.setenv("JAVA_HOME", str(home))
    (home / "release").write_text('IMPLEMENTOR="Debian"\nJAVA_VERSION="17.0.12"\n')
    result = fetch_local({"name": "jdk", "builtin": "jdk"}, tmp_path / "t", tmp_path / "c", LIMITS, Selection())
    assert result.files == 1 and result.pin["java_version"] == "17.0.12"
    # the pin names no path on this machine (a cluster node keeps its JDK elsewhere): content and version
    assert str(tmp_path) not in json.dumps(result.pin) and len(result.pin["sha256"]) == 64


@pytest.mark.parametrize(
    "name,data,reason",
    [
        ("bad.py", NOT_UTF8, "undecodable"),
        ("bad.java", b"class A { String s = \"\xc3\x28\"; }\n", "undecodable"),
        ("cookie.py", b"# -*- coding: no-such-codec -*-\nx = 1\n", "undecodable"),
        ("nul.py", b"x = 1\n\x00\x01\x02", "binary"),
        ("huge.py", b"x = 1\n" * 400, "too_large"),
        ("notes.txt", b"hello\n", "not_source"),
        ("app.js", b"let a = 1;\n", "language_not_selected"),
    ],
)
def test_scan_rejects(tmp_path, name, data, reason):
    (tmp_path / name).write_bytes(data)
    result = scan_file(str(tmp_path), name, frozenset({"python", "java"}), 2000)
    assert result.reason == reason


def test_scan_accepts_cookie_bom_and_shebang(tmp_path):
    (tmp_path / "latin.py").write_bytes(b"# coding: latin-1\ns = '\xe9'\n")
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbfx = 1\n")
    (tmp_path / "script").write_bytes(b"#!/usr/bin/python3\nx = 1")
    langs = frozenset({"python"})
    latin = scan_file(str(tmp_path), "latin.py", langs, 2000)
    assert (latin.reason, latin.encoding, latin.lines) == (None, "iso-8859-1", 2)
    assert scan_file(str(tmp_path), "bom.py", langs, 2000).encoding == "utf-8-sig"
    script = scan_file(str(tmp_path), "script", langs, 2000)
    assert (script.language, script.lines, script.bytes) == ("python", 2, 24)


@pytest.mark.parametrize(
    "rel,mode,expected",
    [
        ("json/decoder.py", "top_dir", "json"),
        ("os.py", "top_dir", "os"),
        ("java.base/java/util/concurrent/Future.java", "dir:4", "java.base/java/util/concurrent"),
        ("java.base/java/util/List.java", "dir:4", "java.base/java/util"),
        ("src/requests/api.py", "requests", "requests"),
    ],
)
def test_repository_of(rel, mode, expected):
    from pipeline.manifest.scan import repository_of

    assert repository_of(rel, mode, "src") == expected
