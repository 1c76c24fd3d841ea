"""Does a standard-library name exist on the pipeline's (pinned) interpreter? Read from the
interpreter's own stdlib source by CPython's `ast`, never imported (without it `os.path.mkdir`, a call
in a docs script to a function that does not exist, became a quiz; `ctypes.WinError` and
`msvcrt.get_osfhandle` exist on Windows only).

`StdlibNames().status("os.path.join")` follows the module's module-level bindings the way an import
would: `import posixpath as path` (the branch this platform takes: `pipeline.extract.platforms`),
`from X import y` (X's attribute or submodule y), star imports (every public name), submodules,
and answers:

- `present`: bound at module level (what it is and its attributes are not checked further);
- `unknown`: it goes through a C module (`posix`, `math`: no source to read), a module-level
  `__getattr__`, a module that makes names at run time (`globals().update(...)`: multiprocessing;
  `mod_dict = globals()` written through: inspect; enum `_convert_` and `global_enum`: ssl, re), or more than `MAX_HOPS` bindings: not judged, kept;
- `absent`: the module exists here and nothing binds the name, or the module cannot be imported here
  (a top-level import of a name that does not exist, or of a module outside the stdlib);
- `windows` / `other`: bound only under a guard for that platform (`platforms`), or a module that
  exists only there (`msvcrt`, `winreg`; `other`: a stdlib module not built on this interpreter);
- `capability`: bound only under a capability test that fails here (`if hasattr(_socket.socket, "share"):`
  binds `socket.fromshare`; the test is evaluated by this checker, attributes of a compiled module's
  classes included: `hasattr` on the type, never on an instance; a test it cannot judge leaves the name
  out too);
- `optional_dependency`: bound only in a `try` that imports another distribution
  (`distutils.command.check.SilentReporter`, defined after `from docutils.utils import Reporter`).

A name that does not exist here is told apart by typeshed's stubs (jedi's copy, pinned with jedi; the
*platform table*): where the stub defines it only under `sys.platform` tests that fail here, it is `windows`
when Windows has it and `other` otherwise (`os.chflags`, `select.kevent`: BSD and macOS); the source alone
cannot say, since os.py binds both through `from posix import *` / `from nt import *`.
"""

from __future__ import annotations

import ast
import importlib
import re
import importlib.machinery
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.extract import platforms

PRESENT, UNKNOWN, ABSENT = "present", "unknown", "absent"
# a name bound only under labels: the reason reported, in this order of preference
_LABEL_ORDER = (platforms.WINDOWS, platforms.MAIN, platforms.OTHER, platforms.CAPABILITY, platforms.OPTIONAL_DEPENDENCY)
MAX_HOPS = 24
_C_MODULE = "C"
# compiled modules never imported to read their names (they load a GUI toolkit or a terminal library, or exist to
# test the interpreter)
_NOT_IMPORTED = frozenset({"_tkinter", "readline", "_curses", "_curses_panel", "_testcapi", "_testinternalcapi",
                           "_testbuffer", "_testimportmultiple", "_testmultiphase", "_xxtestfuzz", "xxlimited",
                           "xxlimited_35", "_xxsubinterpreters", "_ctypes_test", "_testclinic", "_testsinglephase",
                           "_xxinterpchannels", "xxsubtype", "_tracemalloc", "faulthandler"})


@dataclass(frozen=True)
class CModule:
    """A compiled module of this interpreter: the names `dir()` lists (and the module, for the attributes of
    its classes)."""

    names: frozenset[str]
    module: object = field(default=None, compare=False, repr=False)

    def has(self, rest: list[str]) -> bool:
        """`rest[0]` is a name of the module and, when it is a class, `rest[1]` an attribute of the class
        (looked up on the type: no instance is made, no Python code runs)."""
        if not rest:
            return True
        if rest[0] not in self.names:
            return False
        if len(rest) > 1 and self.module is not None:
            obj = getattr(self.module, rest[0], None)
            if isinstance(obj, type) and not hasattr(obj, rest[1]):
                return False
        return True
