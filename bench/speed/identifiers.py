"""Identifier-sequence analysis speed: ours against a plain single-process loop, same files, one run.

    python -m bench.speed.identifiers [--files 600] [--workers 2] [--repeat 3]

Files: up to --files unique JavaScript / Python / Java files of data/manifest.parquet (a spread by
content hash), or the interpreter's standard library when there is no manifest. Three ways:

- baseline: one process; per file, tree-sitter parse, then a Python walk over every node keeping
  the identifier node types (the straightforward way to write it);
- ours, 1 worker: `pipeline.identifiers.build` (a tree-sitter query collects the identifier nodes
  in C, then one sort by position), no cache;
- ours, N workers: the same through the shared process pool (`pipeline.core.pool`), no cache.

Prints files/s and tokens/s of each and the ratios against the baseline measured in this run, and
checks that all three give the same tokens.
"""

from __future__ import annotations

import argparse
import hashlib
import sysconfig
from pathlib import Path

import pyarrow as pa

from bench import best_of
from pipeline import schemas
from pipeline.identifiers.build import NODE_TYPES, Cache, _grammar, build


def sample(n: int) -> pa.Table:
    """Manifest rows (MANIFEST schema) of up to n unique source files."""
    manifest = Path("data/manifest.parquet")
    if manifest.exists():
        import pyarrow.parquet as pq

        rows = [r for r in pq.read_table(manifest).to_pylist()
                if r["language"] in NODE_TYPES and not r["duplicate"] and r["bytes"] <= 1_000_000]
        rows.sort(key=lambda r: r["sha256"])
        step = max(1, len(rows) // n)
        return pa.Table.from_pylist(rows[::step][:n], schemas.MANIFEST)
    rows = []
    for i, f in enumerate(sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py"))[:n]):
        data = f.read_bytes()
        rows.append({"file_id": f"{i:06d}", "sha256": hashlib.sha256(data).hexdigest(), "source": "stdlib",
                     "repository": "stdlib", "path": f.name, "location": str(f), "language": "python",
                     "encoding": "utf-8", "bytes": len(data), "lines": data.count(b"\n"), "split": "train",
                     "duplicate": False})
    return pa.Table.from_pylist(rows, schemas.MANIFEST)


def baseline(rows: list[dict]) -> dict[str, list[str]]:
    """Parse, then walk every node in Python: the plain loop."""
    out = {}
    for r in rows:
        parser = _grammar(r["language"])[0]
        kinds = set(NODE_TYPES[r["language"]])
        try:
            data = Path(r["location"]).read_bytes().decode(r["encoding"]).lstrip("\ufeff").encode("utf-8")
        except (UnicodeDecodeError, LookupError):
            continue
        tokens = []
        stack = [parser.parse(data).root_node]
        while stack:
            node = stack.pop()
            if node.type in kinds and node.child_count == 0:
                text = data[node.start_byte:node.end_byte].decode("utf-8", "replace")
                text = text.lstrip("#") if node.type == "private_property_identifier" else text
                if text:
                    tokens.append(text)
            stack.extend(reversed(node.children))
        out[r["file_id"]] = tokens
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.speed.identifiers", description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=600)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    manifest = sample(args.files)
    rows = manifest.to_pylist()
    languages = sorted({r["language"] for r in rows})
    size = sum(r["bytes"] for r in rows)
    print(f"{len(rows)} files ({', '.join(languages)}), {size / 1e6:.1f} MB")

    t_base, base = best_of(lambda: baseline(rows), args.repeat)

    def ours(workers):
        seq, _, _, _ = build(manifest, languages, workers, 1.0, 10**9, Cache(None))
        return {r["file_id"]: r["identifiers"] for r in seq.to_pylist()}

    t_one, one = best_of(lambda: ours(1), args.repeat)
    t_pool, pool = best_of(lambda: ours(args.workers), args.repeat)
    same = base == one == pool
    tokens = sum(len(v) for v in one.values())
    print(f"tokens: {tokens}; all three give the same tokens: {same}")
    print(f"{'way':<28}{'seconds':>9}{'files/s':>10}{'tokens/s':>12}{'vs baseline':>13}")
    for name, t in (("baseline (walk, 1 process)", t_base), ("ours, 1 worker", t_one),
                    (f"ours, {args.workers} workers", t_pool)):
        print(f"{name:<28}{t:>9.2f}{len(rows) / t:>10.0f}{tokens / t:>12.0f}{t_base / t:>12.2f}x")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
