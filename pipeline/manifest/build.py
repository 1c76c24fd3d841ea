"""Merge the per-source scans into the manifest: splits, duplicate flags, and one rejects table
from every stage so far.

Split policy (docs/splits.md). Every file is library code or a script (`manifest.split_policy.scripts`:
tests, examples, docs, tools, benchmarks, by path). Per language:

- `source` (the default): stratified by source, so every source is evaluated. Each source's library files
  are dealt on their own to the splits, by repository where the source has at least one per split, else by
  folder (package) where it has that many, else by module; the units in the order of a seeded hash of
  (source, unit), each to the split furthest below its share of the source's library lines, then every split
  without a unit is given the unit nearest its share from the split that has most (the last split, test, first: a source
  of one module is evaluated, not trained on). A unit is never cut across splits; scripts train. A source's
  splits do not depend on the other sources.
- `repository`: each repository's split is a hash of (seed, source, repository), so a repository keeps
  its split whatever else is in the corpus (the papers' split by project). A repository holding only
  scripts trains (scripts never form an evaluation split on their own).
- `package`: library files of the whole language grouped by package (their folder; by module when the
  language has fewer than `min_units` folders), the groups ordered by a hash of (seed, source, group) and
  dealt to the split furthest below its share of library files so far; scripts train.
- `auto`: `repository`, unless it leaves a split of the language without its share of library files (none,
  or under a quarter of what its fraction promises) or an evaluation split made mostly of scripts; then
  `package` for that language only. With the stdlib present a language has hundreds of repositories, so
  auto kept repository splits and a user's few libraries all hashed to train or valid.
"""

from __future__ import annotations

import argparse
import json
import logging
import posixpath
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from pipeline import schemas
from pipeline.contamination import licenses
from pipeline.core import ids, logs
from pipeline.extract import library as libcode
from pipeline.io import read_parquet, write_json, write_parquet
from pipeline.manifest.scan import excluded_by

log = logging.getLogger("pipeline.manifest.build")

SPLITS = ("train", "valid", "test")


def split_of(seed: int, source: str, repository: str, fractions: dict[str, float]) -> str:
    """Deterministic split of a repository: a hash of (seed, source, repository) mapped to [0, 1).

    Hashing each repository on its own (rather than shuffling the list) keeps every
    repository's split unchanged when other repositories are added or removed.
    """
    u = ids.unit_float(seed, source, repository)
    edge = 0.0
    for name in SPLITS:
        edge += fractions[name]
        if u < edge:
            return name
    return SPLITS[-1]


# Paths (and tails of paths starting at a folder) that are scripts, not library code: the default of
# manifest.split_policy.scripts.
SCRIPTS = ("test/*", "tests/*", "test_*.py", "*_test.py", "conftest.py", "*Test.java", "*Tests.java",
           "*.test.js", "*.spec.js", "__tests__/*", "example/*", "examples/*", "demo/*", "demos/*", "doc/*",
           "docs/*", "documentation/*", "tools/*", "scripts/*", "bench/*", "benchmark/*", "benchmarks/*", "setup.py", "noxfile.py")


# What a file carries for an evaluation: its call sites (`name(`, `obj.name(`; no definition, no keyword), the
# items apirec's points, codesyntax's and probing's samples are made of. Counted on the text, never run.
_CALL = re.compile(r"(?<![\w$])(?<!def )(?<!class )(?<!function )([A-Za-z_$][\w$]*)\s*\(")
_NOT_CALLS = frozenset({"if", "elif", "while", "for", "return", "switch", "catch", "with", "and", "or", "not", "in",
                        "is", "import", "lambda", "yield", "assert", "await", "synchronized", "typeof", "print",
                        "super", "this", "except", "del", "raise", "throw", "case", "new", "void"})
MIN_CARRY = 3  # call sites an evaluation split needs of a source before its units are judged to carry items


