"""The evaluation-size check: every enabled family's evaluation set holds at least
`manifest.evaluation.min_items` items per language, or the run fails with one line per family and
language saying what to do (docs/splits.md). `allow_small: true` makes those lines warnings.

Every source is evaluated: a set drawn from one manifest split (`EvaluationSet.split`, e.g. a family's code points)
holds at least one item of every source with library code in its language, or the run fails with one line
per family, language and source (`allow_unevaluated: true` makes those warnings). The evaluation split's
composition (library files and lines per source and split, from the manifest) and each set's (items per
source and per the set's `by` columns) are written either way.

Runs after the families' benchmarks are built, as two jobs: rule evaluation_metrics (`--measure-only`) writes
reports/metrics/evaluation.json with every set's size and never fails on the check, so the file stays whether the
check passes or not; rule evaluation_sizes (`--check-metrics`, in `rule all`, waited for by the report) reads it,
prints the check's lines and fails the run when the check fails."""

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


NOT_IN_CORPUS = "(not in the corpus)"


def size(spec: dict) -> int:
    """Items of one evaluation set (an EvaluationSet as a dict); a missing file holds none."""
    return items(spec)[0]


def items(spec: dict, tops: dict[str, str] | None = None) -> tuple[int, dict]:
    """(items, composition) of one evaluation set: composition maps each of its `by` columns to item counts per
    value, and, for the columns after the first (`source`), per first-column value and value. A set with
    `source_of` (a column of top-level module names) is counted per source through `tops` (top -> source)."""
    path = Path(spec["file"])
    by = list(spec.get("by") or ())
    if not path.exists():
        return 0, {}
    if by:  # a file written before one of its `by` columns existed: counted without it
        names = pq.read_schema(path).names
        by = [c for c in by if c in names]
    columns = sorted({c for c, _ in spec.get("where", ())} | ({"path"} if spec.get("suffixes") else set())
                     | ({spec["distinct"]} if spec.get("distinct") else set()) | set(by)
                     | ({spec["source_of"]} if spec.get("source_of") else set())
                     | ({"split"} if spec.get("every_source") and "split" in pq.read_schema(path).names else set()))
    if not columns:  # nothing to filter or count by: the footer's row count (never the rows: apiquiz's texts and
        return pq.read_metadata(path).num_rows, {}  # candidate lists took 2.5 GB at 1.2M quizzes)
    table = pq.read_table(path, columns=columns)
    for column, value in spec.get("where", ()):
        table = table.filter(pc.equal(table.column(column), value))
    if spec.get("suffixes"):
        paths = table.column("path").to_pylist()
        table = table.filter(pa.array([p.endswith(tuple(spec["suffixes"])) for p in paths], pa.bool_()))
    if spec.get("distinct"):  # distinct values (e.g. snippets, not samples), per `by` value too
        keys = table.column(spec["distinct"]).to_pylist()
        composition = {}
        for column in by:
            pairs = set(zip(keys, table.column(column).to_pylist()))
            composition[column] = dict(sorted(Counter(str(value) for _, value in pairs).items()))
        return len(set(keys)), composition
    composition: dict = {}
    if spec.get("source_of") and "source" not in by:  # per source through the library's top-level names
        composition["source"] = dict(sorted(Counter(
            (tops or {}).get(str(v), NOT_IN_CORPUS) for v in table.column(spec["source_of"]).to_pylist()).items()))
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
    """`library_index`'s first half: language -> source -> {split: [library files, library lines]}."""
    return library_index(manifest, scripts)[0]


