"""A quizzed name of a corpus module is one the module binds once it has run, through the real extraction and
generation: a name `del`eted at import (toolz's `get_versions`), a star import that honours the star-imported
module's `__all__` (toolz's itertoolz imports `Sequence` but does not export it), a module `__getattr__` whose
served names can be read (flask's `__version__` only: `flask.Module` is gone) and a name the pinned release no
longer binds (old code calling `click.get_binary_stdin`, a name of `click._compat` only). Names a static reading
cannot judge (a lazy `__getattr__`, `globals()` writes) are kept."""

from __future__ import annotations

import ast

import pyarrow as pa
import pytest

from pipeline import schemas
from pipeline.extract.analyse import analyse_source
from pipeline.extract.build import Cache, build
from pipeline.extract.stdlib import getattr_served, module_namespace
from pipeline.families.apiquiz.generate import generate
from tests.test_quiz_validity import TOKENIZER, rows

LIB = {
    "tz/__init__.py": "from .iter import *\nfrom ._version import get_versions\n\n__version__ = get_versions()\n"
                      "del get_versions\n",
    "tz/_version.py": "def get_versions():\n    return '1'\n",
    "tz/iter.py": "from collections.abc import Sequence\n\n__all__ = ('first',)\n\n\ndef first(seq):\n"
                  "    return next(iter(seq))\n\n\ndef other(seq):\n    return seq\n",
    "fl/__init__.py": "from .app import App\n\n\ndef __getattr__(name):\n    if name == '__version__':\n"
                      "        return '1'\n    raise AttributeError(name)\n",
    "fl/app.py": "class App:\n    def run(self):\n        return 1\n",
    "fl/sansio/scaffold.py": "class Scaffold:\n    def route(self):\n        return 1\n",  # a folder, no __init__.py
    "ck/__init__.py": "from .utils import echo\n",
    "ck/_compat.py": "def get_binary_stdin():\n    return 1\n",
    "ck/utils.py": "def echo(x):\n    return x\n",
    "lz/__init__.py": "import importlib\n\n__all__ = ['sub']\n\n\ndef __getattr__(name):\n    if name in __all__:\n"
                      "        return importlib.import_module('.' + name, __name__)\n    raise AttributeError(name)\n",
    "lz/sub.py": "def helper(x):\n    return x\n",
}
APP = {
    "app/run.py": """import tz
import fl
import ck
import lz
import fl.sansio.scaffold


def run(x):
    tz.first(x)
    tz.other(x)
    tz.get_versions()
    tz.Sequence.index(x, 1)
    fl.App(x)
    fl.Module(x)
    ck.echo(x)
    ck.get_binary_stdin()
    lz.helper(x)
    fl.sansio.scaffold.Scaffold(x)
""",
}


@pytest.fixture(scope="module")
def quizzed(tmp_path_factory):
    root = tmp_path_factory.mktemp("bound")
    manifest = pa.Table.from_pylist(rows(root, "lib", LIB) + rows(root, "app", APP), schemas.MANIFEST)
    tables, _, _ = build(manifest, 1, 30, 100000, Cache(None))
    table, _, stats = generate(tables["usages"], tables["inventory"], tables["imports"], [TOKENIZER],
                               ["call", "import"], max_candidates=20, n_adversarial=2, seed=1)
    return tables, set(table.column("api").to_pylist()), stats


def namespace(text: str):
    return module_namespace(text, ast.parse(text))


def test_a_deleted_name_is_not_in_the_namespace():
    names, _ = namespace("from ._version import get_versions\nv = get_versions()\ndel get_versions\nimport os.path\n")
    assert names == ("os", "v")
    # boltons.gcutils: a `del` under a test may not run
    assert namespace("import sys\n\n\ndef get_all():\n    pass\n\n\nif sys.flags:\n    del get_all\n")[0] \
        == ("get_all", "sys")


