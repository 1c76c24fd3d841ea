"""apiquiz (INK, "Pop Quiz!"): cloze quizzes on the fully qualified names of the APIs the
corpus calls.

Every unique resolved call FQN (builtins left out: nobody writes `builtins.len(`) gives
quizzes in five settings: call `a.b.c(`, import `from a.b import c`, alias (the aliasing
import the corpus uses for it, then the call through the alias), adversarial alias (the same
with aliases the corpus uses for other modules) and nl (the first docstring sentence of the
API's definition as a comment, then the call). Each dot-separated level is masked whole, and,
when the first tokenizer splits it, also at its first and at its last token. Quizzes carry a
candidate list for ranking (names of the same kind, siblings first) and, per tokenizer,
whether the answer is a single token.

Names are canonical: the FQNs under which one definition is called (`httpx.Response`,
`httpx._models.Response`) are one API, named by the public path the corpus imports it from
(re-exports are read from the corpus's own import statements); APIs with no public path are
flagged `private`. A user-defined name whose top-level package several repositories define
(`tests.conftest`) is one API per repository.
"""

from __future__ import annotations

import argparse
import importlib.resources
import itertools
import keyword
import logging
import os
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc
from tqdm import tqdm

from pipeline import schemas as core_schemas
from pipeline.core import ids, logs, shards as sharding
from pipeline.extract import library, platforms
from pipeline.extract.availability import alias_targets, installed_tops, missing_modules, platform_labels
from pipeline.extract.stdlib import ABSENT, StdlibNames
from pipeline.extract.build import absolute
from pipeline.extract.visitor import private
from pipeline.families.apiquiz import schemas
from pipeline.io import parquet_stream, read_parquet, write_json, write_parquet

log = logging.getLogger("pipeline.families.apiquiz.generate")

SETTINGS = ("call", "import", "alias", "adversarial_alias", "nl")
PACKAGE_PREFIX = "package:"


