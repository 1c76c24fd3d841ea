"""`python -m pipeline.corpus.gaps --source werkzeug`: what a gap in a source's history does to first-seen.

Reads the source's pins from params.yaml (its pin and its `history`, every release between pinned), downloads each
sdist into the download cache checked against its pinned hash (pipeline.corpus.refresh.download; read as data, never
extracted to disk or run), and marks the pin's functions and APIs with their first release twice: with the oldest
history release alone (a history with a gap, as werkzeug's was: 3.0.6 -> 3.1.3) and with the whole history. Writes
`docs/results/<source>_first_seen.json` (the command, the configuration, the commit, the numbers): per history, the
functions by first release and how many functions and APIs are dated after `--cutoff`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import sys
import tarfile
import urllib.parse
from pathlib import Path

import yaml

from pipeline.contamination.firstseen import Release, first_seen, version_of
from pipeline.corpus.refresh import PYPI_JSON, _read, download
from pipeline.io import code_commit, write_json


def _release(name: str, pin: dict, index: dict, cache: Path) -> Release:
    version = version_of(pin["package"])
    url = next(f["url"] for f in index["releases"][version] if f["packagetype"] == "sdist")
    path = download(urllib.parse.urljoin(f"{PYPI_JSON}/{name}/json", url), cache, "sha256", pin["sha256"].lower(),
                    pin["package"])
    files = {}
    with tarfile.open(fileobj=io.BytesIO(path.read_bytes())) as tar:
        for member in tar.getmembers():
            rel = member.name.split("/", 1)[-1]
            if member.isfile() and rel.endswith(".py") and rel.startswith("src/"):
                files[rel] = tar.extractfile(member).read()
    return Release(version, dt.date.fromisoformat(pin["released"]), files)


def sentence(results: dict) -> str:
    """What docs/contamination.md quotes of the file (tests/test_contamination.py checks it is there)."""
    gap, whole = results["numbers"]["oldest history release only"], results["numbers"]["the whole history"]
    cfg = results["configuration"]
    return (f"Of {cfg['pin']}'s {whole['functions']:,} library functions, {gap['functions_after_cutoff']:,} were "
            f"dated after {cfg['cutoff']} with {gap['history'][0]} alone as history and "
            f"{whole['functions_after_cutoff']:,} with every release between; its APIs dated after it: "
            f"{gap['apis_after_cutoff']:,} and {whole['apis_after_cutoff']:,} of {whole['apis']:,}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.corpus.gaps", description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", default="werkzeug", help="a pypi source of params.yaml with history")
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--cutoff", type=dt.date.fromisoformat, default=dt.date(2024, 11, 1))
    ap.add_argument("--cache", type=Path, default=Path("data/cache/downloads"))
    ap.add_argument("--out", type=Path, default=None, help="default docs/results/<source>_first_seen.json")
    args = ap.parse_args(argv)
    spec = next(s for s in yaml.safe_load(args.params.read_text())["corpus"]["sources"] if s["name"] == args.source)
    name = spec["package"].partition("==")[0]
    index = json.loads(_read(f"{PYPI_JSON}/{urllib.parse.quote(name)}/json"))
    history = [_release(name, h, index, args.cache) for h in spec["history"]]
    current = _release(name, spec, index, args.cache)
    ids = {p: p for p in current.files}
    numbers = {}
    for label, hist in (("oldest history release only", history[:1]), ("the whole history", history)):
        rows, apis, summary = first_seen(args.source, hist, current, ids)
        numbers[label] = {"history": [r.version for r in hist], "functions": len(rows),
                          "functions_by_first_version": summary["functions_by_first_version"],
                          "functions_after_cutoff": sum(r["first_released"] > args.cutoff for r in rows),
                          "apis": len(apis), "apis_after_cutoff": sum(a["first_released"] > args.cutoff for a in apis)}
    out = args.out or Path(f"docs/results/{args.source}_first_seen.json")
    write_json({"command": f"python -m pipeline.corpus.gaps --source {args.source} --cutoff {args.cutoff}",
                "configuration": {"params": args.params.as_posix(), "source": args.source, "pin": spec["package"],
                                  "cutoff": args.cutoff.isoformat(), "files": "the sdist's src/*.py"},
                "commit": code_commit(), "numbers": numbers}, out)
    for label, n in numbers.items():
        print(f"{label}: {n['functions']} functions {n['functions_by_first_version']}; after {args.cutoff}: "
              f"{n['functions_after_cutoff']} functions, {n['apis_after_cutoff']} of {n['apis']} APIs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
