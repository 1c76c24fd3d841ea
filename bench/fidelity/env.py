"""The fidelity environments, made by one command each (`make fidelity-env`, part of `make install`):

- `.fidelity/ts019-venv`: the probing release's parser runtime, py-tree-sitter 0.19.0 built from its sdist
  (pipeline/families/probing/runtime019.py; the `*_release_parser` tasks and bench/fidelity/probing_release_agreement).

Usage: python -m bench.fidelity.env [--check]
"""

from __future__ import annotations

import argparse
import sys

from pipeline.families.probing import runtime019


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="only say whether the environments are usable (exit 1 if not)")
    args = ap.parse_args(argv)
    if args.check:
        reason = runtime019.check()
        print(reason or f"{runtime019.env_python()}: tree_sitter {runtime019.VERSION}")
        return 1 if reason else 0
    print(runtime019.make_env())
    return 0


if __name__ == "__main__":
    sys.exit(main())
