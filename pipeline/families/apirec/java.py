"""apirec (APIBench-C, Java): recommendation points from the corpus's Java files, resolved through
each file's imports with tree-sitter-java (corpus code is parsed, never compiled or run).

Two passes over the manifest's Java files. The first indexes every type the corpus declares
(top-level and member types: FQN, declaring distribution, method names, field types as written) and
keeps each file's scope (package, imports, own types). The second, over the train split (the
n-gram) and the evaluation split (points), resolves every method invocation and constructor call
inside a method or constructor:

- constructors `new T(...)`: `T` resolved as a type -> `pkg.T.<init>`;
- static calls `T.m(...)` on a type name; fully qualified `java.util.Collections.sort(...)`;
- calls on a variable, parameter or field whose declared type resolves (`List<String> xs;
  xs.add(x)` -> `java.util.List.add`; `var x = new T()` takes `T`; generics and annotations dropped;
  arrays, primitives and type parameters do not resolve), on `this.f`, on a static field of an
  indexed type (`System.out.println` -> `java.io.PrintStream.println`), on a cast `((T) x)` and on
  a string literal (`java.lang.String`);
- unqualified `m(...)` through a static import, or a method the enclosing named class declares.

A simple type name resolves (JLS order, simplified): the file's own types, single-type imports,
the file's package, on-demand (`.*`) imports, then `java.lang`; the last three only against the
corpus's index (a class the corpus does not hold is not guessed), and a name that is a type
parameter anywhere in the file never resolves. Every other call is counted by reason (the
receiver is a call's result, an untyped lambda parameter, an inherited member, ...), not made.
Each resolved call has its own cut point (a call whose receiver is a call is never resolved, so no
two points share a start).

Points follow the Python ones (generate.py): context = the file's package and import
declarations as written, a blank line, then the method from its first line up to the call (cut
exactly before the callee: the receiver for `xs.add`, `new` for a constructor); answers: the
FQN (`<init>` for constructors) and its class. Category, by distribution as for Python
(`pipeline.extract.library`; never by the `repository:` grouping): `stdlib` for the JDK's packages (java.*,
javax.*, jdk.*, sun.*, com.sun.*) and any type a JDK source (`builtin: jdk`) declares, `user_defined` for a
type the caller's own distribution declares (its source; a `jsonl` dump's repository), else `third_party`.
Position, the length
buckets (over the Java methods that hold points), the domain and the split are as for Python; the
n-gram is a separate one trained on the Java train split.
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import pyarrow as pa
import tree_sitter
import tree_sitter_java

from pipeline.core import ids
from pipeline.core import shards as sharding
from pipeline.extract import library
from pipeline.families.apirec.points import (NGram, allocate, api_class, count_bigrams, length_buckets, library_group,
                                             position, ranking_row)
from pipeline.manifest import read_text

LANGUAGE = tree_sitter.Language(tree_sitter_java.language())
TYPE_DECLS = frozenset(("class_declaration", "interface_declaration", "enum_declaration", "record_declaration",
                        "annotation_type_declaration"))
METHOD_DECLS = frozenset(("method_declaration", "constructor_declaration", "compact_constructor_declaration"))
BODIES = frozenset(("class_body", "interface_body", "enum_body", "enum_body_declarations", "annotation_type_body"))
CONSTRUCTOR = "<init>"
CALLS = tree_sitter.Query(LANGUAGE, "(method_invocation) @call (object_creation_expression) @call")
DECLS = tree_sitter.Query(LANGUAGE, """
(local_variable_declaration) @decl (formal_parameter) @decl (spread_parameter) @decl
(catch_formal_parameter) @decl (enhanced_for_statement) @decl (resource) @decl
(lambda_expression parameters: (identifier) @lambda) (inferred_parameters (identifier) @lambda)
(type_parameter (type_identifier) @tparam)
""")


def parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(LANGUAGE)


def text_of(node, src: bytes) -> str:
    return src[node.start_byte:node.end_byte].decode("utf-8", "replace")


def type_name(node, src: bytes) -> str | None:
    """The class a declared type names, as written without generics or annotations; None for
    primitives, arrays, `void` and anything else."""
    if node is None:
        return None
    if node.type == "generic_type":
        node = node.named_children[0] if node.named_children else None
        if node is None:
            return None
    if node.type == "type_identifier":
        return text_of(node, src)
    if node.type == "scoped_type_identifier":
        parts = [text_of(c, src) for c in node.named_children if c.type == "type_identifier"]
        inner = [c for c in node.named_children if c.type == "scoped_type_identifier"]
        head = type_name(inner[0], src) if inner else None
        return ".".join(([head] if head else []) + parts)
    return None


def dotted(node, src: bytes) -> str | None:
    """`a.b.C` for an identifier or a chain of field accesses on identifiers; else None."""
    if node.type == "identifier":
        return text_of(node, src)
    if node.type == "field_access":
        obj, fld = node.child_by_field_name("object"), node.child_by_field_name("field")
        head = dotted(obj, src) if obj is not None else None
        return f"{head}.{text_of(fld, src)}" if head and fld is not None else None
    return None


def body_fields(body, src: bytes) -> dict[str, str]:
    """Field name -> declared type as written (type_name) of one class body."""
    out = {}
    for member in body.named_children:
        if member.type in ("field_declaration", "constant_declaration"):
            t = type_name(member.child_by_field_name("type"), src)
            for d in member.children_by_field_name("declarator"):
                name = d.child_by_field_name("name")
                if t and name is not None and d.child_by_field_name("dimensions") is None:
                    out[text_of(name, src)] = t
        elif member.type == "enum_body_declarations":
            out.update(body_fields(member, src))
    return out


def body_methods(body, src: bytes) -> set[str]:
    out = set()
    for member in body.named_children:
        if member.type == "method_declaration":
            out.add(text_of(member.child_by_field_name("name"), src))
        elif member.type == "enum_body_declarations":
            out |= body_methods(member, src)
    return out


@dataclass
class TypeInfo:
    fqn: str
    distribution: str  # the distribution that declares it (pipeline.extract.library.distribution)
    file_id: str
    methods: set[str]
    fields: dict[str, str]  # name -> type as written in the declaring file


@dataclass
class FileScope:
    package: str
    distribution: str
    singles: dict[str, str] = field(default_factory=dict)  # simple name -> FQN (import a.b.C;)
    on_demand: list[str] = field(default_factory=list)  # packages / types (import a.b.*;)
    static_single: dict[str, str] = field(default_factory=dict)  # method -> class FQN (import static a.C.m;)
    static_on_demand: list[str] = field(default_factory=list)  # class FQNs (import static a.C.*;)
    own: dict[str, str] = field(default_factory=dict)  # the file's own types: simple name -> FQN
    tparams: set[str] = field(default_factory=set)  # every type parameter name of the file
    header: str = ""  # package and import declarations as written


class Index:
    """Every type the corpus's Java files declare, and each file's scope."""

    def __init__(self):
        self.types: dict[str, TypeInfo] = {}
        self.packages: dict[str, set[str]] = defaultdict(set)  # package -> top-level simple names
        self.scopes: dict[str, FileScope] = {}

    def add_file(self, file_id: str, distribution: str, tree, src: bytes) -> FileScope:
        root = tree.root_node
        scope = FileScope(package="", distribution=distribution)
        header = []
        for child in root.named_children:
            if child.type == "package_declaration":
                name = next((c for c in child.named_children if c.type in ("identifier", "scoped_identifier")), None)
                scope.package = text_of(name, src) if name is not None else ""
                header.append(text_of(child, src))
            elif child.type == "import_declaration":
                header.append(text_of(child, src))
                name = next((c for c in child.named_children if c.type in ("identifier", "scoped_identifier")), None)
                if name is None:
                    continue
                target = text_of(name, src).replace(" ", "")
                static = any(c.type == "static" for c in child.children)
                star = any(c.type == "asterisk" for c in child.children)
                if static and star:
                    scope.static_on_demand.append(target)
                elif static:
                    cls, _, member = target.rpartition(".")
                    scope.static_single[member] = cls
                elif star:
                    scope.on_demand.append(target)
                else:
                    scope.singles[target.rpartition(".")[2]] = target
        scope.header = "\n".join(header)

        def walk(node, prefix: str, top: bool):
            for child in node.named_children:
                if child.type in TYPE_DECLS:
                    name = child.child_by_field_name("name")
                    body = child.child_by_field_name("body")
                    if name is None:
                        continue
                    simple = text_of(name, src)
                    fqn = prefix + simple
                    scope.own.setdefault(simple, fqn)
                    if top:
                        self.packages[scope.package].add(simple)
                    methods, fields = (body_methods(body, src), body_fields(body, src)) if body is not None else (set(), {})
                    self.types.setdefault(fqn, TypeInfo(fqn, distribution, file_id, methods, fields))
                    if body is not None:
                        walk(body, fqn + ".", False)
                elif child.type in ("enum_body_declarations",):
                    walk(child, prefix, False)

        walk(root, scope.package + "." if scope.package else "", True)
        for tp in tree_sitter.QueryCursor(DECLS).captures(root).get("tparam", []):
            scope.tparams.add(text_of(tp, src))
        self.scopes[file_id] = scope
        return scope

    def simple(self, scope: FileScope, name: str) -> str | None:
        if name in scope.tparams:
            return None
        if name in scope.own:
            return scope.own[name]
        if name in scope.singles:
            return scope.singles[name]
        if name in self.packages.get(scope.package, ()):
            return f"{scope.package}.{name}" if scope.package else name
        for target in scope.on_demand:
            if name in self.packages.get(target, ()) or f"{target}.{name}" in self.types:
                return f"{target}.{name}"
        if name in self.packages.get("java.lang", ()):
            return f"java.lang.{name}"
        return None

    def resolve_type(self, scope: FileScope, name: str | None) -> str | None:
        """A type name as written in a file (simple or dotted) -> its FQN, or None."""
        if not name:
            return None
        head, _, rest = name.partition(".")
        base = self.simple(scope, head)
        if base is not None and not rest:
            return base
        if base is not None and f"{base}.{rest}" in self.types:
            return f"{base}.{rest}"
        if rest and name in self.types:
            return name
        return None

    def field_type(self, cls: str, name: str) -> str | None:
        info = self.types.get(cls)
        if info is None or name not in info.fields:
            return None
        return self.resolve_type(self.scopes[info.file_id], info.fields[name])


JDK_PACKAGES = ("java.", "javax.", "jdk.", "sun.", "com.sun.")  # the JDK's own packages, internal ones too


def category(cls: str, distribution: str, index: Index) -> str:
    """stdlib / user_defined / third_party of a call to class `cls` from a file of `distribution`: the JDK's
    packages and the JDK source's types are the standard library (from any caller, the JDK's own files
    included); a type of the caller's own distribution is user-defined; anything else third-party."""
    if cls.startswith(JDK_PACKAGES):
        return "stdlib"
    info = index.types.get(cls)
    if info is not None and info.distribution == library.STDLIB_DISTRIBUTION:
        return "stdlib"
    return "user_defined" if info is not None and info.distribution == distribution else "third_party"


