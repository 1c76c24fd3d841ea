"""Every Snakemake start imports pandas and numpy that it never uses: this defers them to their first use.

Snakemake imports every installed executor plugin when it starts, to offer their options on its command
line. snakemake-executor-plugin-slurm 2.8.0 imports pandas at the top of its efficiency report
(`efficiency_report.py: import pandas as pd`), which only `--slurm-efficiency-report` uses, at the end of a
cluster run. That import is ~0.4 of the ~1.3 CPU-s a Snakemake start costs (docs/cluster.md): paid by
`snakemake` here, by every dry run, and on a cluster twice per job (the sbatch script's Snakemake and the
`srun` one that runs the job). Snakemake's YAML template engine, yte, imports numpy at its top too, for
isinstance checks on the values of `.yte.yaml` templates (~0.15 CPU-s).

`make install` names this module in the venv's `benchmark_factory.pth`, so Python imports it at start-up
(the mechanism setuptools' `distutils-precedence.pth` uses). It adds one finder: when pandas or numpy is
imported *by the SLURM plugin or yte* and nobody has imported it yet, it is loaded lazily
(`importlib.util.LazyLoader`): the module object exists at once and runs its code on the first attribute
access (the report's first `pd.` call, yte's first isinstance check). Any other import of them (a pipeline
job, a test, our Snakefile) is the ordinary one; so is every process where they were imported before.
Without the .pth (a conda environment from envs/pipeline.yaml) nothing changes but the cost.
tests/test_cluster.py pins both.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

# who imports what lazily: the SLURM plugin pandas and numpy (its efficiency report), yte (Snakemake's YAML
# template engine, imported at every start) numpy (isinstance checks on values of `.yte.yaml` templates)
IMPORTERS = ("snakemake_executor_plugin_slurm", "yte")
LAZY = ("pandas", "numpy")


def _imported_by_plugin() -> bool:
    """Whether the innermost frame outside importlib belongs to one of IMPORTERS' modules."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if not name.startswith(("importlib", "_frozen_importlib", __name__)):
            return name.split(".", 1)[0] in IMPORTERS
        frame = frame.f_back
    return False


class LazyForSlurmPlugin(importlib.abc.MetaPathFinder):
    """A meta-path finder: pandas or numpy, when one of IMPORTERS is the first to import it, as a lazy module."""

    def find_spec(self, name, path=None, target=None):
        if name not in LAZY or not _imported_by_plugin():  # a finder is asked only for what sys.modules lacks
            return None
        sys.meta_path.remove(self)  # find the real spec with the other finders (and not recurse)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        spec.loader = importlib.util.LazyLoader(spec.loader)
        return spec


def install() -> bool:
    """Put the finder first on `sys.meta_path` (once); True when it was added."""
    if any(isinstance(f, LazyForSlurmPlugin) for f in sys.meta_path):
        return False
    sys.meta_path.insert(0, LazyForSlurmPlugin())
    return True


install()
