"""reports/metrics/apirec.json: the code points' stats at the top level, the queries' under `queries`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pipeline.io import write_json


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--points", required=True, type=Path)
    ap.add_argument("--queries", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    stats = json.loads(args.points.read_text())
    stats["queries"] = json.loads(args.queries.read_text())
    write_json(stats, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
