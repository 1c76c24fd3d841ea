"""Splits of a built corpus before (by repository only) and after the split policy (pipeline.manifest.build):
files per language and split, library vs scripts, and how many files move. Reads the manifest parts of a
project folder (data/manifest/parts/*.parquet) and its params.yaml.

    python bench/splits/split_policy.py PROJECT_DIR [--configfile OVERLAY ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from pipeline.manifest.build import SCRIPTS, SplitPolicy, assign_splits, split_of  # noqa: E402
from pipeline.manifest.scan import excluded_by  # noqa: E402


def compare(project: Path, overlays: list[Path] = ()) -> dict:
    from snakemake.utils import update_config

    params = yaml.safe_load((project / "params.yaml").read_text())
    for overlay in overlays:
        update_config(params, yaml.safe_load(overlay.read_text()))
    fractions, seed = params["manifest"]["split"], params["seed"]
    given = params["manifest"].get("split_policy", {})
    policy = SplitPolicy(given.get("mode", "source"), tuple(given.get("scripts", SCRIPTS)), given.get("min_units", 10))
    parts = [pq.read_table(p) for p in sorted((project / "data/manifest/parts").glob("*.parquet"))
             if not p.name.endswith(".rejects.parquet")]
    rows = pa.concat_tables(parts).select(["source", "repository", "path", "language", "sha256", "lines"]).to_pylist()
    before = [split_of(seed, r["source"], r["repository"], fractions) for r in rows]
    after, report = assign_splits(rows, seed, fractions, policy)
    out: dict = {"files": len(rows), "moved": sum(b != a for b, a in zip(before, after)), "by_language": {}}
    for lang in sorted({r["language"] for r in rows}):
        cell: dict = {"policy": report[lang]["policy"], "units_after": report[lang]["units"],
                      "repositories": len({(r["source"], r["repository"]) for r in rows if r["language"] == lang})}
        for name, splits in (("before", before), ("after", after)):
            counts: dict = {}
            for r, s in zip(rows, splits):
                if r["language"] == lang:
                    kind = "script" if excluded_by(r["path"], list(policy.scripts)) else "library"
                    counts.setdefault(s, {"library": 0, "script": 0})[kind] += 1
            cell[name] = dict(sorted(counts.items()))
        cell["moved"] = sum(b != a for r, b, a in zip(rows, before, after) if r["language"] == lang)
        out["by_language"][lang] = cell
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python bench/splits/split_policy.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("project", type=Path, help="a project folder with params.yaml and data/manifest/parts")
    ap.add_argument("--configfile", nargs="*", default=[], type=Path, help="overlays the run was given, in order")
    ap.add_argument("--json", type=Path, help="write the figures here too")
    args = ap.parse_args(argv)
    result = compare(args.project, args.configfile)
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
