"""`python -m pipeline.report.jdk_since`: how the JDK's own `@since` tags date the JDK source's definitions.

Reads the `builtin: jdk` source of params.yaml (its include/exclude globs) from each JDK src.zip given (default: the
one the fetch finds, pipeline.corpus.fetch.find_jdk_src_zip), as text, never extracted or run, and dates every
definition as the first_seen rule does (pipeline.contamination.since). Optionally counts a family's item dates
(`--item-dates data/contamination/item_dates/<family>.parquet`, written by the rule item_dates) by basis and by label
at each cutoff. Writes `docs/results/jdk_since.json` (the command, the configuration, the commit, the numbers);
docs/contamination.md quotes `sentence(...)` of it (tests/test_contamination.py checks it is there).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import zipfile
from collections import Counter
from pathlib import Path

import yaml

from pipeline.contamination import provenance, since
from pipeline.corpus.fetch import find_jdk_src_zip, jdk_version
from pipeline.corpus.safety import Selection
from pipeline.io import code_commit, read_parquet, write_json
from pipeline.runtime.predict import ITEM_DATES, cutoff_label

CUTOFFS = (dt.date(2024, 11, 1), dt.date(2024, 8, 31))  # SmolLM2's release; Gemma 3's stated data cutoff


def measure(src_zip: Path, sel: Selection, cutoffs: tuple[dt.date, ...]) -> dict:
    """One JDK's figures: every definition of the selected files, dated by its @since tags."""
    with zipfile.ZipFile(src_zip) as z:
        files = [(n, z.read(n)) for n in sorted(z.namelist()) if n.endswith(".java") and sel.keeps(n)]
    pinned = provenance.jdk_version_date(src_zip)
    defs, tags = since.dated_definitions(files)
    rows = since.api_rows("jdk", defs, dt.date.fromisoformat(pinned) if pinned else None)
    return {"java_version": jdk_version(src_zip), "java_version_date": pinned, "files": len(files),
            **since.summary(defs, tags, rows, cutoffs)}


def item_counts(path: Path, cutoffs: tuple[dt.date, ...], languages: dict[str, str] | None = None) -> dict:
    """A family's item dates (pipeline.runtime.predict.ITEM_DATES) by basis, and by (basis, label) at each cutoff;
    with `languages` (item id -> its file's language) per language too."""
    rows = read_parquet(path, ITEM_DATES).to_pylist()

    def counts(rows: list[dict]) -> dict:
        out = {"items": len(rows), "by_basis": dict(sorted(Counter(r["date_basis"] or "none" for r in rows).items()))}
        for cutoff in cutoffs:
            labels = Counter(f"{r['date_basis'] or 'none'} {cutoff_label(r['released'], cutoff, r['date_basis'])}"
                             for r in rows)
            out[f"labels_at_{cutoff.isoformat()}"] = dict(sorted(labels.items()))
        return out

    out = {"file": path.as_posix(), **counts(rows)}
    if languages is not None:
        out["by_language"] = {lang: counts([r for r in rows if languages.get(r["item_id"]) == lang])
                              for lang in sorted(set(languages.values()))}
    return out


def item_languages(items: str, manifest: Path) -> dict[str, str]:
    """`PATH:ID_COLUMN` (a family's items table with `file_id`) -> item id -> its file's language (the manifest's)."""
    import duckdb

    path, _, column = items.rpartition(":")
    return dict(duckdb.execute(f'SELECT i."{column}"::VARCHAR, m.language FROM read_parquet(?) i '
                               "JOIN read_parquet(?) m USING (file_id)", [path, str(manifest)]).fetchall())