def library_index(manifest: Path | None, scripts: list[str]) -> tuple[dict, dict[str, str]]:
    """language -> source -> {split: [library files, library lines]} of the manifest's unique library files
    (`pipeline.extract.library.library_files`: what the source's metadata declares, less scripts, tests and
    sdist-root bootstraps; the split's own decision): what each source has to be evaluated on."""
    if manifest is None or not Path(manifest).exists():
        return {}, {}
    from pipeline.extract import library as libcode

    names = pq.read_schema(manifest).names
    table = pq.read_table(manifest, columns=["source", "path", "language", "split", "lines", "duplicate"]
                          + (["location"] if "location" in names else []))
    rows = table.to_pylist()
    flags = libcode.library_files(rows, scripts, libcode.declarations(rows))
    out: dict = {}
    tops: dict[str, str] = {}  # a Python top-level name -> the first source (by name) whose library defines it
    for r, is_library in zip(rows, flags):
        if r["duplicate"] or not is_library:
            continue
        cell = out.setdefault(r["language"], {}).setdefault(r["source"], {}).setdefault(r["split"], [0, 0])
        cell[0] += 1
        cell[1] += int(r["lines"] or 0)
        if r["language"] == "python":
            top = libcode._dotted(r["path"]).split(".")[0]
            if top and (top not in tops or r["source"] < tops[top]):
                tops[top] = r["source"]
    return out, tops


def why_none(spec: dict, tops: dict[str, str] | None = None) -> dict[str, list[str]]:
    """source -> the family's own reasons it gives the set no item (`EvaluationSet.why_none`: a JSON file whose
    `why_none` maps a `source_of` value, e.g. a top-level library name, or a source to one sentence); {} when the
    set names none or the file is not there."""
    path = Path(spec.get("why_none") or "")
    if not spec.get("why_none") or not path.is_file():
        return {}
    out: dict[str, list[str]] = {}
    for key, sentence in sorted((json.loads(path.read_text()).get("why_none") or {}).items()):
        source = (tops or {}).get(key, key) if spec.get("source_of") else key
        out.setdefault(source, []).append(f"{key}: {sentence}" if key != source else sentence)
    return out


def unevaluated(spec: dict, n: int, composition: dict, library: dict,
                reasons: dict[str, list[str]] | None = None) -> list[tuple[str, str]]:
    """(source, line) per source with library code in the set's language but no item in it: sets drawn from a split
    (`every_source`; the split is the items' own, else the spec's `split`, else "evaluation"), and sets counted per
    source (`by` source, `source_of`: a column of top-level names). `reasons`: `why_none` of the set."""
    per_source = spec.get("every_source") or (spec.get("checked_per_source", True) and (
        "source" in (spec.get("by") or ()) or spec.get("source_of")))
    if not per_source or not library or not n:  # an empty set is the size check's (allow_small)
        return []
    split = next(iter(composition.get("split") or {}), spec.get("split") or "evaluation")
    have = composition.get("source", {})
    lines = []
    for source, splits in sorted(library.get(spec["language"], {}).items()):
        if have.get(source):
            continue
        files = sum(f for f, _ in splits.values())
        held = splits.get(split, [0, 0])[0]
        if not spec.get("every_source") and (reasons or {}).get(source):  # the family's own reason
            why = "its library gives none: " + "; ".join(reasons[source])
        elif not spec.get("every_source"):
            why = (f"its library gives none (its code defines or calls nothing the family makes {spec['name']} of)"
                   + (f"; {spec['fix']}" if spec.get("fix") else ""))
        elif not held:
            why = (f"none of them is in the {split} split: split by source (manifest.split_policy.mode: source; "
                   "docs/splits.md) so every source contributes its share")
        else:
            why = (f"its {held} in the {split} split hold none: give the evaluation split a larger share "
                   "(manifest.split)" + (f" {spec['fix']}" if spec.get("fix") else ""))
        lines.append((source, f"{spec['family']} {spec['language']}: source {source} has {files} library files but 0 "
                              f"{spec['name']} in the evaluation set, so it is never evaluated; {why} (or set "
                              "manifest.evaluation.allow_unevaluated: true to accept it)"))
    return lines


def per_source_table(rows: list[dict], library: dict, split: str = "test") -> dict:
    """language -> source -> {library_files, test_library_files, items: {"<family> <set>": n}}: what each source
    gives each evaluation set of its language (0 where it gives none; sets counted per source only)."""
    out: dict = {}
    for language, sources in sorted(library.items()):
        for source, splits in sorted(sources.items()):
            cell = {"library_files": sum(f for f, _ in splits.values()),
                    "test_library_files": splits.get(split, [0, 0])[0], "items": {}}
            for row in rows:
                have = (row.get("composition") or {}).get("source")
                if row["language"] == language and have is not None:
                    cell["items"][f"{row['family']} {row['set']}"] = int(have.get(source, 0))
            out.setdefault(language, {})[source] = cell
    return out


