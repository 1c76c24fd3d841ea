"""Issue 24 items 8 and 9: every cap counted (kept vs seen, in the reject row, the fetch record and
reports/metrics/manifest.json), rejects named by the source's own name, names with a backslash or
`..` refused with a reason, and `local` sources verified by their pin (a zip's sha256, a folder's tree hash)."""

from __future__ import annotations

import gzip
import json
import tarfile
import zipfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline import schemas
from pipeline.corpus.fetch import fetch, tree_sha256
from pipeline.corpus.safety import Limits
from pipeline.io import write_parquet
from pipeline.manifest import build
from tests.fixture_corpus import sha256
from tests.hostile_inputs import tar_with
from tests.test_hostile import record, run

LIMITS = Limits(max_file_bytes=100_000, max_total_bytes=10_000_000, max_members=5)


def _jsonl(path: Path, records: list[dict]) -> Path:
    with gzip.open(path, "wt") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    return path


def _rec(i: int, path: str | None = None) -> dict:
    return {"repo": "o/r", "path": path or f"m{i}.py", "code": f"x = {i}\n", "language": "python"}


# item 8: caps counted


def test_a_tar_member_cap_counts_what_it_left_out(tmp_path):
    archive = tar_with(tmp_path / "many.tar", [(f"p/f{i:02d}.py", b"x = 1\n") for i in range(12)])
    result, rows, files = run({"name": "many", "kind": "local", "path": str(archive)}, tmp_path, LIMITS)
    assert len(files) == 5 and rows == [("p/f05.py", "member_limit")]
    cap = result.refusals[-1]
    assert (cap.kept, cap.seen) == (5, 12) and "kept 5 of 12 files seen" in cap.detail
    assert record(tmp_path, "many")["caps"] == [{"reason": "member_limit", "path": "p/f05.py", "kept": 5, "seen": 12}]


def test_a_jsonl_cap_counts_later_records_and_names_the_dump_not_its_cache_hash(tmp_path):
    dump = _jsonl(tmp_path / "dump.jsonl.gz", [_rec(i) for i in range(9)])
    spec = {"name": "dump", "kind": "jsonl", "url": dump.as_uri(), "sha256": sha256(dump)}
    result, rows, files = run(spec, tmp_path, LIMITS)
    assert len(files) == 5 and rows == [("dump.jsonl.gz:6", "member_limit")]
    assert (result.refusals[-1].kept, result.refusals[-1].seen) == (5, 9)


def test_manifest_metrics_list_every_cap(tmp_path):
    recs = []
    for name, kept, seen in (("b", 5, 12), ("a", 3, 3)):
        p = tmp_path / f"{name}.json"
        caps = [{"reason": "member_limit", "path": "x", "kept": kept, "seen": seen}] if seen > kept else []
        p.write_text(json.dumps({"name": name, "caps": caps}))
        recs.append(p)
    part = tmp_path / "part.parquet"
    write_parquet(schemas.SCANNED.empty_table(), part, schemas.SCANNED)
    metrics = tmp_path / "m.json"
    assert build.main(["--scanned", str(part), "--records", *map(str, recs), "--seed", "1", "--split",
                       '{"train": 0.8, "valid": 0.1, "test": 0.1}', "--out", str(tmp_path / "m.parquet"),
                       "--rejects", str(tmp_path / "r.parquet"), "--metrics", str(metrics)
                       ]) == 0
    assert json.loads(metrics.read_text())["caps"] == [
        {"source": "b", "reason": "member_limit", "path": "x", "kept": 5, "seen": 12}]


def test_a_backslash_in_a_tar_name_is_refused_not_made_a_folder(tmp_path):
    archive = tar_with(tmp_path / "bs.tar", [("p/ok.py", b"x = 1\n"), ("p/a\\b.py", b"x = 2\n")])
    _, rows, files = run({"name": "bs", "kind": "local", "path": str(archive)}, tmp_path, LIMITS)
    assert files == ["p/ok.py"] and rows == [("p/a\\b.py", "backslash_in_name")]