def load_tokenizer(spec: str):
    """`package:<module>/<folder>` (a model folder shipped inside an installed package), a local
    folder, or a hub id already in the local cache. Never downloads."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoTokenizer

    if spec.startswith(PACKAGE_PREFIX):
        package, _, folder = spec[len(PACKAGE_PREFIX) :].partition("/")
        spec = str(importlib.resources.files(package).joinpath(folder))
    return AutoTokenizer.from_pretrained(spec)


@dataclass(frozen=True)
class Api:
    fqn: str  # the canonical name (the public path the corpus uses, when there is one)
    category: str
    uses: int
    seen: bool
    alias: tuple[str, str, str] | None  # (alias, what it denotes, "import" or "from")
    repository: str | None = None  # "source/repository" of a user-defined name several repositories define
    private: bool = False  # no public path: some part starts with "_"
    definition: str = ""  # where it is defined (re-exports followed)
    module_levels: int = 0  # how many leading levels are modules
    library_code: bool = True  # defined in library code (not a test, example, docs, tools or scripts module)
    data_member: bool = False  # a member of a data attribute (`os.environ.items`): no API of its own
    platform: str | None = None  # exists only on another platform ("windows", "other"; pipeline.extract.platforms)
    not_in_stdlib: bool = False  # a stdlib name the pinned interpreter's stdlib does not bind (`os.path.mkdir`)
    other_names: tuple[str, ...] = ()  # the other names the corpus calls it by (`pkg.core.Group` for `pkg.Group`)
    # no name of it means it in every setting: each goes through a module hidden by a package attribute
    # (`unittest.main.X`: the attribute `unittest.main` is the class TestProgram, not the submodule)
    hidden: bool = False
    level_kinds: tuple[str, ...] = ()  # per level: module / class / function / method (see Names.level_kinds)
    kinds_known: tuple[bool, ...] = ()  # per level: the kind is the inventory's (else guessed from the name)
    # every (called name, source, repository) of the corpus's calls that is this API: a model's own "seen" is
    # computed from these and the text it read (sql/10_views.sql, apiquiz_seen)
    called_as: tuple[tuple[str, str, str], ...] = ()
    # a corpus module on its path does not bind the next level once it has run (Names.unbound)
    unbound: bool = False


@dataclass(frozen=True)
class Template:
    """One code text and the spans of its maskable levels."""

    setting: str
    api: Api
    text: str
    spans: tuple[tuple[int, int, int], ...]  # (level index, start, end)
    alias: str | None = None
    context: str | None = None


class Names:
    """What the corpus says about names: which dotted names are modules (the corpus's own modules,
    what its import statements import from, the interpreter's stdlib top-levels), which module-level
    names re-export what (`httpx.Response` -> `httpx._models.Response`, from `httpx/__init__.py`'s
    `from ._models import Response`), and which top-level packages several repositories define."""

    def __init__(self, usages: pa.Table, imports: pa.Table, inventory: pa.Table):
        self.modules: set[str] = set(sys.stdlib_module_names) | set(sys.builtin_module_names)
        # the corpus's own modules (files) -> library code or not; its classes; names defined at module level
        self.corpus_modules: dict[str, bool] = {}
        self.classes: set[str] = set()
        self.kinds: dict[str, str] = {}  # inventory fqn -> module / class / function / method
        self.module_names: dict[str, set[str]] = defaultdict(set)
        # module-level names bound only under a platform guard (`module.name` -> "windows"; the inventory's
        # platform_names) and the stdlib checker (`os.path.mkdir` does not exist; `msvcrt` is Windows-only)
        self.platforms: dict[str, str] = platform_labels(inventory)
        self.stdlib = StdlibNames()
        # what is there wherever the corpus is installed (None: not recorded, not judged); another library's name
        # (`pytest.skip` called by tests, `tornado.gen.Return` by an optional module) cannot be checked: left out
        self.installed = installed_tops(inventory)
        # the names each corpus module binds once it has run (star imports aside) and its literal `__all__`
        # (the inventory's `namespace` / `exports`; absent: not recorded, nothing judged by them)
        self.namespaces: dict[str, set[str] | None] = {}
        self.exports: dict[str, list[str]] = {}
        if "namespace" in inventory.column_names:
            rows = inventory.filter(pc.equal(inventory.column("kind"), "module"))
            for module, namespace, exports in zip(*(rows.column(c).to_pylist() for c in ("module", "namespace",
                                                                                         "exports"))):
                # one module name in several repositories (`tests.conftest`): what any of them binds; unknown wins
                known = self.namespaces.get(module, set())
                self.namespaces[module] = None if namespace is None or known is None else known | set(namespace)
                if exports is not None:
                    self.exports.setdefault(module, exports)
        self.stars: dict[str, set[str | None]] = defaultdict(set)  # module -> what its star imports import
        flags = (inventory.column("library_code").to_pylist() if "library_code" in inventory.column_names
                 else itertools.repeat(None))
        for fqn, kind, module, qualname, lib in zip(*(inventory.column(c).to_pylist()
                                                      for c in ("fqn", "kind", "module", "qualname")), flags):
            self.kinds.setdefault(fqn, kind)  # what the name is (level_kinds reads it; was never filled: all guessed)
            if kind == "module":
                self._add_module(fqn)
                lib = not library.script_module(fqn) if lib is None else lib  # an older inventory: by name
                self.corpus_modules[fqn] = self.corpus_modules.get(fqn, False) or lib
            elif kind == "class":
                self.classes.add(fqn)
            if qualname and "." not in qualname:
                self.module_names[module].add(qualname)
        owners: dict[str, set[tuple[str, str]]] = defaultdict(set)
        for table in (usages, imports):
            for module, source, repo in zip(*(table.column(c).to_pylist() for c in ("module", "source", "repository"))):
                if importable_name(module):
                    self._add_module(module)
                    owners[module.split(".", 1)[0]].add((source, repo))
        self.shared = {top for top, repos in owners.items() if len(repos) > 1}
        self.reexports: dict[str, str] = {}
        cols = ("module", "kind", "level", "imported", "name", "asname", "bound", "target", "scope", "star")
        for module, kind, level, imported, name, asname, bound, target, scope, star in zip(
                *(imports.column(c).to_pylist() for c in cols)):
            if star or target is None:
                continue
            # what the statement proves is a module: `import a.b` (a, a.b), `from a.b import c` (a, a.b)
            if kind == "import":
                self._add_module(target if asname else imported)
            else:
                self._add_module(target.rsplit(".", 1)[0] if level or "." in target else target)
            if scope == "" and bound and not self.binds_statically(module, bound):
                continue  # `del`eted once the module has run (toolz: `from ._version import get_versions`, then del)
            if scope == "" and bound and importable_name(module):
                self.module_names[module].add(bound)
            if (scope == "" and bound and (kind == "from" or asname) and f"{module}.{bound}" != target
                    and importable_name(module)):  # a script (`make-state-diagrams.py`) re-exports nothing
                self.reexports.setdefault(f"{module}.{bound}", target)
        self._star_reexports(imports)
        # module-level aliases (`OMD = OrderedMultiDict`): the same object under another name of its module
        for name, target in alias_targets(inventory).items():
            if importable_name(name.rsplit(".", 1)[0]):
                self.reexports.setdefault(name, target)

    def _star_reexports(self, imports: pa.Table) -> None:
        """`from .core import *` at module level re-exports the names of `core`'s literal `__all__` when it has
        one (toolz's itertoolz imports `Sequence` but does not export it: `toolz.Sequence` is no name), else every
        public name `core` binds at module level (its definitions and imports; what it star-imports in turn, to a
        fixed point): Python's rule for a star import."""
        stars = imports.filter(pc.and_(imports.column("star"), pc.equal(imports.column("scope"), "")))
        edges = set()
        for module, imported, level, path in zip(*(stars.column(c).to_pylist()
                                                    for c in ("module", "imported", "level", "path"))):
            src = absolute(imported.lstrip("."), level, module, path.rsplit("/", 1)[-1] == "__init__.py")
            if importable_name(module):
                self.stars[module].add(src)
            if src is not None and importable_name(module) and src != module:
                edges.add((module, src))
        for _ in range(len(edges)):  # each round follows one more link of a chain of star imports
            grew = False
            for module, src in sorted(edges):
                exported = self.exports.get(src)
                for name in sorted(self.module_names.get(src, ()) if exported is None else exported):
                    if (exported is not None or not name.startswith("_")) and name not in self.module_names[module]:
                        self.module_names[module].add(name)
                        self.reexports.setdefault(f"{module}.{name}", f"{src}.{name}")
                        grew = True
            if not grew:
                break

    def binds_statically(self, module: str, name: str) -> bool:
        """False only when the module's recorded namespace lacks `name` (a name it `del`etes)."""
        namespace = self.namespaces.get(module)
        return namespace is None or name in namespace

    def binds(self, module: str, name: str, _seen: frozenset = frozenset()) -> bool | None:
        """Whether the corpus module `module` has the attribute `name` once it has run: True when it binds it
        (namespace, imports, star imports of corpus modules, a submodule), False when its namespace is recorded
        and nothing binds it, None when that cannot be told (no namespace: names made at run time; a star
        import of a module outside the corpus)."""
        namespace = self.namespaces.get(module)
        if namespace is None:
            return None
        # a submodule: a module file, or a folder of them (werkzeug's `middleware/` has no `__init__.py`)
        if name in namespace or name in self.module_names.get(module, ()) or f"{module}.{name}" in self.modules:
            return True
        unknown = False
        for src in sorted(self.stars.get(module, ()), key=str):
            if src is None or src in _seen or src not in self.namespaces:
                unknown = True
                continue
            exported = self.exports.get(src)
            found = (name in exported) if exported is not None else (None if name.startswith("_") else
                                                                     self.binds(src, name, _seen | {module}))
            if found:
                return True
            unknown |= found is None and not name.startswith("_")
        return None if unknown else False

    def unbound(self, fqn: str) -> bool:
        """A corpus module on `fqn`'s path does not bind the next level once it has run (`toolz.get_versions`,
        deleted at import; `flask.Module`, gone since Flask 1.0, called by old code; `click.get_binary_stdin`, a
        name of `click._compat` only): the name does not exist. The stdlib's names are the stdlib checker's;
        levels below a class are not judged."""
        parts = fqn.split(".")
        if parts[0] in sys.stdlib_module_names:
            return False
        for i in range(1, len(parts)):
            module = ".".join(parts[:i])
            if module not in self.modules:
                return False  # a class (or what a module binds): its attributes are not judged
            if module in self.corpus_modules and self.binds(module, parts[i]) is False:
                return True
        return False

    def _add_module(self, dotted: str) -> None:
        parts = dotted.split(".")
        for i in range(1, len(parts) + 1):
            self.modules.add(".".join(parts[:i]))

    def definition(self, fqn: str, max_hops: int = 16) -> str:
        """Follow re-exports (the longest re-exported prefix first) to where the name is defined. A
        chain that loops or keeps growing (`from .a import a` inside `pkg.a`) proves nothing: the
        name is then its own definition."""
        start, seen = fqn, set()
        for _ in range(max_hops):
            if fqn in seen:
                return start
            seen.add(fqn)
            parts = fqn.split(".")
            for i in range(len(parts), 0, -1):
                prefix = ".".join(parts[:i])
                if i < len(parts) and prefix in self.corpus_modules and not self.shadowed(prefix, parts[i]):
                    return fqn  # `pkg.testing.f`: the submodule `pkg.testing`, not an attribute `pkg.testing`
                target = self.reexports.get(prefix)
                if target is not None:
                    fqn = ".".join([target, *parts[i:]])
                    break
            else:
                return fqn
        return start

    def shadowed(self, module: str, name: str) -> bool:
        """`module.name` reaches, not the module file `module`, but what its package binds under that name:
        the module binds no `name` while its package's `__init__` re-exports something else as `module`
        (pyparsing: `from .testing import pyparsing_test as testing`, so `pyparsing.testing.with_line_numbers`
        is `pyparsing.testing.pyparsing_test.with_line_numbers`; `from pyparsing.testing import
        with_line_numbers` fails)."""
        target = self.reexports.get(module)
        return target is not None and target != module and name not in self.module_names.get(module, ())

    def hidden(self, module: str) -> bool:
        """The module file `module` is hidden by its package's attribute of the same name: the package's
        `__init__` imports the submodule and then binds its name to something from it (unittest: `from .main
        import main`, so the attribute `unittest.main` is the class TestProgram, not the submodule; pyparsing:
        `from .testing import pyparsing_test as testing`). A name bound from elsewhere (`from .helpers import
        testing`) is replaced by the submodule when it is first imported: not hidden."""
        target = self.reexports.get(module)
        return target is not None and target.startswith(module + ".")

    def valid_spelling(self, name: str) -> bool:
        """No proper prefix of `name` is a module file hidden by a package attribute (`hidden`): the name means
        the same as an import (`from a.b import c` reads the module) and as a chain of attributes (`a.b.c(` reads
        the attribute), in every setting."""
        parts = name.split(".")
        return not any(".".join(parts[:i]) in self.corpus_modules and self.hidden(".".join(parts[:i]))
                       for i in range(2, len(parts)))

    def reachable(self, target: str, fqn: str, module_levels: int) -> bool:
        """`fqn` read as attributes from the module `target` (an alias's `import target as k`, then `k.rest(`):
        every submodule after `target` is bound by its parent module (`os` binds `path`; `multiprocessing` does
        not bind `connection`, a submodule that is no attribute until something imports it). A parent outside
        the corpus is not judged."""
        parts = fqn.split(".")
        for i in range(target.count(".") + 1, module_levels):
            parent = ".".join(parts[:i])
            if parent in self.corpus_modules and parts[i] not in self.module_names.get(parent, ()):
                return False
        return True

    def platform(self, *names: str) -> str | None:
        """The platform a name exists on only (a prefix bound only under a platform guard of the corpus, or,
        for a stdlib name, the stdlib checker's verdict); None: it exists here."""
        for name in names:
            parts = name.split(".")
            for i in range(len(parts), 0, -1):
                found = self.platforms.get(".".join(parts[:i]))
                if found is not None:
                    return found
        return None

    def stdlib_status(self, name: str) -> str:
        """`pipeline.extract.stdlib.StdlibNames.status` of a standard-library name (present / unknown /
        absent / windows / other)."""
        return self.stdlib.status(name)

    def level_kinds(self, fqn: str, module_levels: int) -> tuple[tuple[str, ...], tuple[bool, ...]]:
        """The kind of each level of `fqn` (module / class / function / method) and whether the
        inventory says so (the level's name, re-exports followed, is a definition of the corpus); else
        guessed: a level between the module and the called name is a class; the called name is a
        method under a class, else a class when CapWords, else a function."""
        parts = fqn.split(".")
        kinds, known = [], []
        for i in range(len(parts)):
            if i < module_levels:
                kinds.append("module")
                known.append(True)
                continue
            prefix = ".".join(parts[: i + 1])
            defined = self.definition(prefix)
            kind = (self.kinds.get(defined) or self.kinds.get(prefix)
                    or self.stdlib.compiled_kind(defined))  # a compiled stdlib module's object: its type says
            known.append(kind is not None)
            if kind is None:
                if i < len(parts) - 1:
                    kind = "class"
                elif i > module_levels:
                    kind = "method"
                else:
                    kind = "class" if parts[i][:1].isupper() else "function"
            kinds.append(kind)
        return tuple(kinds), tuple(known)

    def corpus_module(self, fqn: str) -> str | None:
        """The longest proper prefix of `fqn` that is a module file of the corpus."""
        parts = fqn.split(".")
        for i in range(len(parts) - 1, 0, -1):
            if ".".join(parts[:i]) in self.corpus_modules:
                return ".".join(parts[:i])
        return None

    def is_library_code(self, definition: str) -> bool:
        """Defined in library code: its corpus module is (pipeline.extract.library), or, outside the
        corpus, its module name is no test / conftest / setup / `__main__` module."""
        module = self.corpus_module(definition)
        if module is not None:
            return self.corpus_modules[module]
        k = self.module_levels(definition)
        return not library.script_module(".".join(definition.split(".")[:k])) if k else True

    def is_data_member(self, definition: str) -> bool:
        """A member of a data attribute (`os.environ.items`, `sys.stdout.write`,
        `pyparsing_common.integer.set_name`): a level between the module and the called name is no class
        of the corpus (a corpus module), or not CapWords (a C-implemented stdlib
        module, which has no submodules); unknown third-party modules are given the benefit of the doubt."""
        module = self.corpus_module(definition)
        if module is not None:  # every level between the module and the called name must be a class
            rest = definition[len(module) + 1 :].split(".")
            return any(".".join([module, *rest[: i + 1]]) not in self.classes for i in range(len(rest) - 1))
        parts = definition.split(".")
        if parts[0] in sys.builtin_module_names and len(parts) >= 3:
            return not parts[1][:1].isupper()
        return False

    def module_levels(self, fqn: str) -> int:
        """Length of the longest prefix of `fqn` (not all of it) that is a module."""
        parts = fqn.split(".")
        for i in range(len(parts) - 1, 0, -1):
            if ".".join(parts[:i]) in self.modules:
                return i
        return 0


def importable_name(name: str | None) -> bool:
    return bool(name) and all(p.isidentifier() and not keyword.iskeyword(p) for p in name.split("."))


def collect_apis(usages: pa.Table, names: Names) -> list[Api]:
    """One Api per definition (per repository for a shared user-defined package), named canonically."""
    calls = usages.filter(pc.and_(pc.is_in(usages.column("kind"), pa.array(["call", "method"])),
                                  pc.is_valid(usages.column("fqn"))))
    cols = {c: calls.column(c).to_pylist() for c in ("fqn", "category", "split", "alias", "import_target",
                                                       "import_statement", "source", "repository")}
    # rows, or rows aggregated with their count `n` (aggregate_usages): every count below is weighted
    weights = calls.column("n").to_pylist() if "n" in calls.column_names else itertools.repeat(1)
    groups: dict[tuple[str, str | None], dict] = {}
    for (fqn, cat, split, alias, target, statement, source, repo), n in zip(zip(*cols.values()), weights):
        # builtins are not quizzed; `outer.<locals>.inner` and script names are no importable API
        if fqn.startswith("builtins.") or "." not in fqn or not importable_name(fqn):
            continue
        owner = f"{source}/{repo}" if cat == "user_defined" and fqn.split(".", 1)[0] in names.shared else None
        key = (names.definition(fqn), owner)
        g = groups.setdefault(key, {"names": Counter(), "category": Counter(), "seen": False,
                                    "aliases": defaultdict(Counter), "called_as": set()})
        g["names"][fqn] += n
        g["called_as"].add((fqn, source, repo))
        g["category"][cat] += n
        g["seen"] |= split == "train"
        if alias and target and fqn.startswith(target + "."):
            g["aliases"][fqn][(alias, target, "import" if statement.startswith("import ") else "from")] += n
    public_alias = _public_reexports(names)
    out = []
    for (definition, owner), g in groups.items():
        fqn = canonical(definition, g["names"], public_alias, names)
        cat = min(g["category"].items(), key=lambda kv: (-kv[1], kv[0]))[0]
        levels = names.module_levels(fqn)
        # `import multiprocessing as mp` then `mp.connection.wait(`: the submodule is no attribute until imported
        aliases = {k: n for k, n in g["aliases"][fqn].items() if names.reachable(k[1], fqn, levels)}
        alias = min(aliases.items(), key=lambda kv: (-kv[1], kv[0]))[0] if aliases else None
        platform, missing = names.platform(definition, fqn), False
        if platform is None and any(p in platforms.WINDOWS_MODULES for p in fqn.split(".")[:-1]):
            platform = platforms.WINDOWS  # `six.moves.winreg.OpenKey`: a Windows-only module, whatever the path
        if platform is None and names.installed is not None and fqn.split(".", 1)[0] not in names.installed:
            platform = platforms.OPTIONAL_DEPENDENCY  # a distribution neither in the corpus nor required by it
        if platform is None and cat == "stdlib" and fqn.split(".", 1)[0] in sys.stdlib_module_names:
            status = names.stdlib_status(fqn)
            missing = status == ABSENT
            platform = status if status in (platforms.WINDOWS, platforms.OTHER, platforms.MAIN, platforms.CAPABILITY,
                                            platforms.OPTIONAL_DEPENDENCY) else None
        out.append(Api(fqn, cat, sum(g["names"].values()), g["seen"], alias, owner, private(fqn), definition,
                       levels, names.is_library_code(definition), names.is_data_member(definition),
                       platform, missing, tuple(sorted(n for n in g["names"] if n != fqn)),
                       not names.valid_spelling(fqn), *names.level_kinds(fqn, levels),
                       called_as=tuple(sorted(g["called_as"])),
                       unbound=platform is None and not missing and names.unbound(fqn)))
    out.sort(key=lambda a: (a.fqn, a.repository or ""))
    return out


def _public_reexports(names: Names) -> dict[str, str]:
    """Definition -> the shortest public name that re-exports it (then alphabetical)."""
    out: dict[str, str] = {}
    for name in sorted(names.reexports, key=lambda n: (n.count("."), len(n), n)):
        # a test or script importing a name re-exports nothing (`h11.tests.test_io.ChunkedWriter`); a name that
        # is also a module file (`pyparsing.testing`) is no spelling of what it re-exports (Names.shadowed)
        if (not private(name) and names.is_library_code(name) and name not in names.corpus_modules
                and names.valid_spelling(name)):
            out.setdefault(names.definition(name), name)
    return out


def canonical(definition: str, used: Counter, public_alias: dict[str, str], names: "Names | None" = None) -> str:
    """The public name the corpus calls the definition by most (then the shortest, then alphabetical);
    else a public re-export of it (or of its class: `httpx.Response.json`); else the most used name."""
    ranked = sorted(used.items(), key=lambda kv: (-kv[1], kv[0].count("."), kv[0]))
    valid = (lambda n: True) if names is None else names.valid_spelling
    # a spelling through a hidden module (`pyparsing.testing.with_line_numbers`, `unittest.main.TestProgram`) is none
    ranked = [kv for kv in ranked if valid(kv[0])] or ([(definition, 0)] if valid(definition) else [])
    public = [n for n, _ in ranked if not private(n) and (names is None or names.is_library_code(n))]
    if public:
        return public[0]
    parts = definition.split(".")
    for i in range(len(parts), 0, -1):
        alias = public_alias.get(".".join(parts[:i]))
        if alias is not None and valid(".".join([alias, *parts[i:]])):
            return ".".join([alias, *parts[i:]])
    # no spelling means the definition in every setting: the first one used (collect_apis leaves it out)
    return ranked[0][0] if ranked else (max(used, key=lambda n: (used[n], n)) if used else definition)


def _level_spans(fqn: str, offset: int, first_level: int = 0) -> list[tuple[int, int, int]]:
    spans, pos = [], offset
    for i, part in enumerate(fqn.split(".")):
        spans.append((first_level + i, pos, pos + len(part)))
        pos += len(part) + 1
    return spans


def call_template(api: Api, context: str | None = None) -> Template:
    head = f"# {context}\n" if context else ""
    return Template("nl" if context else "call", api, f"{head}{api.fqn}(", tuple(_level_spans(api.fqn, len(head))),
                    context=context)


def import_template(api: Api) -> Template | None:
    """`from <module> import name`: only where the left part is a module (`from pkg.mod.Class import
    meth` is no valid import). For a member of a class (`pkg.mod.Class.meth`) the class is imported and
    the rest masked in the call, `from pkg.mod import Class\nClass.meth(`; the class level is not masked
    (the call shows it)."""
    k = api.module_levels
    if k == 0:
        return None
    parts = api.fqn.split(".")
    module, name = ".".join(parts[:k]), parts[k]
    text = f"from {module} import {name}"
    spans = _level_spans(module, 5)
    if len(parts) == k + 1:
        return Template("import", api, text, tuple(spans + [(k, len(text) - len(name), len(text))]))
    rest = ".".join(parts[k + 1 :])
    text += f"\n{name}."
    spans += _level_spans(rest, len(text), k + 1)
    return Template("import", api, f"{text}{rest}(", tuple(spans))


def alias_template(api: Api, alias: str, setting: str) -> Template:
    """`import a.b as K` / `from a import b as K`, then `K.rest(`; only levels after the alias are masked."""
    _, target, kind = api.alias
    if kind == "import":
        statement = f"import {target} as {alias}"
    else:
        parent, name = target.rsplit(".", 1)
        statement = f"from {parent} import {name} as {alias}"
    rest = api.fqn[len(target) + 1 :]
    call = f"{statement}\n{alias}."
    spans = _level_spans(rest, len(call), target.count(".") + 1)
    return Template(setting, api, f"{call}{rest}(", tuple(spans), alias=alias)


def adversarial_aliases(api: Api, pool: list[tuple[str, str]], k: int, seed: int) -> list[str]:
    """k aliases the corpus uses for other modules, drawn with a seed per API (stable when other APIs change)."""
    own_alias, target, _ = api.alias
    names = set(api.fqn.split("."))
    choices = sorted({a for a, t in pool if t != target and a != own_alias and a not in names})
    rng = ids.seeded_rng(seed, api.fqn)
    return sorted(rng.sample(choices, min(k, len(choices))))


def docstring_index(inventory: pa.Table) -> dict[str, dict[str, str | None]]:
    """Docstring sentence per fqn, per "source/repository" that defines it."""
    out: dict[str, dict[str, str | None]] = defaultdict(dict)
    for fqn, source, repo, doc in zip(*(inventory.column(c).to_pylist() for c in ("fqn", "source", "repository", "doc"))):
        out[fqn][f"{source}/{repo}"] = doc
    return out


def nl_context(api: Api, docs: dict[str, dict[str, str | None]]) -> str | None:
    """The docstring of the API's own definition (re-exports followed through the corpus's imports),
    in its repository; never another definition found by its bare name. None when several
    repositories define that name with different docstrings."""
    by_repo = docs.get(api.definition, {})
    if api.repository is not None:
        return by_repo.get(api.repository)
    found = set(by_repo.values())
    return found.pop() if len(found) == 1 else None


def token_spans(tokenizer, texts: list[str]) -> list[list[tuple[int, int]]]:
    """Character offsets of each token (special tokens left out), whitespace trimmed."""
    out = []
    batch = 2048
    for i in range(0, len(texts), batch):
        chunk = texts[i : i + batch]
        enc = tokenizer(chunk, add_special_tokens=False, return_offsets_mapping=True)
        for text, offsets in zip(chunk, enc["offset_mapping"]):
            spans = []
            for s, e in offsets:
                while s < e and text[s].isspace():
                    s += 1
                if s < e:
                    spans.append((s, e))
            out.append(spans)
    return out


def overlapping(spans: list[tuple[int, int]], start: int, end: int) -> list[tuple[int, int]]:
    return [(max(s, start), min(e, end)) for s, e in spans if s < end and e > start]


def context_leak(context: str | None, answer: str, name: str) -> bool:
    """The nl context gives the answer away: it contains (ignoring case) the masked text (the name, or the
    first/last token a first/last-token quiz masks) or the whole masked name."""
    if not context:
        return False
    folded = context.casefold()
    return answer.casefold() in folded or name.casefold() in folded


def api_names(apis: list[Api]) -> pa.Table:
    """Which called names (per source and repository) are which quizzed API: the join from
    data/extract/usages.parquet's call sites to the quizzes, for each model's own seen/unseen."""
    rows = [{"api": a.fqn, "api_repository": a.repository, "fqn": fqn, "source": source, "repository": repo}
            for a in apis for fqn, source, repo in a.called_as]
    rows.sort(key=names_order)
    return pa.Table.from_pylist(rows, schemas.API_NAMES)


def names_order(r: dict) -> tuple:
    """The order of api_names.parquet's rows."""
    return (r["fqn"], r["source"], r["repository"], r["api"], r["api_repository"] or "")


def quiz_id(setting: str, api: str, level: int, position: str, alias: str | None, repository: str | None = None) -> str:
    parts = ["apiquiz", setting, api, level, position, alias or ""]
    if repository is not None:  # a user-defined name of one of several repositories
        parts.append(repository)
    return ids.stable_id(*parts)


def roles(api: Api) -> list[str]:
    """The kind of each level: `module` (a module prefix), `callable` (the called name), `member`
    (a class or object between them)."""
    n = api.fqn.count(".") + 1
    return ["module" if i < api.module_levels else "callable" if i == n - 1 else "member" for i in range(n)]


@dataclass(frozen=True)
class Pools:
    """Names per (level, mask position, kind), and per (parent path, mask position, kind): siblings.
    The kind is the level's definition kind (module / class / function / method, Api.level_kinds),
    not its position in the name (a kind read from the position, such as `callable`, mixed classes,
    functions and methods in one pool)."""

    by_level: dict[tuple[int, str, str], list[str]]
    by_parent: dict[tuple[str, str, str], list[str]]
    kind_names: dict[tuple[int, str, str], frozenset[str]]  # by_level as sets: "is this name of that kind here"
    role_names: dict[tuple[int, str, str], frozenset[str]]  # per (level, position, role): the former rule's sets
    known_names: dict[tuple[int, str, str], frozenset[str]]  # kind_names restricted to inventory-known kinds


def candidate_pools(apis: list[Api], split_token) -> Pools:
    level: dict[tuple[int, str, str], Counter] = defaultdict(Counter)
    parent: dict[tuple[str, str, str], Counter] = defaultdict(Counter)
    by_role: dict[tuple[int, str, str], set] = defaultdict(set)
    known: dict[tuple[int, str, str], set] = defaultdict(set)
    seen = set()
    for api in apis:
        parts = api.fqn.split(".")
        for i, (part, role, kind, is_known) in enumerate(zip(parts, roles(api), api.level_kinds, api.kinds_known)):
            first, last = split_token(part)
            above = ".".join(parts[:i])
            for position, name in (("whole", part), ("first", first), ("last", last)):
                if (api.fqn, api.repository, i, position) in seen:
                    continue
                seen.add((api.fqn, api.repository, i, position))
                level[(i, position, kind)][name] += 1
                parent[(above, position, kind)][name] += 1
                by_role[(i, position, role)].add(name)
                if is_known:
                    known[(i, position, kind)].add(name)

    def ranked(c: Counter) -> list[str]:
        return [n for n, _ in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))]

    return Pools({k: ranked(c) for k, c in level.items()}, {k: ranked(c) for k, c in parent.items()},
                 {k: frozenset(c) for k, c in level.items()}, {k: frozenset(c) for k, c in by_role.items()},
                 {k: frozenset(c) for k, c in known.items()})


