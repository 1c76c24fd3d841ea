"""The JDK's own `@since` tags: every Java definition of a JDK source (`builtin: jdk`) dated by the first JDK
feature release that has it, read from its Javadoc as text (tree-sitter-java finds the declarations and the doc
comment before each; corpus code is data, never compiled or run).

The Javadoc convention (the JDK's own "How to Write Doc Comments": a class added to a package takes the package's
release, a member added to a class its own tag, else the class's):

- a declaration's own tag (the first `@since` block tag of the `/** ... */` comment right before it: only comments
  between them) dates it, whatever its visibility;
- a public or protected member (interface and annotation members: unless private; enum constants and record
  components always) of such a type, without its own tag, takes its enclosing type's date; a nested type likewise;
- a public top-level type without its own tag takes its package's (`package-info.java`'s tag), if recorded;
- anything else has no since-date (a private or package-private member without a tag: nothing says when it came,
  and its class's date would be a guess) and is dated as before, by the pinned release (an upper bound).

A class without a declared constructor has its implicit `<init>` (the class's date), as callers name it. An API
name (`java.util.List.of`, `java.util.ArrayList.<init>`) is dated by the earliest of its overloads: the first release
that has the name, as `first_seen_apis` dates a Python name (pipeline/contamination/firstseen.py); its rows go into
that table with `date_basis = since_tag`. Unlike `first_seen` (releases the pipeline pinned and compared) the date is
the JDK's own declaration, so it has a basis of its own; like it, it is a first release, not an upper bound, and
labels both sides of a cutoff.

Versions are normalised to the JDK's feature releases (RELEASES: "1.0" ... "1.4", then "5" ... "26"): `1.5` ->
`5`, `1.0.2` -> `1.0` (a maintenance release of 1.0), `1.10` -> `10`, `JDK1.1` -> `1.1`, `16 (preview)` -> `16`,
`1.7 * 14` -> `7` (the first version written). A tag no rule reads, or a release not in the table, is counted
(`unparsable`) and the definition is treated as untagged.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Iterator

import tree_sitter
import tree_sitter_java

BASIS = "since_tag"  # the warehouse's date_basis of a date read from a @since tag

# Each JDK feature release and its general-availability date (the first GA build; Oracle's and OpenJDK's release
# announcements, the JEP 3 release cadence from 10 on). 1.0: JDK 1.0 (1996-01-23); 5 ... 8 were also called 1.5 ...
# 1.8. The pinned JDK's own date (`JAVA_VERSION_DATE` of its `release` file) is its update build's, not these.
RELEASES: dict[str, dt.date] = {v: dt.date.fromisoformat(d) for v, d in (
    ("1.0", "1996-01-23"), ("1.1", "1997-02-19"), ("1.2", "1998-12-08"), ("1.3", "2000-05-08"),
    ("1.4", "2002-02-06"), ("5", "2004-09-30"), ("6", "2006-12-11"), ("7", "2011-07-28"), ("8", "2014-03-18"),
    ("9", "2017-09-21"), ("10", "2018-03-20"), ("11", "2018-09-25"), ("12", "2019-03-19"), ("13", "2019-09-17"),
    ("14", "2020-03-17"), ("15", "2020-09-15"), ("16", "2021-03-16"), ("17", "2021-09-14"), ("18", "2022-03-22"),
    ("19", "2022-09-20"), ("20", "2023-03-21"), ("21", "2023-09-19"), ("22", "2024-03-19"), ("23", "2024-09-17"),
    ("24", "2025-03-18"), ("25", "2025-09-16"), ("26", "2026-03-17"))}

# The forms the table's own names are written in (and 1.5 ... 1.8): anything else that parses is counted as odd
CANONICAL = frozenset(RELEASES) | {"1.5", "1.6", "1.7", "1.8"}
_VERSION = re.compile(r"(?:(?:JDK|J2SE|Java\s*SE|Java)\s*)?(\d+)(?:\.(\d+))?(?:\.\d+)*", re.IGNORECASE)
_SINCE = re.compile(r"^[ \t]*(?:/\*\*)?[ \t*]*@since(?![\w}])[ \t]*(.*?)[ \t]*(?:\*/)?[ \t]*$", re.MULTILINE)

LANGUAGE = tree_sitter.Language(tree_sitter_java.language())
COMMENTS = frozenset(("line_comment", "block_comment"))
TYPES = frozenset(("class_declaration", "interface_declaration", "enum_declaration", "record_declaration",
                   "annotation_type_declaration"))
OPEN_BODIES = frozenset(("interface_declaration", "annotation_type_declaration"))  # members public unless private
CONSTRUCTOR = "<init>"


def feature_release(text: str) -> str | None:
    """The JDK feature release a @since tag's text names (a key of RELEASES), or None when it names none."""
    m = _VERSION.match(text.strip())
    if m is None:
        return None
    major, minor = int(m.group(1)), m.group(2)
    if major == 1 and minor is not None:
        minor_n = int(minor)
        release = f"1.{minor_n}" if minor_n <= 4 else str(minor_n)  # 1.5 -> 5, 1.10 -> 10
    elif major >= 5:
        release = str(major)  # 5.0 -> 5
    else:
        return None  # "1", "2": no JDK release is called that
    return release if release in RELEASES else None


