"""Run every benchmark in bench/ (`python -m bench`), or the ones named (`python -m bench manifest_speed`);
one bench with its own arguments: `python -m bench peers --project PATH` (the arguments after the name).
`peers` runs the peer benches again on a built project (`bench/peers.py`), so the whole list leaves it out."""

import importlib
import pkgutil
import sys
from pathlib import Path

NOT_IN_ALL = {"peers"}  # it runs the peer_* benches (already in the list) on a built project's data


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and not argv[0].startswith("-") and argv[1].startswith("-"):
        return importlib.import_module(f"bench.{argv[0]}").main(argv[1:]) or 0
    names = argv or sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)])
                           if not m.name.startswith("_") and m.name not in NOT_IN_ALL)
    stopped = []
    for name in names:
        print(f"== bench.{name}", flush=True)
        try:
            importlib.import_module(f"bench.{name}").main([])
        except SystemExit as stop:  # a bench that cannot run here (no build, no peers venv) says why; the rest run
            if stop.code not in (None, 0):
                print(f"stopped: {str(stop.code).splitlines()[0]}", flush=True)
                stopped.append(name)
    if stopped:
        print(f"{len(stopped)} of {len(names)} benches stopped: {', '.join(stopped)}")
    return 1 if stopped else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
