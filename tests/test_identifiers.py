"""The identifier-sequence analysis: tokens in source order per language, rejects, the cache and
the pool, and a real Snakemake run (npm package included) that is byte-identical when rebuilt."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline import schemas
from pipeline.identifiers.build import Cache, build, identifiers_of
from pipeline.identifiers.schemas import SEQUENCES
from pipeline.query import connect
from pipeline.warehouse.build import build as build_warehouse
from tests.conftest import snakemake, write_params
from tests.fixture_corpus import lifecycle_package_json, publish_npm

JS = """import {a as b} from "mod"; // comment x
class Foo extends Bar { #priv = 1; static get size() { return this.#priv; } }
const {x, y: z, ...rest} = obj; const o = {x, [key]: `t ${tpl.v} s`, "q": 1};
outer: for (let i = 0; i < n; i++) { if (i) continue outer; }
fn(undefined, null, true, /re/g, 42); async function g() { await h?.(); }
"""
JS_IDS = ["a", "b", "Foo", "Bar", "priv", "size", "priv", "x", "y", "z", "rest", "obj", "o", "x", "key", "tpl", "v",
          "outer", "i", "i", "n", "i", "i", "outer", "fn", "g", "h"]

PY = '''import os.path as osp
from x import y  # comment z
@dec(arg=1)
def f(a, *args, b: int = None, **kw) -> str:
    """doc string"""
    match = a.b.c(f"{val.attr!r:>{width}}")
    print(match, True, lambda q: q)
    return type
'''
PY_IDS = ["os", "path", "osp", "x", "y", "dec", "arg", "f", "a", "args", "b", "int", "kw", "str", "match", "a", "b",
          "c", "val", "attr", "width", "print", "match", "q", "q", "type"]

JAVA = """package com.ex;
import java.util.List;
@Override
public class A<T> extends B implements C { // c
  private final List<String> items = new ArrayList<>();
  int m(int x, T y) throws IOException { String s = "str"; label: for (;;) break label; return this.x + super.y + x; }
}
"""
JAVA_IDS = ["com", "ex", "java", "util", "List", "Override", "A", "T", "B", "C", "List", "String", "items",
            "ArrayList", "m", "x", "T", "y", "IOException", "String", "s", "label", "label", "x", "y", "x"]


@pytest.mark.parametrize("code,language,expected", [(JS, "javascript", JS_IDS), (PY, "python", PY_IDS),
                                                    (JAVA, "java", JAVA_IDS)])
def test_identifiers_in_source_order(code, language, expected):
    parsed = identifiers_of(code, language)
    assert list(parsed.identifiers) == expected
    assert parsed.error_bytes == 0 and parsed.size == len(code.encode())


def test_non_ascii_identifiers_and_byte_offsets():
    # multi-byte characters before and inside identifiers: tokens are sliced on byte offsets
    code = "const café = 'é'; /* ünïcode */ let naïve = café + Ω;\n"
    assert list(identifiers_of(code, "javascript").identifiers) == ["café", "naïve", "café", "Ω"]


def test_parse_errors_are_measured():
    broken = identifiers_of("function ( { x = ", "javascript")
    assert broken.size == 17 and broken.error_bytes / broken.size > 0.5
    good_lines = "".join(f"let v{i} = {i};\n" for i in range(40))
    stray = identifiers_of(good_lines + "@@@ ;\n", "javascript")
    assert 0 < stray.error_bytes / stray.size < 0.1
    assert list(stray.identifiers) == [f"v{i}" for i in range(40)]


def manifest_of(rows: list[dict]) -> pa.Table:
    full = []
    for i, r in enumerate(rows):
        data = Path(r["location"]).read_bytes()
        import hashlib

        full.append({"file_id": r.get("file_id", f"f{i:02d}"), "sha256": hashlib.sha256(data).hexdigest(),
                     "source": "src", "repository": r.get("repository", "repo"), "path": Path(r["location"]).name,
                     "location": r["location"], "language": r["language"], "encoding": "utf-8", "bytes": len(data),
                     "lines": data.count(b"\n"), "split": "train", "duplicate": r.get("duplicate", False)})
    return pa.Table.from_pylist(full, schemas.MANIFEST)


@pytest.fixture
def small_manifest(tmp_path) -> pa.Table:
    files = {"a.js": JS, "copy.js": JS, "b.py": PY, "C.java": JAVA, "broken.js": "function ( { x = ",
             "big.py": "x = 1\n" * 100, "notes.js": "", "other.rb": "puts 1\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    rows = [{"file_id": "f3", "location": str(tmp_path / "a.js"), "language": "javascript"},
            {"file_id": "f1", "location": str(tmp_path / "copy.js"), "language": "javascript", "duplicate": True},
            {"file_id": "f2", "location": str(tmp_path / "b.py"), "language": "python"},
            {"file_id": "f0", "location": str(tmp_path / "C.java"), "language": "java"},
            {"file_id": "f4", "location": str(tmp_path / "broken.js"), "language": "javascript"},
            {"file_id": "f5", "location": str(tmp_path / "big.py"), "language": "python"},
            {"file_id": "f6", "location": str(tmp_path / "notes.js"), "language": "javascript"},
            {"file_id": "f7", "location": str(tmp_path / "other.rb"), "language": "ruby"}]
    return manifest_of(rows)


def test_build_rows_rejects_and_metrics(small_manifest, tmp_path):
    seq, rej, stats, hits = build(small_manifest, ["javascript", "python", "java"], 1, 0.1, 400, Cache(None))
    assert seq.schema == SEQUENCES and rej.schema == schemas.REJECTS
    rows = seq.to_pylist()
    assert [r["file_id"] for r in rows] == ["f0", "f1", "f2", "f3", "f6"]  # sorted; ruby skipped, two rejected
    by_id = {r["file_id"]: r for r in rows}
    assert by_id["f0"]["identifiers"] == JAVA_IDS and by_id["f2"]["identifiers"] == PY_IDS
    assert by_id["f1"]["identifiers"] == by_id["f3"]["identifiers"] == JS_IDS and by_id["f1"]["duplicate"]
    assert by_id["f6"]["identifiers"] == []
    assert [(r["path"], r["stage"], r["reason"]) for r in rej.to_pylist()] == [
        ("big.py", "identifiers", "too_large"), ("broken.js", "identifiers", "parse_error")]
    assert "max_error_fraction=0.1" in rej.to_pylist()[1]["detail"]
    assert hits == 0
    assert stats["languages"]["javascript"] == {
        "files": 3, "unique_files": 2, "tokens": 2 * len(JS_IDS), "tokens_unique_files": len(JS_IDS),
        "distinct_identifiers": len(set(JS_IDS)), "files_with_some_errors": 0, "rejects": 1}
    assert stats["languages"]["python"]["rejects"] == 1 and stats["languages"]["java"]["tokens"] == len(JAVA_IDS)
    assert stats["files"] == 5 and stats["rejects_by_reason"] == {"parse_error": 1, "too_large": 1}
    # a laxer threshold keeps the broken file (with what tree-sitter recovered)
    lax, lax_rej, _, _ = build(small_manifest, ["javascript"], 1, 1.0, 400, Cache(None))
    assert lax.num_rows == 4 and lax_rej.num_rows == 0
    assert {r["file_id"]: r["identifiers"] for r in lax.to_pylist()}["f4"] == ["x"]
    # languages not selected are skipped, not rejected
    only_java, none_rej, _, _ = build(small_manifest, ["java"], 1, 0.1, 400, Cache(None))
    assert only_java.column("file_id").to_pylist() == ["f0"] and none_rej.num_rows == 0
    with pytest.raises(ValueError, match="no grammar"):
        build(small_manifest, ["ruby"], 1, 0.1, 400, Cache(None))


def test_cache_and_pool_give_the_same_tables(small_manifest, tmp_path):
    plain = build(small_manifest, ["javascript", "python", "java"], 1, 0.1, 400, Cache(None))
    cache = Cache(tmp_path / "cache")
    first = build(small_manifest, ["javascript", "python", "java"], 2, 0.1, 400, cache)
    second = build(small_manifest, ["javascript", "python", "java"], 2, 0.1, 400, cache)
    # one parse per distinct (content, language): a.js and copy.js share one; big.py is never parsed
    assert (first[3], second[3]) == (0, 5)
    for other in (first, second):
        assert other[0].equals(plain[0]) and other[1].equals(plain[1]) and other[2] == plain[2]


@pytest.fixture
def project(tmp_path) -> Path:
    """A project with an npm package (lifecycle scripts, a file that does not parse) and a local
    folder of Python, Java and JavaScript files."""
    marker = tmp_path / "MARKER"
    registry = tmp_path / "registry"
    integrity = publish_npm(registry, "greet", "1.0.0", {
        "package.json": lifecycle_package_json("greet", "1.0.0", marker),
        "index.js": b"const fs = require('fs');\nmodule.exports = function greet(name) { return fs + name; };\n",
        "lib/broken.js": b"function ( { x = \n",
        "install.js": f"require('fs').writeFileSync('{marker}', 'ran');\n".encode(),
    })
    local = tmp_path / "local"
    (local / "pkg").mkdir(parents=True)
    (local / "pkg" / "mod.py").write_text(PY)
    (local / "pkg" / "A.java").write_text(JAVA)
    (local / "web.js").write_text(JS)
    sources = [{"name": "greet", "kind": "npm", "package": "greet@1.0.0", "integrity": integrity,
                "registry": registry.as_uri()},
               {"name": "local", "kind": "local", "path": str(local)}]
    work = tmp_path / "work"
    write_params(work, sources, manifest__languages=["python", "java", "javascript"])
    return work


def test_snakemake_builds_sequences_byte_identical_and_runs_nothing(project, tmp_path):
    snakemake(project, "identifiers")
    outputs = ["data/identifiers/sequences.parquet", "data/identifiers/rejects.parquet",
               "reports/metrics/identifiers.json"]
    first = {p: (project / p).read_bytes() for p in outputs}
    seq = pq.read_table(project / "data/identifiers/sequences.parquet")
    assert seq.schema.equals(SEQUENCES, check_metadata=False)
    got = {(r["source"], r["language"]): r["identifiers"] for r in seq.to_pylist()}
    assert got[("local", "python")] == PY_IDS and got[("local", "java")] == JAVA_IDS
    assert got[("local", "javascript")] == JS_IDS
    npm_rows = [r for r in seq.to_pylist() if r["source"] == "greet"]
    assert sorted(r["identifiers"] for r in npm_rows) == [
        ["fs", "require", "module", "exports", "greet", "name", "fs", "name"],  # index.js
        ["require", "writeFileSync"]]  # install.js
    rejects = pq.read_table(project / "data/identifiers/rejects.parquet").to_pylist()
    assert [(r["source"], r["path"], r["reason"]) for r in rejects] == [("greet", "lib/broken.js", "parse_error")]
    metrics = json.loads((project / "reports/metrics/identifiers.json").read_text())
    assert metrics["languages"]["javascript"]["files"] == 3 and metrics["rejects"] == 1
    # the package's lifecycle scripts and modules never ran
    assert not list(tmp_path.glob("MARKER*"))
    # the warehouse sees the table, and the stage's rejects count like every stage's
    spec = {"tables": {"identifier_sequences": ["data/identifiers/sequences.parquet"],
                       "rejects": ["data/rejects.parquet", "data/identifiers/rejects.parquet"]},
            "params": {"families": []}}
    build_warehouse(project / "data/warehouse.duckdb", spec, project)
    con = connect(project / "data/warehouse.duckdb")
    assert con.sql("SELECT items FROM rejects_summary WHERE stage = 'identifiers'").fetchall() == [(1,)]
    assert con.sql("SELECT sum(len(identifiers)) FROM identifier_sequences").fetchall() == [(metrics["tokens"],)]
    con.close()
    # a clean rebuild (cache included) is byte-identical; so is one served from the parse cache
    for keep_cache in (False, True):
        for folder in ("data/identifiers", "reports") + (("data/cache/identifiers",) if not keep_cache else ()):
            shutil.rmtree(project / folder, ignore_errors=True)
        if not keep_cache:
            for folder in ("data/corpus", "data/sources", "data/manifest", "data/cache"):
                shutil.rmtree(project / folder, ignore_errors=True)
            (project / "data/manifest.parquet").unlink()
        snakemake(project, "identifiers")
        assert {p: (project / p).read_bytes() for p in outputs} == first, keep_cache
    assert not list(tmp_path.glob("MARKER*"))
