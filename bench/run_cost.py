"""`python -m bench.run_cost`, as written in earlier measurement logs and scripts: the bench is
bench/cost/run_cost.py (`python -m bench.cost.run_cost`), this only runs it."""

import sys

from bench.cost.run_cost import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
