"""Stage 2: the file manifest. One row per source file, one reject row per file left out.

Later stages read a file's text with `read_text(row)`: the bytes at `location`,
decoded with the manifest's `encoding` (PEP 263 cookies honoured for Python).
"""

from pathlib import Path


def read_text(row: dict, root: str | Path = ".") -> str:
    """The decoded text of a manifest row (a dict with `location` and `encoding`)."""
    return (Path(root) / row["location"]).read_bytes().decode(row["encoding"])