def sentence(results: dict) -> str:
    """What docs/contamination.md quotes of the file (tests/test_jdk_since.py checks it is there)."""
    cutoffs = results["configuration"]["cutoffs"]
    parts = []
    for n in results["numbers"]["jdks"]:
        after = "; ".join(f"{n[f'apis_after_{c}']:,} after {c}" for c in cutoffs)
        forms = ", ".join(f"`{k}` {v}" for k, v in n["tags_odd_forms"].items()) or "none"
        releases = ", ".join(f"{k} {n['apis_by_release'][k]:,}" for k in since.RELEASES if k in n["apis_by_release"])
        parts.append(f"JDK {n['java_version']} ({n['files']:,} files): {n['definitions_dated']:,} of "
                     f"{n['definitions']:,} definitions dated by a @since tag ({n['definitions_with_tag']:,} by their "
                     f"own), {n['apis_dated']:,} of {n['apis']:,} API names (by first release: {releases}); of those, "
                     f"{after}; {n['tags_unparsable']:,} tags unparsable, {n['tags_odd']:,} odd but read ({forms})")

    def counted(what: str, n: dict) -> str:
        basis = ", ".join(f"{v:,} `{k}`" for k, v in n["by_basis"].items())
        sides = "; ".join(f"at {c}: " + ", ".join(f"{n[f'labels_at_{c}'].get(f'{since.BASIS} {label}', 0):,} {label}"
                                                  for label in ("released_before_cutoff", "released_after_cutoff"))
                          for c in cutoffs)
        tagged = f"; those dated by a since tag, {sides}" if n["by_basis"].get(since.BASIS) else ""
        return f"{what}: {n['items']:,} items, dated by {basis}{tagged}"

    for n in results["numbers"]["item_dates"]:
        if "by_language" in n:
            parts += [counted(f"`{n['file']}`, {lang}", m) for lang, m in n["by_language"].items()]
        else:
            parts.append(counted(f"`{n['file']}`", n))
    return ". ".join(parts) + "."


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.report.jdk_since", description=__doc__.split("\n\n")[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--src-zip", type=Path, action="append", default=None,
                    help="a JDK's lib/src.zip (repeatable; default: the one the fetch finds)")
    ap.add_argument("--cutoff", type=dt.date.fromisoformat, action="append", default=None,
                    help=f"repeatable; default {', '.join(c.isoformat() for c in CUTOFFS)}")
    ap.add_argument("--item-dates", type=Path, action="append", default=[],
                    help="a family's item dates (data/contamination/item_dates/<family>.parquet) to count")
    ap.add_argument("--items", default=None, help="PATH:ID_COLUMN, the items the --item-dates ids name (with file_id), "
                    "to count them per language too (with --manifest)")
    ap.add_argument("--manifest", type=Path, default=Path("data/manifest.parquet"))
    ap.add_argument("--out", type=Path, default=Path("docs/results/jdk_since.json"))
    args = ap.parse_args(argv)
    spec = next((s for s in yaml.safe_load(args.params.read_text())["corpus"]["sources"] if s.get("builtin") == "jdk"),
                None)
    if spec is None:
        ap.error(f"{args.params} has no `builtin: jdk` source")
    zips = args.src_zip or [find_jdk_src_zip()]
    if None in zips:
        ap.error("no JDK src.zip found (JAVA_HOME, the javac on PATH, /usr/lib/jvm); pass --src-zip")
    cutoffs = tuple(args.cutoff or CUTOFFS)
    sel = Selection(spec.get("include", []), spec.get("exclude", []))
    numbers = {"jdks": [{"src_zip": z.as_posix(), **measure(z, sel, cutoffs)} for z in zips],
               "item_dates": [item_counts(p, cutoffs, item_languages(args.items, args.manifest) if args.items else None)
                              for p in args.item_dates]}
    command = " ".join(["python -m pipeline.report.jdk_since", *(f"--src-zip {z}" for z in args.src_zip or []),
                        *(f"--cutoff {c}" for c in args.cutoff or []),
                        *(f"--item-dates {p.as_posix()}" for p in args.item_dates),
                        *([f"--items {args.items}"] if args.items else [])])
    results = {"command": command,
               "configuration": {"params": args.params.as_posix(), "source": spec["name"],
                                 "include": spec.get("include", []), "exclude": spec.get("exclude", []),
                                 "cutoffs": [c.isoformat() for c in cutoffs],
                                 "releases": {v: d.isoformat() for v, d in since.RELEASES.items()}},
               "commit": code_commit(), "numbers": numbers}
    write_json(results, args.out)
    print(sentence(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