_DYNAMIC = ("globals().update", "globals()[", "vars().update", "setattr(sys.modules", "_convert_(", "global_enum")
# `x.__dict__.update(...)` makes names at run time only outside a function: inside one it fills an instance
# (copy.py's `_reconstruct`: `y.__dict__.update(state)`; judged dynamic, `copy.replace`, 3.13's, was kept on 3.11)
_DICT_UPDATE = "__dict__.update"
_GLOBALS_ALIAS = re.compile(r"^(\w+) = globals\(\)", re.M)  # `mod_dict = globals()`, then `mod_dict[k] = v`: dynamic


@dataclass
class ModuleInfo:
    """A module's module-level bindings: name -> [(binding, platform label)], in source order."""

    name: str
    is_package: bool
    bindings: dict[str, list[tuple[tuple, str | None]]] = field(default_factory=dict)
    stars: list[tuple[str, str | None]] = field(default_factory=list)
    dynamic: bool = False  # a module-level `__getattr__`
    # the imports of its top-level statements (not under `if`/`try`): (module, name or None); one that cannot
    # succeed here means the module cannot be imported here (`import _winapi` in asyncio.windows_events)
    requires: list[tuple[str, str | None]] = field(default_factory=list)


def _absolute(module: str | None, level: int, current: str, is_package: bool) -> str | None:
    if level == 0:
        return module
    package = current.split(".") if is_package else current.split(".")[:-1]
    keep = len(package) - (level - 1)
    if keep <= 0:
        return None
    base = ".".join(package[:keep])
    return f"{base}.{module}" if module else base


