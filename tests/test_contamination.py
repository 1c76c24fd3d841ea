"""Known contamination: provenance (license, release date), first-seen per function and API over pinned
history, the license filter, the zoo's training cutoff, and the refresh against a file:// index."""

from __future__ import annotations

import datetime as dt
import io
import json
import tarfile
from pathlib import Path

import pyarrow as pa
import pytest

from pipeline import schemas
from pipeline.contamination import firstseen, licenses, provenance
from pipeline.io import read_parquet, write_parquet

V1 = b'''"""pkg"""
def kept(x):
    """Doc of v1."""
    return x + 1

def changed(x):
    return x * 2

def removed():
    return None

class Box:
    def get(self):
        return 1
'''
# v2: a docstring and a comment changed (not a change of the function), `changed` changed, `added` added
V2 = b'''"""pkg"""
def kept(x):
    """Doc of v2, reworded."""
    # a comment
    return x + 1

def changed(x):
    return x * 3

def removed():
    return None

def added(y):
    return [y]

class Box:
    def get(self):
        return 1
'''
# v3: `removed` removed; the rest as in v2
V3 = V2.replace(b"def removed():\n    return None\n\n", b"")
INIT = b"from .core import kept, added as plus\n"


def releases():
    r = [firstseen.Release("1.0", dt.date(2023, 1, 1), {"pkg/core.py": V1, "pkg/__init__.py": b"from .core import kept\n"}),
         firstseen.Release("2.0", dt.date(2024, 6, 1), {"pkg/core.py": V2, "pkg/__init__.py": INIT}),
         firstseen.Release("3.0", dt.date(2025, 3, 1), {"src/pkg/core.py": V3, "src/pkg/__init__.py": INIT})]
    return r[:2], r[2]


def test_first_seen_labels_on_three_versions_added_changed_removed():
    history, current = releases()
    # the current release moved its package under src/: same module, so the same APIs
    ids = {"src/pkg/core.py": "f-core", "src/pkg/__init__.py": "f-init"}
    rows, apis, summary = firstseen.first_seen("pkg", history, current, ids)
    by_name = {r["function"]: r for r in rows}
    assert by_name["kept"]["first_version"] == "1.0"  # docstring and comment changes are no change
    assert by_name["changed"]["first_version"] == "2.0"  # its body changed in 2.0
    assert by_name["added"]["first_version"] == "2.0"
    assert by_name["Box.get"]["first_version"] == "1.0"
    assert by_name["changed"]["first_released"] == dt.date(2024, 6, 1)
    assert "removed" not in by_name and summary["removed_functions"] == 1
    assert {r["function"]: r["status"] for r in rows}["changed"] == "changed"  # pkg/ and src/pkg/: one module
    api = {a["api"]: a["first_version"] for a in apis}
    assert api["pkg.core.kept"] == "1.0" and api["pkg.core.changed"] == "1.0"  # the name is old, its body new
    assert api["pkg.core.added"] == "2.0" and api["pkg.plus"] == "2.0" and api["pkg.kept"] == "1.0"
    assert api["pkg.core.Box.get"] == "1.0"


def test_first_seen_status_against_the_oldest_release():
    history, current = releases()
    current = firstseen.Release("3.0", current.released, {"pkg/core.py": V3, "pkg/__init__.py": INIT})
    rows, _, summary = firstseen.first_seen("pkg", history, current, {"pkg/core.py": "a", "pkg/__init__.py": "b"})
    status = {r["function"]: r["status"] for r in rows}
    assert status == {"kept": "unchanged", "changed": "changed", "added": "added", "Box.get": "unchanged"}
    assert {r["function"]: r["name_version"] for r in rows}["changed"] == "1.0"
    assert summary["removed_functions"] == 1 and summary["functions_by_first_version"] == {"1.0": 2, "2.0": 2}


def test_ast_hash_ignores_layout_comments_and_docstrings_not_code():
    a = firstseen.functions_of(firstseen._parse(b"def f(x):\n    'doc'\n    return x  # c\n"))["f"]
    b = firstseen.functions_of(firstseen._parse(b"def f( x ):\n\n    return (x)\n"))["f"]
    c = firstseen.functions_of(firstseen._parse(b"def f(x):\n    return -x\n"))["f"]
    assert firstseen.ast_hash(a) == firstseen.ast_hash(b) != firstseen.ast_hash(c)


def _tar(members: dict[str, bytes]) -> bytes:
    import gzip
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(buf.getvalue(), mtime=0)  # the same bytes every time


def test_license_read_from_metadata_as_data(tmp_path):
    cases = {
        "expr": ({"p-1/PKG-INFO": b"Name: p\nLicense-Expression: MIT OR Apache-2.0\n"}, "pypi", "MIT OR Apache-2.0"),
        "field": ({"p-1/PKG-INFO": b"Name: p\nLicense: Apache 2.0\n"}, "pypi", "Apache-2.0"),
        "bsd": ({"p-1/PKG-INFO": b"Name: p\nClassifier: License :: OSI Approved :: BSD License\n",
                 "p-1/LICENSE.txt": b"Redistribution and use in source and binary forms ... Neither the name of"},
                "pypi", "BSD-3-Clause"),
        "none": ({"p-1/PKG-INFO": b"Name: p\nLicense: see file\n"}, "pypi", "unknown"),
        "npm": ({"package/package.json": json.dumps({"name": "x", "license": "ISC"}).encode()}, "npm", "ISC"),
        "npm-old": ({"package/package.json": json.dumps({"license": {"type": "MIT"}}).encode()}, "npm", "MIT"),
    }
    for name, (members, kind, want) in cases.items():
        archive = tmp_path / f"{name}.tgz"
        archive.write_bytes(_tar(members))
        assert provenance.license_of({"kind": kind}, archive) == want, name
    assert provenance.license_of({"kind": "local", "builtin": "stdlib"}, None) == "PSF-2.0"
    assert provenance.license_of({"kind": "local", "builtin": "jdk"}, None) == "GPL-2.0-only WITH Classpath-exception-2.0"
    assert provenance.license_of({"kind": "git", "license": "MIT"}, None) == "MIT"
    assert provenance.license_of({"kind": "git"}, None) == "unknown"


def _scanned(rows):
    base = {"sha256": "0" * 64, "repository": "r", "location": "x", "language": "python", "encoding": "utf-8",
            "bytes": 10, "lines": 1}
    return pa.Table.from_pylist([{**base, **r} for r in rows], schema=schemas.SCANNED)


def test_license_filter_leaves_sources_out_as_counted_rejects():
    prov = licenses.of_records([{"name": "a", "license": "MIT", "released": "2024-01-02"},
                                {"name": "b", "license": "GPL-3.0-only"},
                                {"name": "c", "license": "MIT OR GPL-3.0-only"}, {"name": "d"}])
    parts = [_scanned([{"file_id": "1", "source": "a", "path": "a.py"}]),
             _scanned([{"file_id": "2", "source": "b", "path": "b.py"}, {"file_id": "3", "source": "b", "path": "c.py"}]),
             _scanned([{"file_id": "4", "source": "c", "path": "c.py"}]),
             _scanned([{"file_id": "5", "source": "d", "path": "d.py"}])]
    kept, rejects = licenses.filter_scanned(parts, prov, ["MIT"])
    assert sorted(s for t in kept for s in t.column("source").to_pylist()) == ["a", "c"]
    assert rejects.num_rows == 3 and set(rejects.column("reason").to_pylist()) == {"license"}
    assert sorted(rejects.column("detail").to_pylist())[0] == "license GPL-3.0-only is not in corpus.licenses.allow"
    assert "license unknown" in rejects.column("detail").to_pylist()[-1]
    kept_all, none = licenses.filter_scanned(parts, prov, None)  # default: allow all
    assert sum(t.num_rows for t in kept_all) == 5 and none.num_rows == 0


