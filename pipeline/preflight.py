"""The check every rule's command runs first, where the job runs (a cluster node, a conda environment): the
interpreter is the one params.yaml `python.require` names. Snakemake checks it once where it plans
(pipeline.config.check_interpreter); a node or an environment can differ. Standard library only: it costs one
interpreter start (~20 ms). The device a GPU job names is checked by the job itself when it loads its model
(pipeline.models.zoo.pick_device), on the node that has it.

    python -m pipeline.preflight --python 3.11.7
"""

from __future__ import annotations

import argparse
import platform
import sys


def check(required: str, running: str | None = None) -> str | None:
    """None when the running interpreter is `required`, else the one-line error."""
    running = running or platform.python_version()
    if running == required:
        return None
    return (f"params.yaml python.require: this job runs on Python {running} ({sys.executable}), but outputs are "
            f"built with Python {required}. On a cluster, the nodes must see the same interpreter as the login "
            f"node: use a .venv on a shared filesystem (`make install`) first on PATH, or `--sdm conda` with "
            f"envs/pipeline.yaml (python={required}); or set python.require to {running} knowingly")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.preflight", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", required=True, help="the exact interpreter version required (params.yaml python.require)")
    args = ap.parse_args(argv)
    error = check(args.python)
    if error:
        print(f"ERROR preflight: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
