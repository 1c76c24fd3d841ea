"""The evaluation-size check: every enabled family's evaluation set holds at least
`manifest.evaluation.min_items` items per language, or the run fails with one line per family and
language saying what to do (docs/splits.md). `allow_small: true` makes those lines warnings.

Runs after the families' benchmarks are built (rule evaluation_sizes, in `rule all`); writes
reports/metrics/evaluation.json with every set's size either way."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.core import logs
from pipeline.io import write_json

log = logging.getLogger("pipeline.manifest.evaluation")

ADVICE = ("add sources with library code in {language}, give the evaluation split a larger share (manifest.split), "
          "or let few sources be split by package (manifest.split_policy.mode: auto or package; docs/splits.md)")


def size(spec: dict) -> int:
    """Items of one evaluation set (an EvaluationSet as a dict); a missing file holds none."""
    path = Path(spec["file"])
    if not path.exists():
        return 0
    columns = sorted({c for c, _ in spec.get("where", ())} | ({"path"} if spec.get("suffixes") else set())
                     | ({spec["distinct"]} if spec.get("distinct") else set()))
    table = pq.read_table(path, columns=columns or None)
    for column, value in spec.get("where", ()):
        table = table.filter(pc.equal(table.column(column), value))
    if spec.get("suffixes"):
        paths = table.column("path").to_pylist()
        table = table.filter(pa.array([p.endswith(tuple(spec["suffixes"])) for p in paths], pa.bool_()))
    if spec.get("distinct"):
        return len(set(table.column(spec["distinct"]).to_pylist()))
    return table.num_rows


def check(sets: list[dict], min_items: int, allow_small: bool) -> tuple[dict, list[str]]:
    """(metrics, one line per set under min_items). `sets`: dicts with family, name, language, file, ..."""
    rows, lines = [], []
    for spec in sets:
        n = size(spec)
        rows.append({"family": spec["family"], "language": spec["language"], "set": spec["name"], "items": n,
                     "file": spec["file"]})
        if n < min_items:
            fix = ADVICE.format(language=spec["language"]) + (f"; {spec['fix']}" if spec.get("fix") else "")
            lines.append(f"{spec['family']} {spec['language']}: {n} {spec['name']} in its evaluation set, fewer than "
                         f"manifest.evaluation.min_items {min_items}: {fix} (or set manifest.evaluation.allow_small: "
                         "true to accept it)")
    metrics = {"min_items": min_items, "allow_small": allow_small, "sets": rows, "too_small": lines,
               "ok": not lines or allow_small}
    return metrics, lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m pipeline.manifest.evaluation",
        description="Check that every enabled family's evaluation set holds at least min_items items per language; "
        "exit 1 naming each family and language that does not (unless --allow-small).",
    )
    ap.add_argument("--sets", required=True, help="JSON list of evaluation sets (pipeline.families.EvaluationSet "
                    "fields plus family)")
    ap.add_argument("--min-items", required=True, type=int)
    ap.add_argument("--allow-small", action="store_true", help="report small sets as warnings, exit 0")
    ap.add_argument("--metrics", required=True, type=Path)
    args = ap.parse_args(argv)
    logs.setup()
    metrics, lines = check(json.loads(args.sets), args.min_items, args.allow_small)
    write_json(metrics, args.metrics)
    for line in lines:
        print(f"{'WARNING' if args.allow_small else 'ERROR'} evaluation: {line}", file=sys.stderr)
    for row in metrics["sets"]:
        log.info("evaluation: %s %s: %d %s", row["family"], row["language"], row["items"], row["set"])
    return 0 if metrics["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
