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


def test_idbench_new_pairs_under_the_floor_print_too_few(caplog):
    """A language set under report.min_n (idbench JavaScript with 1 pair) is one "too few" row naming its n."""
    import duckdb

    from pipeline.families.idbench.report import _new_pairs

    con = duckdb.connect()
    con.sql("CREATE TABLE idbench_new_pairs AS SELECT * FROM (VALUES ('javascript', 'range-1', 'FT-cbow', 0.9, false),"
            + ", ".join(f"('python', 'range-{1 + i % 2}', 'FT-cbow', 0.5, false)" for i in range(120))
            + ") t(language, stratum, technique, cosine, in_idbench)")
    text = "\n".join(_new_pairs(con, 100))
    assert "| javascript | all | FT-cbow | too few items (n = 1, under report.min_n 100) |" in text
    assert "| python | range-1 | FT-cbow | 60 |" in text and "| python | range-2 | FT-cbow | 60 |" in text


def test_the_fixture_corpus_is_evaluated_by_its_library_code_and_builds(tmp_path):
    """Issue 50's fixture, through real Snakemake (`evaluation_sizes`, strict): an sdist with a root bootstrap
    (xmlt: `ez_setup.py`), one with its test suite inside the package (webenc: `webenc/tests.py`), one whose
    `__init__.py` is re-exports only (csss). Every source has items in every set, all from its library code; the
    run exits 0; evaluation.json holds the per-source table."""
    import pyarrow.parquet as pq

    from tests.conftest import snakemake, write_params
    from tests.fixture_corpus import make_anycorpus

    work = tmp_path / "w"
    write_params(work, make_anycorpus(tmp_path / "src"), families=["apirec", "apiquiz", "codesyntax"],
                 manifest__languages=["python"], manifest__split={"train": 0.6, "valid": 0.2, "test": 0.2},
                 manifest__evaluation={"min_items": 1, "allow_small": True, "strict": True},
                 codesyntax__languages=["python"], apirec__ide_max_points=5)
    res = snakemake(work, "evaluation_sizes", check=False)
    assert res.returncode == 0, res.stderr[-4000:]
    manifest = pq.read_table(work / "data/manifest.parquet").to_pylist()
    split = {(r["source"], r["path"]): r["split"] for r in manifest}
    # the bootstrap, the setup scripts, the in-package test suite and generator script train; the re-exports are not
    # csss's test unit
    assert split[("xmlt", "ez_setup.py")] == split[("webenc", "webenc/tests.py")] == "train"
    assert split[("webenc", "webenc/mklabels.py")] == "train"
    inventory = pq.read_table(work / "data/extract/inventory.parquet", columns=["module", "library_code"]).to_pylist()
    assert {r["library_code"] for r in inventory if r["module"] == "webenc.mklabels"} == {False}
    assert {r["library_code"] for r in inventory if r["module"] == "webenc.labels"} == {True}
    assert split[("xmlt", "xmlt.py")] == "test" and split[("csss", "csss/__init__.py")] != "test"
    assert {s for (source, _), s in split.items() if source == "webenc"} >= {"test"}
    metrics = json.loads((work / "reports/metrics/evaluation.json").read_text())
    assert metrics["ok"] and metrics["unevaluated_sources"] == []
    for source in ("xmlt", "webenc", "csss"):
        cell = metrics["per_source"]["python"][source]
        assert cell["test_library_files"] >= 1 and all(n > 0 for n in cell["items"].values()), (source, cell)
        assert set(cell["items"]) == {"apirec points", "apirec queries", "apiquiz quizzes", "codesyntax test samples"}
    points = pq.read_table(work / "data/families/apirec/points.parquet", columns=["source", "path"]).to_pylist()
    assert {(p["source"], p["path"]) for p in points} <= {k for k, s in split.items() if s == "test"}
    assert not any(p["path"] in ("ez_setup.py", "webenc/tests.py", "csss/__init__.py") for p in points)
    quizzes = pq.read_table(work / "data/families/apiquiz/quizzes.parquet", columns=["api"]).column("api").to_pylist()
    assert not any(q.startswith(("ez_setup", "webenc.tests", "webenc.mklabels")) for q in quizzes)
    manifest_metrics = json.loads((work / "reports/metrics/manifest.json").read_text())
    sources = manifest_metrics["split_policy"]["python"]["sources"]
    assert {s: c["library_declared_by"] for s, c in sources.items()} == {
        "csss": "csss.egg-info/top_level.txt", "webenc": "webenc.egg-info/top_level.txt",
        "xmlt": "xmlt.egg-info/top_level.txt"}
    # its test unit carries calls (by lines its 8-line `__init__.py` is dealt valid; valid never takes train's last
    # calls, so it stays there: valid is not what apirec evaluates)
    assert sources["csss"]["calls_by_split"]["test"] >= build.MIN_CARRY
    print(json.dumps({s: {"split": {p: sp for (src, p), sp in sorted(split.items()) if src == s},
                          "items": metrics["per_source"]["python"][s]["items"]} for s in sources}, indent=1))
    # a check that fails (strict, a set under min_items with no opt-out) fails the run and keeps evaluation.json: the
    # job that writes it (evaluation_metrics) never fails on the check; evaluation_sizes does, after it
    assert (work / "data/evaluation_check.json").exists()
    write_params(work, make_anycorpus(tmp_path / "src"), families=["apirec", "apiquiz", "codesyntax"],
                 manifest__languages=["python"], manifest__split={"train": 0.6, "valid": 0.2, "test": 0.2},
                 manifest__evaluation={"min_items": 100000, "allow_small": False, "strict": True},
                 codesyntax__languages=["python"], apirec__ide_max_points=5)
    res = snakemake(work, "evaluation_sizes", check=False)
    assert res.returncode != 0 and "Traceback" not in res.stderr
    errors = [line for line in res.stderr.splitlines() if line.startswith("ERROR evaluation: ")]
    assert len(errors) == 4 and all("fewer than manifest.evaluation.min_items 100000" in e for e in errors), errors
    kept = json.loads((work / "reports/metrics/evaluation.json").read_text())
    assert kept["ok"] is False and len(kept["too_small"]) == 4 and kept["per_source"]["python"].keys() == set(sources)
    assert not (work / "data/evaluation_check.json").exists()
    assert "WARNING evaluation:" not in res.stderr  # the failed check's lines are printed once, as errors