def test_a_deleted_import_is_no_quizzed_name(quizzed):
    tables, apis, _ = quizzed
    module = next(r for r in tables["inventory"].to_pylist() if r["fqn"] == "tz")
    assert "get_versions" not in module["namespace"] and "__version__" in module["namespace"]
    assert not [a for a in apis if a.endswith("get_versions")]  # `tz.get_versions(` names nothing once tz has run


def test_literal_all_is_recorded():
    assert namespace("__all__ = ['a', 'b']\n__all__ += ('c',)\n")[1] == ("a", "b", "c")
    assert namespace("__all__ = ['a']\n__all__.extend(more)\n")[1] is None  # changed by a call: not literal
    assert namespace("__all__ = [n for n in dir()]\n")[1] is None
    assert namespace("x = 1\n")[1] is None


def test_a_star_import_binds_the_all_of_the_module_it_imports(quizzed):
    _, apis, _ = quizzed
    assert "tz.first" in apis
    # itertoolz-like: `other` is public but outside `__all__`, `Sequence` an import outside it: no name of tz
    assert "tz.other" not in apis and not [a for a in apis if a.startswith("tz.Sequence")]


@pytest.mark.parametrize("source,served", [
    ("def __getattr__(name):\n    if name == '__version__':\n        return '1'\n    raise AttributeError(name)\n",
     {"__version__"}),
    ("def __getattr__(name):\n    if name in ('A', 'B'):\n        return 1\n"
     "    raise AttributeError(f'no {name!r}')\n", {"A", "B"}),
    # lazy submodules, a lookup table, a factory: what it serves is not written down
    ("def __getattr__(name):\n    if name in __all__:\n        return imp('.' + name)\n"
     "    raise AttributeError(name)\n", None),
    ("def __getattr__(name):\n    return _lazy[name]\n", None),
    ("def make():\n    pass\n\n\n__getattr__ = make()\n", None),
])
def test_module_getattr_served_names(source, served):
    assert getattr_served(ast.parse(source)) == served


def test_module_getattr_and_run_time_names_in_the_namespace():
    assert "__version__" in namespace("def __getattr__(name):\n    if name == '__version__':\n        return '1'\n"
                                      "    raise AttributeError(name)\n")[0]
    assert namespace("def __getattr__(name):\n    return _lazy[name]\n")[0] is None
    assert namespace("globals().update({'a': 1})\n")[0] is None
    # requests' packages.py binds urllib3 so; six defines through exec_
    assert namespace("for p in ('urllib3',):\n    locals()[p] = __import__(p)\n")[0] is None
    assert namespace("exec_('def f(): pass')\n")[0] is None
    assert namespace("def run(code):\n    exec(code)\n")[0] == ("run",)  # inside a function: binds nothing here


def test_a_name_a_readable_getattr_does_not_serve_is_not_quizzed(quizzed):
    _, apis, _ = quizzed
    assert "fl.App" in apis and "fl.Module" not in apis
    assert "fl.sansio.scaffold.Scaffold" in apis  # a submodule in a folder without __init__.py is bound on import


def test_a_name_the_pinned_release_does_not_bind_is_not_quizzed(quizzed):
    _, apis, stats = quizzed
    assert "ck.echo" in apis and "ck.get_binary_stdin" not in apis
    # ck.get_binary_stdin, fl.Module, tz.get_versions, tz.other; tz.Sequence.index is a member of no class of tz
    assert stats["apis_unbound_left_out"] == 4 and stats["apis_data_member_left_out"] == 1


def test_names_that_cannot_be_judged_are_kept(quizzed):
    _, apis, _ = quizzed
    assert "lz.helper" in apis  # lz's `__getattr__` serves its `__all__`: not written down, kept


def test_the_analysis_records_namespace_and_exports():
    r = analyse_source("from .x import *\n__all__ = ['f']\n\n\ndef f():\n    pass\n\n\ndef g():\n    pass\n\n\ndel g\n")
    assert r.namespace == ("__all__", "f") and r.exports == ("f",)
