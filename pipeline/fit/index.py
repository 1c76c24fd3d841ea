"""`python -m pipeline.fit.index OUT [FIT.json ...]`: one JSON listing every fit the workflow ran
(family, task, model, and each fit's summary), written even when no family fits anything, so
`data/fits/` always exists for DVC and a user sees at a glance what was fitted."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pipeline.io import write_json


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.fit.index",
                                 description="Index the fit stage's results: data/fits/<family>/<task>/<model>.json "
                                 "summaries gathered into one JSON file.")
    ap.add_argument("out", type=Path, help="the index to write (data/fits/index.json)")
    ap.add_argument("summaries", nargs="*", type=Path, help="data/fits/<family>/<task>/<model>.json files")
    args = ap.parse_args(argv)
    fits = []
    for path in sorted(args.summaries):
        family, task, model = path.parts[-3], path.parts[-2], path.stem
        fits.append({"family": family, "task": task, "model": model, "summary": json.loads(path.read_text())})
    write_json({"fits": fits}, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
