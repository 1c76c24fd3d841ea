"""`python -m pipeline.fit.index OUT [FILE ...]`: one JSON listing every fit the workflow ran
(family, model, and each fit's summary of its tasks; the other files of the stage, such as the
item records and baselines, by path), written even when no family fits anything, so
`data/fits/` always exists for DVC and a user sees at a glance what was fitted."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pipeline.io import write_json


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.fit.index",
                                 description="Index the fit stage's results: data/fits/<family>/<model>.json "
                                 "summaries gathered into one JSON file.")
    ap.add_argument("out", type=Path, help="the index to write (data/fits/index.json)")
    ap.add_argument("summaries", nargs="*", type=Path,
                    help="data/fits/<family>/<model>.json files (and the stage's other files: listed by path)")
    args = ap.parse_args(argv)
    fits, other = [], []
    for path in sorted(args.summaries):
        if path.suffix == ".json" and not path.stem.startswith("_"):
            fits.append({"family": path.parts[-2], "model": path.stem, "summary": json.loads(path.read_text())})
        else:
            other.append(path.as_posix())
    write_json({"fits": fits, "files": other}, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