def since_tag(comment: str) -> str | None:
    """The text of a doc comment's first `@since` block tag ("" when it has none written); None without one."""
    m = _SINCE.search(comment) if "@since" in comment else None
    return None if m is None else m.group(1)


@dataclass(frozen=True)
class Definition:
    api: str  # fqn (a type) or fqn.member (`<init>` for constructors)
    kind: str  # type / method / constructor / field / enum_constant / element / component
    tag: str | None  # its own @since text, as written (None: no tag)
    release: str | None  # the feature release dating it (own tag, else inherited), None: no since-date
    by: str  # own / class / package / none: where the release came from


def _text(node, src: bytes) -> str:
    return src[node.start_byte:node.end_byte].decode("utf-8", "replace")


def doc_comment(node, src: bytes) -> str | None:
    """The `/** ... */` comment right before a declaration (only other comments between), or None."""
    prev = node.prev_sibling
    while prev is not None and prev.type in COMMENTS:
        text = _text(prev, src)
        if prev.type == "block_comment" and text.startswith("/**") and text != "/**/":
            return text
        prev = prev.prev_sibling
    return None


def _modifiers(node) -> set[str]:
    mods = next((c for c in node.children if c.type == "modifiers"), None)
    return set() if mods is None else {c.type for c in mods.children}


class Tags:
    """Reads tags into releases, counting the odd (parsed, but not a table name) and the unparsable forms."""

    def __init__(self):
        self.odd: Counter = Counter()
        self.unparsable: Counter = Counter()

    def release(self, tag: str | None) -> str | None:
        if tag is None:
            return None
        release = feature_release(tag)
        if release is None:
            self.unparsable[tag] += 1
        elif tag not in CANONICAL:
            self.odd[tag] += 1
        return release


def package_release(src: bytes, tree, tags: Tags) -> tuple[str, str | None]:
    """A package-info.java's package and the release of its doc comment's tag (None: no usable tag)."""
    for child in tree.root_node.named_children:
        if child.type == "package_declaration":
            name = next((c for c in child.named_children if c.type in ("identifier", "scoped_identifier")), None)
            doc = doc_comment(child, src)
            return (_text(name, src).replace(" ", "") if name is not None else "",
                    tags.release(since_tag(doc)) if doc is not None else None)
    return "", None


def package_of(tree, src: bytes) -> str:
    for child in tree.root_node.named_children:
        if child.type == "package_declaration":
            name = next((c for c in child.named_children if c.type in ("identifier", "scoped_identifier")), None)
            return _text(name, src).replace(" ", "") if name is not None else ""
    return ""


def definitions(src: bytes, tree, package_since: dict[str, str], tags: Tags) -> Iterator[Definition]:
    """Every type and member declared in one file (top-level and nested types; not local or anonymous classes)."""
    package = package_of(tree, src)

    def own(node) -> tuple[str | None, str | None]:
        doc = doc_comment(node, src)
        tag = since_tag(doc) if doc is not None else None
        return tag, tags.release(tag)

    def dated(tag, release, inherited: str | None, visible: bool, by: str) -> tuple[str | None, str]:
        if release is not None:
            return release, "own"
        if visible and inherited is not None:
            return inherited, by
        return None, "none"

    def visible_in(node, parent_kind: str | None) -> bool:
        mods = _modifiers(node)
        if parent_kind in OPEN_BODIES:
            return "private" not in mods
        return bool(mods & {"public", "protected"})

    def walk_type(node, prefix: str, inherited: str | None, by: str, visible: bool) -> Iterator[Definition]:
        name = node.child_by_field_name("name")
        if name is None:
            return
        fqn = prefix + _text(name, src)
        tag, release = own(node)
        type_release, type_by = dated(tag, release, inherited, visible, by)
        yield Definition(fqn, "type", tag, type_release, type_by)
        member_inherited = type_release
        if node.type == "record_declaration":
            params = node.child_by_field_name("parameters")
            for p in params.named_children if params is not None else ():
                pname = p.child_by_field_name("name")
                if pname is not None:
                    yield Definition(f"{fqn}.{_text(pname, src)}", "component", None,
                                     *dated(None, None, member_inherited, visible, "class"))
        body = node.child_by_field_name("body")
        constructors = 0
        for member, kind in _members(body, node.type):
            if kind == "type":
                yield from walk_type(member, fqn + ".", member_inherited, "class",
                                     visible and visible_in(member, node.type))
                continue
            mvisible = visible and (kind in ("enum_constant", "component") or visible_in(member, node.type))
            mtag, mrelease = own(member)
            release_, by_ = dated(mtag, mrelease, member_inherited, mvisible, "class")
            if kind == "constructor":
                constructors += 1
                yield Definition(f"{fqn}.{CONSTRUCTOR}", kind, mtag, release_, by_)
            elif kind == "field":
                for d in member.children_by_field_name("declarator"):
                    dname = d.child_by_field_name("name")
                    if dname is not None:
                        yield Definition(f"{fqn}.{_text(dname, src)}", kind, mtag, release_, by_)
            else:
                mname = member.child_by_field_name("name")
                if mname is not None:
                    yield Definition(f"{fqn}.{_text(mname, src)}", kind, mtag, release_, by_)
        if constructors == 0 and node.type in ("class_declaration", "record_declaration"):
            # the implicit constructor (the default one; a record's canonical one): the class's date
            yield Definition(f"{fqn}.{CONSTRUCTOR}", "constructor", None,
                             *dated(None, None, member_inherited, visible, "class"))

    prefix = package + "." if package else ""
    for child in tree.root_node.named_children:
        if child.type in TYPES:
            visible = "public" in _modifiers(child)
            yield from walk_type(child, prefix, package_since.get(package), "package", visible)