def _targets(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        return [n for e in node.elts for n in _targets(e)]
    if isinstance(node, ast.Starred):
        return _targets(node.value)
    return []


def _is_stdlib(top: str) -> bool:
    return top in sys.stdlib_module_names or top in sys.builtin_module_names or top == "__main__"


def read_module(name: str, tree: ast.Module, is_package: bool) -> ModuleInfo:
    """The module-level bindings of a parsed module (function and class bodies are not entered)."""
    info = ModuleInfo(name, is_package)
    flags: dict[str, platforms.Truth] = {}  # `_mswindows = (sys.platform == "win32")`, then `if _mswindows:`

    def bind(n: str, binding: tuple, label: str | None) -> None:
        info.bindings.setdefault(n, []).append((binding, label))

    def flag(n: str) -> platforms.Truth:
        """`if n:` where n is bound truthy only in Windows-only blocks and to None/False elsewhere."""
        bound = info.bindings.get(n, [])
        win = [b for b, lab in bound if lab == platforms.WINDOWS]
        here = [b for b, lab in bound if lab is None]
        if win and here and all(b[0] in ("module", "from", "true") for b in win) and all(b[0] == "none" for b in here):
            return False, True
        return None, None

    def walk(body: list[ast.stmt], label: str | None, top: bool = False) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bind(node.name, ("def",), label)
                if not isinstance(node, ast.ClassDef):  # `def init(): global types_map; types_map = ...`
                    for inner in ast.walk(node):
                        if isinstance(inner, ast.Global):
                            for n in inner.names:
                                bind(n, ("def",), label)
                if node.name == "__getattr__" and not isinstance(node, ast.ClassDef):
                    info.dynamic = True
            elif isinstance(node, ast.Assign):
                if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    truth = platforms.flag_value(node.value, flags)
                    if truth[0] is not None:
                        flags[node.targets[0].id] = truth
                constant = node.value.value if isinstance(node.value, ast.Constant) else ...
                kind = "none" if constant is None or constant is False else "true" if constant is True else "def"
                for t in node.targets:
                    for n in _targets(t):
                        bind(n, (kind,), label)
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and (not isinstance(node, ast.AnnAssign)
                                                                      or node.value is not None):
                for n in _targets(node.target):
                    bind(n, ("def",), label)
            elif isinstance(node, ast.Delete):
                for t in node.targets:
                    for n in _targets(t):
                        bind(n, ("deleted",), label)
            elif isinstance(node, ast.Import):
                if top:
                    info.requires.extend((a.name, None) for a in node.names)
                for a in node.names:
                    if a.asname:
                        bind(a.asname, ("module", a.name), label)
                    else:
                        bind(a.name.split(".")[0], ("module", a.name.split(".")[0]), label)
            elif isinstance(node, ast.ImportFrom):
                source = _absolute(node.module, node.level, name, is_package)
                if top and source is not None:
                    info.requires.extend((source, a.name if a.name != "*" else None) for a in node.names)
                for a in node.names:
                    if source is None:
                        continue
                    if a.name == "*":
                        info.stars.append((source, label))
                    else:
                        bind(a.asname or a.name, ("from", source, a.name), label)
            elif isinstance(node, ast.If):
                test_flags = flags
                if isinstance(node.test, (ast.Name, ast.UnaryOp)):
                    n = node.test.id if isinstance(node.test, ast.Name) else getattr(node.test.operand, "id", None)
                    if n is not None and n not in flags and flag(n)[0] is not None:
                        test_flags = {**flags, n: flag(n)}
                body_label, else_label = platforms.branch_labels(node.test, test_flags)
                walk(node.body, label or body_label)
                walk(node.orelse, label or else_label)
            elif isinstance(node, ast.Try) or (sys.version_info >= (3, 11) and isinstance(node, ast.TryStar)):
                windows = any(not isinstance(s, (ast.If, ast.Try, ast.With, ast.For, ast.While, ast.FunctionDef,
                                                 ast.AsyncFunctionDef, ast.ClassDef))
                              and platforms.windows_only_code(ast.unparse(s)) for s in node.body)
                # `try: from docutils.utils import Reporter`: the body and `else:` need another distribution
                optional = any(platforms.other_distribution(s, _is_stdlib) for s in node.body)
                inner = label or (platforms.WINDOWS if windows else
                                  platforms.OPTIONAL_DEPENDENCY if optional else None)
                walk(node.body, inner)
                for h in node.handlers:
                    if h.name:
                        bind(h.name, ("def",), label)
                    walk(h.body, label)
                walk(node.orelse, inner)
                walk(node.finalbody, label)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if item.optional_vars is not None:
                        for n in _targets(item.optional_vars):
                            bind(n, ("def",), label)
                walk(node.body, label)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
                if not isinstance(node, ast.While):
                    for n in _targets(node.target):
                        bind(n, ("def",), label)
                walk(node.body, label)
                walk(node.orelse, label)

    walk(tree.body, None, top=True)
    return info


class StdlibNames:
    """Name lookups in the interpreter's standard library (see the module docstring); modules are
    parsed on first use and kept."""

    def __init__(self, root: Path | str | None = None, stubs: "Stubs | None" = None):
        self.root = Path(root) if root is not None else Path(sysconfig.get_paths()["stdlib"])
        self.dynload = self.root / "lib-dynload"
        self._cache: dict[str, ModuleInfo | str | None] = {}
        self.stubs = stubs if stubs is not None else Stubs()

    def _module(self, name: str) -> ModuleInfo | str | None:
        """ModuleInfo for a module with Python source; `C` for a compiled one; a platform label for a
        module that exists only elsewhere; None for no such module."""
        if name in self._cache:
            return self._cache[name]
        parts = name.split(".")
        out: ModuleInfo | str | None = None
        path = self.root.joinpath(*parts)
        for file, is_package in ((path / "__init__.py", True), (path.with_suffix(".py"), False)):
            if file.is_file():
                try:
                    text = file.read_text(encoding="utf-8", errors="replace")
                    tree = ast.parse(text)
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    out = _C_MODULE  # unreadable: not judged
                else:
                    out = read_module(name, tree, is_package)
                    # names made at run time (`globals().update(...)`, multiprocessing; `_convert_` enums): not judged
                    out.dynamic |= makes_names_at_run_time(text, tree)
                break
        else:
            if (name in sys.builtin_module_names or (len(parts) == 1 and any(self.dynload.glob(f"{name}.*")))
                    or importlib.machinery.FrozenImporter.find_spec(name) is not None):  # `_frozen_importlib_external`
                out = self._compiled(name)
            elif parts[0] in platforms.WINDOWS_MODULES:
                out = platforms.WINDOWS
        self._cache[name] = out
        return out

    @staticmethod
    def _compiled(name: str) -> CModule | str:
        """A compiled module has no source to read: its names are what `dir()` lists (it is imported: a
        compiled stdlib module runs no Python code on import; a few are never imported, `_NOT_IMPORTED`)."""
        if name in _NOT_IMPORTED:
            return _C_MODULE
        try:
            module = sys.modules.get(name) or importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a module that does not load here is not judged
            return _C_MODULE
        return CModule(frozenset(dir(module)), module)

    def compiled_kind(self, fqn: str, _depth: int = 0) -> str | None:
        """The kind (`class`, `function`, `method`) of a name defined in a compiled stdlib module
        (`_collections.defaultdict` is a class, `_json.encode_basestring` a function; looked up on the module and
        its classes, nothing is called), None when `fqn` is no such name. A quiz's candidates are of its answer's
        kind: a lower-case class of a C module (`defaultdict`, `chain`) is no function."""
        parts = fqn.split(".")
        for i in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:i])
            if parts[0] not in sys.stdlib_module_names and parts[0] not in sys.builtin_module_names:
                return None
            info = self._module(module)
            if info is None:
                continue
            if isinstance(info, ModuleInfo):  # `from _collections import defaultdict` in collections: followed
                here = [b for b, label in info.bindings.get(parts[i], []) if label is None]
                if _depth < MAX_HOPS and here and here[-1][0] in ("from", "module"):
                    b = here[-1]
                    target = f"{b[1]}.{b[2]}" if b[0] == "from" else b[1]
                    return self.compiled_kind(".".join([target, *parts[i + 1:]]), _depth + 1)
                return None
            if not isinstance(info, CModule) or info.module is None:
                return None
            obj, parent = info.module, None
            for part in parts[i:]:
                if part not in dir(obj):
                    return None
                parent, obj = obj, getattr(obj, part, None)
            if isinstance(obj, type):
                return "class"
            if isinstance(parent, type):
                return "method"
            return "function" if callable(obj) else None
        return None

    def _loads(self, module: str, info: ModuleInfo, hops: list[int]) -> str:
        """Whether the module's top-level imports can succeed here: PRESENT, or the status of the first
        that cannot (a Windows-only module, a name the stdlib does not bind, a module it does not have)."""
        key = f"loads:{module}"
        if key in self._cache:
            return self._cache[key]
        self._cache[key] = PRESENT  # an import cycle loads
        out = PRESENT
        for target, name in info.requires:
            if target == "__main__":  # always there
                continue
            # the stdlib imports no other distribution unguarded: a module it does not have (lib2to3.pgen2.conv's
            # `from pgen2 import grammar`, a script's import) is absent, and so is the importing module
            status = self._lookup(target, [name] if name else [], [hops[0]])
            if status not in (PRESENT, UNKNOWN):
                out = status
                break
        self._cache[key] = out
        return out

    def status(self, fqn: str) -> str:
        """present / unknown / absent / windows / other (the module docstring)."""
        parts = fqn.split(".")
        top = self._module(parts[0])
        if top is None:  # listed in sys.stdlib_module_names but not built here: another platform's module
            return platforms.OTHER if parts[0] in sys.stdlib_module_names else UNKNOWN
        hops = [0]
        return self._lookup(parts[0], parts[1:], hops)

    def _lookup(self, module: str, rest: list[str], hops: list[int]) -> str:
        hops[0] += 1
        if hops[0] > MAX_HOPS:
            return UNKNOWN
        info = self._module(module)
        if info is None and "." in module:  # `os.path` is no file: the attribute `path` of `os`
            parent, _, last = module.rpartition(".")
            return self._lookup(parent, [last, *rest], hops)
        if info is None:
            return ABSENT
        if info == _C_MODULE:
            return UNKNOWN
        if isinstance(info, CModule):
            if info.has(rest):
                return PRESENT
            return self.stubs.label(module, rest[0]) or ABSENT
        if isinstance(info, str):  # a module of another platform
            return info
        loads = self._loads(module, info, hops)
        if loads != PRESENT:
            return loads
        if not rest:
            return PRESENT
        name, tail = rest[0], rest[1:]
        bindings = info.bindings.get(name, [])
        if bindings and bindings[-1][0][0] == "deleted":
            bindings = []
        bindings = self._evaluated(module, [b for b in bindings if b[0][0] != "deleted"], hops)
        failed = None  # what the bindings said when none holds here (a later star import may still bind it)
        if bindings:
            here = [b for b, label in bindings if label is None]
            if not here:
                labels = {label for _, label in bindings}
                failed = next((x for x in _LABEL_ORDER if x in labels), sorted(labels)[0])
            else:
                results = [self._follow(b, tail, hops) for b in here]
                for status in (PRESENT, UNKNOWN):
                    if status in results:
                        return status
                failed = results[0]
        sub = self._module(f"{module}.{name}") if info.is_package and not bindings else None
        if sub is not None:
            return self._lookup(f"{module}.{name}", tail, hops)
        if failed == ABSENT:  # bound here, and what it is bound to lacks the rest
            return ABSENT
        # a star import binds it: its attributes are not checked further (as for a definition)
        results = [(self._lookup(star, [name], hops), label)
                   for star, label in self._evaluated(module, info.stars, hops)]
        for status in (PRESENT, UNKNOWN):
            if any(s == status and label is None for s, label in results):
                return status
        if failed is not None:  # bound, but only where it does not run here: names made at run time aside
            return failed
        if info.dynamic:  # names made at run time are not judged, unless typeshed binds it for other versions only
            return ABSENT if self.stubs.label(module, name) == ABSENT else UNKNOWN
        # only through a star import of another platform's block, or of a module that exists only there: which
        # platform has it is typeshed's to say (`from nt import *` may bind `os.chflags`, but nt has no chflags)
        elsewhere = {label if s in (PRESENT, UNKNOWN) else s for s, label in results} - {None, PRESENT, UNKNOWN, ABSENT}
        stub = self.stubs.label(module, name)
        if stub is not None:
            return stub
        for label in _LABEL_ORDER:
            if label in elsewhere:
                return label
        return ABSENT

    def _evaluated(self, module: str, labelled: list[tuple], hops: list[int]) -> list[tuple]:
        """(binding, label) pairs with capability labels evaluated here: None where the test holds, else
        `capability` (also when it cannot be judged); a name bound under both outcomes of one test is here."""
        raw = {label for _, label in labelled if label and label.startswith(platforms.CAPABILITY + ":")}
        if not raw:
            return labelled
        out = []
        for binding, label in labelled:
            if label in raw:
                test = label.split(":", 1)[1]
                negated, target = test.startswith("!"), test.lstrip("!")
                if platforms.capability_label(target, negated) in raw:  # both branches bind it
                    label = None
                else:
                    status = self._lookup(module, target.split("."), [hops[0]])
                    holds = None if status == UNKNOWN else status == PRESENT
                    label = None if holds is not None and holds != negated else platforms.CAPABILITY
            out.append((binding, label))
        return out

    def _follow(self, binding: tuple, tail: list[str], hops: list[int]) -> str:
        if binding[0] in ("def", "true"):
            return PRESENT
        if binding[0] == "none":  # `ndbm = None`: the name exists, its attributes do not
            return ABSENT if tail else PRESENT
        if binding[0] == "module":
            return self._lookup(binding[1], tail, hops)
        _, source, name = binding  # from source import name: its submodule when there is one, else its attribute
        if self._module(f"{source}.{name}") is not None:
            return self._lookup(f"{source}.{name}", tail, hops)
        return self._lookup(source, [name, *tail], hops)


