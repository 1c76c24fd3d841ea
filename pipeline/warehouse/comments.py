"""Column descriptions for the warehouse, taken from where each schema is declared.

Schemas are declared once, in Python, with a comment beside each field
(`pa.field("sha256", pa.string(), nullable=False),  # content hash`, or a comment block right above the field). Putting those comments into
the field metadata would change every Parquet file's bytes; instead the warehouse reads them from
the declaring module's source and attaches them as DuckDB column comments. A field's
`description` metadata, where present, wins.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
from functools import lru_cache

import pyarrow as pa

FIELD = re.compile(r'pa\.field\(\s*"(?P<name>\w+)".*#\s*(?P<comment>.+?)\s*$')
BARE_FIELD = re.compile(r'pa\.field\(\s*"(?P<name>\w+)"')


@lru_cache(maxsize=None)
def _module_comments(module_name: str) -> dict[str, dict[str, str]]:
    """schema variable name -> {field: comment}, for every `X = pa.schema([...])` in the module."""
    module = sys.modules.get(module_name)
    if module is None:
        return {}
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        return {}
    lines = source.splitlines()
    out: dict[str, dict[str, str]] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            fields = {}
            above: list[str] = []  # a comment block right above a field describes it when its line has none
            for line in lines[node.lineno - 1 : node.end_lineno]:
                m = FIELD.search(line)
                if m:
                    fields[m.group("name")] = m.group("comment")
                elif (name := BARE_FIELD.search(line)) and above:
                    fields[name.group("name")] = " ".join(above)
                stripped = line.strip()
                above = [*above, stripped.lstrip("#").strip()] if stripped.startswith("#") else []
            if fields:
                out[node.targets[0].id] = fields
    return out


def column_comments(schema: pa.Schema) -> dict[str, str]:
    """Descriptions of the schema's columns: field metadata, else the comment where it is declared."""
    found: dict[str, str] = {}
    for module_name in list(sys.modules):
        if not (module_name == "pipeline.schemas" or module_name.startswith("pipeline.families.")
                or module_name.endswith(".schemas")):
            continue
        module = sys.modules[module_name]
        for var, fields in _module_comments(module_name).items():
            if getattr(module, var, None) is schema or (isinstance(getattr(module, var, None), pa.Schema)
                                                         and getattr(module, var).equals(schema)):
                found = {**fields, **found}
    for field in schema:
        meta = (field.metadata or {}).get(b"description")
        if meta:
            found[field.name] = meta.decode()
    return {name: found[name] for name in schema.names if name in found}
