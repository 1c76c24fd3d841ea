"""One pass over a libcst tree: imports, call and attribute-chain usages resolved through
them, and the definitions a library exposes.

libcst's QualifiedNameProvider and PositionProvider build metadata for every node and cost
many times the parse; this walker is an explicit stack over the dataclass fields that can
hold code (whitespace and punctuation fields are never entered), and it resolves names
lazily: a usage waits in its scope until the scope closes, when every binding of that scope
is known. That gives Python's rule "a name bound anywhere in a function is local to it"
without a second pass. Positions come from `pipeline.extract.positions`.

Results are path-independent (relative imports keep their level, local definitions their
qualname), so one analysis per content hash serves every file with those bytes.
"""

from __future__ import annotations

import dataclasses
import operator
import re
import sys
from dataclasses import dataclass, field

import libcst as cst

from pipeline.extract import platforms

# Sequences of nodes that `positions` matches against CPython's ast, in source order.
SEQ_CALL, SEQ_ATTRIBUTE, SEQ_DECORATOR_NAME, SEQ_IMPORT = range(4)

# What a usage's head name is bound to (`UsageRecord.via`): the kinds of binding a scope
# records, then the two outcomes that are not bindings.
BIND_IMPORT, BIND_DEF, BIND_LOCAL = range(3)
BIND_BUILTIN = -2  # not bound in any enclosing scope, and a builtin name
UNRESOLVED = -1  # not resolved (yet): bound nowhere visible, or an unbound local
BIND_STAR = -3  # bound nowhere in the file, which has a module-level star import: the star may bind it
BIND_DELETED = 3  # `del name`: unbound from here on (a binding kind a scope records, never a usage's outcome)

# Fields that never contain code (whitespace, punctuation, brackets): not entered.
_SKIP_FIELD = re.compile(
    r"whitespace|^(lpar|rpar|leading_lines|lines_after_decorators|comma|dot|semicolon|colon|equal|operator"
    r"|header|footer|newline|asynchronous|star|star_tok|default_indicator|lbracket|rbracket|lbrace|rbrace"
    r"|between|encoding|default_newline|has_trailing_newline|indent|trailing_whitespace|conversion)$"
)
# libcst declares a few nodes' fields out of source order; positions need source order.
_SOURCE_ORDER = {
    cst.IfExp: ("body", "test", "orelse"),
    cst.MatchCase: ("pattern", "guard", "body"),
}
_FIELDS: dict[type, tuple[str, ...]] = {}


def _subclasses(cls: type) -> set[type]:
    out = set()
    for sub in cls.__subclasses__():
        out.add(sub)
        out |= _subclasses(sub)
    return out


# Exact-type lookup: isinstance against the CSTNode ABC costs more than the walk itself.
_NODE_TYPES = frozenset(_subclasses(cst.CSTNode))