def makes_names_at_run_time(text: str, tree: ast.Module) -> bool:
    """The module binds names a static reading cannot list: `globals().update(...)` (multiprocessing),
    `mod_dict = globals()` written through (inspect; only read: os's `_globals`), enum `_convert_`, a module-level
    `__dict__.update`."""
    return any(m in text for m in _DYNAMIC) or _module_level_dict_update(text, tree) or any(
        re.search(rf"\b{a}\[[^\]\n]*\]\s*=[^=]|\b{a}\.update\(", text)
        for a in _GLOBALS_ALIAS.findall(text))  # written through, not only read (os's `_globals`)


# a package name deep enough that every relative import of a file resolves (its bindings are read, not followed)
_ANY_PACKAGE = ".".join(["_"] * 32)


def module_namespace(text: str, tree: ast.Module) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None]:
    """(namespace, exports) of one module's source, read by `read_module` (never run).

    namespace: every name some module-level statement binds and no later top-level `del` unbinds (`from ._version
    import get_versions` ... `del get_versions`: gone; `if _IS_PYPY: del get_all` may not run), whatever branch
    binds it (platform guards are labelled apart), plus what a module-level `__getattr__` serves when it can be
    read (`if name == "__version__": ...` then `raise AttributeError`: flask; `flask.Module` is no name of
    flask). Star imports are not in it (their names are the star-imported module's). None: the module makes
    names at run time (`makes_names_at_run_time`;
    `locals()[k] = ...`, `exec(...)` outside functions; a `__getattr__` that serves names no literal lists:
    dateutil's lazy submodules, attrs' `_make_getattr`).
    exports: the literal `__all__` (`__all__ = [...]`, `+= [...]` at top level), which a star import of the
    module binds; None when it has none or it is not literal."""
    info = read_module(_ANY_PACKAGE, tree, True)
    # a `del` under a test may not run (boltons.gcutils: `if _IS_PYPY: del get_all`): only a top-level one unbinds
    unbound = {n for node in tree.body if isinstance(node, ast.Delete) for t in node.targets for n in _targets(t)}
    names = {n for n, bound in info.bindings.items() if bound and (bound[-1][0][0] != "deleted" or n not in unbound)}
    namespace: set[str] | None = names
    if makes_names_at_run_time(text, tree) or (_RUN_TIME_BINDING.search(text)
                                                and _outside_functions(text, tree, _RUN_TIME_BINDING)):
        namespace = None
    elif "__getattr__" in names:
        served = getattr_served(tree)
        namespace = None if served is None else names | served
    return (tuple(sorted(namespace)) if namespace is not None else None), _literal_all(tree)