def carry_of(location: str | None, encoding: str | None = None) -> int | None:
    """Call sites in a file (`_CALL`), read as text; None when it cannot be read."""
    if not location:
        return None
    try:
        text = Path(location).read_bytes().decode(encoding or "utf-8", errors="replace")
    except (OSError, LookupError):
        return None
    return sum(1 for m in _CALL.finditer(text) if m.group(1) not in _NOT_CALLS)


@dataclass(frozen=True)
class SplitPolicy:
    mode: str = "source"  # source / auto / repository / package
    scripts: tuple[str, ...] = SCRIPTS
    min_units: int = 10  # package mode: with fewer folders of a language, its modules are the units


def degenerate(library: dict[str, int], fractions: dict[str, float], scripts: dict[str, int] | None = None) -> list[str]:
    """The splits (fraction > 0) that hold none, or under a quarter of their promised share (when it is
    at least 4), of a language's library files, and the evaluation splits (all but the first) made mostly
    of scripts. `library`, `scripts`: split -> files."""
    total, scripts = sum(library.values()), scripts or {}
    order = [s for s in split_order(fractions) if fractions[s] > 0]
    return [s for s in order
            if library.get(s, 0) == 0 or (fractions[s] * total >= 4 and library.get(s, 0) < fractions[s] * total / 4)
            or (s != order[0] and scripts.get(s, 0) > library.get(s, 0))]


def deal(units: dict[tuple[str, str], int], seed: int, fractions: dict[str, float]) -> dict[tuple[str, str], str]:
    """Package splits: units (source, group) -> library files, in the order of a seeded hash of each,
    each to the split furthest below its share of the files dealt so far (ties: train, valid, test)."""
    order = split_order(fractions)
    counts, dealt, out = {s: 0 for s in order}, 0, {}
    for unit in sorted(units, key=lambda u: (ids.unit_float(seed, "package-split", *u), u)):
        dealt += units[unit]
        best = max((s for s in order if fractions[s] > 0), key=lambda s: (fractions[s] * dealt - counts[s], -order.index(s)))
        counts[best] += units[unit]
        out[unit] = best
    return out


def fill_priority(fractions: dict[str, float]) -> list[str]:
    """The splits (fraction > 0) in the order a source too small for all of them fills them: the last
    (test: the evaluation), then the first (train), then the others from the last back."""
    order = [s for s in split_order(fractions) if fractions[s] > 0]
    return order[-1:] + order[:-1][:1] + order[1:-1][::-1]


def deal_source(units: dict[tuple[str, str], int], seed: int, fractions: dict[str, float]) -> dict[tuple[str, str], str]:
    """One source's units (source, unit) -> weight (library lines) dealt to the splits: `deal`, then each split
    (in `fill_priority` order) that got no unit takes, from the split holding most units (when one holds two or
    more), else from a split later in that order, the unit whose weight is nearest the split's share of the
    source. With at least one unit per split every split gets one; with fewer, the evaluation split first."""
    dealt = deal(units, seed, fractions)
    priority = fill_priority(fractions)
    total = sum(units.values())
    for split in priority:
        # the unit nearest the split's share of the source (not merely the lightest: a 6-line __init__.py or a
        # docs conf.py alone in test gives no evaluation item)
        nearest = lambda u: (abs(units[u] - fractions[split] * total), units[u], ids.unit_float(seed, "package-split", *u), u)  # noqa: E731,B023
        members = {s: [u for u in sorted(dealt) if dealt[u] == s] for s in priority}
        if members[split]:
            continue
        donors = [s for s in priority if len(members[s]) > 1] or [s for s in priority[priority.index(split) + 1:]
                                                                   if members[s]]
        if not donors:
            break
        donor = max(donors, key=lambda s: (len(members[s]), priority.index(s)))
        dealt[min(members[donor], key=nearest)] = split
    return dealt


