"""The Java grammar the paper's release ran on, for the `*_release_parser` label variants.

The release (serjtroshin/probings4code, October 2022) pins py-tree-sitter 0.19.0 and its `build.sh` clones
tree-sitter-java's head of that time, commit ac14b4b (2022-05, ABI 13). Every grammar before tree-sitter-java
9997f02 (2023-08-28) parses a method alone, `void f(int a) { ... }`, as a local variable declaration `void f`,
an `ERROR(formal_parameters)` and a `block` under `program`, and names comments `line_comment` /
`block_comment`; the labels of the paper's Table 1 come from those trees.

The grammar is read from the PyPI wheel `tree-sitter-languages==1.5.0` (requirements-models.txt, pinned by its
sha256, installed without dependencies), whose `languages.so` its repository's `repos.txt` builds from exactly
tree-sitter-java ac14b4b1884102839455d32543ab6d53ae089ab7. Only that shared library is loaded (ctypes, a
PyCapsule handed to our pinned py-tree-sitter); the package's Python module is never imported. No network.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.metadata
import importlib.util
from pathlib import Path

import tree_sitter

PACKAGE = "tree-sitter-languages"
VERSION = "1.5.0"
JAVA_COMMIT = "ac14b4b1884102839455d32543ab6d53ae089ab7"  # the wheel's repos.txt (git tag v1.5.0)
ABI = 13


class GrammarUnavailable(RuntimeError):
    """The release's grammar cannot be loaded (package missing, another version, another ABI)."""


def _library() -> Path:
    try:
        got = importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        got = None
    if got != VERSION:
        raise GrammarUnavailable(
            f"the *_release_parser probing tasks need {PACKAGE}=={VERSION} (tree-sitter-java {JAVA_COMMIT[:7]}, the "
            f"grammar of the paper's release), found {got or 'none'}: run `make install` (requirements-models.txt) "
            "or drop the *_release_parser tasks from probing.tasks")
    spec = importlib.util.find_spec("tree_sitter_languages")  # locates the package without importing it
    so = Path(next(iter(spec.submodule_search_locations))) / "languages.so" if spec else None
    if so is None or not so.is_file():
        raise GrammarUnavailable(f"{PACKAGE} {VERSION} is installed without its languages.so: reinstall it "
                                 "(`make install`)")
    return so


def library() -> Path:
    """The path of the grammar's shared library (tree-sitter-languages 1.5.0's languages.so)."""
    return _library()


@functools.lru_cache(maxsize=1)
def java_language() -> tree_sitter.Language:
    """tree-sitter-java ac14b4b as a `tree_sitter.Language` (ABI 13)."""
    lib = ctypes.CDLL(str(_library()))
    fn = lib.tree_sitter_java
    fn.restype = ctypes.c_void_p
    capsule_new = ctypes.pythonapi.PyCapsule_New
    capsule_new.restype = ctypes.py_object
    capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    lang = tree_sitter.Language(capsule_new(fn(), b"tree_sitter.Language", None))
    if lang.abi_version != ABI:
        raise GrammarUnavailable(f"{PACKAGE} {VERSION}'s Java grammar has ABI {lang.abi_version}, expected {ABI}")
    return lang


def java_parser() -> tree_sitter.Parser:
    """A parser on the release's Java grammar."""
    return tree_sitter.Parser(java_language())