def test_the_corpus_page_has_the_per_source_evaluation_table(tmp_path):
    from pipeline.report.build import per_source_evaluation

    cells = {"csss": {"library_files": 3, "test_library_files": 1,
                      "items": {"apirec points": 4, "apiquiz quizzes": 107, "codesyntax test samples": 0}},
             "stdlib": {"library_files": 700, "test_library_files": 64, "items": {"apirec points": 1886}}}
    evaluation = {"per_source": {"python": cells},
                  "unevaluated_sources": ["source csss (python) is not evaluated by 1 set(s): codesyntax python: ..."]}
    table, warnings = per_source_evaluation(evaluation)
    assert "| python | csss | 3 | 1 | 107 | 4 | 0 |" in table and "| python | stdlib | 700 | 64 | - | 1886 | - |" in table
    assert warnings == evaluation["unevaluated_sources"]
    assert per_source_evaluation({}) == ("", [])


def test_a_package_module_named_tests_is_library_unless_its_text_is_a_test_suite(tmp_path):
    """jinja2's `tests.py` (Jinja's tests: `test_odd(value)`) and werkzeug's `test.py` (its test client) are APIs;
    webencodings' `tests.py` (argument-less `test_*` functions, unittest) is its test suite. Read, never run."""
    api = tmp_path / "tests.py"
    api.write_text("import operator\n\n\ndef test_odd(value):\n    return value % 2 == 1\n")
    suite = tmp_path / "suite.py"
    suite.write_text("from webencodings import lookup\n\n\ndef test_labels():\n    assert lookup('utf-8')\n")
    case = tmp_path / "case.py"
    case.write_text("import unittest\n\n\nclass T(unittest.TestCase):\n    pass\n")
    assert library.library_code("src/jinja2/tests.py", "jinja2.tests", str(api))
    assert not library.library_code("webencodings/tests.py", "webencodings.tests", str(suite))
    assert not library.library_code("pkg/test.py", "pkg.test", str(case))
    assert not library.library_code("pkg/tests.py", "pkg.tests")  # unread: a test module by its name
    assert not library.library_code("tests/test.py", "tests.test", str(api))  # in a tests folder: never
    rows = [{"source": "j", "path": "src/jinja2/tests.py", "language": "python", "location": str(api)},
            {"source": "w", "path": "webencodings/tests.py", "language": "python", "location": str(suite)}]
    assert library.library_files(rows, list(SCRIPTS)) == [True, False]


