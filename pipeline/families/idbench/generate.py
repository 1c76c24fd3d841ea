"""Build the idbench benchmark tables from the pinned IdBench release (data/datasets/idbench/).

Writes the pairs of every size with their gold scores and the release's own per-pair scores
(NAN in the CSV is a missing value, never a number), the distinct identifiers the models embed,
the string techniques' scores (LV, NW) and the interesting subsets, plus a metrics JSON.
"""

from __future__ import annotations

import argparse
import csv
import logging
import math
from collections import Counter
from pathlib import Path

import pyarrow as pa

from pipeline.core.ids import stable_id
from pipeline.core import logs
from pipeline.families.idbench import schemas
from pipeline.families.idbench.strings import BATCHED
from pipeline.io import write_json, write_parquet

log = logging.getLogger("pipeline.families.idbench.generate")
MISSING = "NAN"


def pair_id(id1: str, id2: str) -> str:
    return stable_id("idbench-pair", id1, id2)


def identifier_id(text: str) -> str:
    return stable_id("idbench-identifier", text)


def number(text: str, where: str) -> float | None:
    """A CSV cell: NAN is a missing value; anything else must be a finite number."""
    if text.strip() == MISSING:
        return None
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{where}: {text!r} is not a finite number (missing values are spelled {MISSING})")
    return value


def read_pairs(folder: Path) -> list[dict]:
    rows = []
    expected = ["id1", "id2", *schemas.GOLDS, *schemas.RELEASE]
    for size in schemas.SIZES:
        path = folder / f"{size}_pair_wise.csv"
        with path.open(newline="") as f:
            reader = csv.DictReader(f)
            if sorted(reader.fieldnames or []) != sorted(expected):
                raise ValueError(f"{path}: columns {reader.fieldnames}, expected {expected}")
            seen = set()
            for i, r in enumerate(reader):
                pid = pair_id(r["id1"], r["id2"])
                if pid in seen:
                    raise ValueError(f"{path}: pair {r['id1']!r}, {r['id2']!r} appears twice")
                seen.add(pid)
                row = {"size": size, "pair_id": pid, "row": i, "id1": r["id1"], "id2": r["id2"],
                       "id1_id": identifier_id(r["id1"]), "id2_id": identifier_id(r["id2"])}
                for g in schemas.GOLDS:
                    row[g] = number(r[g], f"{path}:{i + 2} {g}")
                for column, ours in schemas.RELEASE.items():
                    row[ours] = number(r[column], f"{path}:{i + 2} {column}")
                row["comparable"] = all(row[schemas.RELEASE[c]] is not None for c in schemas.RELEASE_EMBEDDINGS)
                rows.append(row)
    return rows


LANGUAGE = "javascript"  # IdBench selects its identifiers from 50,000 JavaScript files (the paper, Sec. III.c)


def identifiers(pairs: list[dict]) -> list[dict]:
    distinct = {(p["id1"], p["id2"]) for p in pairs}
    counts = Counter(x for pair in distinct for x in pair)
    return [{"identifier_id": identifier_id(t), "text": t, "length": len(t), "pairs": counts[t], "language": LANGUAGE}
            for t in sorted(counts, key=identifier_id)]


def string_scores(pairs: list[dict]) -> list[dict]:
    """LV and NW of every distinct pair, batched (strings.BATCHED; equal to the scalar functions)."""
    distinct = sorted({p["pair_id"]: (p["id1"], p["id2"]) for p in pairs}.items())
    a, b = [x for _, (x, _) in distinct], [y for _, (_, y) in distinct]
    scores = {name: fn(a, b).tolist() for name, fn in BATCHED.items()}
    return [{"pair_id": pid, "technique": name, "kind": "string", "score": scores[name][k]}
            for k, (pid, _) in enumerate(distinct) for name in BATCHED]


def interesting(folder: Path) -> list[dict]:
    path = folder / "interesting_subsets.csv"
    rows = []
    with path.open(newline="") as f:
        for r in csv.DictReader(f):
            for subset in schemas.SUBSETS:
                if r[subset].strip() not in ("0", "1"):
                    raise ValueError(f"{path}: {subset} of {r['id1']}, {r['id2']} is {r[subset]!r}, expected 0/1")
                if r[subset].strip() == "1":
                    rows.append({"pair_id": pair_id(r["id1"], r["id2"]), "id1": r["id1"], "id2": r["id2"],
                                 "subset": subset})
    return sorted(rows, key=lambda r: (r["subset"], r["pair_id"]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.families.idbench.generate", description=__doc__)
    ap.add_argument("--dataset", required=True, type=Path, help="the IdBench dataset folder (data/datasets/idbench)")
    ap.add_argument("--pairs", required=True)
    ap.add_argument("--identifiers", required=True)
    ap.add_argument("--scores", required=True)
    ap.add_argument("--interesting", required=True)
    ap.add_argument("--metrics", required=True)
    args = ap.parse_args(argv)
    logs.setup()
    pairs = read_pairs(args.dataset)
    ids = identifiers(pairs)
    scores = string_scores(pairs)
    subsets = interesting(args.dataset)
    known = {p["pair_id"] for p in pairs}
    unknown = [f"{r['id1']}/{r['id2']}" for r in subsets if r["pair_id"] not in known]
    if unknown:
        log.warning("interesting subsets: %d pairs in no size's pair file: %s", len(unknown), unknown[:5])
    write_parquet(pa.Table.from_pylist(pairs, schemas.PAIRS), args.pairs, schemas.PAIRS)
    write_parquet(pa.Table.from_pylist(ids, schemas.IDENTIFIERS), args.identifiers, schemas.IDENTIFIERS)
    write_parquet(pa.Table.from_pylist(scores, schemas.SCORES), args.scores, schemas.SCORES)
    write_parquet(pa.Table.from_pylist(subsets, schemas.INTERESTING), args.interesting, schemas.INTERESTING)
    metrics = {"identifiers": len(ids), "interesting_pairs": len({r["pair_id"] for r in subsets})}
    for size in schemas.SIZES:
        mine = [p for p in pairs if p["size"] == size]
        metrics[size] = {"pairs": len(mine), **{
            f"{g}_{pset}": sum(p[g] is not None and (pset == "all_rated" or p["comparable"]) for p in mine)
            for g in schemas.GOLDS for pset in ("comparable", "all_rated")}}
    write_json(metrics, args.metrics)
    log.info("idbench: %d pairs over %d sizes, %d identifiers", len(pairs), len(schemas.SIZES), len(ids))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