def getattr_served(tree: ast.Module) -> set[str] | None:
    """The names a module-level `def __getattr__(name)` serves when they can be read: it ends with `raise
    AttributeError(...)` and reads its parameter only in comparisons with string literals (`name == "x"`,
    `name in ("a", "b")`), in f-strings and in that last `raise`. None otherwise (an assignment
    `__getattr__ = make(...)`, a lookup `_lazy[name]`, `importlib.import_module("." + name)`)."""
    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "__getattr__"]
    if len(defs) != 1 or any(isinstance(n, ast.Assign) and "__getattr__" in [x for t in n.targets for x in _targets(t)]
                             for n in tree.body):
        return None
    func = defs[0]
    args = func.args.posonlyargs + func.args.args
    last = func.body[-1]
    if (len(args) != 1 or not isinstance(last, ast.Raise) or not isinstance(last.exc, (ast.Call, ast.Name))
            or getattr(last.exc, "id", getattr(getattr(last.exc, "func", None), "id", None)) != "AttributeError"):
        return None
    param = args[0].arg
    allowed: set[int] = {id(n) for n in ast.walk(last)}
    served: set[str] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.JoinedStr):
            allowed.update(id(n) for n in ast.walk(node))
        elif isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right = node.left, node.comparators[0]
            if isinstance(right, ast.Name) and right.id == param:
                left, right = right, left
            if not (isinstance(left, ast.Name) and left.id == param):
                continue
            if isinstance(node.ops[0], (ast.Eq, ast.NotEq)) and isinstance(right, ast.Constant):
                values = [right]
            elif isinstance(node.ops[0], (ast.In, ast.NotIn)) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
                values = right.elts
            else:
                return None
            if not all(isinstance(v, ast.Constant) and isinstance(v.value, str) for v in values):
                return None
            served.update(v.value for v in values)
            allowed.add(id(left))
    reads = [n for n in ast.walk(func) if isinstance(n, ast.Name) and n.id == param]
    return served if all(id(n) in allowed for n in reads) else None