def candidates(siblings: list[str], pool: list[str], gold: str, cap: int) -> tuple[list[str], int]:
    """Siblings of the gold first (same parent, same kind), then the same kind at that level, most
    frequent first; the gold always in. Returns (candidates, how many are siblings)."""
    out: list[str] = []
    taken = set()
    for name in itertools.chain(siblings, pool):
        if len(out) == cap:
            break
        if name not in taken:
            taken.add(name)
            out.append(name)
    if gold not in taken:
        out[-1] = gold
    sibling_set = set(siblings)
    return out, sum(c in sibling_set for c in out)


def exists_here(api: Api, include_optional: bool = False) -> bool:
    """The name exists on the pipeline's interpreter and platform: no platform label (an `optional_dependency`
    one only when asked to keep those), not a stdlib name the stdlib does not bind, nor a name a corpus module on
    its path does not bind."""
    return (api.platform is None or (include_optional and api.platform == platforms.OPTIONAL_DEPENDENCY)) \
        and not api.not_in_stdlib and not api.unbound


# A quiz's place in the one-job generation order, `_order`: (the API's index among the quizzed APIs, the template's
# index among its API's, the quiz's index among its template's) in these many bits each (the API's in the rest).
# It is the same number in any shard, so the shards' quizzes sorted by (quiz_id, _order) are the one job's.
TEMPLATE_BITS = QUIZ_BITS = 12