def check(sets: list[dict], min_items: int, allow_small: bool, library: dict | None = None,
          allow_unevaluated: bool = False, strict: bool = False,
          tops: dict[str, str] | None = None) -> tuple[dict, list[str], list[str]]:
    """(metrics, one line per set under min_items, one line per set and source left unevaluated). `sets`: dicts
    with family, name, language, file, ...; `library`, `tops`: `library_index` of the manifest. A source left
    unevaluated fails the check only when `strict` (and not `allow_unevaluated`); `metrics["unevaluated_sources"]`
    holds one line per source (its sets, the first reason)."""
    rows, lines, missing = [], [], []
    by_source: dict[tuple[str, str], list[str]] = {}
    library = library or {}
    for spec in sets:
        n, composition = items(spec, tops)
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
        for source, line in unevaluated(spec, n, composition, library, why_none(spec, tops)):
            missing.append(line)
            by_source.setdefault((spec["language"], source), []).append(line)
    sources = [f"source {source} ({language}) is not evaluated by {len(found)} set(s): "
               + "; ".join(line.split(": ", 1)[0] + ": " + line.split("never evaluated; ", 1)[-1] for line in found)
               for (language, source), found in sorted(by_source.items())]
    # the splits' library code per language and source (files, lines): what each source gives each split
    split_composition = {language: {source: {split: {"library_files": f, "library_lines": l}
                                             for split, (f, l) in sorted(splits.items())}
                                    for source, splits in sorted(sources_.items())}
                         for language, sources_ in sorted(library.items())}
    metrics = {"min_items": min_items, "allow_small": allow_small, "allow_unevaluated": allow_unevaluated,
               "strict": strict, "sets": rows, "too_small": lines, "unevaluated_sources": sources,
               "unevaluated_sets": missing, "split_composition": split_composition,
               "per_source": per_source_table(rows, library),
               "ok": (not lines or allow_small) and (not missing or allow_unevaluated or not strict)}
    return metrics, lines, missing


def report_lines(metrics: dict) -> bool:
    """Print the check's lines of a metrics dict (`check`'s) to stderr: one per set under min_items (ERROR, or
    WARNING under allow_small), one per source left unevaluated (ERROR under strict, else a WARNING). True when the
    check passes (`metrics["ok"]`)."""
    allow_small = metrics.get("allow_small", False)
    for line in metrics.get("too_small", []):
        print(f"{'WARNING' if allow_small else 'ERROR'} evaluation: {line}", file=sys.stderr)
    fail = metrics.get("strict", False) and not metrics.get("allow_unevaluated", False)
    for line in metrics.get("unevaluated_sources", []):  # one line per source, with the reason
        if fail:
            print(f"ERROR evaluation: {line}", file=sys.stderr)
        else:
            log.warning("evaluation: %s", line)
    return bool(metrics.get("ok"))


def log_sizes(metrics: dict) -> None:
    """Every set's size and every source's row of the per-source table, at INFO (the job's log)."""
    for row in metrics["sets"]:
        log.info("evaluation: %s %s: %d %s", row["family"], row["language"], row["items"], row["set"])
    for language, sources in metrics["per_source"].items():
        for source, cell in sources.items():
            log.info("evaluation: %s %s: %d library files (%d in test); %s", language, source, cell["library_files"],
                     cell["test_library_files"], ", ".join(f"{k} {v}" for k, v in cell["items"].items()) or "no set")


