"""Run every benchmark in bench/ (`python -m bench`), one group of them (`python -m bench speed`), or the ones named
(`python -m bench speed.manifest scale.shards`; a bench's own name alone when it is unique: `manifest`).
One bench with its own arguments: `python -m bench peers --project PATH` (the arguments after the name).

Benches live in folders by purpose (bench/README.md): a module of a folder is a bench (a name starting with `_` is
a helper). A folder with its own `__main__` (peers: every peer comparison on a built project's data) runs that when
named with arguments, or alone; the whole list runs its benches one by one instead."""

import importlib
import pkgutil
import sys
from pathlib import Path

HERE = Path(__file__).parent


def groups() -> list[str]:
    return sorted(p.name for p in HERE.iterdir() if (p / "__init__.py").is_file() and not p.name.startswith("_"))


def benches(group: str | None = None) -> list[str]:
    """Every bench as `group.module`, in name order."""
    return [f"{g}.{m.name}" for g in groups() if group in (None, g)
            for m in sorted(pkgutil.iter_modules([str(HERE / g)]), key=lambda m: m.name)
            if not m.name.startswith("_")]


def resolve(name: str) -> list[str]:
    """What a name on the command line runs: `group.module`, a group (its benches), or a module's unique name."""
    every = benches()
    if name in every:
        return [name]
    if name in groups():
        return benches(name)
    found = [b for b in every if b.split(".", 1)[1] == name]
    if len(found) == 1:
        return found
    raise SystemExit(f"no bench {name!r}" + (f" (it is {' and '.join(found)})" if found else "")
                     + f"; the groups: {', '.join(groups())} (bench/README.md)")


def module_of(name: str) -> str:
    """The module one named bench runs: a group with a `__main__` (peers) runs that, else the bench itself."""
    if (HERE / name / "__main__.py").is_file():
        return f"bench.{name}.__main__"
    found = resolve(name)
    if len(found) != 1:
        raise SystemExit(f"{name} names {len(found)} benches: name one of them with its arguments")
    return f"bench.{found[0]}"


def main(argv: list[str]) -> int:
    own_main = bool(argv) and (HERE / argv[0] / "__main__.py").is_file()
    if argv and not argv[0].startswith("-") and (len(argv) >= 2 and argv[1].startswith("-") or len(argv) == 1 and own_main):
        return importlib.import_module(module_of(argv[0])).main(argv[1:]) or 0
    names = [b for name in argv for b in resolve(name)] if argv else benches()
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
