"""Run every benchmark in bench/ (`python -m bench`), or the ones named (`python -m bench manifest_speed`)."""

import importlib
import pkgutil
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    names = argv or sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if not m.name.startswith("_"))
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