def carry_swap(dealt: dict[tuple[str, str], str], weights: dict[tuple[str, str], int],
               carry: dict[tuple[str, str], int], seed: int, fractions: dict[str, float]) -> list[str]:
    """Test units chosen by what they carry: each evaluation split (all but the first, the last first) whose
    units hold fewer than MIN_CARRY call sites (a 37-line `__init__.py` of re-exports) gives them to the first
    split (train) and takes from it, instead, the unit with at least MIN_CARRY call sites (else the one carrying
    most, when it carries more) whose weight is nearest the split's share; a split before the last (valid) only
    when train keeps MIN_CARRY call sites. Deterministic: content and seed only.
    Changes `dealt`; returns the splits it changed."""
    order = [s for s in split_order(fractions) if fractions[s] > 0]
    total, changed = sum(weights.values()), []
    for split in reversed(order[1:]):
        mine = [u for u in sorted(dealt) if dealt[u] == split]
        held = sum(carry[u] for u in mine)
        if not mine or held >= MIN_CARRY:
            continue
        pool = [u for u in sorted(dealt) if dealt[u] == order[0]]
        if split != order[-1]:  # a split between train and test (valid) never takes train's last calls
            kept = sum(carry[u] for u in pool) + held
            pool = [u for u in pool if kept - carry[u] >= MIN_CARRY]
        donors = [u for u in pool if carry[u] >= MIN_CARRY]
        if not donors:
            most = max(pool, key=lambda u: (carry[u], -ids.unit_float(seed, "package-split", *u)), default=None)
            donors = [most] if most is not None and carry[most] > held else []
        if not donors:
            continue
        best = min(donors, key=lambda u: (abs(weights[u] - fractions[split] * total), weights[u],
                                          ids.unit_float(seed, "package-split", *u), u))
        for u in mine:
            dealt[u] = order[0]
        dealt[best] = split
        changed.append(split)
    return changed


def source_units(rows: list[dict], mine: list[int], needed: int) -> tuple[str, dict[int, str]]:
    """The unit of one source's library files `mine` (row indices): its repositories when it has at least
    `needed` of them, else its folders (packages) when it has that many, else its modules (files)."""
    for level, key in (("repository", lambda r: r["repository"]), ("folder", lambda r: posixpath.dirname(r["path"]))):
        unit_of = {i: key(rows[i]) for i in mine}
        if len(set(unit_of.values())) >= needed:
            return level, unit_of
    return "module", {i: rows[i]["path"] for i in mine}


def split_by_source(rows: list[dict], mine: list[int], library: list[int], splits: list[str], seed: int,
                    fractions: dict[str, float]) -> dict[str, dict]:
    """Stratify one language's library files `library` by source (module docstring); sets `splits` of `mine`
    (scripts train) and returns per source its unit, units, library files and lines per split."""
    needed = sum(1 for s in SPLITS if fractions.get(s, 0) > 0)
    script_split = next(s for s in split_order(fractions) if fractions[s] > 0)
    for i in mine:
        splits[i] = script_split
    by_source: dict[str, list[int]] = {}
    for i in library:
        by_source.setdefault(rows[i]["source"], []).append(i)
    out = {}
    for source in sorted(by_source):
        level, unit_of = source_units(rows, by_source[source], needed)
        weights: dict[tuple[str, str], int] = {}
        for i, unit in unit_of.items():
            weights[(source, unit)] = weights.get((source, unit), 0) + max(1, int(rows[i].get("lines") or 1))
        dealt = deal_source(weights, seed, fractions)
        carried: dict[tuple[str, str], int] = {}
        for i, unit in unit_of.items():
            c = rows[i].get("carry")
            carried[(source, unit)] = carried.get((source, unit), 0) + (c if c is not None else MIN_CARRY)
        swapped = carry_swap(dealt, weights, carried, seed, fractions)
        files: dict[str, int] = {}
        lines: dict[str, int] = {}
        for i, unit in unit_of.items():
            splits[i] = dealt[(source, unit)]
            files[splits[i]] = files.get(splits[i], 0) + 1
            lines[splits[i]] = lines.get(splits[i], 0) + max(1, int(rows[i].get("lines") or 1))
        out[source] = {"unit": level, "units": len(weights),
                       "units_by_split": dict(sorted(Counter(dealt.values()).items())),
                       "library_files_by_split": dict(sorted(files.items())),
                       "library_lines_by_split": dict(sorted(lines.items())),
                       "calls_by_split": {sp: sum(c for u, c in carried.items() if dealt[u] == sp)
                                          for sp in sorted(set(dealt.values()))},
                       "chosen_by_carry": swapped}
    return out