def test_codesyntax_gives_a_source_without_test_functions_its_file_with_most(tmp_path):
    from pipeline.core.ids import unit_float
    from pipeline.families.codesyntax.label import every_source_tested

    texts = {"a.py": "X = 1\n", "b.py": "def f():\n    pass\n\n\ndef g():\n    pass\n", "c.py": "def h():\n    pass\n"}
    for name, text in texts.items():
        (tmp_path / name).write_text(text)
    ids = sorted((f"id{i}" for i in range(200)), key=lambda i: unit_float(5, "codesyntax-split", i))
    dev, test = ids[:3], ids[-1]  # three ids the hash puts on the dev side (fraction 0.5), one on the test side
    rows = [{"source": "s", "file_id": fid, "path": p, "location": p, "encoding": "utf-8", "language": "python"}
            for fid, p in zip(dev, texts)]
    assert every_source_tested(rows, 5, 0.5, tmp_path) == 1 and [r.get("_test") for r in rows] == [None, True, None]
    # a source with a function on the test side keeps the hash's choice; so does one with nothing to give
    kept = [dict(rows[0], _test=None), {**rows[2], "file_id": test}]
    kept = [{k: v for k, v in r.items() if k != "_test"} for r in kept]
    assert every_source_tested(kept, 5, 0.5, tmp_path) == 0 and not any(r.get("_test") for r in kept)


def test_valid_never_takes_trains_last_calls():
    """more-itertools: `__init__.py` (re-exports) dealt valid, `more.py` (4,000 lines) train, `recipes.py` test: valid
    keeps its `__init__.py` rather than take train's only module; test would take it (the evaluation comes first)."""
    weights = {("m", "init"): 6, ("m", "more"): 4000, ("m", "recipes"): 900}
    carry = {("m", "init"): 0, ("m", "more"): 1500, ("m", "recipes"): 390}
    dealt = {("m", "init"): "valid", ("m", "more"): "train", ("m", "recipes"): "test"}
    assert build.carry_swap(dict(dealt), weights, carry, 1, FRACTIONS) == []
    flipped = {("m", "init"): "test", ("m", "more"): "train", ("m", "recipes"): "valid"}
    assert build.carry_swap(flipped, weights, {**carry, ("m", "recipes"): 0}, 1, FRACTIONS) == ["test"]
    assert flipped[("m", "more")] == "test"


def test_a_script_inside_a_package_is_not_library_code_unless_its_source_refers_to_it(tmp_path):
    """webencodings' `mklabels.py` (a `__main__` guard, imported and named by nothing) is a script whatever its folder;
    a module with a guard that its package imports, names (a docstring's `python -m`, a quoted codec name), documents
    (docs/, `__all__`) or declares as an entry point stays library code, and so do a top-level module and an
    `__init__.py` with one (calendar, tabulate). Read as text, never run."""
    guard = "\n\nif __name__ == '__main__':\n    main()\n"
    body = "import sys\n\n\ndef main():\n    print(sys.argv)\n"
    files = {
        "pkg.egg-info/top_level.txt": "pkg\nsolo\n",
        "pkg.egg-info/entry_points.txt": "[console_scripts]\npkg-cli = pkg.cli:main\n",
        "pkg/__init__.py": '"""pkg. Check a file with `python -m pkg.tool FILE`."""\nfrom . import core\n' + guard,
        "pkg/core.py": "from .sub import gen as _gen\n" + body + guard,  # imported by __init__
        "pkg/tool.py": body + guard,  # named by the package's docstring
        "pkg/api.py": "__all__ = ['main']\n" + body + guard,  # declares its API
        "pkg/cli.py": body + guard,  # an entry point
        "pkg/rot_x.py": body + guard,  # found by name: pkg/aliases.py quotes it
        "pkg/aliases.py": "ALIASES = {'rotx': 'rot_x'}\n",
        "pkg/demoapp.py": body + guard,  # documented
        "pkg/helper.py": body + guard,  # its test imports it
        "pkg/sub/__init__.py": "",
        "pkg/sub/gen.py": body + guard,  # imported by pkg/core.py, relatively
        "pkg/mklabels.py": '"""Regenerate pkg.labels."""\n' + body + guard,
        "pkg/labels.py": "# generated by mklabels.py\nLABELS = {}\n",
        "tests/test_helper.py": "from pkg.helper import main\n\n\ndef test_main():\n    main()\n",
        "docs/api.rst": ".. autofunction:: pkg.demoapp.main\n",
        "solo.py": body + guard,
    }
    _write(tmp_path / "s", files)
    rows = [{"source": "s", "path": p, "language": "python", "location": str(tmp_path / "s" / p)}
            for p in sorted(files) if p.endswith(".py")]
    assert library.package_scripts(rows) == {("s", "pkg/mklabels.py")}
    flags = dict(zip((r["path"] for r in rows), library.library_files(rows, list(SCRIPTS), library.declarations(rows))))
    assert [p for p, f in flags.items() if not f] == ["pkg/mklabels.py", "tests/test_helper.py"]
    # only a judged (library) row can be a script; every row may refer to one
    assert library.package_scripts(rows, [r["path"] != "pkg/mklabels.py" for r in rows]) == set()
    unread = [{**r, "location": None} for r in rows]  # no text: no guard seen, nothing is a script
    assert library.package_scripts(unread) == set()


