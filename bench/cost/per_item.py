"""Seconds per scored item of each model's inference jobs in a finished build, per family and subset, beside a
reference model's: where a real model's cost goes, family by family (docs/models.md, "Cost per item").

Each `predict` job's seconds are its wall from the Snakemake log (its start line to its "Finished" line: loading
the weights included); inference jobs run one torch thread each and Snakemake runs at most `--cores` of them side
by side, so on an otherwise idle machine a job's wall is its CPU time within the scheduler's noise (name the load
when you quote it). Items are the distinct ids of the job's predictions file (its first column), each family's own
unit: apiquiz a quiz (its candidates ranked), apirec a point (its pool re-ranked), idbench an identifier and probing
a sample (pooled at every layer).

Usage:
  python -m bench.cost.per_item --build DIR --log LOG [--log LOG ...] --models gemma3-270m smollm2 \\
      --reference smollm2 --out docs/results/cost_per_item_gemma3_smollm2.json
  (DIR: the build's checkout; each LOG: a Snakemake log of the build, `.snakemake/log/*.snakemake.log` or the
  console output; a job found in several logs counts once, from the last)
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

from bench.cost.build_pair import log_jobs


def job_walls(text: str, rule: str = "predict") -> dict[tuple, float]:
    """{sorted wildcard items: seconds} of every finished job of `rule` in one Snakemake log."""
    return {tuple(sorted(j["wildcards"].items())): (j["end"] - j["start"]).total_seconds()
            for j in log_jobs(text).values() if j["rule"] == rule and j["end"] is not None and j["wildcards"]}


def items(parquet: Path) -> int:
    """Distinct ids in the file's first column (each family's inference table leads with its item's id: quiz_id,
    point_id, item_id)."""
    import duckdb

    rel = duckdb.sql(f"SELECT * FROM read_parquet('{parquet.as_posix()}')")
    return duckdb.sql(f'SELECT count(DISTINCT "{rel.columns[0]}") FROM rel').fetchall()[0][0]


def table(build: Path, logs: list[str], models: list[str], reference: str | None) -> list[dict]:
    walls: dict[tuple, float] = {}
    for text in logs:
        walls.update(job_walls(text))
    rows = []
    for key, seconds in sorted(walls.items()):
        w = dict(key)
        if w.get("model") not in models:
            continue
        files = sorted((build / "data" / "predictions" / w["family"] / w["subset"] / w["model"]).glob("*.parquet"))
        if not files:
            continue
        n = sum(items(f) for f in files)
        rows.append({"family": w["family"], "subset": w["subset"], "model": w["model"], "shard": w.get("shard"),
                     "job_s": seconds, "items": n, "s_per_item": round(seconds / n, 4) if n else None})
    if reference:
        ref = {(r["family"], r["subset"]): r for r in rows if r["model"] == reference}
        for r in rows:
            other = ref.get((r["family"], r["subset"]))
            if other and other["s_per_item"] and r["s_per_item"] is not None:
                r[f"x_{reference}"] = round(r["s_per_item"] / other["s_per_item"], 2)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.cost.per_item", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--build", required=True, help="the build's checkout (its data/predictions)")
    ap.add_argument("--log", action="append", required=True, help="a Snakemake log of the build (repeatable)")
    ap.add_argument("--models", nargs="+", required=True, help="the zoo names to report (their twins too if named)")
    ap.add_argument("--reference", help="the model each row's seconds per item is divided by (x_<reference>)")
    ap.add_argument("--note", default="", help="the build and the machine's load, recorded with the table")
    ap.add_argument("--out", help="the results JSON (atomically written)")
    args = ap.parse_args(argv)
    rows = table(Path(args.build), [Path(f).read_text() for f in args.log], args.models, args.reference)
    if not rows:
        raise SystemExit(f"no finished predict job of {args.models} in the logs given: pass the build's own logs")
    for r in rows:
        ratio = r.get(f"x_{args.reference}")
        print(f"{r['family']:10s} {r['subset']:7s} {r['model']:20s} {r['job_s']:7.0f} s {r['items']:6d} items "
              f"{r['s_per_item']:7.3f} s/item" + (f"  {ratio:.2f}x {args.reference}" if ratio else ""))
    if args.out:
        result = {"bench": "bench.cost.per_item", "models": args.models, "reference": args.reference,
                  "note": args.note, "command": "python -m bench.cost.per_item " + shlex.join(
                      os.path.basename(a) if os.path.isabs(a) else a for a in (argv or sys.argv[1:])),
                  "rows": rows}
        tmp = args.out + ".tmp"
        Path(tmp).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
