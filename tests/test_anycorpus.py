"""Issue 50: any corpus, first time. A source's library is what its own metadata declares (read as text, never
run); test units are chosen among library files by what they carry; every source gets a per-source row."""

from __future__ import annotations

import json

import pyarrow as pa

from pipeline.extract import library
from pipeline.manifest import build
from pipeline.manifest.build import SCRIPTS, SplitPolicy

FRACTIONS = {"train": 0.8, "valid": 0.1, "test": 0.1}


def _write(root, files: dict[str, str]):
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_metadata_declares_the_library_in_order_of_trust(tmp_path):
    sdist = tmp_path / "xmltodict"
    _write(sdist, {"xmltodict.egg-info/top_level.txt": "xmltodict\n", "xmltodict.py": "", "ez_setup.py": "",
                   "pyproject.toml": "[tool.setuptools]\npy-modules = ['other']\n"})
    assert library.declared_library(sdist) == {"python": ["xmltodict"], "from": "xmltodict.egg-info/top_level.txt"}
    wheel = tmp_path / "w"
    _write(wheel, {"w-1.dist-info/RECORD": "w/__init__.py,sha256=x,1\nw/tests.py,,\nw-1.dist-info/METADATA,,\n"
                                           "solo.py,,\n../../bin/x,,\n"})
    assert library.declared_library(wheel)["python"] == ["solo", "w"]
    for toml, tops in (("[tool.hatch.build.targets.wheel]\npackages = ['src/hpkg']\n", ["hpkg"]),
                       ("[tool.poetry]\npackages = [{include = 'ppkg', from = 'src'}]\n", ["ppkg"]),
                       ("[build-system]\nbuild-backend = 'flit_core.buildapi'\n[project]\nname = 'Fl-It'\n", ["fl_it"]),
                       ("[tool.setuptools]\npackages = ['spkg', 'spkg.sub', 'tests']\n", ["spkg"]),
                       ("not = [valid", None)):
        root = tmp_path / f"p{len(toml)}"
        _write(root, {"pyproject.toml": toml})
        assert library.declared_library(root).get("python") == tops
    npm = tmp_path / "npm"
    _write(npm, {"package.json": json.dumps({"main": "./lib/index.js", "exports": {".": {"require": "./lib/x.js"}},
                                             "files": ["lib/", "bin"]})})
    assert library.declared_library(npm) == {"javascript": ["bin", "lib", "lib/index.js", "lib/x.js"],
                                            "from": "package.json"}
    assert library.declared_library(tmp_path / "absent") == {}


def _rows(source, paths, language="python"):
    return [{"source": source, "path": p, "language": language} for p in paths]


def test_library_files_leave_out_bootstraps_tests_stdlib_demos_and_keep_java_tools_packages():
    rows = (_rows("xmltodict", ["ez_setup.py", "xmltodict.py", "setup.py"])
            + _rows("webencodings", ["webencodings/__init__.py", "webencodings/tests.py", "webencodings/labels.py"])
            + _rows("stdlib", ["turtledemo/clock.py", "__hello__.py", "__phello__/__init__.py", "os.py",
                               "idlelib/idle_test/test_x.py", "lib2to3/tests/data.py", "json/__init__.py"])
            + _rows("jdk", ["jdk.jartool/module-info.java", "jdk.jartool/sun/tools/jar/Main.java",
                            "java.base/module-info.java", "java.base/sun/security/tools/keytool/Main.java",
                            "java.base/java/util/MapTest.java", "proj/src/test/java/a/Helper.java",
                            "proj/tools/Gen.java"], "java")
            + _rows("js", ["lib/a.js", "bench/b.js", "scripts/c.js"], "javascript"))
    flags = library.library_files(rows, list(SCRIPTS), {"xmltodict": {"python": ["xmltodict"]},
                                                        "js": {"javascript": ["lib"]}})
    got = {r["path"]: f for r, f in zip(rows, flags)}
    assert [p for p, f in got.items() if f] == [
        "xmltodict.py", "webencodings/__init__.py", "webencodings/labels.py", "os.py", "json/__init__.py",
        "jdk.jartool/module-info.java", "jdk.jartool/sun/tools/jar/Main.java", "java.base/module-info.java",
        "java.base/sun/security/tools/keytool/Main.java",
        "proj/tools/Gen.java",  # no module-info.java, no src/: the whole path may be its package path
        "lib/a.js"]
    # a declaration that names nothing present is ignored (the layout decides)
    assert library.library_files(_rows("x", ["pkg/a.py"]), list(SCRIPTS), {"x": {"python": ["elsewhere"]}}) == [True]


