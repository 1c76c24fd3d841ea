"""The splits per source of two built manifests (e.g. main's and this branch's): library files (scripts left out,
`manifest.split_policy.scripts` defaults) per split, and the test split's share of each source's library lines, as a
Markdown table, then per language how many sources hold library files in test. docs/splits.md has the default's.

    python bench/splits/split_sources.py BEFORE/data/manifest.parquet AFTER/data/manifest.parquet [AFTER/reports/metrics/manifest.json]

BEFORE may instead be a policy (`auto`, `repository`, `package`): AFTER's files split again by it (the params'
seed and fractions given by --seed and --split, default the default's), for a corpus built only once.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from pipeline.manifest.build import SCRIPTS  # noqa: E402
from pipeline.manifest.scan import excluded_by  # noqa: E402

SPLITS = ("train", "valid", "test")


def composition(manifest: Path, policy: str | None = None, seed: int = 20261122,
                fractions: dict | None = None) -> dict:
    """(language, source) -> split -> [library files, library lines] of the unique files (split again by `policy`)."""
    out: dict = {}
    rows = pq.read_table(manifest, columns=["source", "repository", "path", "language", "split", "lines",
                                            "duplicate"]).to_pylist()
    if policy:
        from pipeline.manifest.build import SplitPolicy, assign_splits

        splits, _ = assign_splits(rows, seed, fractions or {"train": 0.8, "valid": 0.1, "test": 0.1},
                                  SplitPolicy(mode=policy))
        rows = [{**r, "split": s} for r, s in zip(rows, splits)]
    for r in rows:
        if r["duplicate"] or excluded_by(r["path"], list(SCRIPTS)) is not None:
            continue
        cell = out.setdefault((r["language"], r["source"]), {}).setdefault(r["split"], [0, 0])
        cell[0] += 1
        cell[1] += r["lines"] or 0
    return out


def table(before: dict, after: dict, units: dict) -> list[str]:
    def files(d, k):
        return "/".join(str(d.get(k, {}).get(s, [0, 0])[0]) for s in SPLITS)

    def share(d, k):
        c = d.get(k, {})
        total = sum(v[1] for v in c.values())
        return f"{c.get('test', [0, 0])[1] / total:.1%}" if total else "-"

    lines = ["| language | source | unit (units) | library files train/valid/test, before | after | "
             "test share of library lines, before | after |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {k[0]} | {k[1]} | {units.get(k, '')} | {files(before, k)} | {files(after, k)} | {share(before, k)} | "
              f"{share(after, k)} |" for k in sorted(set(before) | set(after))]
    for name, d in (("before", before), ("after", after)):
        for language in sorted({k[0] for k in d}):
            sources = [k for k in d if k[0] == language]
            held = [k for k in sources if d[k].get("test")]
            lines.append(f"{name}: {language}: {len(held)} of {len(sources)} sources with library files in test, "
                         f"{sum(d[k].get('test', [0, 0])[0] for k in sources)} test library files")
    return lines


def main(argv: list[str] | None = None) -> int:
    args = list(argv if argv is not None else sys.argv[1:])
    seed, fractions = 20261122, None
    for flag in ("--seed", "--split"):
        if flag in args:
            k = args.index(flag)
            value = args[k + 1]
            del args[k:k + 2]
            if flag == "--seed":
                seed = int(value)
            else:
                fractions = json.loads(value)
    if len(args) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    units = {}
    if len(args) == 3:
        for language, used in json.loads(Path(args[2]).read_text())["split_policy"].items():
            units.update({(language, s): f"{c['unit']} ({c['units']})" for s, c in used.get("sources", {}).items()})
    policies = ("auto", "repository", "package", "source")
    before = (composition(Path(args[1]), args[0], seed, fractions) if args[0] in policies
              else composition(Path(args[0])))
    print("\n".join(table(before, composition(Path(args[1])), units)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