def render(fqn: str, scope: FileScope, index: Index) -> str:
    """How `fqn` is written in a file of this scope: its class by simple name where the file sees it
    so (own, imported, same package, java.lang), else fully qualified; `new C` for constructors."""
    cls, _, member = fqn.rpartition(".")
    simple = cls.rpartition(".")[2]
    written = simple if index.resolve_type(scope, simple) == cls else cls
    return f"new {written}" if member == CONSTRUCTOR else f"{written}.{member}"


@dataclass(frozen=True)
class Call:
    """One resolved call inside a method."""

    start: int  # byte offset of the call (receiver or `new`)
    args: int  # byte offset of its argument list
    fqn: str
    how: str  # constructor / static / variable / field / this / static_field / cast / literal / unqualified / static_import


class Resolver:
    """Resolves the calls of one file."""

    def __init__(self, index: Index, scope: FileScope, src: bytes):
        self.index, self.scope, self.src = index, scope, src
        self._decls: dict[int, list[tuple[int, str, str | None]]] = {}

    def declarations(self, method) -> list[tuple[int, str, str | None]]:
        """(byte, name, declared type as written or None) of the method's locals and parameters."""
        key = method.id
        if key not in self._decls:
            out, src = [], self.src
            caps = tree_sitter.QueryCursor(DECLS).captures(method)
            for node in caps.get("decl", []):
                t = node.child_by_field_name("type")
                tname = type_name(t, src) if node.type != "spread_parameter" else None
                if node.type == "catch_formal_parameter":
                    ct = [c for c in node.named_children if c.type == "catch_type"]
                    alts = [c for c in ct[0].named_children] if ct else []
                    tname = type_name(alts[0], src) if len(alts) == 1 else None
                declarators = node.children_by_field_name("declarator") or [node]
                for d in declarators:
                    name = d.child_by_field_name("name")
                    if name is None:
                        continue
                    dtype = tname
                    if d.child_by_field_name("dimensions") is not None:
                        dtype = None
                    if dtype == "var":
                        value = d.child_by_field_name("value")
                        dtype = (type_name(value.child_by_field_name("type"), src)
                                 if value is not None and value.type == "object_creation_expression" else None)
                    out.append((name.start_byte, text_of(name, src), dtype))
            for node in caps.get("lambda", []):
                out.append((node.start_byte, text_of(node, src), None))
            out.sort()
            self._decls[key] = out
        return self._decls[key]

    def enclosing_classes(self, node) -> list[tuple[str | None, object]]:
        """(FQN or None for anonymous / local classes, body node), innermost first."""
        out = []
        n = node.parent
        while n is not None:
            if n.type in BODIES and n.type != "enum_body_declarations":
                owner = n.parent
                fqn = None
                if owner is not None and owner.type in TYPE_DECLS:
                    fqn = self.named_fqn(owner)
                out.append((fqn, n))
            n = n.parent
        return out

    def named_fqn(self, decl) -> str | None:
        """The FQN of a member type declaration (None for a local class)."""
        names = []
        n = decl
        while n is not None:
            if n.type in TYPE_DECLS:
                names.append(text_of(n.child_by_field_name("name"), self.src))
            elif n.type in METHOD_DECLS or n.type in ("object_creation_expression", "block", "lambda_expression"):
                return None
            n = n.parent
        pkg = self.scope.package
        return ".".join(([pkg] if pkg else []) + names[::-1])

    def variable(self, method, name: str, at: int, node) -> tuple[str | None, str] | None:
        """(type FQN or None, how) if `name` is a local or parameter declared before byte `at` (in this
        method, then in the methods enclosing it: captured locals of anonymous classes and lambdas) or a
        field of an enclosing class; None if no variable has that name."""
        while method is not None:
            hits = [t for start, n, t in self.declarations(method) if n == name and start < at]
            if hits:
                return self.index.resolve_type(self.scope, hits[-1]), "variable"
            method = innermost_method(method)
        for fqn, body in self.enclosing_classes(node):
            fields = self.index.types[fqn].fields if fqn in self.index.types else body_fields(body, self.src)
            if name in fields:
                return self.index.resolve_type(self.scope, fields[name]), "field"
        return None

    def receiver(self, method, obj, call) -> tuple[str | None, str]:
        """(class FQN of the receiver, how) or (None, reason)."""
        src, index, scope = self.src, self.index, self.scope
        kind = obj.type
        if kind == "identifier":
            var = self.variable(method, text_of(obj, src), obj.start_byte, call)
            if var is not None:
                return var if var[0] else (None, f"untyped_{var[1]}")
            cls = index.resolve_type(scope, text_of(obj, src))
            return (cls, "static") if cls else (None, "unknown_name")
        if kind == "this":
            cls = next((f for f, _ in self.enclosing_classes(call)), None)
            return (cls, "this") if cls else (None, "anonymous_this")
        if kind == "field_access":
            inner = obj.child_by_field_name("object")
            fld = text_of(obj.child_by_field_name("field"), src)
            if inner is not None and inner.type == "this":
                cls = next((f for f, _ in self.enclosing_classes(call)), None)
                t = index.field_type(cls, fld) if cls else None
                return (t, "field") if t else (None, "untyped_field")
            chain = dotted(obj, src)
            if chain:
                head = chain.split(".")[0]
                if self.variable(method, head, obj.start_byte, call) is None:
                    cls = index.resolve_type(scope, chain)
                    if cls:
                        return cls, "static"
                    owner = index.resolve_type(scope, chain.rpartition(".")[0])
                    t = index.field_type(owner, fld) if owner else None
                    if t:
                        return t, "static_field"
            return None, "field_of_expression"
        if kind == "parenthesized_expression" and obj.named_children and obj.named_children[0].type == "cast_expression":
            cls = index.resolve_type(scope, type_name(obj.named_children[0].child_by_field_name("type"), src))
            return (cls, "cast") if cls else (None, "unknown_type")
        if kind == "string_literal":
            cls = index.resolve_type(scope, "String")
            return (cls, "literal") if cls else (None, "unknown_type")
        if kind in ("method_invocation", "object_creation_expression"):
            # the receiver is a call's result (its return type is not looked up; `new T().m()` would also
            # share its cut point with the constructor's)
            return None, "call_result"
        if kind == "super":
            return None, "super"
        return None, "expression"

    def resolve(self, method, call) -> tuple[Call | None, str]:
        args = call.child_by_field_name("arguments")
        if args is None:
            return None, "no_arguments"
        if call.type == "object_creation_expression":
            cls = self.index.resolve_type(self.scope, type_name(call.child_by_field_name("type"), self.src))
            if not cls:
                return None, "unknown_type"
            return Call(call.start_byte, args.start_byte, f"{cls}.{CONSTRUCTOR}", "constructor"), "constructor"
        name = text_of(call.child_by_field_name("name"), self.src)
        obj = call.child_by_field_name("object")
        if obj is None:
            if name in self.scope.static_single:
                cls = self.scope.static_single[name]
                return Call(call.start_byte, args.start_byte, f"{cls}.{name}", "static_import"), "static_import"
            for fqn, body in self.enclosing_classes(call):
                methods = self.index.types[fqn].methods if fqn in self.index.types else body_methods(body, self.src)
                if name in methods:
                    if fqn is None:
                        return None, "anonymous_class_method"
                    return Call(call.start_byte, args.start_byte, f"{fqn}.{name}", "unqualified"), "unqualified"
            for cls in self.scope.static_on_demand:
                if name in getattr(self.index.types.get(cls), "methods", ()):
                    return Call(call.start_byte, args.start_byte, f"{cls}.{name}", "static_import"), "static_import"
            return None, "unqualified_unknown"
        cls, how = self.receiver(method, obj, call)
        if cls is None:
            return None, how
        return Call(call.start_byte, args.start_byte, f"{cls}.{name}", how), how