def assign_splits(rows: list[dict], seed: int, fractions: dict[str, float],
                  policy: SplitPolicy = SplitPolicy(), declarations: dict[str, dict] | None = None) -> tuple[list[str], dict]:
    """The split of each row (source, repository, path, language; `lines` weighs the source policy's units; `carry`,
    its call sites, chooses test units that carry items; `declarations`: source -> what its metadata declares
    its library to be, `pipeline.extract.library.declared_library`) and, library code being
    `pipeline.extract.library.library_files`,
    and, per language, the policy used: {language: {policy, units, library_files_by_split, script_files,
    degenerate_by_repository[, sources: {source: {unit, units, units_by_split, library_files_by_split,
    library_lines_by_split}}]}}."""
    scripts = [not flag for flag in libcode.library_files(rows, list(policy.scripts), declarations)]
    # where scripts go when they are not with their repository's library code: train (the first split with a
    # fraction, when train has none)
    script_split = next(s for s in split_order(fractions) if fractions[s] > 0)
    library_repos = {(r["source"], r["repository"]) for r, script in zip(rows, scripts) if not script}
    cache: dict[tuple[str, str], str] = {}
    splits = [cache.setdefault((r["source"], r["repository"]), split_of(seed, r["source"], r["repository"], fractions))
              if (r["source"], r["repository"]) in library_repos else script_split for r in rows]
    report: dict[str, dict] = {}
    for language in sorted({r["language"] for r in rows}):
        mine = [i for i, r in enumerate(rows) if r["language"] == language]
        library: dict[str, int] = {}
        script_files: dict[str, int] = {}
        for i in mine:
            counts = script_files if scripts[i] else library
            counts[splits[i]] = counts.get(splits[i], 0) + 1
        bad = degenerate(library, fractions, script_files)
        use = policy.mode if policy.mode != "auto" else ("package" if bad and library else "repository")
        units = {(rows[i]["source"], rows[i]["repository"]) for i in mine if not scripts[i]}
        sources = None
        if use == "source":
            sources = split_by_source(rows, mine, [i for i in mine if not scripts[i]], splits, seed, fractions)
            units = {(s, u) for s, cell in sources.items() for u in range(cell["units"])}
            library = {}
            for i in mine:
                if not scripts[i]:
                    library[splits[i]] = library.get(splits[i], 0) + 1
        if use == "package":
            folders = {(rows[i]["source"], posixpath.dirname(rows[i]["path"])) for i in mine if not scripts[i]}
            by_module = len(folders) < policy.min_units
            unit_of = {i: (rows[i]["source"], rows[i]["path"] if by_module else posixpath.dirname(rows[i]["path"]))
                       for i in mine if not scripts[i]}
            sizes: dict[tuple[str, str], int] = {}
            for u in unit_of.values():
                sizes[u] = sizes.get(u, 0) + 1
            dealt = deal(sizes, seed, fractions)
            for i in mine:
                splits[i] = dealt[unit_of[i]] if i in unit_of else script_split
            units = set(sizes)
            library = {}
            for i in unit_of:
                library[splits[i]] = library.get(splits[i], 0) + 1
        report[language] = {"policy": use if use in ("repository", "source")
                            else f"package ({'module' if by_module else 'folder'})",
                            "units": len(units), "library_files_by_split": dict(sorted(library.items())),
                            "script_files": sum(scripts[i] for i in mine),
                            "degenerate_by_repository": bad}
        if sources is not None:  # per source: its unit and what each split holds of its library code
            report[language]["sources"] = sources
    return splits, report


