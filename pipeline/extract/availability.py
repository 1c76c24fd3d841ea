"""Does an API exist on the pipeline's (pinned, Linux) platform? A family that asks a model for an API by
name leaves out the names that do not exist here (an answer that cannot be called on this platform is no
valid item), by one of two reasons:

- a name of the corpus defined only under a guard for another platform, or only when the module runs as a
  script: the inventory's `platform` / `platform_names` (`pipeline.extract.platforms`; colorama.win32's
  `SetConsoleMode` is `windows`), re-exports followed (`pkg.SetConsoleMode` from `pkg/__init__.py`'s
  `from .win32 import SetConsoleMode`);
- a standard-library name: `pipeline.extract.stdlib.StdlibNames` reads the interpreter's stdlib
  (`ctypes.WinError` is `windows`; `os.path.mkdir` does not exist: `absent`).

`verdict(fqn, category)` is None when the name exists here (or cannot be judged: kept), else the reason it
is left out: a platform label (`windows`, `other`, `main`, ...; counted per label as `apis_platform_left_out`)
or `absent` (a stdlib name the stdlib does not bind; counted as `apis_not_in_stdlib_left_out`).
"""

from __future__ import annotations

import sys
from collections import Counter

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.extract.platforms import OPTIONAL_DEPENDENCY
from pipeline.extract.stdlib import ABSENT, PRESENT, UNKNOWN, StdlibNames

NOT_IN_STDLIB = ABSENT
MAX_HOPS = 16


def platform_labels(inventory: pa.Table | None) -> dict[str, str]:
    """`module.name` (or a whole module) -> its platform label, from the inventory's `platform` (a module that
    imports a Windows-only module), `platform_names` (`name:label` entries of names bound under a guard) and
    `requires` (`missing_modules`: a module that cannot be imported without a distribution the corpus lacks)."""
    labels: dict[str, str] = {}
    if inventory is None or "platform_names" not in inventory.column_names:
        return labels
    for module, kind, platform, entries in zip(*(inventory.column(c).to_pylist() for c in
                                                 ("module", "kind", "platform", "platform_names"))):
        if kind == "module" and platform is not None:
            labels[module] = platform
        for entry in entries or ():
            name, _, label = entry.rpartition(":")
            labels[f"{module}.{name}"] = label
    for module in missing_modules(inventory):
        labels.setdefault(module, OPTIONAL_DEPENDENCY)
    return labels


def alias_targets(inventory: pa.Table | None) -> dict[str, str]:
    """`module.name` -> what the module's top-level alias `name = other` binds (the inventory's `aliases`):
    `boltons.dictutils.OMD` -> `boltons.dictutils.OrderedMultiDict`, one definition under two names."""
    out: dict[str, str] = {}
    if inventory is None or "aliases" not in inventory.column_names:
        return out
    rows = inventory.filter(pc.is_valid(inventory.column("aliases")))
    for module, entries in zip(rows.column("module").to_pylist(), rows.column("aliases").to_pylist()):
        for entry in entries:
            name, _, target = entry.partition("=")
            if target and target != f"{module}.{name}":
                out.setdefault(f"{module}.{name}", target)
    return out


def installed_tops(inventory: pa.Table | None) -> set[str] | None:
    """Top-level names there wherever the corpus is installed without extras: the corpus's own, the standard
    library's and its distributions' declared required dependencies (`urllib3` for requests). None: an inventory
    that does not record dependencies (not judged)."""
    if inventory is None or "dependencies" not in inventory.column_names:
        return None
    if not pc.any(pc.equal(inventory.column("kind"), "module")).as_py():  # no module recorded: nothing to judge by
        return None
    out = set(inventory.column("library").to_pylist()) | set(sys.stdlib_module_names) | set(sys.builtin_module_names)
    for deps in inventory.filter(pc.is_valid(inventory.column("dependencies"))).column("dependencies").to_pylist():
        out.update(deps)
    return out


