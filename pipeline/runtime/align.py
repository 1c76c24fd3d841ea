"""Words and subtokens: which subtokens of a model's tokenization make up each word (token) of
a sample. Words are character spans in the sample's text; whitespace tokens (NEWLINE, INDENT,
...) have empty spans and so no subtokens; special tokens align to no word."""

from __future__ import annotations

import numpy as np


def word_spans(code: str, tokens: list[str], lines: list[int], cols: list[int]) -> list[tuple[int, int]]:
    starts = [0]
    for line in code.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    spans = []
    for tok, line, col in zip(tokens, lines, cols):
        a = starts[min(line - 1, len(starts) - 1)] + col
        spans.append((a, a + len(tok)) if tok.strip() else (a, a))  # whitespace tokens get no characters
    return spans


def align(offsets: list[tuple[int, int]], words: list[tuple[int, int]], length: int) -> np.ndarray:
    """word index of each subtoken (-1: special token or nothing to align to)."""
    owner = np.full(length + 1, -1, dtype=np.int64)
    for w, (a, b) in enumerate(words):
        owner[a:b] = w
    out = np.full(len(offsets), -1, dtype=np.int64)
    for t, (a, b) in enumerate(offsets):
        if b > a:
            hits = owner[a:b]
            hits = hits[hits >= 0]
            if hits.size:
                out[t] = hits[0]
    return out
