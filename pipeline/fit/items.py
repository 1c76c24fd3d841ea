"""`python -m pipeline.fit.items`: the record of which items each model of one family's fit stage has.

A sample can fail in one model (cut off by its max_length, covering no subtoken, a vector not finite
in float16) or lie outside a capped model's `max_items` subset: it then has no features there. Each
model is fitted and scored on its OWN items (every labelled item it has features for in every layer:
pipeline.fit), so a capped or failing model never shrinks another model's evaluation; a comparison of
two models is paired on the items both read (probing_twin_diff). This table (FIT_ITEMS) records, per
subset and model, every labelled or featured item with `kept` (the model's fit uses it) and, when not,
a one-line reason. Nothing here drops an item for another model. Reads the id columns only.
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


def model_layers(paths: list[Path]) -> dict[int, set[str]]:
    """layer -> the item ids one model has there (across its shard files)."""
    by_layer: dict[int, set[str]] = {}
    for path in paths:
        t = pq.read_table(path, columns=["item_id", "layer"])
        for item, layer in zip(t["item_id"].to_pylist(), t["layer"].to_pylist()):
            by_layer.setdefault(layer, set()).add(item)
    return by_layer


def model_items(paths: list[Path]) -> set[str]:
    """Items one model has in every one of its layers (across its shard files)."""
    by_layer = model_layers(paths)
    return set.intersection(*by_layer.values()) if by_layer else set()


def labelled_items(paths: list[Path]) -> set[str]:
    """Items with a label or a target in any of these PROBE_LABELS files."""
    labelled: set[str] = set()
    for path in paths:
        t = pq.read_table(path, columns=["item_id", "label", "target"])
        labelled |= {i for i, a, b in zip(t["item_id"].to_pylist(), t["label"].to_pylist(), t["target"].to_pylist())
                     if a is not None or b is not None}
    return labelled


def _reason(model: str, labelled: bool, layers: dict[int, set[str]], item: str, cap: int | None) -> str | None:
    if not labelled:
        return "no label"
    present = [layer for layer, ids in layers.items() if item in ids]
    if len(present) == len(layers) and layers:
        return None
    if present:
        missing = sorted(set(layers) - set(present))
        return f"no features from {model} in layer(s) {', '.join(map(str, missing))} (not finite in float16 there)"
    if cap:
        return (f"not read by {model}: outside its max_items subset ({cap} items), or truncated past its "
                f"max_length / no subtoken")
    return f"no features from {model} (truncated past its max_length, or no subtoken)"


def item_table(features: dict[str, dict[str, list[Path]]], labels: dict[str, list[Path]],
               caps: dict[str, int | None] | None = None) -> pa.Table:
    """features: subset -> model -> FEATURES files; labels: subset -> PROBE_LABELS files; caps: model ->
    its max_items cap on this family (named in the reason of an item it did not read). One row per
    (subset, model, item) over the subset's labelled items and the items the model has features for,
    sorted by (subset, model, item_id); each model's rows are computed from its own files only."""
    caps = caps or {}
    rows = []
    for subset in sorted(set(features) | set(labels)):
        labelled = labelled_items(labels.get(subset, []))
        for model, paths in sorted(features.get(subset, {}).items()):
            layers = model_layers(paths)
            featured = set().union(*layers.values()) if layers else set()
            kept = 0
            for item in sorted(labelled | featured):
                reason = _reason(model, item in labelled, layers, item, caps.get(model))
                kept += reason is None
                rows.append({"subset": subset, "model": model, "item_id": item, "kept": reason is None,
                             "reason": reason})
            log.info("%s %s: %d labelled, %d with features in every layer", subset, model, len(labelled), kept)
    return pa.Table.from_pylist(rows, schema=schemas.FIT_ITEMS)


def summary(table: pa.Table, labels: dict[str, list[Path]]) -> dict:
    """Per subset: its labelled items, and per model the items it has (kept) and lacks (labelled, not kept)."""
    rows = table.to_pylist()
    out = {}
    for subset in sorted({r["subset"] for r in rows} | set(labels)):
        labelled = labelled_items(labels.get(subset, []))
        models = {}
        for r in rows:
            if r["subset"] == subset:
                m = models.setdefault(r["model"], {"kept": 0, "missing": 0})
                m["kept"] += r["kept"]
                m["missing"] += (not r["kept"]) and r["item_id"] in labelled
        out[subset] = {"labelled": len(labelled), "models": dict(sorted(models.items()))}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.fit.items", description=__doc__.splitlines()[0])
    ap.add_argument("--spec", required=True, help='JSON {"features": {subset: {model: [files]}}, '
                                                  '"labels": {subset: [PROBE_LABELS files]}, '
                                                  '"caps": {model: max_items or null} (optional)}')
    ap.add_argument("--out", required=True, type=Path, help="FIT_ITEMS Parquet")
    ap.add_argument("--summary", type=Path, help="JSON: per subset the labelled items, per model kept and missing")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    spec = json.loads(args.spec)
    labels = {s: [Path(p) for p in ps] for s, ps in spec["labels"].items()}
    table = item_table({s: {m: [Path(p) for p in ps] for m, ps in ms.items()} for s, ms in spec["features"].items()},
                       labels, spec.get("caps"))
    write_parquet(table, args.out, schemas.FIT_ITEMS)
    if args.summary:
        write_json(summary(table, labels), args.summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