def _literal_all(tree: ast.Module) -> tuple[str, ...] | None:
    """The module's `__all__` when every statement that binds or changes it is a top-level literal assignment or
    `+=` of string literals; None otherwise (none, built, or changed by a call: `__all__.extend(...)`)."""
    out: list[str] | None = None
    top = set()
    for node in tree.body:
        target = (node.targets if isinstance(node, ast.Assign) and len(node.targets) == 1 else
                  [node.target] if isinstance(node, ast.AugAssign) else [])
        if not (target and isinstance(target[0], ast.Name) and target[0].id == "__all__"):
            continue
        value = node.value
        if not (isinstance(value, (ast.List, ast.Tuple))
                and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts)):
            return None
        if isinstance(node, ast.Assign):
            out = [e.value for e in value.elts]
        elif out is not None and isinstance(node.op, ast.Add):
            out += [e.value for e in value.elts]
        else:
            return None
        top.add(id(node))
    if out is None:
        return None
    for node in ast.walk(tree):  # any other use of `__all__` that may change it: not literal
        if id(node) in top:
            continue
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                return None
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "__all__"
              and node.attr in ("append", "extend", "insert", "remove", "pop", "clear", "__iadd__")):
            return None
    return tuple(dict.fromkeys(out))


def _module_level_dict_update(text: str, tree: ast.Module) -> bool:
    """`__dict__.update` outside every function body (a module-level statement or a class body)."""
    if _DICT_UPDATE not in text:
        return False
    return _outside_functions(text, tree, re.compile(re.escape(_DICT_UPDATE)))


