"""`python -m pipeline <command>`: the user-facing commands (the workflow's own steps are
`python -m pipeline.<module>`, each with --help; Snakemake runs them)."""

from __future__ import annotations

import importlib
import sys

# name -> (module with main(argv) -> int, one line of help)
COMMANDS = {
    "query": ("pipeline.query", "read-only, bounded SQL over the warehouse (data/warehouse.duckdb)"),
    "export": ("pipeline.export.build", "a built family as a Hugging Face dataset folder (Parquet, card, Croissant)"),
}

USAGE = ("usage: python -m pipeline {" + ",".join(COMMANDS) + "} [--help] ...\n\n"
         "The benchmark factory's commands (run from any folder of the project, with the project's .venv):\n"
         + "".join(f"  {name:<8} {text}\n" for name, (_, text) in COMMANDS.items())
         + "\nBuild everything with `snakemake --cores N` (or `dvc repro`); see README.md.\n"
         "python -m pipeline COMMAND --help says more about a command.")


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0
    if not argv or argv[0] not in COMMANDS:
        if argv:
            print(f"error: no command {argv[0]!r}", file=sys.stderr)
        print(USAGE, file=sys.stderr)
        return 2
    return importlib.import_module(COMMANDS[argv[0]][0]).main(argv[1:])


def run_and_exit(argv: list[str]) -> None:
    """Run a command and end the process with its exit code, skipping interpreter teardown: DuckDB's bindings
    may print a leak report (nanobind) while the interpreter shuts down after an error, which would turn a
    one-line `error:` into dozens of lines on stderr."""
    import os

    code = main(argv)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):  # the reader left (`| head`): nothing more to say
            pass
    os._exit(code)


if __name__ == "__main__":
    run_and_exit(sys.argv[1:])