def _scanned(root, source, files: dict[str, str]) -> pa.Table:
    _write(root, files)
    rows = [{"file_id": f"{source}:{rel}", "sha256": f"{source}:{rel}", "source": source, "repository": source,
             "path": rel, "location": f"{root.as_posix()}/{rel}", "language": "python", "encoding": "utf-8",
             "bytes": len(text), "lines": max(1, text.count("\n"))} for rel, text in sorted(files.items())]
    from pipeline import schemas

    return pa.Table.from_pylist(rows, schemas.SCANNED)


def test_a_test_unit_of_reexports_is_swapped_for_one_that_carries_calls(tmp_path):
    """cssselect: by lines, its 37-line `__init__.py` of re-exports is nearest the test split's share; it carries no
    call, so test takes the library module nearest its share that does, deterministically."""
    reexports = "".join(f"from cssselect.parser import name{i}\n" for i in range(37))
    calls = "".join(f"def f{i}(x):\n    return x.strip().lower()\n" for i in range(60))
    files = {"cssselect/__init__.py": reexports, "cssselect/parser.py": calls * 4, "cssselect/xpath.py": calls * 3,
             "cssselect.egg-info/top_level.txt": "cssselect\n", "tests/test_cssselect.py": calls,
             "ez_setup.py": calls, "setup.py": "setup()\n"}
    scanned = _scanned(tmp_path / "cssselect", "cssselect", files)
    table, report = build.build([scanned.filter(pa.compute.match_substring(scanned.column("path"), ".py"))], 3,
                                {"train": 0.6, "valid": 0.2, "test": 0.2})
    split = dict(zip(table.column("path").to_pylist(), table.column("split").to_pylist()))
    cell = report["python"]["sources"]["cssselect"]
    assert cell["library_declared_by"] == "cssselect.egg-info/top_level.txt"
    assert split["ez_setup.py"] == split["tests/test_cssselect.py"] == split["setup.py"] == "train"
    assert split["cssselect/__init__.py"] != "test"
    assert cell["calls_by_split"]["test"] >= build.MIN_CARRY and cell["library_files_by_split"]["test"] == 1
    again, _ = build.build([scanned.filter(pa.compute.match_substring(scanned.column("path"), ".py"))], 3,
                           {"train": 0.6, "valid": 0.2, "test": 0.2})
    assert again.equals(table)


def test_carry_swap_keeps_a_split_that_already_carries_and_swaps_one_that_does_not():
    weights = {("s", "a"): 40, ("s", "b"): 300, ("s", "c"): 200}
    dealt = {("s", "a"): "test", ("s", "b"): "train", ("s", "c"): "valid"}
    carry = {("s", "a"): 0, ("s", "b"): 50, ("s", "c"): 20}
    assert build.carry_swap(dict(dealt), weights, {**carry, ("s", "a"): 5}, 1, FRACTIONS) == []
    swapped = dict(dealt)
    assert build.carry_swap(swapped, weights, carry, 1, FRACTIONS) == ["test"]
    assert swapped == {("s", "a"): "train", ("s", "b"): "test", ("s", "c"): "valid"}
    # nothing anywhere carries a call: left as dealt (the evaluation check warns about the source)
    none = dict(dealt)
    assert build.carry_swap(none, weights, dict.fromkeys(carry, 0), 1, FRACTIONS) == [] and none == dealt


def test_carry_counts_calls_not_definitions_or_keywords(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("from a import (b, c)\n__all__ = ('b',)\ndef f(x):\n    if (x):\n        return g(x).h()\n"
                 "class K(object):\n    pass\n")
    assert build.carry_of(str(f)) == 2 and build.carry_of(str(tmp_path / "none.py")) is None
    assert SplitPolicy().mode == "source"