def test_manifest_carries_license_and_released(tmp_path):
    from pipeline.manifest import build
    scanned = tmp_path / "a.parquet"
    write_parquet(_scanned([{"file_id": "1", "source": "a", "path": "a.py"}]), scanned, schemas.SCANNED)
    record = tmp_path / "a.json"
    record.write_text(json.dumps({"name": "a", "license": "MIT", "released": "2024-05-29", "caps": []}))
    out, rejects, metrics = tmp_path / "m.parquet", tmp_path / "r.parquet", tmp_path / "m.json"
    args = ["--scanned", str(scanned), "--records", str(record), "--seed", "1", "--split",
            '{"train": 0.8, "valid": 0.1, "test": 0.1}', "--out", str(out), "--rejects", str(rejects), "--metrics", str(metrics)]
    build.main(args)
    row = read_parquet(out, schemas.MANIFEST).to_pylist()[0]
    assert (row["license"], row["released"]) == ("MIT", dt.date(2024, 5, 29))
    assert json.loads(metrics.read_text())["provenance"] == {"a": {"license": "MIT", "released": "2024-05-29", "files": 1}}
    build.main(args + ["--licenses-allow", '["Apache-2.0"]'])
    assert read_parquet(out, schemas.MANIFEST).num_rows == 0
    assert json.loads(metrics.read_text())["rejects_by_reason"] == {"license": 1}


def test_zoo_training_cutoff_only_on_pretrained_models():
    from pipeline.models.entries import parse_zoo
    ok = {"name": "m", "source": "hub:x/y", "family": "causal-lm", "max_length": 8, "batch_size": 1,
          "training_cutoff": "2024-11-01", "training_cutoff_source": "its card", "training_cutoff_kind": "data"}
    parse_zoo([ok, {"name": "m-random", "source": "random:m"}])
    with pytest.raises(ValueError, match="training_cutoff is for pretrained models"):
        parse_zoo([ok, {"name": "t", "source": "trained:mlm", "family": "masked-lm", "max_length": 8, "batch_size": 1,
                        "training_cutoff": "2024-01-01"}])
    with pytest.raises(ValueError, match="without training_cutoff"):
        parse_zoo([{**ok, "training_cutoff": None}])
    with pytest.raises(ValueError, match="needs training_cutoff_kind"):  # data cutoff or release date: said, never guessed
        parse_zoo([{**ok, "training_cutoff_kind": None}])


def _pypi_index(root: Path, name: str, releases: dict[str, tuple[str, bytes | None]]) -> None:
    """A PyPI JSON API folder: <root>/<name>/json, and each sdist beside it."""
    import hashlib
    files = {}
    for version, (uploaded, data) in releases.items():
        if data is None:
            files[version] = []
            continue
        sdist = root / "files" / f"{name}-{version}.tar.gz"
        sdist.parent.mkdir(parents=True, exist_ok=True)
        sdist.write_bytes(data)
        files[version] = [{"packagetype": "sdist", "url": sdist.as_uri(), "upload_time_iso_8601": uploaded,
                           "digests": {"sha256": hashlib.sha256(data).hexdigest()}, "yanked": False}]
    (root / name).mkdir(parents=True, exist_ok=True)
    (root / name / "json").write_text(json.dumps({"info": {"name": name}, "releases": files}))


def _npm_registry(root: Path, name: str, versions: dict[str, tuple[str, bytes]]) -> None:
    import base64
    import hashlib
    doc = {"name": name, "versions": {}, "time": {}}
    for version, (published, data) in versions.items():
        tgz = root / name / "-" / f"{name}-{version}.tgz"
        tgz.parent.mkdir(parents=True, exist_ok=True)
        tgz.write_bytes(data)
        integrity = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
        doc["versions"][version] = {"dist": {"tarball": f"-/{name}-{version}.tgz", "integrity": integrity}}
        doc["time"][version] = published
    (root / name / "index.json").write_text(json.dumps(doc))


def _sdist(name: str, version: str, code: bytes) -> bytes:
    return _tar({f"{name}-{version}/PKG-INFO": f"Name: {name}\nVersion: {version}\nLicense-Expression: MIT\n".encode(),
                 f"{name}-{version}/{name}/__init__.py": code})


def test_refresh_against_a_file_index_pins_newer_releases_and_builds_offline(tmp_path, monkeypatch):
    import hashlib
    import urllib.request

    import yaml

    from pipeline.config import validate
    from pipeline.corpus import fetch, refresh
    from pipeline.corpus.safety import Limits

    old = _sdist("pkg", "1.0", V1)
    _pypi_index(tmp_path / "pypi", "pkg", {
        "1.0": ("2024-01-02T10:00:00Z", old),
        "2.0": ("2024-12-01T10:00:00Z", _sdist("pkg", "2.0", V2)),
        "3.0": ("2025-02-01T10:00:00.5Z", _sdist("pkg", "3.0", V3)),
        "4.0rc1": ("2025-03-01T10:00:00Z", _sdist("pkg", "4.0rc1", V3)),  # a pre-release: never pinned
        "0.9": ("2023-01-01T00:00:00Z", None),  # no sdist
    })
    _npm_registry(tmp_path / "npm", "tiny", {"1.0.0": ("2024-01-01T00:00:00.000Z", _tar({"package/index.js": b"1"})),
                                             # an older version republished later: never a refresh
                                             "0.9.0": ("2025-06-01T00:00:00.000Z", _tar({"package/index.js": b"0"})),
                                             "1.1.0": ("2025-01-05T00:00:00.000Z", _tar({"package/index.js": b"2"}))})
    params = yaml.safe_load((Path(__file__).parents[1] / "params.yaml").read_text())
    params["corpus"]["sources"] = [
        {"name": "pkg", "kind": "pypi", "package": "pkg==1.0", "sha256": hashlib.sha256(old).hexdigest(),
         "released": "2024-01-02"},
        {"name": "tiny", "kind": "npm", "package": "tiny@1.0.0", "integrity": "sha512-" + "A" * 86 + "==",
         "registry": "npm", "released": "2024-01-01", "include": ["index.js"]},
        {"name": "old", "kind": "pypi", "package": "pkg==1.0", "sha256": hashlib.sha256(old).hexdigest(),
         "released": "2024-01-02"},
        {"name": "stdlib", "kind": "local", "builtin": "stdlib"},
    ]
    params["apirec"]["domains"] = {}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    cache = tmp_path / "cache"
    out = tmp_path / "examples" / "refresh.yaml"
    argv = ["--after", "2024-11-01", "--params", str(tmp_path / "params.yaml"), "--out", str(out), "--cache", str(cache),
            "--pypi", (tmp_path / "pypi").as_uri(), "--npm", (tmp_path / "npm").as_uri(), "--source", "pkg",
            "--source", "tiny"]
    assert refresh.main(argv) == 0
    first = out.read_bytes()
    overlay = yaml.safe_load(first)["corpus"]["sources"]
    pkg, tiny, kept, stdlib = overlay
    new = _sdist("pkg", "3.0", V3)
    assert pkg["package"] == "pkg==3.0" and pkg["sha256"] == hashlib.sha256(new).hexdigest()
    assert pkg["released"] == "2025-02-01"
    # the old pin, then every final release between it and the new one (2.0), pinned: a history without gaps
    assert pkg["history"] == [{"package": "pkg==1.0", "sha256": params["corpus"]["sources"][0]["sha256"],
                               "released": "2024-01-02"},
                              {"package": "pkg==2.0", "sha256": hashlib.sha256(_sdist("pkg", "2.0", V2)).hexdigest(),
                               "released": "2024-12-01"}]
    assert tiny["package"] == "tiny@1.1.0" and tiny["released"] == "2025-01-05" and tiny["include"] == ["index.js"]
    assert tiny["history"][0]["package"] == "tiny@1.0.0"
    assert kept == params["corpus"]["sources"][2] and stdlib == params["corpus"]["sources"][3]  # not asked / no index
    assert (cache / "downloads" / pkg["sha256"]).read_bytes() == new
    assert refresh.main(argv) == 0 and out.read_bytes() == first  # the same bytes again
    merged = {**params, "corpus": {**params["corpus"], "sources": overlay}}
    validate(merged)
    # the build's fetch of the refreshed pin needs no network: the refresh left it in the cache
    def no_network(*a, **k):
        raise AssertionError("the build opened a URL")
    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    got = fetch.fetch({k: v for k, v in pkg.items() if k != "history"},
                      Limits(1_000_000, 10_000_000, 1000), tmp_path / "tree", tmp_path / "rec.json",
                      tmp_path / "rej.parquet", cache)
    assert got.status == "ok" and (tmp_path / "tree" / "pkg" / "__init__.py").read_bytes() == V3
    record = json.loads((tmp_path / "rec.json").read_text())
    assert (record["license"], record["released"]) == ("MIT", "2025-02-01")


