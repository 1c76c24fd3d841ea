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

Measured on snakemake 9.27.1, snakemake-executor-plugin-slurm 2.8.0 and yte 1.9.4 (the newest releases when
written). Each part can go when upstream does the same (docs/upstream/README.md: the reports, or their text
where none was found); tests/test_patches.py fails when a version, the wrapped loader's source or the eager
imports change.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
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


# Snakemake reads `--configfile` files before our Snakefile runs, and a YAML syntax error there says only
# "Config file is not valid JSON or YAML" (no file, line or column). When Snakemake's config
# module is imported, its loader is wrapped so that error names the file, line and column, as the Snakefile
# does for params.yaml (pipeline.config.load_yaml).
CONFIG_MODULE = "snakemake.common.configfile"


def _with_lines(load):
    def _load_configfile(configpath_or_obj, filetype="Config"):
        try:
            return load(configpath_or_obj, filetype)
        except Exception as exc:  # Snakemake's WorkflowError, raised while handling the YAMLError
            cause = exc.__context__
            mark = getattr(cause, "problem_mark", None)
            if mark is None or not isinstance(configpath_or_obj, (str, os.PathLike)):
                raise
            problem = getattr(cause, "problem", None) or str(cause).splitlines()[0]
            # the same exception, its message replaced (raised again from Snakemake's frame, whose traceback
            # Snakemake cuts: no line of this file is printed)
            exc.args = (f"{os.fspath(configpath_or_obj)}:{mark.line + 1}:{mark.column + 1}: YAML syntax error: "
                        f"{problem}; fix the file (indent with spaces, close brackets and quotes)",)
            exc.__suppress_context__ = True
            raise

    _load_configfile.__wrapped__ = load
    return _load_configfile


class _PatchAfterExec(importlib.abc.Loader):
    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        module._load_configfile = _with_lines(module._load_configfile)


class ConfigErrorsWithLines(importlib.abc.MetaPathFinder):
    """A meta-path finder: Snakemake's config module, with its YAML errors naming file, line and column."""

    def find_spec(self, name, path=None, target=None):
        if name != CONFIG_MODULE:
            return None
        sys.meta_path.remove(self)  # asked once: the module is then in sys.modules
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _PatchAfterExec(spec.loader)
        return spec


def install() -> bool:
    """Put the finders first on `sys.meta_path` (once); True when they were added."""
    if any(isinstance(f, LazyForSlurmPlugin) for f in sys.meta_path):
        return False
    sys.meta_path.insert(0, LazyForSlurmPlugin())
    if CONFIG_MODULE not in sys.modules:
        sys.meta_path.insert(0, ConfigErrorsWithLines())
    return True


install()
