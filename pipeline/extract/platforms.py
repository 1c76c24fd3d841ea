"""Platform-specific names: which module-level code runs only on another platform than the pipeline's (pinned,
Linux) interpreter, decided from the source text, never by running it (an item may only ask for a name that
importing its module binds on that interpreter).

A name is **platform-specific** when every module-level binding of it is under a *platform guard*:

- an `if` whose test compares the platform with a literal: `sys.platform == "win32"`,
  `sys.platform.startswith("win")`, `os.name == "nt"` (`_os.name`, a bare `name` too),
  `"nt" in sys.builtin_module_names` (os.py's `_names`), `platform.system() == "Windows"`, their
  negations, `and`/`or` of them; the branch that runs on Windows but not here is `windows`, one
  that runs on neither (`sys.platform.startswith("java")`) is `other`;
- a `try` whose body (its simple statements) uses a Windows-only name: `ctypes.windll`/`WinDLL`/
  `oledll`/`WinError`/`wintypes`, or imports `msvcrt`, `winreg`, `_winapi`, `winsound`, `win32api`
  and the like (colorama.win32: `windll = LibraryLoader(ctypes.WinDLL)`, then the API in `else:`):
  the body and its `else:` are `windows`; the `except` handler is the fallback that runs here.

`if __name__ == "__main__":` runs only as a script, never on import: its bindings are `main`.

Two more reasons a name may not exist here (both found on invalid quizzes: `socket.fromshare`,
`distutils.command.check.SilentReporter`):

- a *capability test* `if hasattr(obj, "name"):` (or `not hasattr(...)`): its body's label is
  `capability:obj.name` (`capability:!obj.name` for the `else:` or a negation), which the stdlib checker
  evaluates on the pinned interpreter (`pipeline.extract.stdlib`) and the corpus extraction, which cannot,
  reports as `capability` (a name bound in both branches has two labels, so none);
- a `try` whose body imports a module of another distribution (`try: from docutils.utils import Reporter`,
  then `class SilentReporter(Reporter)`): the body and its `else:` are `optional_dependency` (the
  handlers run here when it is not installed); the corpus extraction labels them
  `optional_dependency:<top-level module>` and drops the label when that module is the file's own
  distribution's.

A
module-level name assigned such a test (`_mswindows = sys.platform == "win32"`), or bound truthy only
in a Windows-only block and falsy in its fallback (`try: import _winapi / except ImportError:
_winapi = None`), is itself a test (`if _winapi:`). Any other test gives no platform (both branches may
run here). Only these literal patterns are read.
"""

from __future__ import annotations

import ast
import re
import sys

WINDOWS = "windows"
OTHER = "other"  # runs on neither this interpreter's platform nor Windows (Jython, ...)
MAIN = "main"  # runs only when the module is run as a script (`if __name__ == "__main__":`), never on import
CAPABILITY = "capability"  # only under a capability test (`if hasattr(_socket.socket, "share"):`) that fails here
OPTIONAL_DEPENDENCY = "optional_dependency"  # only in a `try` that imports another distribution (docutils)

# stdlib modules that exist only on Windows (in sys.stdlib_module_names, never built on Linux)
WINDOWS_MODULES = frozenset({"msvcrt", "winreg", "_winapi", "winsound", "nt", "_overlapped", "msilib", "_msi",
                             "_wmi", "_winreg", "win32api", "win32con", "win32file", "win32process", "pywintypes",
                             "win32console", "win32event"})
_WINDOWS_NAMES = re.compile(r"\b(windll|WinDLL|oledll|OleDLL|WinError|wintypes|FormatError|GetLastError|"
                            + "|".join(sorted(WINDOWS_MODULES - {"nt"})) + r")\b")
_PREFILTER = ("platform", "name", "_names", "builtin_module_names", "hasattr", "TYPE_CHECKING")  # `__name__` too

# (on this interpreter, on Windows) for a platform literal
_HERE_NAME = "nt" if sys.platform == "win32" else "posix"


def _platform_value(literal: str) -> tuple[bool, bool]:
    """`sys.platform == literal` here and on Windows."""
    return sys.platform == literal, literal == "win32"


def _startswith_value(prefix: str) -> tuple[bool, bool]:
    return sys.platform.startswith(prefix), "win32".startswith(prefix)