def test_jsonl_paths_that_leave_the_tree_are_bad_records(tmp_path):
    dump = _jsonl(tmp_path / "d.jsonl.gz", [_rec(0), _rec(1, "../../x.py"), _rec(2, "/etc/x.py"), _rec(3, "a\\b.py")])
    result, rows, files = run({"name": "d", "kind": "jsonl", "path": str(dump)}, tmp_path, LIMITS)
    assert len(files) == 1
    assert rows == [("d.jsonl.gz:2", "bad_record"), ("d.jsonl.gz:3", "bad_record"), ("d.jsonl.gz:4", "bad_record")]
    details = [r.detail for r in result.refusals]
    assert "parent_traversal" in details[0] and "absolute_path" in details[1] and "backslash_in_name" in details[2]


# item 9: local sources verified


def _folder(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("x = 1\n")
    return root


def test_a_local_folder_is_checked_against_its_tree_hash(tmp_path):
    folder = _folder(tmp_path / "src")
    good = tree_sha256(folder)
    result, rows, files = run({"name": "ok", "kind": "local", "path": str(folder), "tree_sha256": good}, tmp_path)
    assert result.status == "ok" and files == ["pkg/a.py"] and record(tmp_path, "ok")["pin"]["tree_sha256"] == good
    (folder / "pkg" / "a.py").write_text("x = 2\n")  # an edit changes the tree hash
    result, rows, files = run({"name": "bad", "kind": "local", "path": str(folder), "tree_sha256": good}, tmp_path)
    assert result.status == "failed" and rows == [("src", "pin_mismatch")] and files == []
    assert tree_sha256(folder) in result.error


def test_a_local_zip_is_checked_against_its_sha256(tmp_path):
    archive = tmp_path / "src.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("pkg/a.py", "x = 1\n")
    result, rows, _ = run({"name": "zeros", "kind": "local", "path": str(archive), "sha256": "0" * 64}, tmp_path)
    assert result.status == "failed" and rows == [("src.zip", "pin_mismatch")]
    result, _, files = run({"name": "good", "kind": "local", "path": str(archive),
                            "sha256": sha256(archive)}, tmp_path)
    assert result.status == "ok" and files == ["pkg/a.py"]


def test_a_pin_of_the_wrong_kind_is_refused(tmp_path):
    folder = _folder(tmp_path / "src")
    result, rows, _ = run({"name": "f", "kind": "local", "path": str(folder), "sha256": "0" * 64}, tmp_path)
    assert result.status == "failed" and "tree_sha256" in result.error


def test_the_params_schema_takes_tree_sha256():
    from pipeline.config import SCHEMA
    import yaml

    source = yaml.safe_load(SCHEMA.read_text())["properties"]["corpus"]["properties"]["sources"]["items"]
    assert "tree_sha256" in source["properties"]


# issue 37 item B: a jsonl dump obeys every corpus.limits cap, and refuses duplicate paths, as an archive does


def test_a_jsonl_dump_obeys_the_total_size_cap_like_the_same_files_in_a_zip(tmp_path):
    limits = Limits(max_file_bytes=200_000, max_total_bytes=1_000_000, max_members=100)
    code = "x = 1\n" * (100_000 // 6)  # 100 kB of code per record
    dump = _jsonl(tmp_path / "big.jsonl.gz", [{**_rec(i), "code": code} for i in range(40)])
    result, rows, files = run({"name": "big", "kind": "jsonl", "path": str(dump)}, tmp_path, limits)
    zipped = tmp_path / "big.zip"
    with zipfile.ZipFile(zipped, "w") as z:
        for i in range(40):
            z.writestr(f"m{i}.py", code)
    _, zrows, zfiles = run({"name": "bigzip", "kind": "local", "path": str(zipped)}, tmp_path, limits)
    assert len(files) == len(zfiles) == 10 and result.bytes <= limits.max_total_bytes
    assert [reason for _, reason in rows] == [reason for _, reason in zrows] == ["size_limit"] * 30
    assert rows[0][0] == "big.jsonl.gz:11"


def test_duplicate_jsonl_paths_are_refused_as_an_archive_refuses_them(tmp_path):
    recs = [_rec(0, "a.py"), _rec(1, "a.py"), _rec(2, "a.py"), {**_rec(3, "a.py"), "repo": "o/other"},
            _rec(4, "a.py/b.py"), _rec(5, "d/x.py"), _rec(6, "d")]
    dump = _jsonl(tmp_path / "dup.jsonl.gz", recs)
    result, rows, files = run({"name": "dup", "kind": "jsonl", "path": str(dump)}, tmp_path, LIMITS)
    assert len(files) == 3  # o/r a.py (the first), o/other a.py, o/r d/x.py
    assert rows == [("dup.jsonl.gz:2", "duplicate_member"), ("dup.jsonl.gz:3", "duplicate_member"),
                    ("dup.jsonl.gz:5", "path_collision"), ("dup.jsonl.gz:7", "path_collision")]
    origins = pq.read_table(tmp_path / "out" / "dup" / "origins.parquet").to_pylist()
    assert [(o["repository"], o["path"]) for o in origins] == [("o/r", "a.py"), ("o/other", "a.py"), ("o/r", "d/x.py")]


# issue 37 item C: a url is never an option to git


def test_the_schema_refuses_a_url_that_git_would_read_as_an_option():
    import pytest

    from pipeline.config import ParamsError, validate
    from tests.conftest import default_params

    params = default_params()
    params["corpus"]["sources"].append({"name": "evil", "kind": "git", "url": "--upload-pack=touch /tmp/x",
                                        "commit": "0" * 40})
    with pytest.raises(ParamsError, match=r"corpus\.sources\.\d+\.url: .*starts with neither -"):
        validate(params)


def test_every_git_call_ends_its_options_before_a_url_or_revision(tmp_path, monkeypatch):
    """A url starting with `-` (past the schema, e.g. a hand-written spec) is a url to git, never an option."""
    from pipeline.corpus import fetch as fetch_module

    calls = []
    real = fetch_module.subprocess.run

    def spy(cmd, *a, **k):
        calls.append(cmd)
        return real(cmd, *a, **k)

    monkeypatch.setattr(fetch_module.subprocess, "run", spy)
    marker = tmp_path / "ran"
    result, rows, files = run({"name": "evil", "kind": "git", "url": f"--upload-pack=touch {marker}",
                               "commit": "0" * 40}, tmp_path)
    assert result.status == "failed" and not marker.exists() and files == []
    clone = calls[0]
    assert clone[clone.index("clone"):].index("--") < clone.index(f"--upload-pack=touch {marker}")


# every archive pinned: a local zip or tar without sha256 is refused, or built knowingly with `unpinned: true`


def test_an_unpinned_local_archive_is_refused_naming_the_pin(tmp_path, caplog):
    from pipeline.corpus.fetch import fetch

    archive = tmp_path / "src.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("pkg/a.py", "x = 1\n")

    def fetched(spec):
        out = tmp_path / "out" / spec["name"]
        result = fetch(spec, LIMITS, out / "tree", out / "record.json", out / "rejects.parquet", tmp_path / "cache")
        return result, json.loads((out / "record.json").read_text()), pq.read_table(out / "rejects.parquet").to_pylist()

    result, rec, rows = fetched({"name": "bare", "kind": "local", "path": str(archive)})
    assert result.status == "failed" and rec["reason"] == "unpinned" and [r["reason"] for r in rows] == ["unpinned"]
    assert f"sha256: {sha256(archive)}" in rec["error"] and "unpinned: true" in rec["error"]
    with caplog.at_level("WARNING"):
        result, rec, rows = fetched({"name": "knowing", "kind": "local", "path": str(archive), "unpinned": True})
    assert result.status == "ok" and rows == [] and rec["pin"]["unpinned"] is True
    assert rec["pin"]["sha256"] == sha256(archive) and "is not pinned (unpinned: true)" in caplog.text
    # a folder stays pinnable by tree_sha256 and buildable without it (.test's fixture)
    assert fetched({"name": "folder", "kind": "local", "path": str(_folder(tmp_path / "f"))})[0].status == "ok"


def test_planning_refuses_an_unpinned_local_archive_in_one_line(tmp_path):
    from pipeline.config import ParamsError, check_inputs

    archive = tmp_path / "src.tar"
    with tarfile.open(archive, "w") as tf:
        tf.add(_folder(tmp_path / "f"), arcname="f")
    config = {"corpus": {"sources": [{"name": "mine", "kind": "local", "path": str(archive)}]}, "datasets": []}
    with pytest.raises(ParamsError) as caught:
        check_inputs(config)
    line = str(caught.value)
    assert line.startswith("params.yaml corpus.sources[mine]: the zip or tar") and "\n" not in line
    assert f"sha256: {sha256(archive)}" in line and "unpinned: true" in line
    config["corpus"]["sources"][0]["unpinned"] = True
    check_inputs(config)
    config["corpus"]["sources"][0] = {"name": "mine", "kind": "local", "path": str(archive), "sha256": sha256(archive)}
    check_inputs(config)


def test_the_report_names_an_unpinned_source_and_one_left_unevaluated(tmp_path):
    import duckdb

    from pipeline.report.build import section_corpus

    con = duckdb.connect()
    con.sql("CREATE TABLE corpus_summary (language VARCHAR, files BIGINT, unique_files BIGINT, repositories BIGINT, "
            "bytes BIGINT, lines BIGINT)")
    con.sql("CREATE TABLE rejects_summary (stage VARCHAR, reason VARCHAR, items BIGINT)")
    con.sql("CREATE TABLE manifest (language VARCHAR, source VARCHAR, path VARCHAR, split VARCHAR, lines BIGINT, "
            "duplicate BOOLEAN)")
    con.sql("""INSERT INTO manifest VALUES ('python', 'mine', 'pkg/a.py', 'train', 90, false),
               ('python', 'mine', 'pkg/b.py', 'test', 10, false), ('python', 'ok', 'ok/c.py', 'train', 5, false),
               ('python', 'ok', 'tests/test_c.py', 'test', 5, false)""")
    con.sql("CREATE TABLE run_params (key VARCHAR, value VARCHAR)")
    con.sql("""INSERT INTO run_params VALUES ('manifest.split', '{"train": 0.8, "valid": 0.1, "test": 0.1}')""")
    con.sql("CREATE TABLE sources (name VARCHAR, pin VARCHAR, caps VARCHAR)")
    con.sql("""INSERT INTO sources VALUES ('mine', '{"path": "x.zip", "sha256": "ab", "unpinned": true}', '[]'),
               ('ok', '{"sha256": "cd"}', '[{"kept": 3, "path": "ok.tar", "reason": "max_members", "seen": 5}]')""")
    # the run's end summary goes on the corpus page too (issue #47 item 6): a cap that dropped members, a model
    # loaded with tensors left random
    con.sql("CREATE TABLE models (name VARCHAR, card VARCHAR)")
    con.sql("""INSERT INTO models VALUES ('m', '{"allowed_missing": ["lm_head.weight"]}'), ('n', '{}')""")
    section = section_corpus(con)
    assert "source mine is an unpinned local archive" in section.headline
    assert "source ok: the cap max_members kept 3 of 5 members seen (ok.tar)" in section.headline
    assert "model m was loaded with 1 tensor(s) randomly initialised" in section.headline
    assert "model n" not in section.headline
    # the splits per source (library files; a test file is a script): a source with none in test is warned about
    assert "| python | mine | 1 | 0 | 1 | 10.0% |" in section.details
    assert "| python | ok | 1 | 0 | 0 | 0.0% |" in section.details
    assert "source ok has 1 python library files but none in the test split" in section.headline