def innermost_method(node):
    n = node.parent
    while n is not None:
        if n.type in METHOD_DECLS:
            return n
        n = n.parent
    return None


@dataclass(frozen=True)
class MethodCalls:
    method_start: int  # byte offset of the method declaration
    row: int  # 0-based line of the method's start
    last_row: int
    qualname: str
    calls: tuple[Call, ...]


def file_calls(index: Index, scope: FileScope, tree, src: bytes, stats: Counter | None) -> list[MethodCalls]:
    """Resolved calls per method, in source order; unresolved ones counted in `stats`."""
    resolver = Resolver(index, scope, src)
    per: dict[int, tuple[object, list[Call]]] = {}
    for call in sorted(tree_sitter.QueryCursor(CALLS).captures(tree.root_node).get("call", []),
                       key=lambda n: (n.start_byte, n.end_byte)):
        method = innermost_method(call)
        if method is None:
            continue
        found, how = (None, "parse_error") if method.has_error else resolver.resolve(method, call)
        if stats is not None:
            stats["calls"] += 1
            stats[("resolved:" if found else "unresolved:") + how] += 1
        if method.id not in per:
            per[method.id] = (method, [])
        if found:
            per[method.id][1].append(found)
    out = []
    for method, calls in per.values():
        if not calls:
            continue
        owner = next((f for f, _ in resolver.enclosing_classes(method)), None) or "<local>"
        name = text_of(method.child_by_field_name("name"), src) if method.child_by_field_name("name") else "?"
        owner_short = owner[len(scope.package) + 1:] if scope.package and owner.startswith(scope.package + ".") else owner
        out.append(MethodCalls(method.start_byte, method.start_point[0], method.end_point[0],
                               f"{owner_short}.{name}:{method.start_point[0] + 1}", tuple(calls)))
    return sorted(out, key=lambda m: m.method_start)