def generation_order(api_index: int, template: int, quiz: int) -> int:
    if template >> TEMPLATE_BITS or quiz >> QUIZ_BITS:
        raise ValueError(f"an API with {template + 1} quiz templates or a template with {quiz + 1} quizzes: over "
                         f"{1 << TEMPLATE_BITS} (lower apiquiz.adversarial_aliases)")
    return (api_index << (TEMPLATE_BITS + QUIZ_BITS)) | (template << QUIZ_BITS) | quiz


def api_shard(api: Api, shards: int) -> int:
    """The shard of an API's quizzes: by the hash of its name and repository (an API's calls come from many
    files, so apiquiz splits its APIs, not the corpus's files; `pipeline.core.ids.shard_of`)."""
    return ids.shard_of(ids.stable_id(api.fqn, api.repository or "", length=12), shards)


def quiz_rows(usages: pa.Table, inventory: pa.Table, imports: pa.Table, tokenizers: list[str], settings: list[str],
              max_candidates: int, n_adversarial: int, seed: int, include_private: bool = False,
              modules: pa.Table | None = None, chunk: int = 2048, include_optional: bool = False,
              shard: int = 0, shards: int = 1
              ) -> tuple[list[Api], list[Api], Iterator[tuple[list[dict], list[dict]]]]:
    """(every API, the quizzed APIs, an iterator of (quiz rows, token-flag rows) per chunk of
    templates, in generation order: nothing sorted, nothing held beyond one chunk). Each row carries
    `_order`, its place in the one-job generation order (`generation_order`; a flag row: its quiz's
    times the tokenizers, plus the tokenizer's index).

    `usages` may be the full table or its call rows aggregated with a count column `n` (see
    `aggregate_usages`), in which case `modules` gives the distinct (module, source, repository).
    With `shards` > 1, only the quizzes of `shard`'s APIs (`api_shard`); the APIs, their pools and
    every candidate list are still built over all APIs, so the shards' rows are the one job's."""
    names = Names(usages if modules is None else modules, imports, inventory)
    every_api = collect_apis(usages, names)
    # the universe is importable library code (a quiz on a test or docs helper probes no API): no
    # test/example/docs/tools/scripts definition, no method of a data attribute; private names only when asked
    # nor a name that does not exist on the pipeline's platform: another platform's (counted by platform) or a stdlib
    # name the interpreter's stdlib does not bind
    apis = [a for a in every_api if (include_private or not a.private) and a.library_code and not a.data_member
            and exists_here(a, include_optional) and not a.hidden]
    toks = [load_tokenizer(spec) for spec in tokenizers]
    primary = toks[0]

    def split_token(name: str) -> tuple[str, str]:
        spans = token_spans(primary, [name])[0] or [(0, len(name))]
        return name[spans[0][0] : spans[0][1]], name[spans[-1][0] : spans[-1][1]]

    docs = docstring_index(inventory)
    # module aliases (`import x.y as k`): the paper's adversarial aliases "used in other modules"
    alias_pool = sorted({a.alias[:2] for a in apis if a.alias and a.alias[2] == "import"})
    templates: list[tuple[int, Template]] = []  # (the template's generation order, quiz 0), the template
    for index, api in enumerate(apis):
        if shards > 1 and api_shard(api, shards) != shard:
            continue
        mine: list[Template] = []
        if "call" in settings:
            mine.append(call_template(api))
        if "import" in settings and (t := import_template(api)) is not None:
            mine.append(t)
        if api.alias:
            if "alias" in settings:
                mine.append(alias_template(api, api.alias[0], "alias"))
            if "adversarial_alias" in settings:
                mine += [alias_template(api, a, "adversarial_alias")
                         for a in adversarial_aliases(api, alias_pool, n_adversarial, seed)]
        if "nl" in settings:
            context = nl_context(api, docs)
            if context:
                mine.append(call_template(api, context))
        templates += [(generation_order(index, k, 0), t) for k, t in enumerate(mine)]
    pools = candidate_pools(apis, split_token)
    n_tok = len(tokenizers)

    def chunks() -> Iterator[tuple[list[dict], list[dict]]]:
        bar = tqdm(total=len(templates), desc="quizzes", unit="text", disable=None, file=sys.stderr)
        for first in range(0, len(templates), chunk):
            part = templates[first : first + chunk]
            spans_by_tok = [token_spans(tok, [t.text for _, t in part]) for tok in toks]
            quizzes, flags = [], []
            for ti, (base, t) in enumerate(part):
                parts = t.api.fqn.split(".")
                kinds = roles(t.api)
                primary_spans = spans_by_tok[0][ti]
                done = len(quizzes)  # this template's quizzes so far in the chunk: its quiz index is the rest
                for level, start, end in t.spans:
                    pieces = overlapping(primary_spans, start, end) or [(start, end)]
                    masks = [("whole", start, end)]
                    if len(pieces) > 1:
                        masks = [("first", start, pieces[0][1]), ("last", pieces[-1][0], end), ("whole", start, end)]
                    for position, a, b in masks:
                        answer = t.text[a:b]
                        leak = context_leak(t.context, answer, t.text[start:end])
                        role, kind = kinds[level], t.api.level_kinds[level]
                        cands, n_siblings = candidates(pools.by_parent[(".".join(parts[:level]), position, kind)],
                                                       pools.by_level[(level, position, kind)], answer, max_candidates)
                        qid = quiz_id(t.setting, t.api.fqn, level, position, t.alias, t.api.repository)
                        if len(quizzes) - done >> QUIZ_BITS:
                            raise ValueError(f"{t.api.fqn}: a template with over {1 << QUIZ_BITS} quizzes")
                        order = base + len(quizzes) - done
                        quizzes.append({
                            "quiz_id": qid, "api": t.api.fqn, "library": parts[0], "repository": t.api.repository,
                            "category": t.api.category, "private": t.api.private, "setting": t.setting,
                            "level": level, "n_levels": len(parts), "level_name": t.text[start:end],
                            "level_role": role, "mask_position": position, "alias": t.alias, "context": t.context,
                            "text": t.text[:a] + schemas.MASK + t.text[b:], "prefix": t.text[:a],
                            "suffix": t.text[b:], "answer": answer, "candidates": cands,
                            "candidates_siblings": n_siblings,
                            "level_kind": kind,
                            "candidates_same_kind": sum(c in pools.kind_names[(level, position, kind)] for c in cands),
                            "candidates_same_kind_known": sum(c in pools.known_names.get((level, position, kind), ())
                                                              for c in cands),
                            "candidates_same_role": sum(c in pools.role_names[(level, position, role)] for c in cands),
                            "seen": t.api.seen, "uses": t.api.uses, "context_leak": leak, "_order": order,
                        })
                        for k, (spec, spans) in enumerate(zip(tokenizers, spans_by_tok)):
                            inside = overlapping(spans[ti], a, b)
                            flags.append({"quiz_id": qid, "tokenizer": spec, "answer_tokens": len(inside),
                                          "single_token": len(inside) == 1 and (a, b) in spans[ti],
                                          "_order": order * n_tok + k})
            bar.update(len(part))
            yield quizzes, flags
        bar.close()

    return every_api, apis, chunks()