def _os_name_value(literal: str) -> tuple[bool, bool]:
    return _HERE_NAME == literal, literal == "nt"


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _string(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


Truth = tuple[bool | None, bool | None]  # (here, on Windows); None: not a platform test


def guard(test: ast.expr, flags: dict[str, Truth] | None = None) -> Truth:
    """(value on this interpreter, value on Windows) of a platform test; (None, None) for any other test.
    `flags`: module-level names assigned a platform test (`_mswindows = sys.platform == "win32"`)."""
    if flags and isinstance(test, ast.Name) and test.id in flags:
        return flags[test.id]
    if _dotted(test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING", "t.TYPE_CHECKING", "_t.TYPE_CHECKING"):
        return False, False  # true for a type checker only: its imports bind nothing at run time, anywhere
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        here, win = guard(test.operand, flags)
        return (None, None) if here is None else (not here, not win)
    if isinstance(test, ast.BoolOp):
        values = [guard(v, flags) for v in test.values]
        if any(h is None for h, _ in values):
            return None, None
        combine = all if isinstance(test.op, ast.And) else any
        return combine(h for h, _ in values), combine(w for _, w in values)
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and test.func.attr == "startswith" \
            and _dotted(test.func.value) in ("sys.platform", "platform") and len(test.args) == 1:
        prefix = _string(test.args[0])
        return _startswith_value(prefix) if prefix is not None else (None, None)
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return None, None
    op, left, right = test.ops[0], test.left, test.comparators[0]
    if isinstance(op, (ast.Eq, ast.NotEq)):
        if _string(left) is not None:
            left, right = right, left
        literal = _string(right)
        if literal is None:
            return None, None
        name = _dotted(left)
        if name in ("sys.platform",):
            value = _platform_value(literal)
        elif name is not None and name.split(".")[-1] == "name" and name in ("os.name", "_os.name", "name"):
            value = _os_name_value(literal)
        elif isinstance(left, ast.Call) and _dotted(left.func) in ("platform.system", "system") and not left.args:
            value = (sys.platform.startswith("linux") and literal == "Linux"
                     or sys.platform == "darwin" and literal == "Darwin", literal == "Windows")
        else:
            return None, None
        return value if isinstance(op, ast.Eq) else (not value[0], not value[1])
    if isinstance(op, (ast.In, ast.NotIn)) and _string(left) in ("nt", "posix"):
        if _dotted(right) not in ("sys.builtin_module_names", "_names", "builtin_module_names"):
            return None, None
        value = _os_name_value(_string(left))
        return value if isinstance(op, ast.In) else (not value[0], not value[1])
    return None, None


def label(here: bool | None, win: bool | None) -> str | None:
    """The platform label of code that runs when a test has these values: None when it may run here."""
    if here is None or here:
        return None
    return WINDOWS if win else OTHER


def main_guard(test: ast.expr) -> bool:
    """`__name__ == "__main__"` (either order)."""
    return (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
            and {_dotted(test.left), _dotted(test.comparators[0])} == {"__name__", None}
            and "__main__" in (_string(test.left), _string(test.comparators[0])))


def capability_test(test: ast.expr) -> tuple[str, bool] | None:
    """`hasattr(a.b, "c")` -> ("a.b.c", True), `not hasattr(a.b, "c")` -> ("a.b.c", False); else None."""
    holds = True
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, holds = test.operand, False
    if (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "hasattr"
            and len(test.args) == 2 and not test.keywords):
        obj, name = _dotted(test.args[0]), _string(test.args[1])
        if obj is not None and name:
            return f"{obj}.{name}", holds
    return None


def capability_label(name: str, holds: bool) -> str:
    """The label of code that runs when `hasattr` of `name` (dotted) is `holds`."""
    return f"{CAPABILITY}:{'' if holds else '!'}{name}"


def public_label(label: str | None) -> str | None:
    """The reason a label names (`capability:!a.b` -> `capability`, `optional_dependency:x` ->
    `optional_dependency`)."""
    return label.split(":", 1)[0] if label else label


def branch_labels(test: ast.expr, flags: dict[str, Truth] | None = None) -> tuple[str | None, str | None]:
    """The labels of an `if`'s body and of its `else:` (None: may run on import here)."""
    if main_guard(test):
        return MAIN, None
    here, win = guard(test, flags)
    if here is None:
        cap = capability_test(test)
        if cap is not None:
            return capability_label(cap[0], cap[1]), capability_label(cap[0], not cap[1])
    return label(here, win), label(None if here is None else not here, None if win is None else not win)


def labels_source(code: str, flags: dict[str, Truth] | None = None) -> tuple[str | None, str | None]:
    """`branch_labels` of a test given as source text (the libcst walker's `if` tests)."""
    if not any(p in code for p in _PREFILTER) and not (flags and any(f in code for f in flags)):
        return None, None
    try:
        tree = ast.parse(code.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None, None
    return branch_labels(tree.body, flags)


def flag_source(code: str, flags: dict[str, Truth]) -> Truth:
    """`flag_value` of an assigned value given as source text."""
    if not any(p in code for p in _PREFILTER) and not any(f in code for f in flags):
        return None, None
    try:
        tree = ast.parse(code.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None, None
    return flag_value(tree.body, flags)


def flag_value(value: ast.expr, flags: dict[str, Truth]) -> Truth:
    """A module-level assignment whose value is a platform test (`_mswindows = sys.platform == "win32"`)."""
    return guard(value, flags)


def other_distribution(node: ast.stmt, is_stdlib) -> str | None:
    """The top-level module an absolute import statement imports when `is_stdlib(top)` is false."""
    if isinstance(node, ast.Import):
        tops = [a.name.split(".")[0] for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        tops = [node.module.split(".")[0]]
    else:
        return None
    return next((t for t in tops if not is_stdlib(t)), None)


def windows_only_code(code: str) -> bool:
    """The text of a `try` body's simple statement uses a Windows-only name (see the module docstring)."""
    return _WINDOWS_NAMES.search(code) is not None