def java_files(manifest_rows: list[dict]) -> list[dict]:
    """The manifest's Java files (duplicates left out) in file_id order: the order both passes visit them in."""
    return sorted((r for r in manifest_rows if r["language"] == "java" and not r.get("duplicate")),
                  key=lambda r: r["file_id"])


def distributions(stdlib_sources: frozenset[str], per_repository_sources: frozenset[str]):
    def distribution(r: dict) -> str:
        return library.distribution(r["source"], r["repository"], r["source"] in per_repository_sources,
                                    r["source"] in stdlib_sources)

    return distribution


def index_files(java: list[dict], root, distribution, shard: int = 0, shards: int = 1) -> tuple[Index, int]:
    """Pass 1 over the Java files (of one shard): their types and scopes, and the unreadable files counted."""
    p, index, unreadable = parser(), Index(), 0
    for r in java:
        if not sharding.in_shard(r["source"], r["path"], shard, shards):
            continue
        try:
            src = read_text(r, root).encode("utf-8")
        except (OSError, UnicodeDecodeError, ValueError):
            unreadable += 1
            continue
        index.add_file(r["file_id"], distribution(r), p.parse(src), src)
    return index, unreadable


def resolve_files(index: Index, java: list[dict], root, eval_split: str, shard: int = 0,
                  shards: int = 1) -> tuple[Counter, list, dict, Counter]:
    """Pass 2 over the train and evaluation files (of one shard) against the whole corpus's index: the train
    split's bigram counts (points.count_bigrams), the evaluation split's raw points (in file_id, method, call
    order), the lengths of the methods that hold them, and the resolution counters."""
    p = parser()
    counts: Counter = Counter()
    eval_stats: Counter = Counter()
    raw = []
    lengths: dict[tuple[str, str], int] = {}
    for r in java:
        if r["split"] not in ("train", eval_split) or r["file_id"] not in index.scopes:
            continue
        if not sharding.in_shard(r["source"], r["path"], shard, shards):
            continue
        src = read_text(r, root).encode("utf-8")
        tree = p.parse(src)
        scope = index.scopes[r["file_id"]]
        is_eval = r["split"] == eval_split
        methods = file_calls(index, scope, tree, src, eval_stats if is_eval else None)
        if r["split"] == "train":
            counts.update(count_bigrams([c.fqn for c in m.calls] for m in methods))
        if not is_eval:
            continue
        text = src.decode("utf-8")
        line_bytes = src.split(b"\n")
        byte_starts, char_starts = [0], [0]
        for line in line_bytes:
            byte_starts.append(byte_starts[-1] + len(line) + 1)
            char_starts.append(char_starts[-1] + len(line.decode("utf-8")) + 1)

        def char_at(byte: int) -> tuple[int, int, int]:
            row = bisect.bisect_right(byte_starts, byte) - 1
            col = len(src[byte_starts[row]:byte].decode("utf-8"))
            return row, col, char_starts[row] + col

        for m in methods:
            n = m.last_row - m.row + 1
            lengths[(r["file_id"], m.qualname)] = n
            body_start = char_starts[m.row]
            for b, c in enumerate(m.calls, 1):
                row, col, offset = char_at(c.start)
                written = src[c.start:c.args].decode("utf-8").rstrip()
                raw.append((r, m.qualname, text[body_start:offset], b, len(m.calls), row - m.row + 1, n,
                            m.calls[b - 2].fqn if b > 1 else None, c.fqn, row + 1, col, written))
    return counts, raw, lengths, eval_stats