def test_refresh_with_nothing_newer_keeps_the_pin(tmp_path):
    from pipeline.corpus import refresh
    _pypi_index(tmp_path / "pypi", "pkg", {"1.0": ("2024-01-02T10:00:00Z", b"x")})
    spec = {"name": "pkg", "kind": "pypi", "package": "pkg==1.0", "sha256": "0" * 64, "released": "2024-01-02"}
    same, line = refresh.refresh_source(spec, dt.date(2024, 6, 1), tmp_path / "c", (tmp_path / "pypi").as_uri(), None)
    assert same == spec and "no release of pkg newer than 1.0 published after 2024-06-01" in line


def test_refresh_check_refuses_a_history_with_a_gap_or_a_wrong_pin(tmp_path, capsys):
    """werkzeug 3.0.6 -> 3.1.3 skipped 3.1.0 (uploaded before SmolLM2's release), so code first seen there was dated
    3.1.3: `refresh --check` names every skipped release unless history_skipped lists it, and a pin whose hash or
    date is not the index's."""
    import hashlib

    import yaml

    from pipeline.corpus import refresh

    data = {v: _sdist("pkg", v, V1) for v in ("1.0", "2.0", "3.0")}
    _pypi_index(tmp_path / "pypi", "pkg", {"1.0": ("2024-01-02T10:00:00Z", data["1.0"]),
                                           "2.0": ("2024-10-31T10:00:00Z", data["2.0"]),
                                           "3.0": ("2024-11-08T10:00:00Z", data["3.0"])})
    pin = {v: {"package": f"pkg=={v}", "sha256": hashlib.sha256(d).hexdigest(), "released": day}
           for (v, d), day in zip(data.items(), ("2024-01-02", "2024-10-31", "2024-11-08"))}
    gap = {"name": "pkg", "kind": "pypi", **pin["3.0"], "history": [pin["1.0"]]}
    index = (tmp_path / "pypi").as_uri()

    def check(source) -> int:
        (tmp_path / "p.yaml").write_text(yaml.safe_dump({"corpus": {"sources": [source]}}))
        return refresh.main(["--check", "--params", str(tmp_path / "p.yaml"), "--pypi", index])

    assert check(gap) == 1 and "its history skips 2.0" in capsys.readouterr().err
    assert check({**gap, "history_skipped": ["2.0"]}) == 0  # stated, not silent
    assert check({**gap, "history": [pin["1.0"], pin["2.0"]]}) == 0
    wrong = {**pin["2.0"], "released": "2024-11-02"}
    assert check({**gap, "history": [pin["1.0"], wrong]}) == 1 and "the index has" in capsys.readouterr().err


def check_warehouse(root: Path) -> None:
    """The labels, counts and provenance of a .test build (its minilm has a cutoff between the two sources)."""
    from pipeline.query import connect
    con = connect(root / "data/warehouse.duckdb")
    basis = dict(con.sql("SELECT model, basis FROM contamination_models").fetchall())
    assert basis["minilm"] == "cutoff" and basis["tiny-mlm"] == basis["tiny-mlm-random"] == "exact"
    assert con.sql("SELECT source, license, released::VARCHAR FROM corpus_provenance ORDER BY 1").fetchall() == [
        ("fixture", "MIT", "2024-01-01"), ("tiny-js", "unknown", "2020-01-01")]
    labels = {r[0] for t in ("apiquiz", "apirec", "codesyntax")
              for r in con.sql(f"SELECT DISTINCT label FROM {t}_contamination").fetchall()}
    assert labels <= {"read", "not_read", "released_after_cutoff", "released_before_cutoff", "unknown"}
    # apiquiz and apirec label by the API's definition: the fixture's quizzes and points call the stdlib, which is no
    # source of this corpus, so their APIs have no date (`none`: unknown), whatever the date of the code calling them
    # (its context's date is carried beside); codesyntax labels by the code: the fixture's only date is its release
    # (2024, no history: an upper bound), after minilm's cutoff (2022, a data cutoff), so `unknown` (the code may be
    # older than the release that ships it); what a trained model read is exact
    for family in ("apiquiz", "apirec"):
        assert con.sql(f"SELECT DISTINCT label, dated_by, api_date_basis, context_date_basis, cutoff_kind FROM "
                       f"{family}_contamination WHERE model = 'minilm'").fetchall() == [
            ("unknown", "api", "none", "release", "data")]
    assert con.sql("SELECT DISTINCT label, dated_by, date_basis FROM codesyntax_contamination WHERE model = 'minilm'"
                   ).fetchall() == [("unknown", "context", "release")]
    assert con.sql("SELECT count(*) FROM apirec_contamination WHERE model LIKE 'tiny%' AND label = 'not_read'"
                   ).fetchall()[0][0] > 0  # apirec's points are test-split code, which no trained model read
    read = dict(con.sql("SELECT label, count(*) FROM codesyntax_contamination WHERE model = 'tiny-mlm' "
                        "GROUP BY ALL").fetchall())
    assert read.get("read", 0) > 0 and read.get("not_read", 0) > 0  # codesyntax samples come from every split
    # a twin is labelled as its model, so the two are paired on the same items on each side
    assert con.sql("SELECT count(*) FROM apiquiz_contamination a JOIN apiquiz_contamination b USING (quiz_id) "
                   "WHERE a.model = 'tiny-mlm' AND b.model = 'tiny-mlm-random' AND a.label <> b.label").fetchall()[0][0] == 0
    n = con.sql("SELECT sum(n) FROM apiquiz_contamination_vs_twin WHERE protocol = 'rank'").fetchall()[0][0]
    assert n and n == con.sql("SELECT n FROM apiquiz_contamination_scores WHERE model = 'tiny-mlm' "
                              "AND protocol = 'rank'").fetchall()[0][0]
    # codesyntax's score split by label, per test function: the twin paired on the same functions, every one of them
    n = con.sql("SELECT sum(n) FROM codesyntax_contamination_vs_twin WHERE model = 'tiny-mlm' AND chosen_on = 'dev'"
                ).fetchall()[0][0]
    assert n and n == con.sql("SELECT count(*) FROM codesyntax_sample_scores WHERE model = 'tiny-mlm' "
                              "AND chosen_on = 'dev'").fetchall()[0][0]
    page = (root / "reports/corpus.md").read_text()
    assert "### Provenance and known contamination" in page and "| fixture | local | MIT | 2024-01-01 |" in page
    assert "| minilm | minilm | cutoff | 2022-01-01 | data |" in page and "the API's definition" in page
    check_item_dates(root, con)