def generate(usages: pa.Table, inventory: pa.Table, imports: pa.Table, tokenizers: list[str], settings: list[str],
             max_candidates: int, n_adversarial: int, seed: int, include_private: bool = False,
             include_optional: bool = False) -> tuple[pa.Table, pa.Table, dict]:
    """Every quiz in memory (tests, small corpora); `write_quizzes` streams the same tables."""
    every_api, apis, parts = quiz_rows(usages, inventory, imports, tokenizers, settings, max_candidates,
                                       n_adversarial, seed, include_private, include_optional=include_optional)
    quizzes, flags = [], []
    for q, f in parts:
        quizzes += q
        flags += f
    quizzes.sort(key=lambda q: q["quiz_id"])
    flags.sort(key=lambda f: (f["quiz_id"], f["tokenizer"]))
    qt = pa.Table.from_pylist(quizzes, schemas.QUIZZES)
    ft = pa.Table.from_pylist(flags, schemas.QUIZ_TOKENS)
    return qt, ft, {**summary(every_api, apis, qt, ft, tokenizers),
                    **libraries_left_out(every_api, apis, inventory, include_private, include_optional)}


def aggregate_usages(path: Path, memory_limit: str = "1GB") -> tuple[pa.Table, pa.Table]:
    """The two small views of usages.parquet that generation needs, computed by DuckDB out of core:
    the call rows with an FQN, grouped with their count `n` (collect_apis weighs by it: the same
    APIs as from the rows themselves), and the distinct (module, source, repository) (Names)."""
    import duckdb

    con = duckdb.connect(config={"memory_limit": memory_limit, "threads": 1})
    src = f"read_parquet('{str(path).replace(chr(39), chr(39) * 2)}')"
    calls = con.sql(
        "SELECT kind, fqn, category, split, alias, import_target, import_statement, source, repository, "
        f"count(*) AS n FROM {src} WHERE kind IN ('call', 'method') AND fqn IS NOT NULL GROUP BY ALL "
        "ORDER BY ALL").to_arrow_table()
    modules = con.sql(f"SELECT DISTINCT module, source, repository FROM {src} ORDER BY ALL").to_arrow_table()
    con.close()
    return calls, modules