def missing_modules(inventory: pa.Table | None) -> dict[str, str]:
    """Modules of the corpus whose top-level imports need a distribution that is neither in the corpus, nor the
    stdlib, nor a declared required dependency (the inventory's `requires`): tqdm.contrib.slack's `from slack_sdk
    import WebClient`, tenacity.tornadoweb's `from tornado import gen`; and, to a fixed point, the corpus
    modules that import such a module at their top level. module -> the first missing top-level name."""
    if inventory is None or "requires" not in inventory.column_names:
        return {}
    rows = inventory.filter(pc.equal(inventory.column("kind"), "module"))
    requires = dict(zip(rows.column("module").to_pylist(), rows.column("requires").to_pylist()))
    # where the corpus is installed, each distribution's required dependencies are too (flask imports markupsafe,
    # which jinja2 and werkzeug declare, flask does not)
    tops = installed_tops(inventory) or set(inventory.column("library").to_pylist())
    missing: dict[str, str] = {}
    for module, needs in requires.items():
        for name in needs or ():
            top = name.split(".", 1)[0]
            if top not in tops:
                missing[module] = top
                break
    grew = True
    while grew:  # a module importing a module that cannot be imported cannot be imported either
        grew = False
        for module, needs in requires.items():
            if module in missing:
                continue
            reason = next((missing[n] for n in needs or () if n in missing and n != module), None)
            if reason is not None:
                missing[module], grew = reason, True
    return dict(sorted(missing.items()))


class Availability:
    """Verdicts from the extraction's inventory (platform labels) and imports (re-exports), and the stdlib
    checker; each verdict is computed once."""

    def __init__(self, inventory: pa.Table | None, imports: pa.Table | None = None,
                 stdlib: StdlibNames | None = None):
        self.platforms = platform_labels(inventory)  # `module.name` (or a whole module) -> its platform label
        self.reexports: dict[str, str] = {}  # `pkg.name` -> what `pkg`'s module-level import binds it to
        if imports is not None:
            cols = ("module", "kind", "asname", "bound", "target", "scope", "star")
            for module, kind, asname, bound, target, scope, star in zip(*(imports.column(c).to_pylist() for c in cols)):
                if (not star and target is not None and scope == "" and bound and module
                        and all(part.isidentifier() for part in module.split("."))  # a script re-exports nothing
                        and (kind == "from" or asname) and f"{module}.{bound}" != target):
                    self.reexports.setdefault(f"{module}.{bound}", target)
        for name, target in alias_targets(inventory).items():
            self.reexports.setdefault(name, target)
        self.stdlib = stdlib if stdlib is not None else StdlibNames()
        self._cache: dict[tuple[str, str | None], str | None] = {}

    def platform(self, fqn: str) -> str | None:
        """The platform label of the longest prefix of `fqn` (or of what it re-exports) bound only under a
        platform guard; None: it exists here as far as the corpus says."""
        seen = set()
        for _ in range(MAX_HOPS):
            if fqn in seen:
                return None
            seen.add(fqn)
            parts = fqn.split(".")
            moved = False
            for i in range(len(parts), 0, -1):
                prefix = ".".join(parts[:i])
                found = self.platforms.get(prefix)
                if found is not None:
                    return found
                target = self.reexports.get(prefix)
                if target is not None:
                    fqn, moved = ".".join([target, *parts[i:]]), True
                    break
            if not moved:
                return None
        return None

    def verdict(self, fqn: str, category: str | None) -> str | None:
        """None: exists here (or not judged); else a platform label or `absent` (see the module docstring)."""
        key = (fqn, category)
        if key not in self._cache:
            out = self.platform(fqn)
            if out is None and category == "stdlib" and fqn.split(".", 1)[0] in sys.stdlib_module_names:
                status = self.stdlib.status(fqn)
                out = None if status in (PRESENT, UNKNOWN) else status
            self._cache[key] = out
        return self._cache[key]


def left_out_counts(verdicts: dict[str, str | None]) -> dict:
    """The left-out counters over distinct APIs, as a family's metrics report them: `apis_platform_left_out`
    (per label) and `apis_not_in_stdlib_left_out`."""
    labels = Counter(v for v in verdicts.values() if v is not None and v != NOT_IN_STDLIB)
    return {"apis_platform_left_out": dict(sorted(labels.items())),
            "apis_not_in_stdlib_left_out": sum(v == NOT_IN_STDLIB for v in verdicts.values())}