def check_item_dates(root: Path, con) -> None:
    """A draw by contamination label labels items before inference from the dates the rule `item_dates` writes
    (the warehouse's own dating SQL over the same files): for every item the warehouse labels, the same date and
    basis, and the same label at the cutoff model's cutoff and at cutoffs on either side of the items' dates."""
    from pipeline.runtime.predict import ITEM_DATES, item_labels
    from tests.conftest import snakemake

    snakemake(root, "data/contamination/item_dates/apiquiz.parquet", "data/contamination/item_dates/apirec.parquet")
    cutoff = con.sql("SELECT training_cutoff::VARCHAR FROM contamination_models WHERE model = 'minilm'").fetchall()
    cutoff = cutoff[0][0]
    for family, where in (("apiquiz", "true"), ("apirec", "benchmark = 'code'")):
        dates = read_parquet(root / f"data/contamination/item_dates/{family}.parquet", ITEM_DATES)
        ids = dates.column("item_id").to_pylist()
        key = "quiz_id" if family == "apiquiz" else "item_id"
        rows = con.sql(f"SELECT {key}, item_released, date_basis, label FROM {family}_contamination "
                       f"WHERE model = 'minilm' AND {where} ORDER BY 1").fetchall()
        assert ids and [r[0] for r in rows] == ids  # the same items, every one the warehouse labels
        assert list(zip(dates.column("released").to_pylist(), dates.column("date_basis").to_pylist())) == [
            (r[1], r[2]) for r in rows]
        assert item_labels(dates, ids, cutoff) == [r[3] for r in rows]
        known = [d for d in dates.column("released").to_pylist() if d]
        latest = max(known, default=dt.date.fromisoformat(cutoff))
        for other in (latest - dt.timedelta(days=1), latest):  # both sides of the latest date
            got = con.sql(f"SELECT contamination_label('cutoff', DATE '{other}', item_released, NULL, "
                          f"date_basis := date_basis) FROM "
                          f"{family}_contamination WHERE model = 'minilm' AND {where} ORDER BY {key}").fetchall()
            assert item_labels(dates, ids, other) == [g[0] for g in got]


def test_contamination_in_the_end_to_end_build(e2e_project):
    check_warehouse(e2e_project)


def _core_macros(con) -> None:
    """The contamination macros of the warehouse's core SQL (its views need a built warehouse; the macros none)."""
    folder = Path(__file__).resolve().parents[1] / "pipeline/warehouse/sql"
    sql = (folder / "25_item_dates.sql").read_text() + (folder / "30_contamination.sql").read_text()
    for stmt in sql.split(";\n"):
        body = "\n".join(line for line in stmt.splitlines() if not line.startswith("--")).strip()
        if body.startswith("CREATE MACRO"):
            con.execute(body)


def test_dated_by_function_and_labelled_by_line_on_hand_built_tables():
    """The two macros every family that dates items by their function shares: an item dated by its function's
    first release when history has it, else by its file's release, else none; a trained model `read` an item
    whose line its text covers, a cutoff model compares the date, a twin takes its model's label."""
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE TABLE manifest AS SELECT * FROM (VALUES ('f1', DATE '2024-01-01'), ('f2', NULL)) t(file_id, released)")
    con.execute("CREATE TABLE first_seen_functions AS SELECT 'f1' AS file_id, 'old' AS function, "
                "DATE '2019-01-01' AS first_released")
    con.execute("CREATE TABLE contamination_models AS SELECT * FROM (VALUES ('t', 't', 'exact', NULL::DATE, NULL), "
                "('t-random', 't', 'exact', NULL, NULL), ('p', 'p', 'cutoff', DATE '2022-01-01', 'data')) m(model, "
                "labelled_by, basis, training_cutoff, cutoff_kind)")
    con.execute("CREATE TABLE contamination_read_ranges AS SELECT 't' AS model, 'f1' AS file_id, 10 AS start_line, "
                "20 AS end_line")
    _core_macros(con)  # a macro binds the tables it reads when it is created
    con.execute("CREATE TABLE items AS SELECT * FROM (VALUES ('a', 'f1', 'old', 15), ('b', 'f1', 'new', 30), "
                "('c', 'f2', 'x', 15)) t(item_id, file_id, function, line)")
    dated = {r[0]: r[1:] for r in con.sql("SELECT item_id, released::VARCHAR, date_basis FROM "
                                         "dated_by_function('items')").fetchall()}
    assert dated == {"a": ("2019-01-01", "first_seen"), "b": ("2024-01-01", "release"), "c": (None, "none")}
    got = dict(((m, i), lab) for m, i, lab in con.sql(
        "WITH d AS (FROM dated_by_function('items')) SELECT model, item_id, label FROM labelled_by_line('d')").fetchall())
    assert got == {("t", "a"): "read", ("t", "b"): "not_read", ("t", "c"): "not_read",
                   ("t-random", "a"): "read", ("t-random", "b"): "not_read", ("t-random", "c"): "not_read",
                   # b's only date is its file's release (an upper bound) after the cutoff: the code may be older
                   ("p", "a"): "released_before_cutoff", ("p", "b"): "unknown", ("p", "c"): "unknown"}


def test_label_part_counts_scores_and_twins_with_the_floor():
    """pipeline.report.contamination.label_part: a family's items per label, its score by label and against its
    twin (n, 95% CI; a cell under the floor prints "too few items" and no twin score)."""
    import duckdb

    from pipeline.report.contamination import Split, label_part

    con = duckdb.connect()
    con.execute("CREATE TABLE f_contamination AS SELECT *, NULL AS cutoff_kind, 'api' AS dated_by FROM (VALUES "
                "('m', 'exact', 'read', 'release'), ('m', 'exact', 'not_read', 'first_seen'), ('m', 'exact', 'read', "
                "'first_seen')) t(model, basis, label, date_basis) UNION ALL SELECT 'p', 'cutoff', "
                "'released_after_cutoff', 'release', 'release', 'context'")
    assert label_part(con, 100, "f_contamination", "intro")[0] == "intro"
    counts = label_part(con, 100, "f_contamination", "intro")[1]
    assert "| m | exact |  |  | 2 | 1 | 0 | 0 | 0 | 0 |" in counts  # read / not_read read the model's text, no date
    assert "| p | cutoff | release | its code's first release | 0 | 0 | 0 | 1 | 0 | 1 |" in counts
    con.execute("CREATE TABLE f_contamination_scores AS SELECT * FROM (VALUES ('m', 'x', 'read', NULL, 150, 0.5, 0.4, "
                "0.6), ('m', 'x', 'not_read', NULL, 7, 0.2, 0.0, 0.5), ('m', 'x', 'unknown', NULL, 150, 0.9, 0.8, 1.0), "
                "('p', 'x', 'released_before_cutoff', 'release', 150, 0.5, 0.4, 0.6)) "
                "t(model, k, label, cutoff_kind, n, s, lo, hi)")
    con.execute("CREATE TABLE f_contamination_vs_twin AS SELECT * FROM (VALUES ('m', 'm-random', 'x', 'read', NULL, 150, "
                "0.5, 0.1, 0.4, 0.3, 0.5, 0.001), ('m', 'm-random', 'x', 'not_read', NULL, 7, 0.2, 0.1, 0.1, -0.2, 0.4, "
                "0.5)) t(model, twin, k, label, cutoff_kind, n, s, ts, diff, lo, hi, p_value)")
    out = label_part(con, 100, "f_contamination", "intro", Split(keys=(("k", "key"),), score="s", twin_score="ts",
                                                                 header="S", scores_title="scores", twins_title="twins"))
    assert out[2] == "scores" and out[4] == "twins"
    assert "| model | key | label | n | S | 95% CI |" in out[3] and "unknown" not in out[3]
    assert "| m | x | read | 150 | 0.500 | [0.400, 0.600] |" in out[3]
    assert "| m | x | not_read | 7 | too few items (n = 7) |  |" in out[3]
    assert "| p | x | before the release | 150 | 0.500 |" in out[3]  # a release date bounds the cutoff: said so
    assert "| m | m-random | x | read | 150 | 0.500 | 0.100 | 0.400 | [0.300, 0.500] |" in out[5]
    assert "| m | m-random | x | not_read | 7 | too few items (n = 7) |  |  |  |" in out[5]