SPILL_ROWS = 4096
UNSORTED_QUIZZES = pa.schema([*schemas.QUIZZES, pa.field("_order", pa.int64())])
UNSORTED_TOKENS = pa.schema([*schemas.QUIZ_TOKENS, pa.field("_order", pa.int64())])


def _spill(parts: Iterator[tuple[list[dict], list[dict]]], q_path: Path, f_path: Path) -> tuple[int, int]:
    """The quiz and flag rows as they are generated, unsorted, with their `_order`, to two Parquet files."""
    import pyarrow.parquet as pq

    n_quizzes = n_flags = 0
    with pq.ParquetWriter(q_path, UNSORTED_QUIZZES) as qw, pq.ParquetWriter(f_path, UNSORTED_TOKENS) as fw:
        for quizzes, flags in parts:
            n_quizzes, n_flags = n_quizzes + len(quizzes), n_flags + len(flags)
            qw.write_table(pa.Table.from_pylist(quizzes, UNSORTED_QUIZZES))
            fw.write_table(pa.Table.from_pylist(flags, UNSORTED_TOKENS))
    return n_quizzes, n_flags


def _sorted_out(q_paths: list[Path], f_paths: list[Path], out_quizzes: Path, out_tokens: Path, tmpdir: Path,
                memory_limit: str, tokenizers: list[str]) -> dict:
    """The unsorted parts (one job's, or every shard's) sorted out of core by DuckDB by (quiz_id, the one-job
    generation order) and written with `parquet_stream`; the quiz half of the metrics (`quiz_summary`)."""
    import duckdb

    def files(paths: list[Path]) -> str:
        return "read_parquet([" + ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths) + "])"

    # a cap, not an allocation: the sort spills beyond it. 128MB failed on the default corpus ("failed to
    # pin block": wide quiz rows), so the cap is 1GB, about the old in-memory build's peak at 1,600 files
    con = duckdb.connect(config={"memory_limit": memory_limit, "temp_directory": str(tmpdir / "duckdb"),
                                 "threads": 1})
    with parquet_stream(out_quizzes, schemas.QUIZZES) as w:
        for batch in con.sql(f"SELECT * EXCLUDE (_order) FROM {files(q_paths)} "
                             "ORDER BY quiz_id, _order").to_arrow_reader(SPILL_ROWS):
            w.write(batch)
    with parquet_stream(out_tokens, schemas.QUIZ_TOKENS) as w:
        for batch in con.sql(f"SELECT * EXCLUDE (_order) FROM {files(f_paths)} "
                             "ORDER BY quiz_id, tokenizer, _order").to_arrow_reader(1 << 16):
            w.write(batch)
    # the summary reads the columns it counts, never the texts and candidate lists
    slim = con.sql("SELECT quiz_id, setting, mask_position, seen, context_leak, level_kind, candidates_same_kind, "
                   "candidates_same_kind_known, candidates_same_role, candidates_siblings, "
                   f"len(candidates) AS n_candidates FROM {files(q_paths)} ORDER BY _order").to_arrow_table()
    flags = con.sql(f"SELECT * EXCLUDE (_order) FROM {files(f_paths)} ORDER BY _order").to_arrow_table()
    con.close()
    return quiz_summary(slim, flags, tokenizers)


def write_quizzes(usages: Path, inventory: pa.Table, imports: pa.Table, tokenizers: list[str], settings: list[str],
                  max_candidates: int, n_adversarial: int, seed: int, include_private: bool, out_quizzes: Path,
                  out_tokens: Path, tmpdir: Path, memory_limit: str = "1GB", chunk: int = 512,
                  out_names: Path | None = None, include_optional: bool = False) -> dict:
    """`generate`, streamed: usages aggregated by DuckDB, quizzes produced per chunk of templates,
    spilled unsorted with their generation order, sorted out of core by DuckDB (ties keep the
    generation order, as the in-memory stable sort did) and written with `parquet_stream`: the same
    bytes as `write_parquet` of `generate`'s tables. Returns the metrics."""
    calls, modules = aggregate_usages(usages, memory_limit)
    every_api, apis, parts = quiz_rows(calls, inventory, imports, tokenizers, settings, max_candidates,
                                       n_adversarial, seed, include_private, modules=modules, chunk=chunk,
                                       include_optional=include_optional)
    if out_names is not None:
        write_parquet(api_names(apis), out_names, schemas.API_NAMES)
    q_path, f_path = tmpdir / "quizzes.unsorted.parquet", tmpdir / "tokens.unsorted.parquet"
    _spill(parts, q_path, f_path)
    return {**api_summary(every_api, apis),
            **_sorted_out([q_path], [f_path], out_quizzes, out_tokens, tmpdir, memory_limit, tokenizers),
            **libraries_left_out(every_api, apis, inventory, include_private, include_optional)}


# --- apiquiz.shards > 1: each shard job quizzes its APIs (api_shard), the merge sorts every shard's rows -------

def part_path(part: Path, table: str) -> Path:
    """A shard's table beside its part file: X.json -> X.<table>.parquet."""
    return part.with_suffix(f".{table}.parquet")


def write_part(usages: Path, inventory: pa.Table, imports: pa.Table, tokenizers: list[str], settings: list[str],
               max_candidates: int, n_adversarial: int, seed: int, include_private: bool, part: Path, shard: int,
               shards: int, memory_limit: str = "1GB", chunk: int = 512, include_optional: bool = False) -> dict:
    """Shard `shard` of `shards`: its APIs' quizzes and flags unsorted with their one-job `_order`, its APIs'
    names, and the part file (what the merge checks and the API half of the metrics, the same in every shard)."""
    calls, modules = aggregate_usages(usages, memory_limit)
    every_api, apis, parts = quiz_rows(calls, inventory, imports, tokenizers, settings, max_candidates,
                                       n_adversarial, seed, include_private, modules=modules, chunk=chunk,
                                       include_optional=include_optional, shard=shard, shards=shards)
    write_parquet(api_names([a for a in apis if api_shard(a, shards) == shard]), part_path(part, "names"),
                  schemas.API_NAMES)
    n_quizzes, n_flags = _spill(parts, part_path(part, "quizzes"), part_path(part, "tokens"))
    meta = {"shard": shard, "shards": shards, "tokenizers": tokenizers, "quizzes": n_quizzes, "flags": n_flags,
            "api_metrics": api_summary(every_api, apis),
            "libraries": libraries_left_out(every_api, apis, inventory, include_private, include_optional)}
    write_json(meta, part)
    return meta