def cap_raw(raw: list, max_points: int, seed: int, totals: dict[str, int] | None = None,
            per_source: int | None = None) -> list:
    """The seeded subset of `max_points` raw points, stratified by source as the Python points (generate.cap_points):
    each source's share by its points before the cap (`totals`, default: counted in `raw`); `per_source`: the first
    that many of each source instead (a shard's part: a superset of what the global cap keeps of it)."""
    if not max_points or len(raw) <= max_points:
        return raw
    keyed = {ids.stable_id("apirec", x[0]["file_id"], x[9], x[10]): x for x in raw}
    by_source: dict[str, list[str]] = {}
    for pid, x in keyed.items():
        by_source.setdefault(x[0]["source"], []).append(pid)
    quota = ({s: per_source for s in by_source} if per_source is not None
             else allocate(totals or {s: len(v) for s, v in by_source.items()}, max_points))
    keep = {pid for s, pids in by_source.items()
            for pid in sorted(pids, key=lambda i: ids.seeded_order_key(seed, i))[:quota.get(s, 0)]}
    return [x for pid, x in keyed.items() if pid in keep]


def java_points(manifest_rows: list[dict], root, domains: dict[str, str], default_domain: str, eval_split: str,
                max_points: int, candidates: int, top_k: int, seed: int,
                popular: tuple[str, ...] = (), stdlib_sources: frozenset[str] = frozenset(),
                per_repository_sources: frozenset[str] = frozenset()) -> tuple[list[dict], list[dict], dict]:
    """Java points (schemas.POINTS rows), their n-gram rankings (BASELINES rows) and stats. `stdlib_sources`:
    the JDK sources (`builtin: jdk`); `per_repository_sources`: sources of many projects (`jsonl`), one
    distribution per repository (pipeline.extract.library.distribution)."""
    java = java_files(manifest_rows)
    if not java:
        return finish(Index(), 0, 0, Counter(), [], {}, Counter(), None, domains, default_domain, max_points,
                      candidates, top_k, seed, popular)
    index, unreadable = index_files(java, root, distributions(stdlib_sources, per_repository_sources))
    counts, raw, lengths, eval_stats = resolve_files(index, java, root, eval_split)
    return finish(index, len(java), unreadable, counts, raw, lengths, eval_stats, None, domains, default_domain,
                  max_points, candidates, top_k, seed, popular)


