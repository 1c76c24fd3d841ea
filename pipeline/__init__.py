"""The benchmark factory: every stage's logic, importable; Snakemake rules stay thin."""

import os as _os

__version__ = "0.1.0"

if _os.environ.get("PIPELINE_COST_LOG"):  # per-job cost records for bench/run_cost.py (pipeline/_cost.py)
    from pipeline import _cost

    _cost.install()
