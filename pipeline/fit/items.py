"""`python -m pipeline.fit.items`: the common item set of one family's fit stage.

A sample that fails in one model (cut off by its max_length, covering no subtoken, a vector not
finite in float16) has no features there. Probes compared across models, and the baselines beside
them, must see the same samples, so such a sample is dropped for every model: an item is kept only
when it has a label and every model has its features in every layer. The table (FIT_ITEMS) lists
every labelled or featured item with `kept` and, when dropped, a one-line reason naming the
models. Reads the id columns only.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline import schemas
from pipeline.io import write_json, write_parquet

log = logging.getLogger("pipeline.fit.items")


def model_items(paths: list[Path]) -> set[str]:
    """Items one model has in every one of its layers (across its shard files)."""
    by_layer: dict[int, set[str]] = {}
    for path in paths:
        t = pq.read_table(path, columns=["item_id", "layer"])
        for item, layer in zip(t["item_id"].to_pylist(), t["layer"].to_pylist()):
            by_layer.setdefault(layer, set()).add(item)
    return set.intersection(*by_layer.values()) if by_layer else set()


def common_items(features: dict[str, dict[str, list[Path]]], labels: dict[str, list[Path]]) -> pa.Table:
    """features: subset -> model -> FEATURES files; labels: subset -> PROBE_LABELS files."""
    rows = []
    for subset in sorted(set(features) | set(labels)):
        labelled: set[str] = set()
        for path in labels.get(subset, []):
            t = pq.read_table(path, columns=["item_id", "label", "target"])
            labelled |= {i for i, a, b in zip(t["item_id"].to_pylist(), t["label"].to_pylist(), t["target"].to_pylist())
                         if a is not None or b is not None}
        have = {model: model_items(paths) for model, paths in sorted(features.get(subset, {}).items())}
        universe = labelled.union(*have.values()) if have else set(labelled)
        for item in sorted(universe):
            missing = [m for m, ids in have.items() if item not in ids]
            reason = None
            if item not in labelled:
                reason = "no label"
            elif not have:
                reason = "no model to take features from"
            elif missing:
                reason = (f"no features from {', '.join(missing)} (truncated past max_length, no subtoken, "
                          f"or not finite in float16 there)" if len(missing) < len(have)
                          else "no features from any model (truncated, no subtoken or not finite)")
            rows.append({"subset": subset, "item_id": item, "kept": reason is None, "reason": reason})
        log.info("%s: %d items, %d kept", subset, len(universe), sum(r["kept"] for r in rows if r["subset"] == subset))
    return pa.Table.from_pylist(rows, schema=schemas.FIT_ITEMS)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.fit.items", description=__doc__.splitlines()[0])
    ap.add_argument("--spec", required=True, help='JSON {"features": {subset: {model: [files]}}, '
                                                  '"labels": {subset: [PROBE_LABELS files]}}')
    ap.add_argument("--out", required=True, type=Path, help="FIT_ITEMS Parquet")
    ap.add_argument("--summary", type=Path, help="JSON: items, kept and dropped per subset")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    spec = json.loads(args.spec)
    table = common_items({s: {m: [Path(p) for p in ps] for m, ps in ms.items()} for s, ms in spec["features"].items()},
                         {s: [Path(p) for p in ps] for s, ps in spec["labels"].items()})
    write_parquet(table, args.out, schemas.FIT_ITEMS)
    if args.summary:
        rows = table.to_pylist()
        write_json({s: {"items": sum(r["subset"] == s for r in rows),
                        "kept": sum(r["kept"] for r in rows if r["subset"] == s)}
                    for s in sorted({r["subset"] for r in rows})}, args.summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