def finish(index: Index, files: int, unreadable: int, counts: Counter, raw: list, lengths: dict, eval_stats: Counter,
           totals: tuple[int, dict[str, int]] | None, domains: dict[str, str], default_domain: str, max_points: int,
           candidates: int, top_k: int, seed: int, popular: tuple[str, ...] = ()) -> tuple[list[dict], list[dict], dict]:
    """The global step: the n-gram from the train split's bigram counts, the length buckets, the seeded cap over every
    raw point (`totals`: the count and the counts per source before the shards' own caps; None: `raw` is all of
    them), then each kept point's row and ranking."""
    if not files:
        return [], [], {"files": 0, "calls": 0, "resolved": 0, "coverage": None, "points_all": 0, "points": 0,
                        "ide": "not applicable (jedi is Python only)"}
    buckets = length_buckets(lengths)
    ngram = NGram.from_counts(counts)
    by_class = Counter(api_class(a) for a in ngram.vocab)

    total, per_source = totals if totals is not None else (len(raw), None)
    if max_points and total > max_points:  # stratified by source, as the Python points (generate.allocate)
        raw = cap_raw(raw, max_points, seed, per_source)
    rankings: dict[str | None, list[str]] = {}
    points, baseline = [], []
    for r, function, body, b, m, a, n, previous, fqn, line, col, written in raw:
        scope = index.scopes[r["file_id"]]
        if previous not in rankings:
            rankings[previous] = ngram.rank(previous)
        ranking = rankings[previous]
        pool = ranking[:candidates]
        klass = api_class(fqn)
        header = scope.header
        points.append({
            "point_id": ids.stable_id("apirec", r["file_id"], line, col), "file_id": r["file_id"],
            "source": r["source"], "repository": r["repository"], "path": r["path"], "split": r["split"],
            "domain": domains.get(r["source"], default_domain), "function": function, "line": line, "col": col,
            "written": written, "api": fqn, "api_class": klass,
            "category": category(klass, scope.distribution, index), "previous_api": previous, "api_index": b,
            "library_group": library_group(category(klass, scope.distribution, index), fqn, popular),
            "api_count": m, "line_in_function": a, "function_lines": n, "position": position(a, n, b, m),
            "length_bucket": buckets[(r["file_id"], function)], "imports": header,
            "context": (header + "\n\n" if header else "") + body,
            "class_siblings": by_class[klass] - (1 if fqn in ngram.unigram else 0),
            "seen": fqn in ngram.unigram, "candidates": pool,
            "candidate_texts": [render(x, scope, index) for x in pool]})
        baseline.append(ranking_row(points[-1], ranking, "ngram", "ngram", top_k))

    resolved = sum(v for k, v in eval_stats.items() if isinstance(k, str) and k.startswith("resolved:"))
    out = {"files": files, "types_indexed": len(index.types), "calls": eval_stats["calls"], "resolved": resolved,
           "coverage": round(resolved / eval_stats["calls"], 4) if eval_stats["calls"] else None,
           "resolved_by_how": {k.split(":", 1)[1]: v for k, v in sorted(eval_stats.items())
                               if k.startswith("resolved:")},
           "unresolved_by_reason": {k.split(":", 1)[1]: v for k, v in sorted(eval_stats.items())
                                    if k.startswith("unresolved:")},
           "points_all": total, "points": len(points), "train_apis": len(ngram.vocab), "functions": len(lengths),
           "ngram_gold_in_pool": sum(pt["api"] in pt["candidates"] for pt in points),
           "ide": "not applicable (jedi is Python only)", "unreadable_files": unreadable}
    for col_name in ("category", "position", "length_bucket", "domain"):
        out[f"points_by_{col_name}"] = dict(sorted(Counter(pt[col_name] for pt in points).items()))
    return points, baseline, out


