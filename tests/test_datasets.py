"""The `datasets` stage: pinned non-code files verified by sha256 and copied, through the real Snakefile."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tarfile
from pathlib import Path

from tests.conftest import REPO, default_params, snakemake, write_params


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_dataset(root: Path) -> dict[str, bytes]:
    files = {"pairs.csv": b"a,b,score\nx,y,0.5\n", "sub/notes.json": b'{"k": 1}\n'}
    for rel, data in {**files, "extra.txt": b"not pinned\n"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return files


def entry(name: str, path: str, files: dict[str, bytes]) -> dict:
    return {"name": name, "kind": "local", "path": path, "files": {rel: sha(d) for rel, d in files.items()}}


def setup(tmp_path: Path, datasets: list[dict]) -> Path:
    work = tmp_path / "work"
    write_params(work, default_params()["corpus"]["sources"], datasets=datasets,
                 idbench__dataset=datasets[0]["name"])  # idbench.dataset must name a dataset (pipeline.config)
    return work


def test_files_verified_copied_and_recorded(tmp_path):
    files = make_dataset(tmp_path / "src")
    work = setup(tmp_path, [entry("fix", str(tmp_path / "src"), files)])
    snakemake(work, "datasets")
    out = work / "data/datasets/fix"
    for rel, data in files.items():
        assert (out / rel).read_bytes() == data
    assert not (out / "extra.txt").exists()  # present at the origin, not pinned: not copied
    record = json.loads((work / "data/datasets/fix.json").read_text())
    assert record["files"] == [{"path": rel, "sha256": sha(d), "bytes": len(d)} for rel, d in sorted(files.items())]
    assert record["bytes"] == sum(map(len, files.values())) and record["file_count"] == 2
    assert record["unpinned_not_copied"] == ["extra.txt"]
    assert record["origin"] == {"path": str(tmp_path / "src"), "resolved": str(tmp_path / "src")}


def test_relative_path_resolves_against_the_working_directory(tmp_path):
    work = tmp_path / "work"
    files = make_dataset(work / "mydata")
    write_params(work, default_params()["corpus"]["sources"], datasets=[entry("rel", "mydata", files)],
                 idbench__dataset="rel")
    snakemake(work, "datasets")
    assert json.loads((work / "data/datasets/rel.json").read_text())["origin"]["resolved"] == str(work / "mydata")


def test_tampered_file_fails_naming_both_hashes_and_copies_nothing(tmp_path):
    files = make_dataset(tmp_path / "src")
    work = setup(tmp_path, [entry("fix", str(tmp_path / "src"), files)])
    (tmp_path / "src/sub/notes.json").write_bytes(b'{"k": 2}\n')
    res = snakemake(work, "datasets", check=False)
    assert res.returncode != 0
    pinned, actual = sha(files["sub/notes.json"]), sha(b'{"k": 2}\n')
    # refused at planning (pipeline.config.check_inputs, issue 37 item E), one line naming the key and both hashes
    line = next(l for l in (res.stdout + res.stderr).splitlines() if "params.yaml datasets[fix]" in l)
    assert "files['sub/notes.json']" in line and pinned in line and actual in line
    assert "rule fetch_dataset" not in res.stdout + res.stderr
    assert not (work / "data/datasets/fix").exists() and not (work / "data/datasets/fix.json").exists()
    # the CLI itself: exit 2, one line on stderr, no traceback, naming the file and the fix
    spec = json.dumps(entry("fix", str(tmp_path / "src"), files))
    cli = subprocess.run([sys.executable, "-m", "pipeline.datasets.fetch", "--spec", spec, "--dest", str(tmp_path / "d"),
                          "--record", str(tmp_path / "d.json")], capture_output=True, text=True, cwd=REPO)
    lines = [l for l in cli.stderr.splitlines() if "INFO" not in l]
    assert cli.returncode == 2 and len(lines) == 1 and "Traceback" not in cli.stderr
    assert "sub/notes.json" in lines[0] and pinned in lines[0] and actual in lines[0] and "params.yaml" in lines[0]
    assert not (tmp_path / "d").exists()


def test_missing_local_path_is_a_clear_error(tmp_path):
    spec = json.dumps({"name": "gone", "kind": "local", "path": "no/such/dir", "files": {"a": "0" * 64}})
    cli = subprocess.run([sys.executable, "-m", "pipeline.datasets.fetch", "--spec", spec, "--dest", str(tmp_path / "d"),
                          "--record", str(tmp_path / "d.json"), "--base", str(tmp_path)],
                         capture_output=True, text=True, cwd=REPO)
    assert cli.returncode == 2 and cli.stderr.count("\n") == 1
    assert "dataset gone" in cli.stderr and "remove the entry" in cli.stderr


def test_pin_change_reruns_only_that_dataset(tmp_path):
    a, b = make_dataset(tmp_path / "a"), make_dataset(tmp_path / "b")
    work = setup(tmp_path, [entry("a", str(tmp_path / "a"), a), entry("b", str(tmp_path / "b"), b)])
    snakemake(work, "datasets")
    record_b = work / "data/datasets/b.json"
    before = record_b.stat().st_mtime_ns
    assert "Nothing to be done" in snakemake(work, "datasets").stdout + snakemake(work, "datasets").stderr
    (tmp_path / "a/pairs.csv").write_bytes(b"a,b,score\nx,y,0.75\n")
    a["pairs.csv"] = b"a,b,score\nx,y,0.75\n"
    write_params(work, default_params()["corpus"]["sources"],
                 datasets=[entry("a", str(tmp_path / "a"), a), entry("b", str(tmp_path / "b"), b)], idbench__dataset="a")
    res = snakemake(work, "datasets")
    assert res.stdout.count("rule fetch_dataset") + res.stderr.count("rule fetch_dataset") == 1
    assert (work / "data/datasets/a/pairs.csv").read_bytes() == a["pairs.csv"]
    assert record_b.stat().st_mtime_ns == before


def test_url_archive_is_cached_and_only_pinned_members_copied(tmp_path):
    files = make_dataset(tmp_path / "src" / "top")
    archive = tmp_path / "data.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "src" / "top", arcname="top")
    spec = {"name": "web", "kind": "url", "url": archive.as_uri(), "sha256": sha(archive.read_bytes()),
            "files": {rel: sha(d) for rel, d in files.items()}}
    cmd = [sys.executable, "-m", "pipeline.datasets.fetch", "--spec", json.dumps(spec), "--dest", str(tmp_path / "d"),
           "--record", str(tmp_path / "d.json"), "--cache", str(tmp_path / "cache")]
    subprocess.run(cmd, check=True, capture_output=True, cwd=REPO)
    assert sorted(p.name for p in (tmp_path / "d").rglob("*") if p.is_file()) == ["notes.json", "pairs.csv"]
    assert (tmp_path / "cache/downloads" / spec["sha256"]).is_file()
    assert json.loads((tmp_path / "d.json").read_text())["unpinned_not_copied"] == ["extra.txt"]
    archive.unlink()  # a rerun is served from the cache
    subprocess.run(cmd, check=True, capture_output=True, cwd=REPO)


def test_default_pins_match_the_shared_data():
    shared = REPO.parent / "shared" / "data"
    for d in default_params()["datasets"]:
        for rel, pin in d["files"].items():
            path = shared / Path(d["path"]).name / rel
            if path.exists():
                assert sha(path.read_bytes()) == pin, path


def test_bad_pinned_path_is_refused_by_the_schema(tmp_path):
    work = setup(tmp_path, [{"name": "x", "kind": "local", "path": "p", "files": {"../etc/passwd": "0" * 64}}])
    res = snakemake(work, "-n", "datasets", check=False)
    assert res.returncode != 0 and "passwd" in res.stdout + res.stderr
