"""What the Python and Java labellers share: the sample and edge records and the
paper's rules for turning a node's token range into a head or a dependent span."""

from __future__ import annotations

from dataclasses import dataclass, field

OPENERS = frozenset(("(", "[", "{"))
CLOSERS = frozenset((")", "]", "}"))
NEWLINE = "\n"


@dataclass(frozen=True)
class Edge:
    relation: str
    head: int
    dep_start: int
    dep_end: int


@dataclass
class Sample:
    """One function or method: its text, its tokens, and its relation edges."""

    function: str  # qualified name inside the file, e.g. Class.method
    start_line: int  # 1-based line of the function's first line in the file
    code: str
    tokens: list[str]
    kinds: list[str]
    lines: list[int]  # 1-based, relative to `code`
    cols: list[int]  # 0-based character columns
    edges: list[Edge] = field(default_factory=list)


@dataclass(frozen=True)
class Failure:
    """A function that could not be labelled, with the reject reason code."""

    function: str
    start_line: int
    reason: str
    detail: str


class EdgeSink:
    """Collects edges, keeping only what the paper keeps: head > 0 (the paper drops
    edges headed by token 0), head < dependent start, and start <= end."""

    def __init__(self) -> None:
        self.edges: list[Edge] = []

    def add(self, relation: str, head: int | None, start: int | None, end: int | None) -> None:
        if head is None or start is None or end is None:
            return
        if 0 < head < start <= end:
            self.edges.append(Edge(relation, head, start, end))