def merge_parts(parts: list[Path], out_quizzes: Path, out_tokens: Path, out_names: Path, tmpdir: Path,
                memory_limit: str = "1GB", tokenizers: list[str] | None = None) -> dict:
    """The shards' parts as one job's outputs (the same bytes): quizzes and flags sorted as one job sorts
    them (the `_order` each shard wrote is the one-job generation order), the names sorted as `api_names`
    sorts them. Every shard of one run, once: else ValueError naming what is missing or differs."""
    import json

    metas = [json.loads(p.read_text()) for p in parts]
    shards = {m["shards"] for m in metas}
    if len(shards) != 1 or sorted(m["shard"] for m in metas) != list(range(next(iter(shards)))):
        raise ValueError("apiquiz --merge needs every shard of one run once: got "
                         + ", ".join(f"{p.name}: shard {m['shard']} of {m['shards']}" for p, m in zip(parts, metas)))
    if tokenizers is not None and metas[0]["tokenizers"] != tokenizers:
        raise ValueError(f"apiquiz --merge: the parts were built with --tokenizers {metas[0]['tokenizers']}, the merge "
                         f"is given {tokenizers}; rebuild every shard")
    for key in ("tokenizers", "api_metrics", "libraries"):
        if any(m.get(key) != metas[0].get(key) for m in metas[1:]):
            raise ValueError(f"apiquiz --merge: the parts differ in {key} (built from different inputs or params); "
                             "rebuild every shard")
    names = [r for p in parts for r in read_parquet(part_path(p, "names"), schemas.API_NAMES).to_pylist()]
    names.sort(key=names_order)
    write_parquet(pa.Table.from_pylist(names, schemas.API_NAMES), out_names, schemas.API_NAMES)
    return {**metas[0]["api_metrics"],
            **_sorted_out([part_path(p, "quizzes") for p in parts], [part_path(p, "tokens") for p in parts],
                          out_quizzes, out_tokens, tmpdir, memory_limit, metas[0]["tokenizers"]),
            **metas[0].get("libraries", {})}


def summary(every_api: list[Api], apis: list[Api], quizzes: pa.Table, flags: pa.Table, tokenizers: list[str]) -> dict:
    """The metrics: the APIs' (`api_summary`), then the quizzes' (`quiz_summary`)."""
    return {**api_summary(every_api, apis), **quiz_summary(quizzes, flags, tokenizers)}


def left_out_reason(api: Api, include_private: bool = False, include_optional: bool = False) -> str | None:
    """Why an API is not quizzed (`quiz_rows`' filter, its first reason; the names of `api_summary`'s counts), or
    None when it is."""
    if not api.library_code:
        return "not_library_code"
    if api.data_member:
        return "data_member"
    if api.platform is not None and not (include_optional and api.platform == platforms.OPTIONAL_DEPENDENCY):
        return api.platform
    if api.not_in_stdlib:
        return "not_in_stdlib"
    if api.unbound:
        return "unbound"
    if api.hidden:
        return "hidden_module"
    if api.private and not include_private:
        return "private"
    return None


_REASONS = {"not_library_code": "defined in test, example, docs or script modules",
            "data_member": "members of data attributes", "private": "with no public name",
            "not_in_stdlib": "stdlib names the pinned interpreter does not bind",
            "unbound": "names the module does not bind once it has run",
            "hidden_module": "reached only through a module a package attribute hides"}


def libraries_left_out(every_api: list[Api], apis: list[Api], inventory: pa.Table, include_private: bool = False,
                       include_optional: bool = False) -> dict:
    """Per top-level library of the corpus (the inventory's `library`) whose called APIs are all left out, why:
    `libraries_without_quizzes` {library: {apis, left_out: {reason: n}, needs: [top-level names its modules import
    that no distribution of the corpus or its declared dependencies provides]}} and `why_none` {library: one
    sentence} (what the evaluation check prints for its source, pipeline.manifest.evaluation)."""
    corpus = set(inventory.column("library").to_pylist())
    quizzed = {a.definition.split(".", 1)[0] for a in apis}
    needs: dict[str, set[str]] = defaultdict(set)
    for module, top in missing_modules(inventory).items():
        needs[module.split(".", 1)[0]].add(top)
    left: dict[str, Counter] = defaultdict(Counter)
    for api in every_api:
        top = api.definition.split(".", 1)[0]
        if top in corpus and top not in quizzed:
            left[top][left_out_reason(api, include_private, include_optional) or "quizzed"] += 1
    out, why = {}, {}
    for top, reasons in sorted(left.items()):
        if set(reasons) == {"not_library_code"}:  # no library (a test suite, an sdist-root script): nothing to explain
            continue
        n = sum(reasons.values())
        out[top] = {"apis": n, "left_out": dict(sorted(reasons.items())), "needs": sorted(needs.get(top, ()))}
        parts = []
        for reason, count in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
            if reason == platforms.OPTIONAL_DEPENDENCY:
                missing = ", ".join(sorted(needs.get(top, ()))) or "a distribution"
                parts.append(f"{count} because {top} imports {missing} at the top level of its modules, a "
                             "distribution neither in the corpus nor declared as a required dependency of it, so "
                             f"`import {top}` fails where it is installed without extras (add {missing} to the "
                             "corpus, or set apiquiz.include_optional_dependencies: true)")
            else:
                parts.append(f"{count} {_REASONS.get(reason, 'only on platform ' + reason)}")
        why[top] = f"all {n} of its called APIs are left out: " + "; ".join(parts)
    return {"libraries_without_quizzes": out, "why_none": why}


def api_summary(every_api: list[Api], apis: list[Api]) -> dict:
    """The metrics counted over the APIs: how many are quizzed, and why the others are left out."""
    return {
        "apis": len(apis),
        "apis_private_left_out": sum(a.private and a.library_code and not a.data_member and a.platform is None
                                     and not a.not_in_stdlib and not a.unbound for a in every_api)
        - sum(a.private for a in apis),
        "apis_not_library_code_left_out": sum(not a.library_code for a in every_api),
        "apis_data_member_left_out": sum(a.library_code and a.data_member for a in every_api),
        # names that do not exist here (a quiz on them is invalid): defined only for another platform, per
        # platform; stdlib names the pinned interpreter's stdlib does not bind
        "apis_platform_left_out": dict(sorted(Counter(a.platform for a in every_api if a.library_code
                                                      and not a.data_member and a.platform is not None).items())),
        "apis_not_in_stdlib_left_out": sum(a.library_code and not a.data_member and a.platform is None
                                           and a.not_in_stdlib for a in every_api),
        # names a corpus module on the path does not bind once it has run (deleted, gone from the pinned release)
        "apis_unbound_left_out": sum(a.library_code and not a.data_member and a.platform is None
                                     and not a.not_in_stdlib and a.unbound for a in every_api),
        # no spelling means the definition in every setting (each goes through a module hidden by a package attribute)
        "apis_hidden_module_left_out": sum(a.library_code and not a.data_member and a.platform is None
                                           and not a.not_in_stdlib and not a.unbound and a.hidden for a in every_api),
        "apis_with_other_names": sum(bool(a.other_names) for a in apis),
        "apis_private_share": round(sum(a.private for a in every_api) / max(1, len(every_api)), 4),
        "apis_seen": sum(a.seen for a in apis),
        "apis_with_alias": sum(a.alias is not None for a in apis),
        "apis_per_repository": sum(a.repository is not None for a in apis),
        "apis_by_category": dict(sorted(Counter(a.category for a in apis).items())),
        "apis_without_import_quiz": sum(a.module_levels == 0 for a in apis),
    }