# ---- a draw by contamination label (a zoo cap naming released_after_cutoff / released_before_cutoff) -------------

CUTOFF = "2024-11-01"


def _label_zoo(caps: dict, cutoff: str | None = CUTOFF):
    from pipeline.models.entries import parse_zoo
    smol = {"name": "p", "source": "hub:x/y", "family": "causal-lm", "max_length": 200, "batch_size": 3,
            "max_items": caps, **({"training_cutoff": cutoff, "training_cutoff_kind": "release"} if cutoff else {})}
    return parse_zoo([smol, {"name": "p-random", "source": "random:p"}])


def _dated_quizzes(tmp_path, n: int = 90):
    """n quizzes (settings call / import / alias in turn) and their item dates: every fourth one released after the
    cutoff, quiz 1 undated (label unknown: never drawn by label), quiz 2 not in the dates (a context-leaking quiz)."""
    from pipeline.runtime.predict import ITEM_DATES
    from tests.test_zoo_budget import _quizzes

    quizzes = _quizzes(n)
    ids = quizzes.column("quiz_id").to_pylist()
    rows = [{"item_id": q, "released": None if k == 1 else dt.date(2025, 3, 1) if k % 4 == 0 else dt.date(2023, 6, 1),
             "date_basis": "none" if k == 1 else "first_seen"} for k, q in enumerate(ids) if k != 2]
    path = tmp_path / "item_dates.parquet"
    write_parquet(pa.Table.from_pylist(rows, schema=ITEM_DATES), path, ITEM_DATES)
    return quizzes, path, {q for k, q in enumerate(ids) if k % 4 == 0}


def _context(entry, family: str, dates: Path, shard: int = 0, shards: int = 1, seed: int = 5, max_items: int = 1000):
    from types import SimpleNamespace

    from pipeline import registry
    from pipeline.runtime.predict import ShardContext, cap_items

    params = cap_items({"inference": {"max_items": max_items, "min_per_stratum": 0}}, entry.items_cap(family))
    return ShardContext(registry.load(family), "all", {"item_dates": dates}, params, SimpleNamespace(entry=entry),
                        shard, shards, seed, 1000)


def test_a_draw_by_label_takes_n_of_each_label_the_same_on_any_shard_count_and_for_the_twin(tmp_path):
    quizzes, dates, after = _dated_quizzes(tmp_path)
    ids, settings = quizzes.column("quiz_id").to_pylist(), quizzes.column("setting").to_pylist()
    setting = dict(zip(ids, settings))
    pooled = _label_zoo({"apiquiz": {"released_after_cutoff": 7, "released_before_cutoff": 11}})
    per_setting = _label_zoo({"apiquiz": {"call": {"released_after_cutoff": 4}, "import": {"released_before_cutoff": 6},
                                          "alias": 2}})

    def drawn(entry, **kw):
        return {i for i, m in zip(ids, _context(entry, "apiquiz", dates, **kw).select(ids, 1000, settings).to_pylist())
                if m}

    one = drawn(pooled["p"])
    assert len(one & after) == 7 and len(one - after) == 11  # n of each label, every setting pooled
    assert {setting[q] for q in one} == {"call", "import", "alias"}
    assert not one & {ids[1], ids[2]}  # undated (unknown) and unlabelled quizzes are never drawn by label
    assert drawn(pooled["p"]) == one and drawn(pooled["p"], seed=6) != one  # seeded
    parts = [drawn(pooled["p"], shard=s, shards=3) for s in range(3)]
    assert set().union(*parts) == one and sum(map(len, parts)) == len(one)  # 1 vs 3 shards: the same rows
    assert pooled["p-random"].training_cutoff == CUTOFF and drawn(pooled["p-random"]) == one  # the twin: same items
    # per setting: n of each label named under a setting, a plain number per setting whatever the label
    got = drawn(per_setting["p"])
    count = {(s, a): sum(1 for q in got if setting[q] == s and (q in after) == a)
             for s in ("call", "import", "alias") for a in (True, False)}
    assert (count["call", True], count["call", False], count["import", True], count["import", False]) == (4, 0, 0, 6)
    assert count["alias", True] + count["alias", False] == 2
    # a model without a cutoff cannot draw by label (validate refuses it first: the next tests)
    with pytest.raises(ValueError, match="needs the model's training_cutoff"):
        drawn(_label_zoo({"apiquiz": {"released_after_cutoff": 3}}, cutoff=None)["p"])