_MEMBER_KINDS = {"method_declaration": "method", "constructor_declaration": "constructor",
                 "compact_constructor_declaration": "constructor", "field_declaration": "field",
                 "constant_declaration": "field", "enum_constant": "enum_constant",
                 "annotation_type_element_declaration": "element"}


def _members(body, parent_type: str) -> Iterator[tuple[object, str]]:
    if body is None:
        return
    for member in body.named_children:
        if member.type in TYPES:
            yield member, "type"
        elif member.type in _MEMBER_KINDS:
            yield member, _MEMBER_KINDS[member.type]
        elif member.type == "enum_body_declarations":
            yield from _members(member, parent_type)


def parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(LANGUAGE)


def dated_definitions(files: Iterable[tuple[str, bytes]], tags: Tags | None = None) -> tuple[list[Definition], Tags]:
    """Every definition of a JDK source's Java files ((path, bytes); package-info.java files give their package's
    tag), with its release, and the tag counters."""
    tags = tags or Tags()
    p = parser()
    files = list(files)
    packages: dict[str, str] = {}
    trees = []
    for path, data in files:
        tree = p.parse(data)
        if path.rpartition("/")[2] == "package-info.java":
            name, release = package_release(data, tree, tags)
            if release is not None:
                packages[name] = release
        elif path.endswith(".java") and path.rpartition("/")[2] != "module-info.java":
            trees.append((data, tree))
    out = []
    for data, tree in trees:
        out.extend(definitions(data, tree, packages, tags))
    return out, tags


def api_rows(source: str, defs: Iterable[Definition], pinned: dt.date | None) -> list[dict]:
    """One first_seen_apis row per API name with a since-date: the earliest release of its dated definitions (its
    overloads), dated by that release's GA date (never after the pinned release: a build made before a GA)."""
    best: dict[str, str] = {}
    for d in defs:
        if d.release is not None and (d.api not in best or RELEASES[d.release] < RELEASES[best[d.api]]):
            best[d.api] = d.release
    rows = []
    for api, release in sorted(best.items()):
        date = RELEASES[release] if pinned is None else min(RELEASES[release], pinned)
        rows.append({"source": source, "api": api, "first_version": release, "first_released": date,
                     "date_basis": BASIS})
    return rows


def summary(defs: list[Definition], tags: Tags, rows: list[dict], cutoffs: Iterable[dt.date] = ()) -> dict:
    """The counts the results file and the first_seen metrics report."""
    by_release = Counter(d.release for d in defs if d.release is not None)
    apis_by_release = Counter(r["first_version"] for r in rows)
    order = list(RELEASES)
    out = {
        "definitions": len(defs),
        "definitions_dated": sum(d.release is not None for d in defs),
        "definitions_by_kind": dict(sorted(Counter(d.kind for d in defs).items())),
        "definitions_by_how": dict(sorted(Counter(d.by for d in defs).items())),
        "definitions_by_release": {v: by_release[v] for v in order if by_release[v]},
        "definitions_with_tag": sum(d.tag is not None for d in defs),
        "tags_odd": sum(tags.odd.values()), "tags_odd_forms": dict(sorted(tags.odd.items())),
        "tags_unparsable": sum(tags.unparsable.values()), "tags_unparsable_forms": dict(sorted(tags.unparsable.items())),
        "apis": len({d.api for d in defs}), "apis_dated": len(rows),
        "apis_by_release": {v: apis_by_release[v] for v in order if apis_by_release[v]},
    }
    for cutoff in cutoffs:
        out[f"apis_after_{cutoff.isoformat()}"] = sum(r["first_released"] > cutoff for r in rows)
        out[f"definitions_after_{cutoff.isoformat()}"] = sum(
            d.release is not None and RELEASES[d.release] > cutoff for d in defs)
    return out