def quiz_summary(quizzes: pa.Table, flags: pa.Table, tokenizers: list[str]) -> dict:
    """The metrics counted over the quizzes and their per-tokenizer flags (`quizzes` may hold only the counted
    columns, with `n_candidates` for the candidate lists)."""
    def counts(col):
        return dict(sorted(Counter(col.to_pylist()).items()))

    single = flags.filter(flags.column("single_token"))
    all_single = Counter(single.column("quiz_id").to_pylist())
    every = {q for q, n in all_single.items() if n == len(tokenizers)}
    setting_of = dict(zip(quizzes.column("quiz_id").to_pylist(), quizzes.column("setting").to_pylist()))
    lengths = (quizzes.column("n_candidates") if "n_candidates" in quizzes.column_names
               else pc.list_value_length(quizzes.column("candidates")))
    n_cands = pc.sum(lengths).as_py() or 0
    return {
        "quizzes": quizzes.num_rows,
        "quizzes_by_setting": counts(quizzes.column("setting")),
        "quizzes_by_mask_position": counts(quizzes.column("mask_position")),
        "quizzes_seen": int(pc.sum(quizzes.column("seen")).as_py() or 0),
        # nl quizzes whose context gives the answer away, per mask position (left out of the headline)
        "nl_context_leaks_by_mask_position": counts(quizzes.filter(quizzes.column("context_leak"))
                                                   .column("mask_position")),
        "nl_quizzes_by_mask_position": counts(quizzes.filter(pc.equal(quizzes.column("setting"), "nl"))
                                              .column("mask_position")),
        "candidates_same_kind_share": round((pc.sum(quizzes.column("candidates_same_kind")).as_py() or 0)
                                            / max(1, n_cands), 4),
        # figures that do not flatter the pools: same kind by the inventory alone (a guessed kind is not
        # counted); the former role rule's share; per kind
        "candidates_same_kind_known_share": round((pc.sum(quizzes.column("candidates_same_kind_known")).as_py() or 0)
                                                  / max(1, n_cands), 4),
        "candidates_same_role_share": round((pc.sum(quizzes.column("candidates_same_role")).as_py() or 0)
                                            / max(1, n_cands), 4),
        "candidates_same_kind_share_by_kind": _share_by(quizzes, lengths, "level_kind", "candidates_same_kind"),
        # the honest figure per kind: candidates whose kind at that level is read from what the name is (the
        # inventory's definition, re-exports and aliases followed; a compiled stdlib object's type), not guessed
        "candidates_same_kind_known_share_by_kind": _share_by(quizzes, lengths, "level_kind",
                                                              "candidates_same_kind_known"),
        "candidates_per_quiz_by_kind": _mean_by(quizzes, lengths, "level_kind"),
        "candidates_sibling_share": round((pc.sum(quizzes.column("candidates_siblings")).as_py() or 0)
                                          / max(1, n_cands), 4),
        "single_token_quizzes_by_tokenizer": counts(single.column("tokenizer")),
        "single_token_in_every_tokenizer_by_setting": dict(sorted(Counter(setting_of[q] for q in every).items())),
    }


def _share_by(quizzes: pa.Table, lengths, by: str, column: str) -> dict[str, float]:
    """sum(column) / sum(candidates) per value of `by`."""
    num, den = Counter(), Counter()
    for key, n, total in zip(quizzes.column(by).to_pylist(), quizzes.column(column).to_pylist(), lengths.to_pylist()):
        num[key] += n
        den[key] += total
    return {k: round(num[k] / max(1, den[k]), 4) for k in sorted(den)}


def _mean_by(quizzes: pa.Table, lengths, by: str) -> dict[str, float]:
    """Mean number of candidates per quiz, per value of `by`."""
    total, count = Counter(), Counter()
    for key, n in zip(quizzes.column(by).to_pylist(), lengths.to_pylist()):
        total[key] += n
        count[key] += 1
    return {k: round(total[k] / count[k], 2) for k in sorted(count)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m pipeline.families.apiquiz.generate",
        description="Generate the apiquiz (INK) cloze quizzes from the extracted call FQNs: call, import, alias, "
        "adversarial alias and NL-context settings, each level masked whole and at its first/last token, with "
        "candidate lists and per-tokenizer single-token flags.",
    )
    ap.add_argument("--usages", required=True, type=Path, help="data/extract/usages.parquet")
    ap.add_argument("--inventory", required=True, type=Path, help="data/extract/inventory.parquet")
    ap.add_argument("--imports", required=True, type=Path, help="data/extract/imports.parquet (modules, re-exports)")
    ap.add_argument("--include-private", action="store_true", help="also quiz APIs with no public name")
    ap.add_argument("--include-optional-dependencies", action="store_true",
                    help="also quiz APIs of modules that need, at import, a distribution the corpus does not hold")
    ap.add_argument("--tokenizers", nargs="+", required=True,
                    help="model folders, hub ids in the local cache, or package:<module>/<folder>; the first "
                    "decides the first/last-token masks")
    ap.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=SETTINGS)
    ap.add_argument("--max-candidates", type=int, required=True)
    ap.add_argument("--adversarial-aliases", type=int, required=True, help="aliases per adversarial quiz group")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--quizzes", type=Path, help="the quizzes (one job, or --merge)")
    ap.add_argument("--tokens", type=Path, help="per-tokenizer answer token counts (one job, or --merge)")
    ap.add_argument("--names", type=Path,
                    help="which called names (per source, repository) are which quizzed API: for each model's seen "
                    "(one job, or --merge)")
    ap.add_argument("--metrics", type=Path, help="the metrics JSON (one job, or --merge)")
    sharding.add_arguments(ap, "merge the shards' part files (--part of each shard job) into --quizzes, --tokens, "
                           "--names and --metrics: the bytes of one job",
                           shards_help="jobs the APIs are split over by the hash of their name and repository (an "
                           "API's calls come from many files; every shard still reads the whole extraction for the "
                           "APIs and candidate pools) (1: all APIs)")
    ap.add_argument("--part", type=Path, help="with --shard/--shards: this shard's part file (its tables beside it: "
                    "X.quizzes.parquet, X.tokens.parquet, X.names.parquet)")
    args = ap.parse_args(argv)
    sharding.check_arguments(ap, args)
    outputs = {"--quizzes": args.quizzes, "--tokens": args.tokens, "--names": args.names, "--metrics": args.metrics}
    if args.part is not None:
        if args.merge or any(outputs.values()):
            ap.error("--part writes one shard's part: give it with --shard/--shards, without --merge or the outputs")
    elif args.shards > 1:
        ap.error("--shards > 1 writes one shard's part: give --part")
    elif missing := [k for k, v in outputs.items() if v is None]:
        ap.error(f"give {', '.join(missing)} (or --part with --shard/--shards)")
    logs.setup()
    import pyarrow.parquet as pq

    if args.merge:
        args.quizzes.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".apiquiz-", dir=args.quizzes.parent) as tmp:
            stats = merge_parts(args.merge, args.quizzes, args.tokens, args.names, Path(tmp),
                                tokenizers=args.tokenizers)
        write_json(stats, args.metrics)
        log.info("apiquiz: %d shards merged: %d APIs, %d quizzes", len(args.merge), stats["apis"], stats["quizzes"])
        return 0
    if not pq.read_schema(args.usages).equals(core_schemas.USAGES, check_metadata=False):
        raise ValueError(f"{args.usages}: schema differs from the declared one")
    inventory = read_parquet(args.inventory, core_schemas.INVENTORY)
    imports = read_parquet(args.imports, core_schemas.IMPORTS)
    if args.part is not None:
        args.part.parent.mkdir(parents=True, exist_ok=True)
        meta = write_part(args.usages, inventory, imports, args.tokenizers, args.settings, args.max_candidates,
                          args.adversarial_aliases, args.seed, args.include_private, args.part, args.shard,
                          args.shards, include_optional=args.include_optional_dependencies)
        log.info("apiquiz shard %d of %d: %d quizzes", args.shard, args.shards, meta["quizzes"])
        return 0
    args.quizzes.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".apiquiz-", dir=args.quizzes.parent) as tmp:
        stats = write_quizzes(args.usages, inventory, imports, args.tokenizers, args.settings,
                              args.max_candidates, args.adversarial_aliases, args.seed, args.include_private,
                              args.quizzes, args.tokens, Path(tmp), out_names=args.names,
                              include_optional=args.include_optional_dependencies)
    write_json(stats, args.metrics)
    log.info("apiquiz: %d APIs, %d quizzes %s", stats["apis"], stats["quizzes"], stats["quizzes_by_setting"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
