"""Hostile and broken corpus input (issue 15 items 2-6, 9, 10): every case is a reject row and a
log line, never a traceback; memory stays bounded; the extracted tree holds no bookkeeping."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline.corpus.fetch import fetch
from pipeline.corpus.safety import Limits
from pipeline.manifest.scan import scan_source
from tests import hostile_inputs as H
from tests.conftest import REPO
from tests.fixture_corpus import make_sdist_index, pin_archive, sha256

LIMITS = Limits(max_file_bytes=100_000, max_total_bytes=10_000_000, max_members=1000)
SHOWN_LATIN1 = "caf\\xe9.py"  # how a reject row shows the Latin-1 name


def run(spec: dict, tmp: Path, limits: Limits = LIMITS):
    """fetch() one source; (result, reject rows as (path, reason), files on disk)."""
    out = tmp / "out" / spec["name"]
    spec = pin_archive(spec)  # every archive is pinned (the refusal of one that is not: test_corpus_pins_caps.py)
    result = fetch(spec, limits, out / "tree", out / "record.json", out / "rejects.parquet", tmp / "cache",
                   origins=out / "origins.parquet")
    rows = [(r["path"], r["reason"]) for r in pq.read_table(out / "rejects.parquet").to_pylist()]
    return result, rows, tree_files(out / "tree")


def tree_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def record(tmp: Path, name: str) -> dict:
    return json.loads((tmp / "out" / name / "record.json").read_text())


def cli(spec: dict, tmp: Path, limits: Limits = LIMITS) -> subprocess.CompletedProcess:
    out = tmp / "cli" / spec["name"]
    return subprocess.run(
        [sys.executable, "-m", "pipeline.corpus.fetch", "--spec", json.dumps(spec), "--limits",
         json.dumps(limits.__dict__), "--cache", str(tmp / "cache"), "--dest", str(out / "tree"),
         "--record", str(out / "record.json"), "--rejects", str(out / "rejects.parquet"),
         "--origins", str(out / "origins.parquet")], capture_output=True, text=True, cwd=REPO, timeout=120)


def scan(tmp: Path, name: str, repository: str | None = None):
    out = tmp / "out" / name
    files, rejects = scan_source(name, out / "tree", repository or name, ["python"], LIMITS.max_file_bytes,
                                 origins=out / "origins.parquet")
    return files.to_pylist(), rejects.to_pylist()


# item 2: names that are not UTF-8


def _latin1_source(kind: str, tmp: Path) -> dict:
    if kind == "tar":
        path = H.tar_with(tmp / "names.tar", [("ok.py", b"x = 1\n"), (H.LATIN1_NAME, b"y = 2\n")])
        return {"name": "s", "kind": "local", "path": str(path)}
    if kind in ("zip_flagged", "zip_plain"):
        flagged, plain = H.bad_name_zips(tmp)
        return {"name": "s", "kind": "local", "path": str(flagged if kind == "zip_flagged" else plain)}
    if kind == "folder":
        return {"name": "s", "kind": "local", "path": str(H.non_utf8_folder(tmp / "folder"))}
    repo, commit = H.non_utf8_git_repo(tmp / "repo")
    return {"name": "s", "kind": "git", "url": repo.as_uri(), "commit": commit}


@pytest.mark.parametrize("kind", ["tar", "zip_flagged", "zip_plain", "folder", "git"])
def test_names_that_are_not_utf8_are_bad_name_rejects(tmp_path, kind):
    result, rows, files = run(_latin1_source(kind, tmp_path), tmp_path)
    assert (SHOWN_LATIN1, "bad_name") in rows and result.status == "ok"
    expected = ["né.py", "ok.py"] if kind == "zip_plain" else ["ok.py"]  # an unflagged UTF-8 name is kept
    assert files == expected and result.files == len(expected)
    scanned, rejects = scan(tmp_path, "s")  # the scan used to die here (surrogates not allowed)
    assert sorted(r["path"] for r in scanned) == expected and rejects == []


def test_scan_rejects_a_name_that_is_not_utf8(tmp_path):
    tree = H.non_utf8_folder(tmp_path / "tree")
    files, rejects = scan_source("s", tree, "s", ["python"], 1000)
    assert [r["path"] for r in files.to_pylist()] == ["ok.py"]
    assert [(r["path"], r["reason"], r["stage"]) for r in rejects.to_pylist()] == [(SHOWN_LATIN1, "bad_name", "manifest")]


# item 3: a file and a folder of the same name; item 9: duplicate members


@pytest.mark.parametrize("fmt", ["tar", "zip"])
def test_file_folder_collisions_are_rejects(tmp_path, fmt):
    if fmt == "tar":
        path = H.collision_tar(tmp_path / "c.tar")
    else:
        path = H.write_zip(tmp_path / "c.zip", [{"name": n.encode(), "data": d} for n, d in [
            ("p/x.py", b"a = 1\n"), ("p/x.py/y.py", b"b = 2\n"), ("q/y/z.py", b"c = 3\n"), ("q/y", b"d = 4\n"),
            ("ok.py", b"e = 5\n")]])
    result, rows, files = run({"name": "c", "kind": "local", "path": str(path)}, tmp_path)
    assert sorted(rows) == [("p/x.py/y.py", "path_collision"), ("q/y", "path_collision")]
    assert files == ["ok.py", "p/x.py", "q/y/z.py"] and result.files == 3


def test_duplicate_members_are_rejects_and_counts_match_the_disk(tmp_path):
    result, rows, files = run({"name": "d", "kind": "local", "path": str(H.duplicate_tar(tmp_path / "d.tar"))}, tmp_path)
    assert rows == [("pkg/dup.py", "duplicate_member"), ("pkg/dup.py", "duplicate_member")]
    assert files == ["pkg/a.py", "pkg/b.py", "pkg/dup.py"]
    assert result.files == record(tmp_path, "d")["files"] == len(files)
    assert (tmp_path / "out/d/tree/pkg/dup.py").read_bytes() == b"one = 1\n"  # the first one wins


def test_a_later_member_outside_the_guessed_top_folder_rewrites_without_stripping(tmp_path):
    """The top folder is guessed from the first member (one pass, streaming); a later member outside
    it makes the tree be written again unstripped, as the old two-pass code did."""
    path = H.tar_with(tmp_path / "late.tar", [("a/x.py", b"x = 1\n"), ("a/y.py", b"y = 1\n"), ("b/z.py", b"z = 1\n")])
    digest = sha256(path)
    result, rows, files = run({"name": "late", "kind": "url", "url": path.as_uri(), "sha256": digest}, tmp_path)
    assert files == ["a/x.py", "a/y.py", "b/z.py"] and rows == [] and result.files == 3
    path = H.tar_with(tmp_path / "top.tar", [("a/x.py", b"x = 1\n"), ("a/y.py", b"y = 1\n")])
    result, rows, files = run({"name": "top", "kind": "url", "url": path.as_uri(), "sha256": sha256(path)}, tmp_path)
    assert files == ["x.py", "y.py"]


def test_a_zip_listing_more_entries_than_are_read_is_refused_before_its_directory(tmp_path):
    path = H.write_zip(tmp_path / "wide.zip", [{"name": f"m{i}.py".encode(), "data": b"x = 1\n"} for i in range(11)])
    result, rows, files = run({"name": "wide", "kind": "local", "path": str(path)}, tmp_path, Limits(1000, 10_000, 5))
    assert rows == [("wide.zip", "member_limit")] and files == [] and result.status == "ok"


# item 4: corrupt archives, unreachable urls, broken jsonl


def test_bad_crc_member_is_a_reject(tmp_path):
    result, rows, files = run({"name": "z", "kind": "local", "path": str(H.bad_crc_zip(tmp_path / "z.zip"))}, tmp_path)
    assert rows == [("z/bad.py", "corrupt_member")] and files == ["z/good.py"] and result.files == 1


def test_truncated_targz_keeps_what_it_could_read(tmp_path):
    path = H.truncated_targz(tmp_path / "t.tar.gz")
    result, rows, files = run({"name": "t", "kind": "url", "url": path.as_uri(), "sha256": sha256(path)}, tmp_path)
    assert files == ["f0.py", "f1.py"] and result.status == "ok"  # the top folder t/ stripped
    assert rows and {reason for _, reason in rows} <= {"corrupt_member", "corrupt_archive"}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_broken_jsonl_records_are_rejects(tmp_path):
    path = H.broken_jsonl(tmp_path / "b.jsonl.gz")
    result, rows, files = run({"name": "j", "kind": "jsonl", "path": str(path)}, tmp_path)
    assert rows == [(f"b.jsonl.gz:{n}", "bad_record") for n in (2, 3, 4, 5)]
    assert files == ["00000000.py", "00000001.py"] and result.files == 2
    origins = pq.read_table(tmp_path / "out/j/origins.parquet").to_pylist()
    assert [(o["repository"], o["path"]) for o in origins] == [("o/r", "a.py"), ("o/r", "d.py")]
    scanned, _ = scan(tmp_path, "j")
    assert [(r["repository"], r["path"]) for r in scanned] == [("o/r", "a.py"), ("o/r", "d.py")]


# item 5: a source that cannot be had as pinned: the run goes on without it


def _failing_sources(tmp: Path) -> list[tuple[dict, str]]:
    index, good = make_sdist_index(tmp / "idx")
    text = tmp / "page.html"
    text.write_text("<html>not an archive</html>\n")
    repo, _ = H.non_utf8_git_repo(tmp / "repo")
    port = _closed_port()
    return [
        ({"name": "pin", "kind": "pypi", "package": "demo==1.0", "sha256": "0" * 64, "index_url": index}, "pin_mismatch"),
        ({"name": "noindex", "kind": "pypi", "package": "demo==1.0", "sha256": good,
          "index_url": (tmp / "nowhere").as_uri()}, "source_unavailable"),
        ({"name": "unreachable", "kind": "url", "url": f"http://127.0.0.1:{port}/x.tar.gz", "sha256": "1" * 64},
         "source_unavailable"),
        ({"name": "nocommit", "kind": "git", "url": repo.as_uri(), "commit": "0" * 40}, "source_unavailable"),
        ({"name": "nopath", "kind": "local", "path": str(tmp / "missing")}, "source_unavailable"),
        ({"name": "nojsonl", "kind": "jsonl", "path": str(tmp / "missing.jsonl")}, "source_unavailable"),
        ({"name": "notarchive", "kind": "url", "url": text.as_uri(), "sha256": sha256(text)}, "bad_archive"),
        ({"name": "notarchive2", "kind": "local", "path": str(text)}, "bad_archive"),
    ]


def test_sources_that_cannot_be_had_are_failed_records_with_one_reject(tmp_path):
    for spec, reason in _failing_sources(tmp_path):
        result, rows, files = run(spec, tmp_path)
        assert result.status == "failed" and files == [], spec["name"]
        assert [r for _, r in rows] == [reason], spec["name"]
        rec = record(tmp_path, spec["name"])
        assert (rec["status"], rec["reason"], rec["files"]) == ("failed", reason, 0)
        assert "\n" not in rec["error"]


def test_the_command_line_says_one_line_and_goes_on(tmp_path):
    cases = [c for c in _failing_sources(tmp_path) if c[0]["name"] in ("pin", "unreachable", "notarchive")]
    jsonl = H.broken_jsonl(tmp_path / "b.jsonl.gz")
    cases += [({"name": "jsonl", "kind": "jsonl", "path": str(jsonl)}, "bad_record"),
              (pin_archive({"name": "crc", "kind": "local", "path": str(H.bad_crc_zip(tmp_path / "z.zip"))}), "corrupt_member")]
    for spec, reason in cases:
        res = cli(spec, tmp_path)
        assert res.returncode == 0 and "Traceback" not in res.stderr, (spec["name"], res.stderr)
        loud = [line for line in res.stderr.splitlines() if " ERROR " in line or " WARNING " in line]
        assert len(loud) == 1 and reason in loud[0], (spec["name"], res.stderr)


# item 10: the pipeline's bookkeeping lives outside the extracted tree


def test_crafted_origins_in_an_sdist_change_nothing(tmp_path):
    path, digest = H.crafted_origins_sdist(tmp_path)
    result, rows, files = run({"name": "spoof", "kind": "url", "url": path.as_uri(), "sha256": digest}, tmp_path)
    assert rows == [(".snakemake_timestamp", "reserved_name")]
    assert files == [".origins.parquet", "mod.py", "notes.txt"]
    scanned, rejects = scan(tmp_path, "spoof")
    assert [(r["repository"], r["path"]) for r in scanned] == [("spoof", "mod.py")]
    assert sorted((r["repository"], r["path"], r["reason"]) for r in rejects) == [
        ("spoof", ".origins.parquet", "not_source"), ("spoof", "notes.txt", "not_source")]


# item 6: bounded memory, measured on a child process


def _only_the_link(rows: list[dict], out: Path) -> None:
    assert [(r["path"], r["reason"]) for r in rows] == [("p/link", "link_internal")]


def _giant_line_refused(rows: list[dict], out: Path) -> None:
    assert [(r["path"], r["reason"]) for r in rows] == [("big.jsonl.gz:2", "too_large")]
    assert json.loads((out / "record.json").read_text())["files"] == 2


def _member_cap_reached(rows: list[dict], out: Path) -> None:
    reasons = [r["reason"] for r in rows]
    assert reasons[-1] == "member_limit" and set(reasons[:-1]) == {"duplicate_member"}
    assert len(rows) <= 2 * LIMITS.max_members  # it stopped reading at the entry cap
    assert tree_files(out / "tree") == ["pkg/same.py"]


@pytest.mark.parametrize("name, kind, make, check", [
    pytest.param("bomb", "local", lambda tmp: H.zip_symlink_bomb(tmp / "bomb.zip", gib=1), _only_the_link,
                 id="zip_symlink_bomb_reads_only_the_link"),
    pytest.param("big", "jsonl", lambda tmp: H.jsonl_giant_line(tmp / "big.jsonl.gz", mib=512), _giant_line_refused,
                 id="jsonl_giant_line_is_refused_before_parsing"),
    pytest.param("many", "local", lambda tmp: H.tar_many_members(tmp / "many.tar.gz", members=65_536),
                 _member_cap_reached, id="tar_member_cap_applies_while_reading"),
    # a million members: every header is still read and counted (~40 CPU-s), in bounded memory (make test-all)
    pytest.param("many", "local", lambda tmp: H.tar_many_members(tmp / "many.tar.gz", members=1_048_576),
                 _member_cap_reached, id="tar_million_members_counted_in_bounded_memory", marks=pytest.mark.slow),
])
def test_a_small_hostile_archive_stays_in_bounded_memory(tmp_path, name, kind, make, check):
    """A few MB on disk that expand to a GiB or a million members: the child's peak RSS stays small
    and the rejects say why."""
    archive = make(tmp_path)
    assert archive.stat().st_size < 3_000_000
    rc, peak_mb, seconds, err = H.fetch_peak_rss(pin_archive({"name": name, "kind": kind, "path": str(archive)}), LIMITS,
                                                 tmp_path)
    assert rc == 0 and "Traceback" not in err
    assert peak_mb < 500, peak_mb
    check(pq.read_table(tmp_path / "rss" / "rejects.parquet").to_pylist(), tmp_path / "rss")


# The whole hostile corpus through real Snakemake, up to the manifest


def hostile_sources(root: Path) -> list[dict]:
    """One source per hostile case above, all local (file:// urls, a closed port, a real git repo)."""
    root.mkdir(parents=True)
    flagged, _ = H.bad_name_zips(root)
    index, good = make_sdist_index(root / "idx")
    page = root / "page.html"
    page.write_text("<html>not an archive</html>\n")
    repo, commit = H.non_utf8_git_repo(root / "repo")
    spoof, spoof_sha = H.crafted_origins_sdist(root)
    truncated = H.truncated_targz(root / "t.tar.gz")
    loose = root / "loose"
    (loose / "pkg").mkdir(parents=True)
    (loose / "pkg" / "m.py").write_bytes(b"def m():\n    return 1\n")
    (loose / ".snakemake_timestamp").write_bytes(b"not snakemake's\n")

    def url(path: Path) -> dict:
        return {"url": path.as_uri(), "sha256": sha256(path)}

    return [pin_archive(spec) for spec in [
        {"name": "names-tar", "kind": "local", "path": str(H.tar_with(root / "n.tar", [("ok.py", b"x = 1\n"),
                                                                                       (H.LATIN1_NAME, b"y = 2\n")]))},
        {"name": "names-zip", "kind": "local", "path": str(flagged)},
        {"name": "names-folder", "kind": "local", "path": str(H.non_utf8_folder(root / "folder"))},
        {"name": "names-git", "kind": "git", "url": repo.as_uri(), "commit": commit},
        {"name": "collide", "kind": "url", **url(H.collision_tar(root / "c.tar"))},
        {"name": "dups", "kind": "local", "path": str(H.duplicate_tar(root / "d.tar"))},
        {"name": "crc", "kind": "local", "path": str(H.bad_crc_zip(root / "z.zip"))},
        {"name": "truncated", "kind": "url", **url(truncated)},
        {"name": "jsonl", "kind": "jsonl", "path": str(H.broken_jsonl(root / "b.jsonl.gz"))},
        {"name": "spoof", "kind": "url", **url(spoof)},
        {"name": "loose", "kind": "local", "path": str(loose)},
        {"name": "bomb", "kind": "local", "path": str(H.zip_symlink_bomb(root / "bomb.zip", gib=1))},
        {"name": "many", "kind": "local", "path": str(H.tar_many_members(root / "many.tar.gz", 1 << 16))},
        # sources that cannot be had as pinned: left out, the run goes on
        {"name": "pin", "kind": "pypi", "package": "demo==1.0", "sha256": "0" * 64, "index_url": index},
        {"name": "unreachable", "kind": "url", "url": f"http://127.0.0.1:{_closed_port()}/x.tar.gz", "sha256": good},
        {"name": "nocommit", "kind": "git", "url": repo.as_uri(), "commit": "0" * 40},
        {"name": "notarchive", "kind": "url", **url(page)},
    ]]


FAILED = {"pin": "pin_mismatch", "unreachable": "source_unavailable", "nocommit": "source_unavailable",
          "notarchive": "bad_archive"}
# a missing local or jsonl path is refused at planning (pipeline.config.check_inputs; issue 37 item E), before job 1
MISSING = [{"name": "nopath", "kind": "local", "path": "missing"}, {"name": "nojsonl", "kind": "jsonl", "path": "missing.jsonl"}]

# (source, stage, path, reason) of every reject but the many duplicates of `many`
HOSTILE_REJECTS = {
    ("names-tar", "fetch", SHOWN_LATIN1, "bad_name"),
    ("names-zip", "fetch", SHOWN_LATIN1, "bad_name"),
    ("names-folder", "fetch", SHOWN_LATIN1, "bad_name"),
    ("names-git", "fetch", SHOWN_LATIN1, "bad_name"),
    ("collide", "fetch", "p/x.py/y.py", "path_collision"),
    ("collide", "fetch", "q/y", "path_collision"),
    ("dups", "fetch", "pkg/dup.py", "duplicate_member"),
    ("crc", "fetch", "z/bad.py", "corrupt_member"),
    ("truncated", "fetch", "f2.py", "corrupt_member"),
    ("truncated", "fetch", "t.tar.gz", "corrupt_archive"),
    ("truncated", "manifest", "f0.py", "binary"),  # its members are random bytes
    ("truncated", "manifest", "f1.py", "binary"),
    *{("jsonl", "fetch", f"b.jsonl.gz:{n}", "bad_record") for n in (2, 3, 4, 5)},
    ("spoof", "fetch", ".snakemake_timestamp", "reserved_name"),
    ("spoof", "manifest", ".origins.parquet", "not_source"),
    ("spoof", "manifest", "notes.txt", "not_source"),
    ("loose", "fetch", ".snakemake_timestamp", "reserved_name"),
    ("bomb", "fetch", "p/link", "link_internal"),
    ("many", "fetch", "pkg/same.py", "duplicate_member"),
    ("many", "fetch", "pkg/same.py", "member_limit"),
    ("pin", "fetch", "demo-1.0.tar.gz", "pin_mismatch"),
    ("unreachable", "fetch", "x.tar.gz", "source_unavailable"),
    ("nocommit", "fetch", "nocommit", "source_unavailable"),
    ("notarchive", "fetch", "notarchive", "bad_archive"),
}


@pytest.mark.slow
def test_hostile_corpus_through_snakemake(tmp_path):
    from tests.conftest import snakemake, write_params

    sources = hostile_sources(tmp_path / "inputs")
    work = tmp_path / "work"
    write_params(work, sources, corpus__limits={"max_file_bytes": 100_000, "max_total_bytes": 10_000_000,
                                                "max_members": 1000})
    for missing in MISSING:
        write_params(work, [*sources, missing])
        planned = snakemake(work, "-n", "manifest", check=False)
        assert planned.returncode != 0 and f"params.yaml corpus.sources[{missing['name']}].path" in \
            planned.stdout + planned.stderr and not (work / "data").exists()
    write_params(work, sources, corpus__limits={"max_file_bytes": 100_000, "max_total_bytes": 10_000_000,
                                                "max_members": 1000})
    res = snakemake(work, "--keep-going", "manifest", check=False)
    print(res.stderr[-2500:])
    # every job ran; the run ends non-zero, naming each source it left out, without a traceback
    assert (work / "data/manifest.parquet").exists(), res.stderr[-3000:]
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert f"{len(FAILED)} of {len(sources)} corpus sources could not be fetched" in res.stderr
    for name, reason in FAILED.items():
        assert f"ERROR fetch: source {name} was left out ({reason})" in res.stderr
    for spec in sources:  # every other source built (fetched and scanned)
        rec = json.loads((work / f"data/sources/{spec['name']}.json").read_text())
        assert rec["status"] == ("failed" if spec["name"] in FAILED else "ok"), spec["name"]
        assert (work / f"data/manifest/parts/{spec['name']}.parquet").exists()
    rejects = pq.read_table(work / "data/rejects.parquet").to_pylist()
    got = {(r["source"], r["stage"], r["path"], r["reason"]) for r in rejects}
    assert got == HOSTILE_REJECTS
    many = [r for r in rejects if r["source"] == "many"]
    assert len(many) == 2 * 1000 and [r["reason"] for r in many].count("member_limit") == 1  # read up to the cap
    manifest = pq.read_table(work / "data/manifest.parquet").to_pylist()
    assert sorted((r["source"], r["repository"], r["path"]) for r in manifest) == sorted([
        *[(s, s, "ok.py") for s in ("names-tar", "names-zip", "names-folder", "names-git")],
        ("collide", "collide", "ok.py"), ("collide", "collide", "p/x.py"), ("collide", "collide", "q/y/z.py"),
        ("dups", "dups", "pkg/a.py"), ("dups", "dups", "pkg/b.py"), ("dups", "dups", "pkg/dup.py"),
        ("crc", "crc", "z/good.py"),
        ("jsonl", "o/r", "a.py"), ("jsonl", "o/r", "d.py"), ("spoof", "spoof", "mod.py"), ("loose", "loose", "pkg/m.py"),
        ("bomb", "bomb", "p/a.py"), ("many", "many", "pkg/same.py")])
    # nothing outside the workspace's data, logs and reports
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inputs", "work"]
    assert {p.name for p in work.iterdir()} <= {"data", "logs", "reports", "params.yaml", ".snakemake"}
    assert not list((tmp_path / "inputs").glob("EXECUTED*"))