def test_apiquiz_scores_a_draw_by_label_byte_identical_for_any_shard_count(tmp_path):
    """The runner's whole path (run_shard: the zoo cap into the params, the labels from the item dates, the draw)
    with a tiny causal LM: the asked number of each label scored, 1 and 3 shards the same rows."""
    import dataclasses

    from pipeline import registry
    from pipeline.runtime.predict import run_shard
    from tests.test_scoring_cache import tiny

    from pipeline.families.apiquiz import schemas as quiz_schemas

    quizzes, dates, after = _dated_quizzes(tmp_path, 45)
    for f in quiz_schemas.QUIZZES:  # the columns the draw never reads
        if f.name not in quizzes.column_names:
            quizzes = quizzes.append_column(f, pa.array([False if pa.types.is_boolean(f.type) else 0] * 45, f.type))
    write_parquet(quizzes, tmp_path / "quizzes.parquet", quiz_schemas.QUIZZES)
    entry = _label_zoo({"apiquiz": {"released_after_cutoff": 3, "released_before_cutoff": 4}})["p"]
    model = dataclasses.replace(tiny(tmp_path, "causal-lm"), entry=entry)
    family = registry.load("apiquiz")
    params = {"inference": {"max_items": 0, "min_per_stratum": 0, "max_candidates": 0, "fill_top_k": 5,
                            "rank_top_k": 5, "protocols": ["rank"]}}
    inputs = {"quizzes": tmp_path / "quizzes.parquet", "item_dates": dates}
    one = run_shard(family, "all", inputs, params, model, 0, 1, 3, 4096)
    three = pa.concat_tables([run_shard(family, "all", inputs, params, model, s, 3, 3, 4096) for s in range(3)])
    three = three.sort_by([("quiz_id", "ascending"), ("protocol", "ascending")])
    assert one.equals(three)
    scored = set(one.column("quiz_id").to_pylist())
    assert (len(scored & after), len(scored - after)) == (3, 4)
    # the runner's draw (ShardContext.select) and score_shard's are one function (pipeline.runtime.predict.draw):
    # the same rows from the same caps, labels, strata and floor, a per-setting cap with a stratum floor included
    from pipeline.families.apiquiz.infer import score_shard
    from pipeline.runtime.predict import ITEM_DATES, cap_items, item_labels

    labels = item_labels(read_parquet(dates, ITEM_DATES), quizzes.column("quiz_id").to_pylist(), CUTOFF)
    for cap, floor in (({"released_after_cutoff": 3, "released_before_cutoff": 4}, 0),
                       ({"call": {"released_after_cutoff": 2, "released_before_cutoff": 3}, "import": 4}, 2)):
        own = {"inference": {**params["inference"], "max_items": 20, "min_per_stratum": floor}}
        entry = _label_zoo({"apiquiz": cap})["p"]
        got = run_shard(family, "all", inputs, own, dataclasses.replace(model, entry=entry), 0, 1, 3, 4096)
        inf = cap_items(own, entry.items_cap("apiquiz"))["inference"]
        assert inf["min_per_stratum"] == (max(1, floor * inf["max_items"] // 20) if floor else 0)
        want = score_shard(quizzes, model, 0, 1, 4096, 5, 5, inf["max_items"], 3, 0, inf["min_per_stratum"],
                           inf["stratum_caps"], ("rank",), labels)
        assert got.equals(want.cast(got.schema)), cap


def test_a_draw_by_label_is_refused_without_a_cutoff_and_for_labels_known_only_later():
    import copy

    from pipeline.config import ParamsError, validate
    from tests.conftest import default_params

    config = copy.deepcopy(default_params())
    smol = next(e for e in config["models"]["zoo"] if e["name"] == "smollm2")
    smol["max_items"] = {"apiquiz": {"call": {"released_after_cutoff": 5}}, "apirec": {"released_before_cutoff": 5}}
    validate(config)  # its twin takes the caps and its cutoff
    cases = {
        ("code-mlm", "apiquiz", "released_after_cutoff"): r"models.zoo\[code-mlm\].max_items.apiquiz: a draw by "
                                                          r"contamination label needs the model's training_cutoff",
        ("smollm2", "apiquiz", "read"): r"'read': a draw by label names only the labels known before inference",
        ("smollm2", "idbench", "released_after_cutoff"): "idbench dates no items before inference",
    }
    for (model, family, label), message in cases.items():
        bad = copy.deepcopy(config)
        next(e for e in bad["models"]["zoo"] if e["name"] == model)["max_items"] = {family: {label: 5}}
        with pytest.raises(ParamsError, match=message):
            validate(bad)
    del smol["training_cutoff"], smol["training_cutoff_source"], smol["training_cutoff_kind"]
    with pytest.raises(ParamsError, match=r"models.zoo\[smollm2\].max_items.apiquiz: a draw by contamination label "
                                          "needs the model's training_cutoff"):
        validate(config)


def test_dated_by_definition_dates_an_api_by_its_defining_source_never_by_its_callers():
    """An API's date is its definition's: the first pinned release of its defining source that defines it (history),
    else that source's pinned release (an upper bound: the stdlib's is the pinned CPython release; a C module of the
    stdlib is the stdlib's too; a Java class's is the source holding its file), else none (blinker is not in the
    corpus). The issue's mislabelled quizzes: traceback.walk_tb called in werkzeug's new code was dated by that call."""
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE TABLE manifest AS SELECT * FROM (VALUES ('s1', 'stdlib', 'traceback.py', 'python', DATE '2023-12-04'), "
                "('i1', 'itsdangerous', 'src/itsdangerous/url_safe.py', 'python', DATE '2024-04-16'), "
                "('w1', 'werkzeug', 'src/werkzeug/utils.py', 'python', DATE '2024-11-08'), "
                "('j1', 'jdk', 'java.base/java/util/ArrayList.java', 'java', DATE '2026-04-21'), "
                "('j2', 'jdk', 'java.base/java/util/List.java', 'java', DATE '2026-04-21'), "
                "('j3', 'jdk', 'java.base/java/util/Map.java', 'java', DATE '2026-04-21'), "
                "('j4', 'jdk', 'java.base/java/util/stream/Gatherers.java', 'java', DATE '2026-04-21')) "
                "t(file_id, source, path, language, released)")
    con.execute("CREATE TABLE inventory AS SELECT * FROM (VALUES ('traceback', 'stdlib', 'stdlib'), "
                "('itsdangerous', 'itsdangerous', 'user_defined'), ('werkzeug', 'werkzeug', 'user_defined')) "
                "t(library, source, category)")
    con.execute("CREATE TABLE first_seen_apis AS SELECT * FROM (VALUES ('werkzeug', 'werkzeug.utils.old', "
                "DATE '2024-10-25', 'first_seen'), ('werkzeug', 'werkzeug.utils.new', DATE '2024-11-08', 'first_seen'), "
                # the JDK's own @since tags (pipeline.contamination.since): a first release, like first_seen
                "('jdk', 'java.util.List.of', DATE '2017-09-21', 'since_tag'), "
                "('jdk', 'java.util.Map.Entry.getKey', DATE '1998-12-08', 'since_tag'), "
                "('jdk', 'java.util.stream.Gatherers.fold', DATE '2025-03-18', 'since_tag')) "
                "t(source, api, first_released, date_basis)")
    con.execute("CREATE TABLE first_seen_functions (file_id VARCHAR, function VARCHAR, first_released DATE)")
    # werkzeug/wrappers/__init__.py: `from .request import Request as Request` (a re-export, followed); a function-scope
    # import and a star import are not
    con.execute("CREATE TABLE imports AS SELECT * FROM (VALUES "
                "('werkzeug.wrappers', 'from', 'Request', 'Request', 'werkzeug.wrappers.request.Request', '', false), "
                "('werkzeug.utils', 'from', NULL, 'helper', 'werkzeug.other.helper', 'f', false), "
                "('werkzeug', 'from', NULL, '*', 'werkzeug.utils', '', true)) "
                "t(module, kind, asname, bound, target, scope, star)")
    con.execute("INSERT INTO first_seen_apis VALUES ('werkzeug', 'werkzeug.wrappers.request.Request.from_values', "
                "DATE '2024-10-25', 'first_seen'), ('werkzeug', 'werkzeug.other.helper', DATE '2024-10-25', 'first_seen')")
    con.execute("CREATE TABLE contamination_models (model VARCHAR, labelled_by VARCHAR, basis VARCHAR, "
                "training_cutoff DATE, cutoff_kind VARCHAR)")
    con.execute("CREATE TABLE contamination_read_ranges (model VARCHAR, file_id VARCHAR, start_line INT, end_line INT)")
    _core_macros(con)
    con.execute("CREATE TABLE apis AS SELECT * FROM (VALUES "
                "('werkzeug.wrappers.Request.from_values', 'third_party', 'python', NULL), "
                "('werkzeug.utils.helper', 'third_party', 'python', NULL), "
                "('traceback.walk_tb', 'stdlib', 'python', NULL), ('math.floor', 'stdlib', 'python', NULL), "
                "('itsdangerous.URLSafeTimedSerializer', 'third_party', 'python', NULL), "
                "('blinker.Namespace', 'third_party', 'python', NULL), ('werkzeug.utils.old', 'third_party', 'python', NULL), "
                "('werkzeug.utils.new', 'user_defined', 'python', NULL), ('werkzeug.utils.unnamed', 'third_party', 'python', NULL), "
                "('java.util.ArrayList.add', 'stdlib', 'java', 'java.util.ArrayList'), "
                "('java.util.List.of', 'stdlib', 'java', 'java.util.List'), "
                "('java.util.Map.Entry.getKey', 'stdlib', 'java', 'java.util.Map.Entry'), "
                "('java.util.Map.Entry.untagged', 'stdlib', 'java', 'java.util.Map.Entry'), "
                "('java.util.stream.Gatherers.fold', 'stdlib', 'java', 'java.util.stream.Gatherers')) "
                "t(api, category, language, api_class)")
    got = {r[0]: r[1:] for r in con.sql("SELECT api, api_released::VARCHAR, api_date_basis FROM "
                                        "dated_by_definition('apis')").fetchall()}
    assert got == {"traceback.walk_tb": ("2023-12-04", "release"), "math.floor": ("2023-12-04", "release"),
                   "itsdangerous.URLSafeTimedSerializer": ("2024-04-16", "release"),
                   "blinker.Namespace": (None, "none"),
                   "werkzeug.utils.old": ("2024-10-25", "first_seen"), "werkzeug.utils.new": ("2024-11-08", "first_seen"),
                   "werkzeug.utils.unnamed": ("2024-11-08", "release"),
                   # a public name dated as its definition, through the package's re-export
                   "werkzeug.wrappers.Request.from_values": ("2024-10-25", "first_seen"),
                   # a function-scope import re-exports nothing
                   "werkzeug.utils.helper": ("2024-11-08", "release"),
                   "java.util.ArrayList.add": ("2026-04-21", "release"),
                   # the JDK's @since tags: the first JDK release's GA date; a nested class is in its top-level
                   # class's file (Map.java), tagged or not
                   "java.util.List.of": ("2017-09-21", "since_tag"),
                   "java.util.Map.Entry.getKey": ("1998-12-08", "since_tag"),
                   "java.util.Map.Entry.untagged": ("2026-04-21", "release"),
                   "java.util.stream.Gatherers.fold": ("2025-03-18", "since_tag")}
    # the labels: a release date after the cutoff is an upper bound, `unknown`; on or before it, before
    labels = dict(con.sql("SELECT api, contamination_label('cutoff', DATE '2024-11-01', api_released, NULL, "
                          "date_basis := api_date_basis) FROM dated_by_definition('apis')").fetchall())
    assert labels["java.util.ArrayList.add"] == "unknown" and labels["werkzeug.utils.unnamed"] == "unknown"
    assert labels["werkzeug.utils.new"] == "released_after_cutoff"
    assert labels["werkzeug.wrappers.Request.from_values"] == "released_before_cutoff"
    # a since-tag date is a first release, not an upper bound: it labels both sides
    assert labels["java.util.stream.Gatherers.fold"] == "released_after_cutoff"
    assert labels["java.util.List.of"] == labels["java.util.Map.Entry.getKey"] == "released_before_cutoff"
    from pipeline.runtime.predict import cutoff_label
    for api, (date, basis) in got.items():
        mine = cutoff_label(dt.date.fromisoformat(date) if date else None, dt.date(2024, 11, 1), basis)
        assert mine == labels[api], api


def test_every_contamination_figure_in_readme_and_docs_is_the_results_files():
    """README.md's contamination paragraph and docs/contamination.md quote figures only inside results blocks, and
    every block is what docs/results/contamination.json (or the results file the block names: a refreshed build's)
    renders (python -m pipeline.report.contamination_results)."""
    import re

    from pipeline.report import results_blocks
    from pipeline.report.contamination_results import KIND, render_block

    root = Path(__file__).resolve().parents[1]
    results = json.loads((root / "docs/results/contamination.json").read_text())
    assert {"command", "configuration", "commit", "numbers"} <= set(results)
    assert results["command"].startswith("python -m pipeline.report.contamination_results ")
    blocks = 0
    for page in ("README.md", "docs/contamination.md"):
        text = (root / page).read_text()
        for m in results_blocks.find(text, KIND):
            assert m.group("body") == render_block(m.group("args"), results, root), (
                f"{page}: block {m.group('args')} is stale")
            blocks += 1
    assert blocks >= 3
    readme = (root / "README.md").read_text()
    paragraph = readme[readme.index("Every item says whether each model could have read it"):]
    paragraph = results_blocks.strip(paragraph[:paragraph.index("\n\n")])
    prose = re.sub(r"`[^`]*`", "", paragraph)  # code spans (a cap's example number) are no figures
    assert not re.findall(r"[+-]?\d+\.\d+", prose), "a figure outside the results file in README's contamination paragraph"
    assert "+0.28 [0.19, 0.37]" not in readme and "+0.28 [0.19, 0.37]" not in (root / "docs/contamination.md").read_text()
    from pipeline.corpus.gaps import sentence  # the history-gap figures: docs/results/werkzeug_first_seen.json
    gaps = json.loads((root / "docs/results/werkzeug_first_seen.json").read_text())
    assert sentence(gaps) in " ".join((root / "docs/contamination.md").read_text().split())


def test_same_library_comparison_pairs_each_side_with_the_twin_on_libraries_with_both_sides():
    """apiquiz_contamination_same_library: only quizzes dated by their API's first pinned release, only libraries with
    scored quizzes on both sides; each side's paired gain over the twin and the difference of the gains."""
    import duckdb

    con = duckdb.connect()
    con.execute((Path(__file__).resolve().parents[1] / "pipeline/metrics/macros.sql").read_text())
    rows = []  # (quiz, library, label, basis, model's rank, twin's rank)
    for k in range(40):
        rows.append((f"a{k}", "lib", "released_after_cutoff", "first_seen", 1 if k % 2 else 2, 1 if k % 5 == 0 else 3))
        rows.append((f"b{k}", "lib", "released_before_cutoff", "first_seen", 1 if k % 4 == 0 else 2, 2))
        rows.append((f"c{k}", "solo", "released_before_cutoff", "first_seen", 1, 2))  # no after side: left out
        rows.append((f"d{k}", "lib", "released_before_cutoff", "release", 1, 2))  # dated by a release: left out
    values = ", ".join(f"('{q}', '{lib}', '{lab}', '{basis}', {a}, {b})" for q, lib, lab, basis, a, b in rows)
    con.execute(f"CREATE TABLE t AS SELECT * FROM (VALUES {values}) v(quiz_id, library, label, basis, ra, rb)")
    con.execute("CREATE TABLE model_twins AS SELECT 'm' AS model, 'm-random' AS twin")
    con.execute("CREATE TABLE apiquiz_quizzes AS SELECT quiz_id, library FROM t")
    con.execute("CREATE TABLE apiquiz_contamination AS SELECT 'm' AS model, quiz_id, label, 'release' AS cutoff_kind, "
                "basis AS api_date_basis FROM t")
    con.execute("CREATE TABLE apiquiz_predictions AS SELECT 'm' AS model, 'rank' AS protocol, quiz_id, ra AS gold_rank, "
                "'ok' AS status, 5 AS n_ranked FROM t UNION ALL SELECT 'm-random', 'rank', quiz_id, rb, 'ok', 5 FROM t")
    sql = (Path(__file__).resolve().parents[1] / "pipeline/families/apiquiz/sql/20_contamination.sql").read_text()
    con.execute(sql[sql.index("CREATE VIEW apiquiz_contamination_same_library"):])
    got = con.sql("SELECT libraries, n_after, gain_after, n_before, gain_before, gain_difference, lo, hi "
                  "FROM apiquiz_contamination_same_library").fetchall()
    assert len(got) == 1
    libraries, n_after, gain_after, n_before, gain_before, diff, lo, hi = got[0]
    assert (libraries, n_after, n_before) == (1, 40, 40)
    assert gain_after == 0.5 - 0.2 and gain_before == 0.25  # P@1 20/40 vs the twin's 8/40; 10/40 vs 0
    assert abs(diff - 0.05) < 1e-9 and lo < diff < hi


def test_a_block_may_name_another_results_file_of_the_command(tmp_path):
    """`<!-- results:contamination:FILE:NAME -->` renders FILE (a refreshed build's results beside the default's);
    a bare NAME renders the command's --out file."""
    from pipeline.report.contamination_results import render, render_block, render_page

    root = Path(__file__).resolve().parents[1]
    default = json.loads((root / "docs/results/contamination.json").read_text())
    other = json.loads(json.dumps(default))
    other["numbers"]["training_cutoff"] = "2030-01-01"
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/other.json").write_text(json.dumps(other))
    assert render_block("counts", default, tmp_path) == render(default, "counts")
    assert render_block("docs/other.json:counts", default, tmp_path) == render(other, "counts")
    assert "2030-01-01" in render_block("docs/other.json:counts", default, tmp_path)
    page = ("a\n<!-- results:contamination:counts -->\nold\n<!-- /results -->\n"
            "<!-- results:contamination:docs/other.json:counts -->\nold\n<!-- /results -->\nb\n")
    out = render_page(page, default, tmp_path)
    assert out.count("2030-01-01") == 1 and "old" not in out and out.startswith("a\n") and out.endswith("b\n")


def test_every_predict_job_of_the_refresh_overlays_gets_a_zoo_it_can_parse(tmp_path):
    """The refreshed build (examples/refresh-after-smollm2.yaml + refresh-smollm2-only.yaml) draws SmolLM2's items by
    label, so its predict jobs get the cutoff in their `--zoo`: with its kind (a cutoff without one is refused by
    parse_zoo, which failed the build's first predict job), and nothing else of the planning-only fields."""
    import shlex

    from pipeline.models.entries import parse_zoo
    from tests.test_gpu_profile import dry_run

    root = Path(__file__).resolve().parents[1]
    (tmp_path / "params.yaml").write_text((root / "params.yaml").read_text())
    res = dry_run(tmp_path, root / "params.yaml", root / "examples/refresh-after-smollm2.yaml",
                  root / "examples/refresh-smollm2-only.yaml")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    zoos = []
    for line in res.stdout.splitlines():
        if "pipeline.runtime.predict" in line and "--zoo" in line:
            words = shlex.split(line.split("set -euo pipefail;")[-1])
            zoos.append(json.loads(words[words.index("--zoo") + 1]))
    assert len(zoos) == 4  # SmolLM2 and its twin in apiquiz and apirec
    for zoo in zoos:
        entries = parse_zoo(zoo)
        assert entries["smollm2"].training_cutoff is not None
        assert all("training_cutoff_source" not in e and "skip_families" not in e for e in zoo)


def test_matched_keys_take_the_same_count_per_group_on_each_side_from_first_release_dates_only():
    from pipeline.runtime.predict import matched_keys

    after, before = "released_after_cutoff", "released_before_cutoff"
    rows = ([(after, "click", "first_seen")] * 30 + [(before, "click", "first_seen")] * 50
            + [(after, "jinja2", "first_seen")] * 10 + [(before, "jinja2", "first_seen")] * 400
            + [(after, "werkzeug", "first_seen")] * 0 + [(before, "werkzeug", "first_seen")] * 90  # one side only
            + [(before, "stdlib", "release")] * 300  # an upper-bound date: never matched
            + [(after, "flask", "first_seen")] * 3 + [(before, "flask", "release")] * 20  # before side not first-seen
            + [(None, "click", "first_seen")] * 5)  # unlabelled
    labels, groups, bases = (list(x) for x in zip(*rows))
    caps, keys = matched_keys({after: 20, before: 25}, labels, groups, bases)
    # n = 20 (the smaller cap) over click and jinja2 in proportion to their smaller sides (30 : 10): 15 and 5
    assert caps == {f"{after}@click": 15, f"{after}@jinja2": 5, f"{before}@click": 15, f"{before}@jinja2": 5}
    assert {k for k in keys if k} == set(caps)
    assert all(k is None for k, g, b in zip(keys, groups, bases) if g in ("werkzeug", "stdlib", "flask"))
    # fewer items than n: every matched item of the smaller side per group
    caps, _ = matched_keys({after: 100, before: 100}, labels, groups, bases)
    assert caps == {f"{after}@click": 30, f"{after}@jinja2": 10, f"{before}@click": 30, f"{before}@jinja2": 10}
    assert matched_keys({after: 5, before: 5}, [after, before], ["a", "b"], ["first_seen"] * 2)[0] == {}


def test_a_matched_draw_scores_the_same_items_per_library_on_each_side_for_the_model_and_its_twin(tmp_path):
    """`matched_draw: [apiquiz]` beside a draw by both labels: the predict job's draw takes, per library with
    first-seen quizzes on both sides, the same number on each side; the twin the same quizzes; any shard count."""
    from pipeline.io import write_parquet
    from pipeline.models.entries import parse_zoo
    from pipeline.runtime.predict import ITEM_DATES

    ids = [f"q{k:03d}" for k in range(120)]
    rows = []
    for k, q in enumerate(ids):
        lib = ("click", "jinja2", "werkzeug")[k % 3]
        late = k % 4 == 0
        basis = "release" if lib == "werkzeug" and not late else "first_seen"
        rows.append({"item_id": q, "released": dt.date(2025, 3, 1) if late else dt.date(2023, 6, 1),
                     "date_basis": basis, "group": lib})
    dates = tmp_path / "dates.parquet"
    write_parquet(pa.Table.from_pylist(rows, schema=ITEM_DATES), dates, ITEM_DATES)
    cap = {"apiquiz": {"released_after_cutoff": 12, "released_before_cutoff": 12}}
    zoo = parse_zoo([{"name": "p", "source": "hub:x/y", "family": "causal-lm", "max_length": 200, "batch_size": 3,
                      "max_items": cap, "training_cutoff": CUTOFF, "training_cutoff_kind": "release",
                      "matched_draw": ["apiquiz"]}, {"name": "p-random", "source": "random:p"}])
    assert zoo["p-random"].matched_draw == ("apiquiz",)
    lib = {r["item_id"]: r["group"] for r in rows}
    late = {r["item_id"] for r in rows if r["released"].year == 2025}

    def drawn(entry, **kw):
        return {i for i, m in zip(ids, _context(entry, "apiquiz", dates, **kw).select(ids, 1000).to_pylist()) if m}

    one = drawn(zoo["p"])
    per = {(lib[q], q in late): 0 for q in one}
    for q in one:
        per[(lib[q], q in late)] += 1
    # werkzeug's before side is dated by its release only: not matched; click and jinja2 split 12 evenly
    assert per == {("click", True): 6, ("click", False): 6, ("jinja2", True): 6, ("jinja2", False): 6}
    assert drawn(zoo["p-random"]) == one
    # the family's strata with a floor (apiquiz: setting x mask position, min_per_stratum): the same 24, no floor
    # per group and side on top
    strata = [k % 5 for k in range(len(ids))]
    floored = {i for i, m in zip(ids, _context(zoo["p"], "apiquiz", dates).select(ids, 1000, None, strata, 8)
                                 .to_pylist()) if m}
    assert len(floored) == 24
    parts = [drawn(zoo["p"], shard=s, shards=3) for s in range(3)]
    assert set().union(*parts) == one and sum(map(len, parts)) == len(one)
    with pytest.raises(ValueError, match="matched_draw names 'apirec'"):
        parse_zoo([{"name": "p", "source": "hub:x/y", "family": "causal-lm", "max_length": 200, "batch_size": 3,
                    "max_items": cap, "training_cutoff": CUTOFF, "training_cutoff_kind": "release",
                    "matched_draw": ["apirec"]}])
