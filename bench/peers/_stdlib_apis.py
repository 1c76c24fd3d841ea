"""Realistic inputs for the peer benches without a build: the interpreter's own standard library (Python 3.11.7,
the project's pin), read with `ast`, never imported.

- `api_documents`: every public class / function / method (apirec's universe: documented or not), as
  apirec's query benchmark indexes an API (pipeline/families/apirec/queries.py, `api_doc: rest`): the FQN split into words plus the
  docstring after its first sentence; the first sentence (markup cleaned, two words or more) is the
  API's query. Documents in FQN order.
- `call_quizzes`: apiquiz-style cloze items from the same files: a call `module.name(` of an imported
  module, the prefix the lines before it (up to `context_lines`) and the line up to the name, the fill the
  name, the suffix the rest of the line; candidates: the gold and the names most often called on the
  same module elsewhere (its siblings), in name order; sites drawn in a seeded order.
"""

from __future__ import annotations

import ast
import random
import re
import sysconfig
from collections import Counter, defaultdict
from pathlib import Path

SKIP_PARTS = {"site-packages", "test", "tests", "idle_test", "__pycache__", "turtledemo", "lib2to3", "ensurepip",
              "config-3.11-x86_64-linux-gnu"}


def stdlib_files(max_files: int = 0) -> list[tuple[str, Path]]:
    """(module name, path) of the standard library's public .py files, sorted by module name."""
    root = Path(sysconfig.get_paths()["stdlib"])
    out = []
    for path in root.rglob("*.py"):
        rel = path.relative_to(root)
        if SKIP_PARTS & set(rel.parts):
            continue
        parts = list(rel.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not parts or any(p.startswith("_") for p in parts) or not all(p.isidentifier() for p in parts):
            continue
        out.append((".".join(parts), path))
    out.sort()
    return out[:max_files] if max_files else out


def _parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return None


def api_documents(max_files: int = 0) -> list[dict]:
    """[{fqn, text, query}] of every public definition (query '' without a docstring or when too short)."""
    from pipeline.families.apirec.queries import clean_markup, docstrings, first_sentence, identifier_parts, rest_of_doc

    out = []
    for module, path in stdlib_files(max_files):
        tree = _parse(path)
        if tree is None:
            continue
        for qualname, (_, doc) in docstrings(tree).items():
            if any(p.startswith("_") for p in qualname.split(".")):
                continue
            fqn = f"{module}.{qualname}"
            body = rest_of_doc(doc)
            query = first_sentence(clean_markup(doc))
            words = [w for w in re.findall(r"[A-Za-z0-9]+", query) if any(c.isalpha() for c in w)]
            out.append({"fqn": fqn, "text": (" ".join(identifier_parts(fqn)) + (". " + body if body else "")).strip(),
                        "query": query if len(words) >= 2 else ""})
    out.sort(key=lambda d: d["fqn"])
    return out


def call_quizzes(n: int, candidates: int, seed: int, context_lines: int = 4, max_files: int = 0) -> list[dict]:
    """`n` seeded quizzes {quiz_id, prefix, suffix, answer, fills} from `module.name(` calls of the stdlib."""
    sites = []
    called: dict[str, Counter] = defaultdict(Counter)
    for module, path in stdlib_files(max_files):
        tree = _parse(path)
        if tree is None:
            continue
        imported = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                    for a in node.names if "." not in a.name}
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.walk(tree):
            f = getattr(node, "func", None) if isinstance(node, ast.Call) else None
            if (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in imported
                    and not f.attr.startswith("_") and f.lineno == f.end_lineno):
                called[f.value.id][f.attr] += 1
                sites.append((module, f.lineno, f.value.end_col_offset, f.value.id, f.attr, lines))
    rnd = random.Random(seed)
    rnd.shuffle(sites)
    out = []
    for module, lineno, col, mod, attr, lines in sites:
        line = lines[lineno - 1]
        start = col + 1  # after `mod.`
        if line[start:start + len(attr)] != attr:
            continue
        siblings = [a for a, _ in called[mod].most_common() if a != attr]
        if len(siblings) < candidates - 1:
            continue
        prefix = "\n".join(lines[max(0, lineno - 1 - context_lines):lineno - 1] + [line[:start]])
        out.append({"quiz_id": f"{module}:{lineno}:{col}", "prefix": prefix.lstrip("\n"),
                    "suffix": line[start + len(attr):], "answer": attr,
                    "fills": sorted([attr, *siblings[:candidates - 1]])})
        if len(out) == n:
            break
    return out
