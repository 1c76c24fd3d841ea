"""`python -m pipeline <command>`: the user-facing commands."""

import sys

COMMANDS = {"query": "pipeline.query"}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print("usage: python -m pipeline {" + ",".join(COMMANDS) + "} ...\n"
              "  query   read-only SQL over data/warehouse.duckdb (python -m pipeline query --help)", file=sys.stderr)
        return 2
    import importlib

    return importlib.import_module(COMMANDS[argv[0]]).main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