def _outside_functions(text: str, tree: ast.Module, pattern: re.Pattern) -> bool:
    """`pattern` matches a line outside every function body."""
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inside.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return any(pattern.search(line) for i, line in enumerate(text.splitlines(), 1) if i not in inside)


# names a module-level statement makes that no binding lists: `locals()[package] = __import__(package)` (requests'
# packages.py binds urllib3 and idna so), `exec(...)` / six's `exec_(...)` of a definition
_RUN_TIME_BINDING = re.compile(r"\b(locals|vars)\(\)\[|\bexec_?\(")


class Stubs:
    """typeshed's stdlib stubs as a platform table: `label(module, name)` is `windows` / `other` when the stub
    binds `name` only under `sys.platform` tests that fail on this interpreter (Windows has it, or only
    another platform), None when it binds it here too, binds it nowhere, or there is no stub. Read with `ast`
    (`sys.version_info` tests decided on this interpreter); the stubs are jedi's copy (a pinned dependency)."""

    def __init__(self, root: Path | str | None = None):
        if root is None:
            import importlib.util

            spec = importlib.util.find_spec("jedi")
            found = Path(spec.submodule_search_locations[0]) / "third_party" / "typeshed" / "stdlib" if spec else None
            root = found if found is not None and found.is_dir() else None
        self.root = Path(root) if root is not None else None
        self._cache: dict[str, dict[str, list[tuple[bool, bool, bool]]]] = {}

    def _read(self, module: str) -> dict[str, list[tuple[bool, bool, bool]]]:
        """name -> the (here, on Windows, on this Python version) truths of the blocks that bind it."""
        if module in self._cache:
            return self._cache[module]
        out: dict[str, list[tuple[bool, bool]]] = {}
        path = None
        if self.root is not None:
            base = self.root.joinpath(*module.split("."))
            path = next((p for p in (base / "__init__.pyi", base.with_suffix(".pyi")) if p.is_file()), None)
        if path is not None:
            try:
                tree = ast.parse(path.read_text(encoding="utf-8"))
            except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
                tree = None
            if tree is not None:
                self._walk(tree.body, (True, True, True), out)
        self._cache[module] = out
        return out

    def _walk(self, body: list[ast.stmt], truth: tuple[bool, bool], out: dict) -> None:
        for node in body:
            names: list[str] = []
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [n for t in node.targets for n in _targets(t)]
            elif isinstance(node, ast.AnnAssign):
                names = _targets(node.target)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.asname for a in node.names if a.asname]  # `from x import y as y`: a re-export
            elif isinstance(node, ast.AugAssign) and _targets(node.target) == ["__all__"]:
                if isinstance(node.value, (ast.List, ast.Tuple)):
                    names = [e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            elif isinstance(node, ast.If):
                test = _stub_truth(node.test)
                if test is None:  # a test the table cannot decide: its names count as bound here
                    self._walk(node.body, truth, out)
                    self._walk(node.orelse, truth, out)
                    continue
                version = _version_test(node.test)  # a pure `sys.version_info` test: its value here, else None
                self._walk(node.body, (truth[0] and test[0], truth[1] and test[1],
                                       truth[2] and (version is None or version)), out)
                self._walk(node.orelse, (truth[0] and not test[0], truth[1] and not test[1],
                                         truth[2] and (version is None or not version)), out)
                continue
            for n in names:
                out.setdefault(n, []).append(truth)

    def label(self, module: str, name: str) -> str | None:
        """`windows` / `other` (see the class), `absent` when every block binding it is for another Python
        version than this interpreter's, None otherwise."""
        truths = self._read(module).get(name)
        if not truths or any(here for here, _, _ in truths):
            return None
        if not any(version for _, _, version in truths):  # another Python's name (`copy.replace`: 3.13's)
            return ABSENT
        return platforms.WINDOWS if any(win for _, win, _ in truths) else platforms.OTHER


def _version_test(test: ast.expr) -> bool | None:
    """The value here of a test made of `sys.version_info` comparisons only (`not`, `and`, `or` of them);
    None for any other test."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _version_test(test.operand)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        parts = [_version_test(v) for v in test.values]
        if any(p is None for p in parts):
            return None
        return all(parts) if isinstance(test.op, ast.And) else any(parts)
    if isinstance(test, ast.Compare) and isinstance(test.left, ast.Attribute) and test.left.attr == "version_info":
        truth = _stub_truth(test)
        return None if truth is None else truth[0]
    return None


def _stub_truth(test: ast.expr) -> tuple[bool, bool] | None:
    """(on this interpreter, on Windows) of a stub's `if` test: `sys.platform` tests (`platforms.guard`),
    `sys.version_info` comparisons (this interpreter's version on both), `not`, `and`, `or`; None otherwise."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _stub_truth(test.operand)
        return None if inner is None else (not inner[0], not inner[1])
    if isinstance(test, ast.BoolOp):
        parts = [_stub_truth(v) for v in test.values]
        if any(p is None for p in parts):
            return None
        combine = all if isinstance(test.op, ast.And) else any
        return combine(p[0] for p in parts), combine(p[1] for p in parts)
    if (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Attribute)
            and test.left.attr == "version_info" and isinstance(test.left.value, ast.Name) and test.left.value.id == "sys"
            and isinstance(test.comparators[0], ast.Tuple)
            and all(isinstance(e, ast.Constant) and isinstance(e.value, int) for e in test.comparators[0].elts)):
        import operator

        ops = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
               ast.Eq: operator.eq, ast.NotEq: operator.ne}
        op = ops.get(type(test.ops[0]))
        if op is None:
            return None
        value = op(tuple(sys.version_info), tuple(e.value for e in test.comparators[0].elts))
        return value, value
    here, win = platforms.guard(test)
    return None if here is None else (here, win)