def add_java_points(points: pa.Table, base: pa.Table, stats: dict, manifest: pa.Table, root, domains: dict[str, str],
                    default_domain: str, eval_split: str, max_points: int, candidates: int, top_k: int,
                    seed: int, popular: tuple[str, ...] = (), stdlib_sources: frozenset[str] = frozenset(),
                    per_repository_sources: frozenset[str] = frozenset()) -> tuple[pa.Table, pa.Table, dict]:
    """The Python points and baselines (generate.generate) with the Java ones added; Java stats under `java`."""
    jp, jb, jstats = java_points(manifest.to_pylist(), root, domains, default_domain, eval_split, max_points,
                                 candidates, top_k, seed, popular, stdlib_sources, per_repository_sources)
    return add_rows(points, base, stats, jp, jb, jstats)


def add_rows(points: pa.Table, base: pa.Table, stats: dict, jp: list[dict], jb: list[dict],
             jstats: dict) -> tuple[pa.Table, pa.Table, dict]:
    """The Java points, rankings and stats (java_points, finish) added to the Python ones."""
    from pipeline.families.apirec import schemas

    points = pa.concat_tables([points, pa.Table.from_pylist(jp, schemas.POINTS)]).sort_by("point_id")
    base = pa.concat_tables([base, pa.Table.from_pylist(jb, schemas.BASELINES)]).sort_by(
        [("point_id", "ascending"), ("model", "ascending")])
    return points, base, {**stats, "java": jstats}