def check_metrics(metrics_path: Path, passed: Path | None) -> int:
    """The check alone (rule evaluation_sizes), on the metrics a `--measure-only` run wrote (rule
    evaluation_metrics): its lines printed, `passed` written when it passes (what `rule all` and the report wait
    for), exit 1 when it fails. The metrics file is never touched: it stays whether the check passes or not."""
    if not metrics_path.exists():
        print(f"ERROR evaluation: {metrics_path} does not exist: run the measuring step first "
              "(python -m pipeline.manifest.evaluation --measure-only ...; rule evaluation_metrics)", file=sys.stderr)
        return 1
    metrics = json.loads(metrics_path.read_text())
    if not report_lines(metrics):
        print(f"evaluation: the check failed; its metrics stay in {metrics_path}", file=sys.stderr)
        return 1
    if passed is not None:
        write_json({"ok": True, "metrics": str(metrics_path), "sets": len(metrics.get("sets", [])),
                    "too_small": len(metrics.get("too_small", [])),
                    "unevaluated_sources": len(metrics.get("unevaluated_sources", []))}, passed)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m pipeline.manifest.evaluation",
        description="Check that every enabled family's evaluation set holds at least min_items items per language, "
        "and every source with library code items in each set of its language; write reports/metrics/evaluation.json "
        "(before failing, so it is there either way) and exit 1 naming each family and language that is too small "
        "(unless --allow-small) or, under --strict, each source left unevaluated (unless --allow-unevaluated). "
        "The workflow runs the two halves as two jobs, so a failed check never removes the metrics: "
        "--measure-only (rule evaluation_metrics: write the metrics, exit 0) and --check-metrics (rule "
        "evaluation_sizes: read them, print the lines, exit 1 when the check fails).",
    )
    ap.add_argument("--sets", help="JSON list of evaluation sets (pipeline.families.EvaluationSet "
                    "fields plus family); required unless --check-metrics")
    ap.add_argument("--min-items", type=int, help="required unless --check-metrics")
    ap.add_argument("--allow-small", action="store_true", help="report small sets as warnings, exit 0")
    ap.add_argument("--allow-unevaluated", action="store_true",
                    help="report sources with library code but no item in a set as warnings, even under --strict")
    ap.add_argument("--strict", action="store_true",
                    help="manifest.evaluation.strict: a source with library code but no item in a set fails (exit 1)")
    ap.add_argument("--manifest", type=Path, help="data/manifest.parquet: each source's library code per split")
    ap.add_argument("--scripts", default="null",
                    help="manifest.split_policy.scripts as JSON (null: the default globs): paths that are not library code")
    ap.add_argument("--metrics", type=Path, help="where the metrics go (required unless --check-metrics)")
    ap.add_argument("--keep", type=Path,
                    help="also write the metrics here (a path the workflow keeps when this job fails, e.g. its log "
                         "folder: a failed job's outputs are removed)")
    ap.add_argument("--measure-only", action="store_true",
                    help="write the metrics (ok or not, with `ok` in them) and exit 0: the check is --check-metrics")
    ap.add_argument("--check-metrics", type=Path, metavar="METRICS",
                    help="check the metrics a --measure-only run wrote: print the lines, exit 1 when the check fails")
    ap.add_argument("--passed", type=Path, help="with --check-metrics: a small JSON written only when the check passes")
    args = ap.parse_args(argv)
    logs.setup()
    if args.check_metrics is not None:
        return check_metrics(args.check_metrics, args.passed)
    missing_args = [flag for flag, value in (("--sets", args.sets), ("--min-items", args.min_items),
                                             ("--metrics", args.metrics)) if value is None]
    if missing_args:
        ap.error(f"{', '.join(missing_args)} required (unless --check-metrics)")
    scripts = json.loads(args.scripts)
    library, tops = library_index(args.manifest, list(SCRIPTS if scripts is None else scripts))
    metrics, _, _ = check(json.loads(args.sets), args.min_items, args.allow_small, library,
                          args.allow_unevaluated, args.strict, tops)
    write_json(metrics, args.metrics)  # atomically, before any failure
    if args.keep:
        write_json(metrics, args.keep)
    if args.measure_only:
        log_sizes(metrics)
        log.info("evaluation: the check %s (%d sets under min_items, %d sources unevaluated): %s", "passes"
                 if metrics["ok"] else "fails", len(metrics["too_small"]), len(metrics["unevaluated_sources"]),
                 args.metrics)
        return 0
    ok = report_lines(metrics)
    log_sizes(metrics)
    if not ok and args.keep:
        print(f"evaluation: the check failed; its metrics are kept in {args.keep}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