def build(scanned: list[pa.Table], seed: int, fractions: dict[str, float],
          policy: SplitPolicy = SplitPolicy()) -> tuple[pa.Table, dict]:
    """The manifest (sorted, with split and duplicate columns) and the split policy's report."""
    total = sum(fractions[s] for s in SPLITS)
    if abs(total - 1.0) > 1e-9:
        raise ValueError(f"manifest.split fractions must add up to 1, got {total}")
    table = pa.concat_tables(scanned) if scanned else schemas.SCANNED.empty_table()
    table = table.sort_by([("source", "ascending"), ("repository", "ascending"), ("path", "ascending"),
                           ("location", "ascending")])
    rows = table.select(["source", "repository", "path", "language", "lines", "location", "encoding"]).to_pylist()
    declared = libcode.declarations(rows)
    if policy.mode == "source":  # test units are chosen by what they carry: their call sites, read from the file
        for r in rows:
            r["carry"] = carry_of(r["location"], r["encoding"])
    splits, report = assign_splits(rows, seed, fractions, policy, declared)
    for language in report.values():
        for source, cell in (language.get("sources") or {}).items():
            cell["library_declared_by"] = (declared.get(source) or {}).get("from")
    seen: set[str] = set()
    duplicate = []
    for h in table.column("sha256").to_pylist():
        duplicate.append(h in seen)
        seen.add(h)
    table = table.append_column("split", pa.array(splits, pa.string()))
    table = table.append_column("duplicate", pa.array(duplicate, pa.bool_()))
    return licenses.annotate(table, {}), report  # every file `unknown` until main() annotates its sources


def caps(records: list[dict]) -> list[dict]:
    """Every cap that left members of a source out (fetch records' `caps`), with what it kept of what it saw."""
    return [{"source": rec["name"], **cap} for rec in sorted(records, key=lambda r: r["name"])
            for cap in rec.get("caps", [])]


def summary(manifest: pa.Table, rejects: pa.Table) -> dict:
    def counts(table: pa.Table, column: str) -> dict:
        if table.num_rows == 0:
            return {}
        vc = pc.value_counts(table.column(column)).to_pylist()
        return {str(x["values"]): x["counts"] for x in sorted(vc, key=lambda x: str(x["values"]))}

    unique = manifest.filter(pc.invert(manifest.column("duplicate")))
    return {
        "files": manifest.num_rows,
        "bytes": int(pc.sum(manifest.column("bytes")).as_py() or 0),
        "lines": int(pc.sum(manifest.column("lines")).as_py() or 0),
        "unique_files": unique.num_rows,
        "repositories": len(set(zip(manifest.column("source").to_pylist(), manifest.column("repository").to_pylist()))),
        "files_by_language": counts(manifest, "language"),
        "files_by_split": counts(manifest, "split"),
        "files_by_source": counts(manifest, "source"),
        "rejects": rejects.num_rows,
        "rejects_by_reason": counts(rejects, "reason"),
        # manifest.exclude at work: files left out as not code of the project, by the pattern that matched
        "excluded_by_pattern": counts(rejects.filter(pc.equal(rejects.column("reason"), "excluded")), "detail"),
    }


def split_order(fractions: dict[str, float]) -> list[str]:
    """train, valid, test first (whatever order params gave them), then any other split by name."""
    known = [s for s in ("train", "valid", "test") if s in fractions]
    return known + sorted(s for s in fractions if s not in known)


