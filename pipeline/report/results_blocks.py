"""Results blocks: the parts of README.md and docs/ pages that are rewritten from a committed results file, so that
every figure a page quotes is the file's.

A block is `<!-- results:KIND:ARGS -->` on a line of its own, the rendered body, then `<!-- /results -->`. KIND
names the command that renders it and ARGS are that command's (colon-separated):

- `contamination:[FILE:]NAME`: `python -m pipeline.report.contamination_results --render PAGE` (a table of
  docs/results/contamination.json, or of FILE, another results file of that command);
- `verdicts:FILE:SECTION[:MODEL,MODEL]`: `python -m pipeline.report.summary --render PAGE` (a table of a
  docs/results/verdicts_*.md file).

Each command rewrites only its own kind's blocks (`rewrite`) and its tests check that every block of its kind is
what the file renders (`find`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

BLOCK = re.compile(r"(?P<open><!-- results:(?P<kind>[a-z_]+):(?P<args>\S+) -->\n)(?P<body>.*?)"
                   r"(?P<close><!-- /results -->)", re.S)


def find(text: str, kind: str) -> Iterator[re.Match]:
    """The page's blocks of one kind, in order: `m.group("args")` says what to render, `m.group("body")` is what
    the page holds now."""
    return (m for m in BLOCK.finditer(text) if m.group("kind") == kind)


def rewrite(text: str, kind: str, render: Callable[[str], str]) -> str:
    """The page with every block of `kind` rewritten as `render(args)`; every other byte as it was."""
    return BLOCK.sub(lambda m: m.group("open") + render(m.group("args")) + m.group("close")
                     if m.group("kind") == kind else m.group(0), text)


def strip(text: str) -> str:
    """The page without its blocks (markers and bodies): the prose around them."""
    return BLOCK.sub("", text)