def test_probing_snippets_are_counted_per_source(tmp_path):
    """A set counted by distinct values (probing's snippets: `group`) is counted per `by` value too (each source's
    snippets), so the per-source table has probing; a samples file without the column is counted whole."""
    from pipeline.manifest import evaluation

    pa.parquet.write_table(pa.table({"group": ["g1", "g1", "g2", "g3"], "source": ["a", "a", "a", "b"]}),
                           tmp_path / "s.parquet")
    spec = {"family": "probing", "name": "snippets", "language": "java", "file": str(tmp_path / "s.parquet"),
            "distinct": "group", "by": ["source"], "checked_per_source": False}
    assert evaluation.items(spec) == (3, {"source": {"a": 2, "b": 1}})
    library_ = {"java": {"a": {"test": [1, 10]}, "b": {"train": [2, 20]}, "c": {"test": [1, 5]}}}
    metrics, _, missing = evaluation.check([spec], 1, False, library_, strict=True)
    assert missing == [] and metrics["ok"]  # counted, not checked: a seeded sample of the language's methods
    assert {s: c["items"] for s, c in metrics["per_source"]["java"].items()} == {
        "a": {"probing snippets": 2}, "b": {"probing snippets": 1}, "c": {"probing snippets": 0}}
    pa.parquet.write_table(pa.table({"group": ["g1", "g2"]}), tmp_path / "old.parquet")
    assert evaluation.items({**spec, "file": str(tmp_path / "old.parquet")}) == (2, {})


def test_a_library_none_of_whose_apis_is_quizzed_says_why(tmp_path):
    """soupsieve 2.6 imports bs4 at the top of its modules but declares no dependency on it: apiquiz leaves out all its
    APIs (`optional_dependency`), and the evaluation check's line for the source says so (EvaluationSet.why_none)."""
    from pipeline.manifest import evaluation

    pa.parquet.write_table(pa.table({"library": ["os", "os", "other"]}), tmp_path / "q.parquet")
    why = "all 136 of its called APIs are left out: 136 because soupsieve imports bs4 ..."
    (tmp_path / "apiquiz.json").write_text(json.dumps({"why_none": {"soupsieve": why}}))
    spec = {"family": "apiquiz", "name": "quizzes", "language": "python", "file": str(tmp_path / "q.parquet"),
            "source_of": "library", "why_none": str(tmp_path / "apiquiz.json")}
    library_ = {"python": {"stdlib": {"test": [5, 50]}, "soupsieve": {"test": [7, 70]}}}
    tops = {"os": "stdlib", "soupsieve": "soupsieve"}
    metrics, _, missing = evaluation.check([spec], 1, False, library_, tops=tops)
    assert len(missing) == 1 and "source soupsieve has 7 library files but 0 quizzes" in missing[0]
    assert f"its library gives none: {why}" in missing[0] and metrics["ok"]
    assert metrics["unevaluated_sources"][0].startswith("source soupsieve (python) is not evaluated by 1 set(s)")
    # no reason recorded: the generic one
    _, _, generic = evaluation.check([{**spec, "why_none": str(tmp_path / "none.json")}], 1, False, library_, tops=tops)
    assert "defines or calls nothing the family makes quizzes of" in generic[0]