def split_warnings(files: dict[str, dict[str, int]], fractions: dict[str, float]) -> list[str]:
    """One line per (language, split) whose split is empty or tiny: fewer than a quarter of the files
    its fraction promises (when it promises at least 4). `files`: language -> split -> unique files.
    Splits are by repository, so a corpus of few repositories gives lopsided splits."""
    out = []
    for language in sorted(files):
        total = sum(files[language].values())
        for split in split_order(fractions):
            fraction = fractions[split]
            n, expected = files[language].get(split, 0), fraction * total
            if fraction > 0 and (n == 0 or (expected >= 4 and n < expected / 4)):
                out.append(f"the {split} split of {language} has {n} of {total} files (manifest.split promises about "
                           f"{expected:.0f}): {language} scores on {split} will be {'missing' if n == 0 else 'noisy'}. "
                           "Add sources, or set manifest.split_policy.mode: package (or auto) so few sources are "
                           "split by package (docs/splits.md)")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m pipeline.manifest.build",
        description="Merge per-source scans into the manifest (splits, duplicates) and all rejects into one table.",
    )
    ap.add_argument("--scanned", nargs="*", default=[], type=Path, help="per-source manifest parts")
    ap.add_argument("--rejects-in", nargs="*", default=[], type=Path, help="per-source reject tables (fetch and scan)")
    ap.add_argument("--records", nargs="*", default=[], type=Path,
                    help="the sources' fetch records (data/sources/<name>.json): their caps' kept and seen counts")
    ap.add_argument("--seed", required=True, type=int)
    ap.add_argument("--split", required=True, help='fractions as JSON, e.g. {"train":0.8,"valid":0.1,"test":0.1}')
    ap.add_argument("--split-policy", default="{}",
                    help='manifest.split_policy as JSON: {"mode": "source|auto|repository|package", "scripts": [globs], '
                         '"min_units": N} (docs/splits.md)')
    ap.add_argument("--licenses-allow", default="null",
                    help="corpus.licenses.allow as JSON: SPDX licenses whose sources are kept (null: every source)")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--rejects", required=True, type=Path)
    ap.add_argument("--metrics", required=True, type=Path)
    args = ap.parse_args(argv)
    logs.setup()
    given = json.loads(args.split_policy)
    policy = SplitPolicy(given.get("mode", "source"), tuple(given.get("scripts", SCRIPTS)), given.get("min_units", 10))
    records = [json.loads(p.read_text()) for p in args.records]
    provenance = licenses.of_records(records)
    scanned, license_rejects = licenses.filter_scanned([read_parquet(p, schemas.SCANNED) for p in args.scanned],
                                                       provenance, json.loads(args.licenses_allow))
    manifest, split_report = build(scanned, args.seed, json.loads(args.split), policy)
    manifest = licenses.annotate(manifest, provenance)
    rejects = pa.concat_tables([read_parquet(p, schemas.REJECTS) for p in args.rejects_in] + [license_rejects])  # never empty: the license part is a table
    rejects = rejects.sort_by([("source", "ascending"), ("stage", "ascending"), ("path", "ascending"), ("reason", "ascending")])
    write_parquet(manifest, args.out, schemas.MANIFEST)
    write_parquet(rejects, args.rejects, schemas.REJECTS)
    stats = summary(manifest, rejects)
    stats["split_policy"] = split_report
    for language, used in split_report.items():
        if used["policy"].startswith("package"):
            log.warning("manifest: %s split by %s: by repository, the %s split(s) would hold too little library "
                        "code", language, used["policy"], ", ".join(used["degenerate_by_repository"]) or "-")
    stats["caps"] = caps(records)
    # provenance per source (docs/contamination.md): license, release date, files kept
    kept = stats["files_by_source"]
    stats["provenance"] = {name: {"license": lic, "released": day.isoformat() if day else None,
                                  "files": kept.get(name, 0)} for name, (lic, day) in sorted(provenance.items())}
    for cap in stats["caps"]:
        log.warning("manifest: source %s: %s kept %d of %d members seen (%s)", cap["source"], cap["reason"],
                    cap["kept"], cap["seen"], cap["path"])
    unique = manifest.filter(pc.invert(manifest.column("duplicate")))
    by_language: dict[str, dict[str, int]] = {}
    for language, split in zip(unique.column("language").to_pylist(), unique.column("split").to_pylist()):
        by_language.setdefault(language, {}).setdefault(split, 0)
        by_language[language][split] += 1
    # a language dealt by package: its scripts train by design, so its splits are judged on its library files
    for language, used in split_report.items():
        if used["policy"] != "repository" and language in by_language:
            by_language[language] = used["library_files_by_split"]
    stats["warnings"] = split_warnings(by_language, json.loads(args.split))
    for warning in stats["warnings"]:
        log.warning("manifest: %s", warning)
    write_json(stats, args.metrics)
    log.info("manifest: %d files (%d unique), %d rejects", stats["files"], stats["unique_files"], stats["rejects"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
