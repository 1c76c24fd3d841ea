"""Manifest building in files/s against a plain `os.walk` + `hashlib` loop, on the same tree.

Usage: python -m bench.speed.manifest [--root data/corpus] [--repeat 3]
(build the default corpus first: `snakemake corpus --cores 2`).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import time
from pathlib import Path

from pipeline.manifest.scan import scan_source


def baseline(roots: list[Path]) -> int:
    """The floor: walk, read and hash every file; no classification, no decoding, no table."""
    n = 0
    for root in roots:
        for dirpath, _, filenames in os.walk(root):
            for name in filenames:
                with open(os.path.join(dirpath, name), "rb") as f:
                    hashlib.sha256(f.read()).hexdigest()
                n += 1
    return n


def ours(roots: list[Path], workers: int) -> int:
    n = 0
    for root in roots:
        files, rejects = scan_source(root.name, root, "top_dir", ["python", "java"], 1_000_000, workers)
        n += files.num_rows + rejects.num_rows
    return n


def best_of(fn, repeat: int) -> tuple[float, int]:
    times, n = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        n = fn()
        times.append(time.perf_counter() - start)
    return min(times), n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", type=Path, default=Path("data/corpus"))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    roots = sorted(p for p in args.root.iterdir() if p.is_dir()) if args.root.is_dir() else []
    if not roots:
        print(f"no corpus under {args.root}: run `snakemake corpus --cores 2` first", file=sys.stderr)
        return 1
    os.environ.setdefault("TQDM_DISABLE", "1")
    baseline(roots)  # warm the page cache so every variant reads from memory
    t_base, n_base = best_of(lambda: baseline(roots), args.repeat)
    rows = [("os.walk + hashlib (baseline)", t_base, n_base)]
    for workers in (1, os.cpu_count() or 1):
        t, n = best_of(lambda: ours(roots, workers), args.repeat)
        rows.append((f"manifest scan, {workers} process(es)", t, n))
    print(f"{'variant':40s} {'files':>7s} {'seconds':>8s} {'files/s':>9s} {'vs baseline':>11s}")
    for name, t, n in rows:
        print(f"{name:40s} {n:7d} {t:8.3f} {n / t:9.0f} {t_base / t:10.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
