"""Table 1 of a build's probing fits, the release's probe (`paper`) beside ridge, as a results file (issue 52 item 4).

Build with the overlay that puts the release's probe on every probing model, then gather:

    snakemake fits --cores 2 --configfile params.yaml examples/paper-probe.yaml
    python -m bench.fidelity.paper_probe_table --fits data/fits/probing --out docs/results/paper_probe_table.json \\
        [--cpu-s N --wall-s N --note TEXT]   (the build's measured cost, recorded with the table)

Per model and task: each probe's headline (layer chosen on fold 0, mean error of folds 1-3, 95% t interval, n).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def table(fits: Path) -> list[dict]:
    rows = []
    for f in sorted(fits.glob("*.json")):
        if f.name.startswith("_"):
            continue
        for task, t in sorted(json.loads(f.read_text()).get("tasks", {}).items()):
            for h in t.get("headlines", []):
                rows.append({"model": h["model"], "task": task, "probe": h["probe"], "metric": t.get("metric"),
                             "layer": h.get("layer"), "mean": round(h["mean"], 6), "ci_low": round(h["ci_low"], 6),
                             "ci_high": round(h["ci_high"], 6), "n": h.get("n")})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fits", required=True, help="a build's data/fits/probing folder")
    ap.add_argument("--out", required=True)
    ap.add_argument("--cpu-s", type=float, help="the build's measured CPU seconds (user + sys)")
    ap.add_argument("--wall-s", type=float)
    ap.add_argument("--note", default="")
    args = ap.parse_args(argv)
    rows = table(Path(args.fits))
    if not rows:
        raise SystemExit(f"no fit headlines under {args.fits}: build the fits first (see --help)")
    result = {"bench": "bench.fidelity.paper_probe_table", "cpu_s": args.cpu_s, "wall_s": args.wall_s,
              "note": args.note, "rows": rows}
    tmp = args.out + ".tmp"
    Path(tmp).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, args.out)
    for r in rows:
        print(f"{r['model']:16s} {r['task']:32s} {r['probe']:6s} L{r['layer']} {r['mean']:.3f} "
              f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}] n={r['n']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
