"""The per-file parse budget: no single file takes a parsing stage past a stated memory bound.

A parser's memory grows with the tokens it reads, not with the bytes: libcst holds ~2.2 KB per token, so a
1 MB file of one line (10^6 tokens, under `corpus.limits.max_file_bytes`) took the extract job to 2.4 GB.
Every stage that parses corpus files (extract: libcst; identifiers: tree-sitter; a family's own scans: tokenize, ast,
tree-sitter) first counts the file's tokens here and refuses a file over the stage's `max_file_tokens` param (its
params block's, e.g. `extract.max_file_tokens`) as a counted reject, reason `too_complex`, without parsing it.

The count is a regex scan (about 30 ns a byte, ~3% of libcst's parse), deterministic, and never below the
parsers' own count for what the bound is about: a string literal or comment is one token (as the parsers have
it), but an f-string's or a template's words all count (libcst and tree-sitter parse the code inside them),
and an unterminated string or comment runs to the end of the line or file (linear time on any input).
"""

from __future__ import annotations

import re

REASON = "too_complex"
DEFAULT = 200_000  # the max_file_tokens params' default (the default corpus's largest file: 48,429)

_WORDS = re.compile(r"\w+|[^\w\s]")
_PYTHON = re.compile(
    r"#[^\n]*"
    r"|(?P<prefix>[rRbBuUfF]{0,2})(?:\"\"\"[\s\S]*?(?:\"\"\"|\Z)|'''[\s\S]*?(?:'''|\Z)"
    r"|\"(?:[^\"\\\n]|\\[\s\S])*\"?|'(?:[^'\\\n]|\\[\s\S])*'?)"
    r"|\w+|[^\w\s]")
_C_LIKE = re.compile(  # Java and JavaScript (a JavaScript template literal is counted word by word)
    r"//[^\n]*|/\*[\s\S]*?(?:\*/|\Z)"
    r"|\"(?:[^\"\\\n]|\\[\s\S])*\"?|'(?:[^'\\\n]|\\[\s\S])*'?"
    r"|\w+|[^\w\s]")


def count_tokens(text: str, language: str, stop_after: int | None = None) -> int:
    """The tokens of `text` (see the module doc); stops counting once past `stop_after`."""
    pattern = _PYTHON if language == "python" else _C_LIKE
    n = 0
    for m in pattern.finditer(text):
        prefix = m.group("prefix") if language == "python" else None
        n += len(_WORDS.findall(m.group(0))) if prefix and prefix.lower().count("f") else 1
        if stop_after is not None and n > stop_after:
            break
    return n


def over_budget(text: str, language: str, max_tokens: int, key: str = "max_file_tokens") -> str | None:
    """None when `text` is within `max_tokens` (0: no budget); else the reject's detail, naming the params `key`."""
    if not max_tokens:
        return None
    n = count_tokens(text, language, max_tokens)
    if n <= max_tokens:
        return None
    return f"more than {max_tokens} tokens ({key}): not parsed (a parse's memory grows with its tokens)"
