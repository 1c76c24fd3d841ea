"""The evaluation-size check: every enabled family's evaluation set holds at least
`manifest.evaluation.min_items` items per language, or the run fails with one line per family and
language saying what to do (docs/splits.md). `allow_small: true` makes those lines warnings.

Every source is evaluated: a set drawn from one manifest split (`EvaluationSet.split`, e.g. a family's code points)
holds at least one item of every source with library code in its language, or the run fails with one line
per family, language and source (`allow_unevaluated: true` makes those warnings). The evaluation split's
composition (library files and lines per source and split, from the manifest) and each set's (items per
source and per the set's `by` columns) are written either way.

Runs after the families' benchmarks are built (rule evaluation_sizes, in `rule all`); writes
reports/metrics/evaluation.json with every set's size either way."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.core import logs
from pipeline.io import write_json
from pipeline.manifest.build import SCRIPTS

log = logging.getLogger("pipeline.manifest.evaluation")

ADVICE = ("add sources with library code in {language}, give the evaluation split a larger share (manifest.split), "
          "or let few sources be split by package (manifest.split_policy.mode: auto or package; docs/splits.md)")


def size(spec: dict) -> int:
    """Items of one evaluation set (an EvaluationSet as a dict); a missing file holds none."""
    return items(spec)[0]


def items(spec: dict) -> tuple[int, dict]:
    """(items, composition) of one evaluation set: composition maps each of its `by` columns to item counts per
    value, and, for the columns after the first (`source`), per first-column value and value."""
    path = Path(spec["file"])
    by = list(spec.get("by") or ())
    if not path.exists():
        return 0, {}
    columns = sorted({c for c, _ in spec.get("where", ())} | ({"path"} if spec.get("suffixes") else set())
                     | ({spec["distinct"]} if spec.get("distinct") else set()) | set(by)
                     | ({"split"} if spec.get("every_source") and "split" in pq.read_schema(path).names else set()))
    if not columns:  # nothing to filter or count by: the footer's row count (never the rows: apiquiz's texts and
        return pq.read_metadata(path).num_rows, {}  # candidate lists took 2.5 GB at 1.2M quizzes)
    table = pq.read_table(path, columns=columns)
    for column, value in spec.get("where", ()):
        table = table.filter(pc.equal(table.column(column), value))
    if spec.get("suffixes"):
        paths = table.column("path").to_pylist()
        table = table.filter(pa.array([p.endswith(tuple(spec["suffixes"])) for p in paths], pa.bool_()))
    if spec.get("distinct"):
        return len(set(table.column(spec["distinct"]).to_pylist())), {}
    composition: dict = {}
    if spec.get("every_source") and "split" in table.column_names:  # the manifest split the items come from
        composition["split"] = dict(sorted(Counter(table.column("split").to_pylist()).items()))
    values = {c: [str(v) for v in table.column(c).to_pylist()] for c in by}
    for k, column in enumerate(by):
        composition[column] = dict(sorted(Counter(values[column]).items()))
        if k:
            nested: dict = {}
            for first, value in zip(values[by[0]], values[column]):
                nested.setdefault(first, Counter())[value] += 1
            composition[f"{by[0]}_by_{column}"] = {f: dict(sorted(c.items())) for f, c in sorted(nested.items())}
    return table.num_rows, composition


def library_code(manifest: Path | None, scripts: list[str]) -> dict:
    """language -> source -> {split: [library files, library lines]} of the manifest's unique files that are not
    scripts (manifest.split_policy.scripts): what each source has to be evaluated on."""
    if manifest is None or not Path(manifest).exists():
        return {}
    from pipeline.manifest.scan import excluded_by

    table = pq.read_table(manifest, columns=["source", "path", "language", "split", "lines", "duplicate"])
    out: dict = {}
    for r in table.to_pylist():
        if r["duplicate"] or excluded_by(r["path"], scripts) is not None:
            continue
        cell = out.setdefault(r["language"], {}).setdefault(r["source"], {}).setdefault(r["split"], [0, 0])
        cell[0] += 1
        cell[1] += int(r["lines"] or 0)
    return out


def unevaluated(spec: dict, n: int, composition: dict, library: dict) -> list[str]:
    """One line per source with library code in the set's language but no item in it (sets drawn from a split:
    `every_source`; the split is the items' own, else the spec's `split`, else "evaluation")."""
    if not spec.get("every_source") or not library or not n:  # an empty set is the size check's (allow_small)
        return []
    split = next(iter(composition.get("split") or {}), spec.get("split") or "evaluation")
    have = composition.get("source", {})
    lines = []
    for source, splits in sorted(library.get(spec["language"], {}).items()):
        if have.get(source):
            continue
        files = sum(f for f, _ in splits.values())
        held = splits.get(split, [0, 0])[0]
        why = (f"none of them is in the {split} split: split by source (manifest.split_policy.mode: source; "
               "docs/splits.md) so every source contributes its share" if not held else
               f"its {held} in the {split} split hold none: give the evaluation split a larger share (manifest.split)"
               + (f" {spec['fix']}" if spec.get("fix") else ""))
        lines.append(f"{spec['family']} {spec['language']}: source {source} has {files} library files but 0 "
                     f"{spec['name']} in the evaluation set, so it is never evaluated; {why} (or set "
                     "manifest.evaluation.allow_unevaluated: true to accept it)")
    return lines


def check(sets: list[dict], min_items: int, allow_small: bool, library: dict | None = None,
          allow_unevaluated: bool = False) -> tuple[dict, list[str], list[str]]:
    """(metrics, one line per set under min_items, one line per source left unevaluated). `sets`: dicts with
    family, name, language, file, ...; `library`: `library_code` of the manifest."""
    rows, lines, missing = [], [], []
    library = library or {}
    for spec in sets:
        n, composition = items(spec)
        row = {"family": spec["family"], "language": spec["language"], "set": spec["name"], "items": n,
               "file": spec["file"]}
        if composition:
            row["composition"] = composition
        rows.append(row)
        if n < min_items:
            fix = ADVICE.format(language=spec["language"]) + (f"; {spec['fix']}" if spec.get("fix") else "")
            lines.append(f"{spec['family']} {spec['language']}: {n} {spec['name']} in its evaluation set, fewer than "
                         f"manifest.evaluation.min_items {min_items}: {fix} (or set manifest.evaluation.allow_small: "
                         "true to accept it)")
        missing += unevaluated(spec, n, composition, library)
    # the splits' library code per language and source (files, lines): what each source gives each split
    split_composition = {language: {source: {split: {"library_files": f, "library_lines": l}
                                             for split, (f, l) in sorted(splits.items())}
                                    for source, splits in sorted(sources.items())}
                         for language, sources in sorted(library.items())}
    metrics = {"min_items": min_items, "allow_small": allow_small, "allow_unevaluated": allow_unevaluated,
               "sets": rows, "too_small": lines, "unevaluated_sources": missing, "split_composition": split_composition,
               "ok": (not lines or allow_small) and (not missing or allow_unevaluated)}
    return metrics, lines, missing


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
    ap.add_argument("--allow-unevaluated", action="store_true",
                    help="report sources with library code but no item in a split-drawn set as warnings, exit 0")
    ap.add_argument("--manifest", type=Path, help="data/manifest.parquet: each source's library code per split")
    ap.add_argument("--scripts", default="null",
                    help="manifest.split_policy.scripts as JSON (null: the default globs): paths that are not library code")
    ap.add_argument("--metrics", required=True, type=Path)
    args = ap.parse_args(argv)
    logs.setup()
    scripts = json.loads(args.scripts)
    library = library_code(args.manifest, list(SCRIPTS if scripts is None else scripts))
    metrics, lines, missing = check(json.loads(args.sets), args.min_items, args.allow_small, library,
                                    args.allow_unevaluated)
    write_json(metrics, args.metrics)
    for line in lines:
        print(f"{'WARNING' if args.allow_small else 'ERROR'} evaluation: {line}", file=sys.stderr)
    for line in missing:
        print(f"{'WARNING' if args.allow_unevaluated else 'ERROR'} evaluation: {line}", file=sys.stderr)
    for row in metrics["sets"]:
        log.info("evaluation: %s %s: %d %s", row["family"], row["language"], row["items"], row["set"])
    return 0 if metrics["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