# -- shards (apirec.shards; generate.py's shard steps) ---------------------------------------------------
# Pass 1 in the scan shards (each shard's files indexed: `index_part`), the parts merged once in the select
# job (`merge_index`: a type two files declare is the one of the smaller file_id, as one job's file_id-ordered
# `setdefault` keeps), pass 2 in the jedi shards against the merged index (`resolve_part`: the train split's
# bigram counts, the evaluation split's raw points under the shard's own seeded cap, lengths, counters), and
# the global step in the merge (`merge_parts`, then `finish`).
RAW = pa.schema([("file_id", pa.string()), ("function", pa.string()), ("body", pa.string())]
                + [(c, pa.int64()) for c in ("b", "m", "a", "n")]
                + [("previous", pa.string()), ("fqn", pa.string()), ("line", pa.int64()), ("col", pa.int64()),
                   ("written", pa.string())])
SCOPE_FIELDS = ("package", "distribution", "singles", "on_demand", "static_single", "static_on_demand", "own",
                "tparams", "header")


def index_part(index: Index, unreadable: int) -> dict:
    """An index as JSON (sets as sorted lists; the on-demand imports keep their order: the first match wins)."""
    return {"unreadable_files": unreadable,
            "types": {fqn: [t.distribution, t.file_id, sorted(t.methods), t.fields] for fqn, t in index.types.items()},
            "packages": {p: sorted(names) for p, names in index.packages.items()},
            "scopes": {fid: {f: sorted(s.tparams) if f == "tparams" else getattr(s, f) for f in SCOPE_FIELDS}
                       for fid, s in index.scopes.items()}}


def merge_index(parts: list[dict]) -> tuple[Index, int]:
    """The shards' index parts as one job's index of every file, and the unreadable files summed."""
    index, unreadable = Index(), 0
    for part in parts:
        unreadable += part["unreadable_files"]
        for fqn, (distribution, file_id, methods, fields) in part["types"].items():
            if fqn not in index.types or file_id < index.types[fqn].file_id:
                index.types[fqn] = TypeInfo(fqn, distribution, file_id, set(methods), fields)
        for package, names in part["packages"].items():
            index.packages[package].update(names)
        for fid, s in part["scopes"].items():
            index.scopes[fid] = FileScope(**{**s, "tparams": set(s["tparams"])})
    return index, unreadable


def resolve_part(index: Index, java: list[dict], root, eval_split: str, max_points: int, seed: int, shard: int,
                 shards: int) -> tuple[pa.Table, Counter, dict]:
    """Pass 2 over one shard's files: its raw points under its own seeded cap (RAW rows), the train split's
    bigram counts, and the rest as JSON (lengths, counters, the points before the cap per source)."""
    counts, raw, lengths, eval_stats = resolve_files(index, java, root, eval_split, shard, shards)
    kept = cap_raw(raw, max_points, seed, per_source=max_points)
    rows = [dict(zip(RAW.names, (x[0]["file_id"], *x[1:]))) for x in kept]
    meta = {"lengths": [[fid, function, n] for (fid, function), n in sorted(lengths.items())],
            "stats": dict(eval_stats), "points_by_source": dict(sorted(Counter(x[0]["source"] for x in raw).items()))}
    return pa.Table.from_pylist(rows, RAW), counts, meta


def merge_parts(java: list[dict], raws: list[pa.Table], metas: list[dict]) -> tuple[list, dict, Counter, tuple]:
    """The shards' resolve parts as one job's `resolve_files` (without the counts: the caller sums those): raw points
    in one job's order (file_id, then each part's own order: a file is in one part), lengths, counters, and the
    points before the caps (count, per source)."""
    rows = {r["file_id"]: r for r in java}
    raw, lengths, eval_stats, per_source = [], {}, Counter(), Counter()
    for table, meta in zip(raws, metas):
        for x in table.to_pylist():
            raw.append((rows[x["file_id"]], *(x[c] for c in RAW.names[1:])))
        lengths.update({(fid, function): n for fid, function, n in meta["lengths"]})
        eval_stats.update(meta["stats"])
        per_source.update(meta["points_by_source"])
    raw.sort(key=lambda x: x[0]["file_id"])  # stable: a file's points keep their part's order
    return raw, lengths, eval_stats, (sum(per_source.values()), dict(per_source))
