"""`python -m pipeline.corpus refresh ...`: the corpus's user commands (the fetch stage itself is
`python -m pipeline.corpus.fetch`, run by the workflow)."""

from __future__ import annotations

import sys

USAGE = ("usage: python -m pipeline.corpus refresh --after YYYY-MM-DD --out OVERLAY.yaml [--params params.yaml] ...\n"
         "  refresh  pin every PyPI/npm source to its newest release after a date (docs/contamination.md)")


def main(argv: list[str]) -> int:
    if argv and argv[0] == "refresh":
        from pipeline.corpus import refresh
        return refresh.main(argv[1:])
    print(USAGE, file=sys.stderr if argv[:1] not in (["-h"], ["--help"]) else sys.stdout)
    return 0 if argv[:1] in (["-h"], ["--help"]) else 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