def _code_fields(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        order = _SOURCE_ORDER.get(cls) or tuple(f.name for f in dataclasses.fields(cls))
        names = _FIELDS[cls] = tuple(n for n in order if not _SKIP_FIELD.search(n))
    return names


def dotted(node: cst.BaseExpression) -> tuple[str, ...] | None:
    """`a.b.c` as ("a", "b", "c"); None when the chain does not start at a plain name."""
    parts = []
    while node.__class__ is cst.Attribute:
        parts.append(node.attr.value)
        node = node.value
    if node.__class__ is not cst.Name:
        return None
    parts.append(node.value)
    parts.reverse()
    return tuple(parts)


def chain_base(node: cst.BaseExpression) -> cst.BaseExpression:
    while node.__class__ is cst.Attribute:
        node = node.value
    return node


def target_names(node: cst.CSTNode) -> list[str]:
    """Names an assignment target binds (`a`, `a, (b, *c)`); attributes and subscripts bind none."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        if n.__class__ is cst.Name:
            out.append(n.value)
        elif n.__class__ is cst.Tuple or n.__class__ is cst.List:
            stack.extend(e.value for e in n.elements)
        elif n.__class__ is cst.StarredElement:
            stack.append(n.value)
    return out


def first_sentence(doc: str | None, limit: int = 300) -> str | None:
    """The first sentence of a docstring's first paragraph (the INK NL context)."""
    if not doc:
        return None
    para = " ".join(doc.strip().split("\n\n", 1)[0].split())
    m = re.match(r"(.+?[.!?])(\s|$)", para)
    text = (m.group(1) if m else para)[:limit]
    return text or None


@dataclass(slots=True)
class ImportRecord:
    kind: str  # "import" or "from"
    module: str  # as written, without leading dots ("" for `from . import x`)
    level: int  # leading dots
    name: str | None  # from-imports: the imported name ("*" for a star import)
    asname: str | None
    bound: str | None  # the name the statement binds (None for a star import)
    target: str  # what `bound` denotes, relative to `level`: "a" for `import a.b`, "a.b" for `import a.b as c`
    scope: str  # enclosing qualname, "" at module level
    fallback: bool  # inside an except handler (e.g. `except ImportError: import b`)
    seq_index: int  # index of its statement in the SEQ_IMPORT sequence


@dataclass(slots=True)
class UsageRecord:
    kind: str  # call (plain name), method (attribute chain), reference (chain, not called), decorator
    chain: tuple[str, ...] | None  # the written name chain; None when the callee is not a name chain
    attr: str | None  # last attribute of a callee that is not a name chain (`a.b().c()` -> "c")
    seq: int
    index: int
    enclosing_class: str | None
    enclosing_function: str | None
    order: int
    node: cst.CSTNode
    inner: bool = False  # passed up from a nested scope: sees the scope's final bindings
    via: int = UNRESOLVED  # BIND_IMPORT / BIND_DEF / BIND_LOCAL / BIND_BUILTIN / UNRESOLVED
    payload: object = None  # import index or def qualname or builtin name
    super_of: str | None = None  # `super().m()`: the qualname of the class whose method calls it


@dataclass(slots=True)
class Definition:
    qualname: str
    kind: str  # module, class, function, method
    signature: str
    doc: str | None
    platform: str | None = None  # every module-level binding of its top name is platform-guarded (`platforms`)


@dataclass(slots=True, eq=False)
class Scope:
    kind: str  # module, class, function, lambda, comprehension
    qualname: str
    parent: "Scope | None"
    bindings: dict[str, list[tuple[int, int, object]]] = field(default_factory=dict)
    pending: list[UsageRecord] = field(default_factory=list)
    declared_outer: set[str] = field(default_factory=set)  # global / nonlocal
    star: bool = False


@dataclass(slots=True)
class FileAnalysis:
    imports: list[ImportRecord]
    usages: list[UsageRecord]
    definitions: list[Definition]  # module- and class-level ones (nested ones are no API)
    star_import: bool
    # module-level names every binding of which is under a platform guard (`platforms`): name -> platform
    platform_names: dict[str, str] = field(default_factory=dict)
    module_platform: str | None = None  # the whole module: its top-level statements import a Windows-only module
    # what importing the module imports with it: (level, module as written, names) of each import statement at
    # its top level, not under `if`/`try` (a module importing a distribution that is not installed fails)
    requires: tuple[tuple[int, str, tuple[str, ...]], ...] = ()
    # module-level `name = other` / `name = a.b` (top level, one plain target): one object under two names
    aliases: tuple[tuple[str, str], ...] = ()


class _Event:
    __slots__ = ("code", "a", "b", "c")

    def __init__(self, code: int, a: object = None, b: object = None, c: object = None):
        self.code, self.a, self.b, self.c = code, a, b, c


# what a platform test can be (`sys.platform == "win32"`, `not ...`, `... and ...`, `sys.platform.startswith("win")`)
_TEST_NODES = frozenset({cst.Comparison, cst.BooleanOperation, cst.UnaryOperation, cst.Call})
_BIND, _ENTER, _EXIT, _EXCEPT_IN, _EXCEPT_OUT, _PLATFORM_IN, _PLATFORM_OUT = range(7)
_EMPTY_MODULE = cst.Module(body=[])


class Extractor:
    """Walks one module once. Use `analyse(module)`; an instance serves one file."""

    def __init__(self, builtins: frozenset[str]):
        self.builtins = builtins
        self.imports: list[ImportRecord] = []
        self.usages: list[UsageRecord] = []
        self.definitions: list[Definition] = []
        # per position sequence, the name each entry ends in (checked against ast by `positions`)
        self.tails: list[list[str | None]] = [[], [], [], []]
        self.order = 0
        self.except_depth = 0
        self.module_scope = Scope("module", "", None)
        self.scope = self.module_scope
        self.star = False
        # the file's class hierarchy (so that `self.m()` and `super().m()` resolve to a method): a class's
        # written bases, its methods, and per method its class and first parameter (None for a staticmethod)
        self.class_bases: dict[str, list[tuple[str, ...] | None]] = {}
        self.class_methods: dict[str, set[str]] = {}
        self.method_self: dict[str, tuple[str, str | None]] = {}
        # platform guards (`platforms`): the labels of the enclosing guarded blocks, and per module-level name
        # the label of each of its bindings (None: a binding that runs on this platform)
        self.platform_stack: list[str] = []
        self.module_platforms: dict[str, list[str | None]] = {}
        self.platform_flags: dict[str, tuple] = {}  # `_mswindows = sys.platform == "win32"` (platforms.flag_value)
        self.handlers = {
            cst.Call: self._call,
            cst.Attribute: self._attribute,
            cst.Import: self._import,
            cst.ImportFrom: self._import_from,
            cst.FunctionDef: self._function,
            cst.ClassDef: self._class,
            cst.Lambda: self._lambda,
            cst.Assign: self._assign,
            cst.AugAssign: self._assign,
            cst.AnnAssign: self._assign,
            cst.NamedExpr: self._assign,
            cst.For: self._for,
            cst.With: self._with,
            cst.ExceptHandler: self._except,
            cst.If: self._if,
            cst.ExceptStarHandler: self._except,
            cst.ListComp: self._comprehension,
            cst.SetComp: self._comprehension,
            cst.GeneratorExp: self._comprehension,
            cst.DictComp: self._comprehension,
            cst.CompFor: self._comp_for,
            cst.Global: self._declare,
            cst.Nonlocal: self._declare,
            cst.Decorator: self._decorator,
            cst.Del: self._del,
            cst.Try: self._try,
        }

    # -- driver ---------------------------------------------------------------------------
    def analyse(self, module: cst.Module) -> FileAnalysis:
        doc = first_sentence(module.get_docstring())
        self.definitions.append(Definition("", "module", "", doc))
        stack: list[object] = [_Event(_EXIT)]
        stack.extend(reversed(module.body))
        handlers = self.handlers
        while stack:
            item = stack.pop()
            if item.__class__ is _Event:
                self._event(item)
                continue
            handler = handlers.get(type(item))
            if handler is not None:
                handler(item, stack)
            else:
                self._children(item, _code_fields(type(item)), stack)
        self._resolve_members()
        platform_names = self._deleted_and_platforms()
        return FileAnalysis(self.imports, self.usages, self.definitions, self.star, platform_names,
                            _module_platform(module), *_module_requires_and_aliases(module))

    # -- `del` and platform guards at module level ------------------------------------------------
    def _deleted_and_platforms(self) -> dict[str, str]:
        """A module-level name whose last binding is a `del` is not in the module once it has run
        (six: `class X` then `del X`): its definitions leave the inventory and the usages that resolved
        to them have no importable name (unresolved, like a script's definitions). A module-level name
        every binding of which is platform-guarded gets that platform (its definitions too)."""
        deleted = {n for n, b in self.module_scope.bindings.items() if b and b[-1][1] == BIND_DELETED}
        if deleted:
            self.definitions = [d for d in self.definitions if not d.qualname or d.qualname.split(".", 1)[0]
                                not in deleted]
            for u in self.usages:
                if u.via == BIND_DEF and u.payload.split(".", 1)[0] in deleted:
                    u.via, u.payload = UNRESOLVED, None
        out = {}
        for name, labels in self.module_platforms.items():
            if name not in deleted and labels and labels[0] is not None and all(x == labels[0] for x in labels):
                # `capability:!a.b` -> `capability` (the corpus's tests are not evaluated); `optional_dependency:x`
                # keeps its module for build.py, which knows the file's own distribution
                out[name] = (labels[0] if labels[0].startswith(platforms.OPTIONAL_DEPENDENCY)
                             else platforms.public_label(labels[0]))
        if out:
            for d in self.definitions:
                if d.qualname:
                    d.platform = out.get(d.qualname.split(".", 1)[0])
        return out

    # -- `self.m()` and `super().m()` through the file's own class hierarchy ------------------------
    def _resolve_members(self) -> None:
        """`self.m()` (the method's first parameter, `cls` too) resolves to the first class of the
        enclosing class's hierarchy that defines `m`, `super().m()` to the first after the enclosing
        class; a hierarchy that reaches a base not defined in this file before `m` is found stays
        unresolved (the base may define it), and so does a method not found. No type inference."""
        for u in self.usages:
            if u.super_of is not None and u.attr is not None:
                owner = self._lookup(u.super_of, u.attr, skip_first=True)
                if owner is not None:
                    u.via, u.payload = BIND_DEF, f"{owner}.{u.attr}"
            elif u.via == BIND_LOCAL and u.chain is not None and len(u.chain) == 2 and u.kind == "method":
                cls, first = self.method_self.get(u.enclosing_function, (None, None))
                if first is not None and u.chain[0] == first:
                    owner = self._lookup(cls, u.chain[1])
                    if owner is not None:
                        u.via, u.payload = BIND_DEF, owner

    def _mro(self, cls: str) -> list[str | None]:
        """The class and its bases, depth first, left to right, each once; None for a base that is not
        a class of this file (the walk stops there)."""
        out, seen, stack = [], set(), [cls]
        while stack:
            c = stack.pop()
            if c is None:
                out.append(None)
                break
            if c in seen:
                continue
            seen.add(c)
            out.append(c)
            stack.extend(reversed([self._base_class(b) for b in self.class_bases.get(c, [])]))
        return out

    def _base_class(self, chain: tuple[str, ...] | None) -> str | None:
        if chain is None or len(chain) != 1:
            return None
        bound = self.module_scope.bindings.get(chain[0])
        if not bound or bound[-1][1] != BIND_DEF or bound[-1][2] not in self.class_bases:
            return None
        return bound[-1][2]

    def _lookup(self, cls: str, name: str, skip_first: bool = False) -> str | None:
        for c in self._mro(cls)[1 if skip_first else 0 :]:
            if c is None:
                return None
            if name in self.class_methods.get(c, ()):
                return c
        return None

    @staticmethod
    def _children(node: cst.CSTNode, names: tuple[str, ...], stack: list) -> None:
        """Push the code-bearing children of `node` so they pop in source order."""
        kids = []
        for name in names:
            value = getattr(node, name)
            cls = value.__class__
            if cls in _NODE_TYPES:
                kids.append(value)
            elif cls is tuple or cls is list:
                kids.extend(v for v in value if v.__class__ in _NODE_TYPES)
        kids.reverse()
        stack.extend(kids)

    def _event(self, ev: _Event) -> None:
        if ev.code == _BIND:
            for name in ev.a:
                self._bind(name, ev.b, ev.c)
        elif ev.code == _ENTER:
            self.scope = ev.a
            for name in ev.b or ():
                self._bind(name, BIND_LOCAL, None)
        elif ev.code == _EXIT:
            self._close(self.scope)
            self.scope = self.scope.parent
        elif ev.code == _EXCEPT_IN:
            self.except_depth += 1
        elif ev.code == _EXCEPT_OUT:
            self.except_depth -= 1
        elif ev.code == _PLATFORM_IN:
            self.platform_stack.append(ev.a)
        else:
            self.platform_stack.pop()

    def _next(self) -> int:
        self.order += 1
        return self.order

    def _bind(self, name: str, kind: int, payload: object) -> None:
        scope = self.scope
        if name in scope.declared_outer:
            scope = self.module_scope
        bound = scope.bindings.setdefault(name, [])
        if scope is self.module_scope and kind != BIND_DELETED:
            self.module_platforms.setdefault(name, []).append(self.platform_stack[0] if self.platform_stack else None)
        if kind != BIND_IMPORT and kind != BIND_DELETED and self.except_depth and bound and bound[-1][1] == BIND_IMPORT:
            # `try: import trio / except ImportError: trio = None` (or a stub `class trio:` / `def trio():`):
            # the module binding wins
            return
        bound.append((self._next(), kind, payload))

    def _enclosing(self) -> tuple[str | None, str | None]:
        cls = fn = None
        s = self.scope
        while s is not None and s.kind != "module":
            if s.kind == "function" and fn is None:
                fn = s.qualname
            elif s.kind == "class" and cls is None:
                cls = s.qualname
            s = s.parent
        return cls, fn

    def _usage(self, kind, chain, attr, seq, node, tail) -> None:
        index = len(self.tails[seq])
        self.tails[seq].append(tail)
        cls, fn = self._enclosing()
        u = UsageRecord(kind, chain, attr, seq, index, cls, fn, self._next(), node)
        self.usages.append(u)
        if chain is not None:
            self.scope.pending.append(u)

    def _child_qualname(self, name: str) -> str:
        s = self.scope
        if s.kind == "module":
            return name
        if s.kind == "class":
            return f"{s.qualname}.{name}"
        return f"{s.qualname}.<locals>.{name}"

    # -- resolution when a scope closes -------------------------------------------------------
    def _close(self, scope: Scope) -> None:
        if scope.star:
            self.star = True
        parent = scope.parent
        while parent is not None and parent.kind == "class":  # class bodies are invisible to nested scopes
            parent = parent.parent
        for u in scope.pending:
            head = u.chain[0]
            bound = scope.bindings.get(head)
            if bound and head not in scope.declared_outer:
                if u.inner:
                    _, kind, payload = bound[-1]
                else:
                    before = [b for b in bound if b[0] < u.order]
                    if not before:
                        if scope.kind == "module":
                            self._resolve_builtin(u, head)
                        continue  # bound in this function, but later: an unbound local
                    _, kind, payload = before[-1]
                if kind == BIND_DELETED:  # `del name` ran before: unbound (at module level, a builtin may answer)
                    if scope.kind == "module":
                        self._resolve_builtin(u, head)
                    continue
                u.via, u.payload = kind, payload
            elif parent is not None:
                # a function body runs after its enclosing scope is complete; a comprehension at once
                u.inner = u.inner or scope.kind in ("function", "lambda")
                target = self.module_scope if head in scope.declared_outer else parent
                target.pending.append(u)
            else:
                self._resolve_builtin(u, head)

    def _resolve_builtin(self, u: UsageRecord, head: str) -> None:
        if head in self.builtins:
            u.via, u.payload = BIND_BUILTIN, head
        elif self.module_scope.star:  # `from pkg.core import *`: resolved per file by the build (star_names)
            u.via, u.payload = BIND_STAR, head

    # -- handlers ---------------------------------------------------------------------------
    def _call(self, node: cst.Call, stack: list) -> None:
        func = node.func
        chain = dotted(func)
        if chain is not None:
            self._usage("call" if len(chain) == 1 else "method", chain, None, SEQ_CALL, node, chain[-1])
        else:
            attr = func.attr.value if func.__class__ is cst.Attribute else None
            self._usage("method" if attr else "call", None, attr, SEQ_CALL, node, attr)
            if attr and _is_super(func.value):
                self.usages[-1].super_of = self.usages[-1].enclosing_class
        kids = [a.value for a in node.args]
        kids.reverse()
        stack.extend(kids)
        if chain is None:
            stack.append(chain_base(func))

    def _attribute(self, node: cst.Attribute, stack: list) -> None:
        chain = dotted(node)
        if chain is not None:
            self._usage("reference", chain, None, SEQ_ATTRIBUTE, node, chain[-1])
        else:
            self.tails[SEQ_ATTRIBUTE].append(node.attr.value)
            stack.append(chain_base(node))

    def _decorator(self, node: cst.Decorator, stack: list) -> None:
        expr = node.decorator
        if expr.__class__ is cst.Name:
            self._usage("decorator", (expr.value,), None, SEQ_DECORATOR_NAME, expr, expr.value)
        else:
            stack.append(expr)

    def _import(self, node: cst.Import, stack: list) -> None:
        index = len(self.tails[SEQ_IMPORT])
        self.tails[SEQ_IMPORT].append(None)
        for alias in node.names:
            parts = dotted(alias.name)
            full = ".".join(parts)
            asname = alias.asname.name.value if alias.asname else None
            bound = asname or parts[0]
            target = full if asname else parts[0]
            self._add_import(ImportRecord("import", full, 0, None, asname, bound, target, self.scope.qualname,
                                          self.except_depth > 0, index))

    def _import_from(self, node: cst.ImportFrom, stack: list) -> None:
        index = len(self.tails[SEQ_IMPORT])
        self.tails[SEQ_IMPORT].append(None)
        module = ".".join(dotted(node.module)) if node.module is not None else ""
        level = len(node.relative)
        if isinstance(node.names, cst.ImportStar):
            self.scope.star = True
            self.imports.append(ImportRecord("from", module, level, "*", None, None, module, self.scope.qualname,
                                             self.except_depth > 0, index))
            return
        for alias in node.names:
            name = alias.name.value
            asname = alias.asname.name.value if alias.asname else None
            target = f"{module}.{name}" if module else name
            self._add_import(ImportRecord("from", module, level, name, asname, asname or name, target,
                                          self.scope.qualname, self.except_depth > 0, index))

    def _add_import(self, rec: ImportRecord) -> None:
        self.imports.append(rec)
        existing = self.scope.bindings.get(rec.bound)
        if rec.fallback and existing and existing[-1][1] == BIND_IMPORT:
            return  # `try: import a as x / except ImportError: import b as x`: x stays a
        if rec.bound == "__future__" or rec.module == "__future__":
            return
        self._bind(rec.bound, BIND_IMPORT, len(self.imports) - 1)

    def _function(self, node: cst.FunctionDef, stack: list) -> None:
        qual = self._child_qualname(node.name.value)
        in_def_scope = self.scope.kind in ("module", "class")
        if in_def_scope:
            kind = "method" if self.scope.kind == "class" else "function"
            if kind == "method":
                self.class_methods.setdefault(self.scope.qualname, set()).add(node.name.value)
                static = any(dotted(d.decorator) == ("staticmethod",) for d in node.decorators)
                first = [*node.params.posonly_params, *node.params.params][:1]
                self.method_self[qual] = (self.scope.qualname, None if static or not first else first[0].name.value)
            sig = _EMPTY_MODULE.code_for_node(node.params)
            ret = f" -> {_EMPTY_MODULE.code_for_node(node.returns.annotation)}" if node.returns else ""
            self.definitions.append(Definition(qual, kind, " ".join(f"({sig}){ret}".split()),
                                               first_sentence(node.get_docstring())))
        scope = Scope("function", qual, self.scope)
        params = [p.name.value for p in _all_params(node.params)]
        items: list[object] = list(node.decorators)
        items.extend(_param_exprs(node.params))
        if node.returns is not None:
            items.append(node.returns.annotation)
        items.append(_Event(_BIND, (node.name.value,), BIND_DEF, qual))  # nested: `outer.<locals>.inner`
        items.append(_Event(_ENTER, scope, params))
        items.append(node.body)
        items.append(_Event(_EXIT))
        items.reverse()
        stack.extend(items)

    def _class(self, node: cst.ClassDef, stack: list) -> None:
        qual = self._child_qualname(node.name.value)
        in_def_scope = self.scope.kind in ("module", "class")
        if in_def_scope:
            self.class_bases[qual] = [dotted(a.value) for a in node.bases]
            self.class_methods.setdefault(qual, set())
            bases = ", ".join(_EMPTY_MODULE.code_for_node(a).strip().rstrip(",") for a in (*node.bases, *node.keywords))
            self.definitions.append(Definition(qual, "class", f"({' '.join(bases.split())})",
                                               first_sentence(node.get_docstring())))
        items: list[object] = list(node.decorators)
        items.extend(a.value for a in node.bases)
        items.extend(a.value for a in node.keywords)
        items.append(_Event(_ENTER, Scope("class", qual, self.scope), ()))
        items.append(node.body)
        items.append(_Event(_EXIT))
        items.append(_Event(_BIND, (node.name.value,), BIND_DEF, qual))  # nested: `outer.<locals>.inner`
        items.reverse()
        stack.extend(items)

    def _lambda(self, node: cst.Lambda, stack: list) -> None:
        scope = Scope("lambda", self.scope.qualname, self.scope)
        items: list[object] = list(_param_exprs(node.params))
        items += [_Event(_ENTER, scope, [p.name.value for p in _all_params(node.params)]), node.body, _Event(_EXIT)]
        items.reverse()
        stack.extend(items)

    def _assign(self, node, stack: list) -> None:
        """Targets bind after the statement: `json = json.loads(s)` reads the old `json`."""
        if isinstance(node, cst.Assign):
            names = [n for t in node.targets for n in target_names(t.target)]
            if (self.scope is self.module_scope and len(names) == 1 and node.targets[0].target.__class__ is cst.Name
                    and node.value.__class__ in _TEST_NODES):  # never the text of a large literal
                truth = platforms.flag_source(_EMPTY_MODULE.code_for_node(node.value), self.platform_flags)
                if truth[0] is not None:  # `_mswindows = sys.platform == "win32"`, then `if _mswindows:`
                    self.platform_flags[names[0]] = truth
        else:
            names = target_names(node.target)
        stack.append(_Event(_BIND, names, BIND_LOCAL, None))
        self._children(node, _code_fields(type(node)), stack)

    def _for(self, node: cst.For, stack: list) -> None:
        items = [node.target, node.iter, _Event(_BIND, target_names(node.target), BIND_LOCAL, None), node.body]
        if node.orelse is not None:
            items.append(node.orelse)
        items.reverse()
        stack.extend(items)

    def _with(self, node: cst.With, stack: list) -> None:
        names = [n for item in node.items if item.asname for n in target_names(item.asname.name)]
        items: list[object] = []
        for item in node.items:
            items.append(item.item)
            if item.asname:
                items.append(item.asname.name)
        items += [_Event(_BIND, names, BIND_LOCAL, None), node.body]
        items.reverse()
        stack.extend(items)

    def _except(self, node, stack: list) -> None:
        items: list[object] = []
        if node.type is not None:
            items.append(node.type)
        if node.name is not None:
            items.append(_Event(_BIND, target_names(node.name.name), BIND_LOCAL, None))
        items += [_Event(_EXCEPT_IN), node.body, _Event(_EXCEPT_OUT)]
        items.reverse()
        stack.extend(items)

    def _if(self, node: cst.If, stack: list) -> None:
        """Import guards are treated like `try/except ImportError`: the preferred branch keeps the
        name. A version test (`sys.version_info >= (3, 8)`) prefers the branch the pipeline's
        (pinned) interpreter takes; any other test prefers the first branch. Imports in the other
        branches are fallbacks (they do not rebind an imported name), and so are their assignments
        to a name bound by an import (`else: trio = None`)."""
        taken = static_truth(node.test)
        body_label = else_label = None
        if self.scope is self.module_scope:  # platform labels matter for module-level bindings only
            body_label, else_label = platforms.labels_source(_EMPTY_MODULE.code_for_node(node.test), self.platform_flags)
        items: list[object] = [node.test]
        items += _platform(_guarded(node.body, taken is False), body_label)
        if node.orelse is not None:
            items += _platform(_guarded(node.orelse, taken is not False), else_label)
        items.reverse()
        stack.extend(items)

    def _try(self, node: cst.Try, stack: list) -> None:
        """A `try` whose body uses a Windows-only name (`ctypes.WinDLL`, `import msvcrt`): the body and its
        `else:` run on Windows only (`platforms`); the handlers are the fallback that runs here."""
        windows = self.scope is self.module_scope and any(  # platform labels matter for module-level bindings only
            s.__class__ is cst.SimpleStatementLine and platforms.windows_only_code(_EMPTY_MODULE.code_for_node(s))
            for s in node.body.body)
        label = platforms.WINDOWS if windows else None
        if label is None and self.scope is self.module_scope:  # `try: import docutils`: another distribution's
            top = _other_distribution(node.body.body)
            label = f"{platforms.OPTIONAL_DEPENDENCY}:{top}" if top else None  # build.py drops it for its own
        items: list[object] = _platform([node.body], label)
        items.extend(node.handlers)
        if node.orelse is not None:
            items += _platform([node.orelse], label)
        if node.finalbody is not None:
            items.append(node.finalbody)
        items.reverse()
        stack.extend(items)

    def _del(self, node: cst.Del, stack: list) -> None:
        """`del a, b` unbinds the names from here on (attribute and subscript targets are only read)."""
        stack.append(_Event(_BIND, target_names(node.target), BIND_DELETED, None))
        self._children(node, _code_fields(cst.Del), stack)

    def _comprehension(self, node, stack: list) -> None:
        scope = Scope("comprehension", self.scope.qualname, self.scope)
        items: list[object] = [_Event(_ENTER, scope, ())]
        if isinstance(node, cst.DictComp):
            items += [node.key, node.value]
        else:
            items.append(node.elt)
        items += [node.for_in, _Event(_EXIT)]
        items.reverse()
        stack.extend(items)

    def _comp_for(self, node: cst.CompFor, stack: list) -> None:
        items: list[object] = [node.target, node.iter, _Event(_BIND, target_names(node.target), BIND_LOCAL, None)]
        items.extend(node.ifs)
        if node.inner_for_in is not None:
            items.append(node.inner_for_in)
        items.reverse()
        stack.extend(items)

    def _declare(self, node, stack: list) -> None:
        self.scope.declared_outer.update(n.name.value for n in node.names)


def private(dotted_name: str) -> bool:
    """A name with a part that starts with one underscore (`_models`, `__x`), dunders (`__init__`) aside."""
    return any(p.startswith("_") and not (p.startswith("__") and p.endswith("__") and len(p) > 4)
               for p in dotted_name.split("."))


def _other_distribution(body) -> str | None:
    """The first top-level module a simple statement of a `try` body imports absolutely that is not the
    standard library's (`try: from docutils.utils import Reporter` -> docutils)."""
    for stmt in body:
        if stmt.__class__ is not cst.SimpleStatementLine:
            continue
        for small in stmt.body:
            if small.__class__ is cst.Import:
                tops = [dotted(a.name)[0] for a in small.names]
            elif small.__class__ is cst.ImportFrom and not small.relative and small.module is not None:
                tops = [dotted(small.module)[0]]
            else:
                continue
            for top in tops:
                if top not in sys.stdlib_module_names and top not in sys.builtin_module_names and top != "__future__":
                    return top
    return None


def _module_platform(module: cst.Module) -> str | None:
    """`windows` when a top-level statement (not under `if`/`try`) imports a Windows-only module (`import
    _winapi`, `from msvcrt import getwch`): the module cannot be imported elsewhere (asyncio.windows_events)."""
    for stmt in module.body:
        if stmt.__class__ is not cst.SimpleStatementLine:
            continue
        for small in stmt.body:
            if small.__class__ is cst.Import:
                tops = [dotted(a.name)[0] for a in small.names]
            elif small.__class__ is cst.ImportFrom and not small.relative and small.module is not None:
                tops = [dotted(small.module)[0]]
                if not isinstance(small.names, cst.ImportStar):  # `from six.moves import winreg`
                    tops += [a.name.value for a in small.names if a.name.__class__ is cst.Name]
            else:
                continue
            if any(t in platforms.WINDOWS_MODULES for t in tops):
                return platforms.WINDOWS
    return None


def _module_requires_and_aliases(module: cst.Module) -> tuple[tuple, tuple]:
    """The imports of the module's top-level statements (not under `if`/`try`: what importing it needs), as
    (level, module, imported names); and its top-level aliases `name = other.name` (one plain target, a
    name chain as the value, not the same name)."""
    requires, aliases = [], []
    for stmt in module.body:
        if stmt.__class__ is not cst.SimpleStatementLine:
            continue
        for small in stmt.body:
            if small.__class__ is cst.Import:
                requires += [(0, ".".join(dotted(a.name)), ()) for a in small.names]
            elif small.__class__ is cst.ImportFrom:
                written = ".".join(dotted(small.module)) if small.module is not None else ""
                names = () if isinstance(small.names, cst.ImportStar) else tuple(a.name.value for a in small.names)
                if written != "__future__":
                    requires.append((len(small.relative), written, names))
            elif (small.__class__ is cst.Assign and len(small.targets) == 1
                  and small.targets[0].target.__class__ is cst.Name
                  and small.value.__class__ in (cst.Name, cst.Attribute)):
                value = dotted(small.value)
                name = small.targets[0].target.value
                if value is not None and value != (name,):
                    aliases.append((name, ".".join(value)))
    return tuple(requires), tuple(aliases)


def _is_super(node: cst.BaseExpression) -> bool:
    """`super()` or `super(C, self)`."""
    return node.__class__ is cst.Call and node.func.__class__ is cst.Name and node.func.value == "super"


def _all_params(params: cst.Parameters) -> list[cst.Param]:
    out = [*params.posonly_params, *params.params, *params.kwonly_params]
    for p in (params.star_arg, params.star_kwarg):
        if isinstance(p, cst.Param):
            out.append(p)
    return out


def _param_exprs(params: cst.Parameters) -> list[cst.BaseExpression]:
    """Annotations and defaults, in source order: evaluated in the enclosing scope."""
    out = []
    ordered = [*params.posonly_params, *params.params]
    if isinstance(params.star_arg, cst.Param):
        ordered.append(params.star_arg)
    ordered += params.kwonly_params
    if params.star_kwarg is not None:
        ordered.append(params.star_kwarg)
    for p in ordered:
        if p.annotation is not None:
            out.append(p.annotation.annotation)
        if p.default is not None:
            out.append(p.default)
    return out


def _guarded(body: cst.CSTNode, fallback: bool) -> list[object]:
    return [_Event(_EXCEPT_IN), body, _Event(_EXCEPT_OUT)] if fallback else [body]


def _platform(items: list[object], label: str | None) -> list[object]:
    return [_Event(_PLATFORM_IN, label), *items, _Event(_PLATFORM_OUT)] if label else items


_COMPARE = {cst.LessThan: operator.lt, cst.LessThanEqual: operator.le, cst.GreaterThan: operator.gt,
            cst.GreaterThanEqual: operator.ge, cst.Equal: operator.eq, cst.NotEqual: operator.ne}


def _version_value(node: cst.BaseExpression):
    """`sys.version_info`, `sys.version_info[0]`, `[:2]`, `.major`/`.minor` on this interpreter; else None."""
    if dotted(node) in (("sys", "version_info"), ("version_info",)):
        return tuple(sys.version_info)
    if node.__class__ is cst.Attribute and node.attr.value in ("major", "minor", "micro"):
        base = _version_value(node.value)
        return getattr(sys.version_info, node.attr.value) if base is not None else None
    if node.__class__ is cst.Subscript and len(node.slice) == 1:
        base = _version_value(node.value)
        if base is None or base.__class__ is not tuple:
            return None
        index = node.slice[0].slice
        if index.__class__ is cst.Index and index.value.__class__ is cst.Integer:
            return base[int(index.value.value)]
        if index.__class__ is cst.Slice and index.step is None:
            lo = _int_literal(index.lower) if index.lower is not None else 0
            hi = _int_literal(index.upper) if index.upper is not None else len(base)
            return None if lo is None or hi is None else base[lo:hi]
    return None


def _int_literal(node: cst.BaseExpression):
    """A decimal/hex/octal/binary integer literal (`3`, `0x200C`, `1_000`), else None."""
    if node.__class__ is not cst.Integer:
        return None
    try:
        return int(node.value, 0)
    except ValueError:  # `010` and the like: not a Python 3 literal that matters here
        return None


def _literal(node: cst.BaseExpression):
    """An int or a tuple of ints, as written; else None."""
    if node.__class__ is cst.Integer:
        return _int_literal(node)
    if node.__class__ is cst.Tuple:
        values = tuple(_int_literal(e.value) for e in node.elements)
        return None if None in values else values
    return None


def static_truth(test: cst.BaseExpression) -> bool | None:
    """The value of an `if` test that compares `sys.version_info` with literals, on the running
    (pinned) interpreter; None for any other test. Code is never evaluated: only this pattern is."""
    if test.__class__ is cst.UnaryOperation and test.operator.__class__ is cst.Not:
        inner = static_truth(test.expression)
        return None if inner is None else not inner
    if test.__class__ is not cst.Comparison or len(test.comparisons) != 1:
        return None
    target = test.comparisons[0]
    op = _COMPARE.get(target.operator.__class__)
    left = _version_value(test.left) if op is not None else None
    if left is None:
        return None
    right = _literal(target.comparator)
    if right is None or type(left) is not type(right):
        return None
    return op(left, right)
