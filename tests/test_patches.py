"""Every patch of a dependency, pinned to what it was measured on (docs/upstream/README.md lists them, with the
upstream report each waits for and when it can go).

Each test fails when the dependency moves: a new version, or the patched code changed or renamed. Then read
the new code: if upstream made the patch unnecessary (docs/upstream/<name>.md says what that looks like), drop
the patch and its test; if not, re-measure, check the patch still fits, and update the pins here.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import importlib.util
import inspect
import textwrap
from pathlib import Path

import pytest

from tests.conftest import REPO

# package -> the version each patch was measured on (requirements.txt pins the same)
MEASURED = {"snakemake": "9.27.1", "snakemake-executor-plugin-slurm": "2.8.0", "yte": "1.9.4"}


def source_hash(obj) -> str:
    return hashlib.sha256(textwrap.dedent(inspect.getsource(obj)).encode()).hexdigest()[:16]


def module_source(name: str) -> str:
    """A module's source, read without importing it (importing the SLURM plugin's report would import pandas)."""
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin, f"{name} is not installed"
    return Path(spec.origin).read_text()


def top_level_imports(source: str) -> set[str]:
    """Modules a source imports when it is imported: module-level statements, those in try/if blocks included."""
    out: set[str] = set()
    for node in ast.parse(source).body:
        for sub in ast.walk(node) if isinstance(node, (ast.Try, ast.If)) else [node]:
            if isinstance(sub, ast.Import):
                out |= {a.name.split(".")[0] for a in sub.names}
            elif isinstance(sub, ast.ImportFrom) and sub.module and not sub.level:
                out.add(sub.module.split(".")[0])
    return out


@pytest.mark.parametrize("package", sorted(MEASURED))
def test_the_patched_packages_are_the_measured_versions(package):
    assert importlib.metadata.version(package) == MEASURED[package], (
        f"{package} is no longer {MEASURED[package]}, the version its patch was measured on: see "
        "docs/upstream/README.md for what to check, then update MEASURED")
    assert f"{package}=={MEASURED[package]}" in (REPO / "requirements.lock").read_text().splitlines()


def test_the_scheduler_method_coalesce_reevaluations_replaces_is_the_measured_one():
    """pipeline/snakemake_fixes.py (docs/upstream/snakemake-reevaluation-timers.md): Snakemake 9.27.1 starts one
    threading.Timer per scheduler pass while jobs wait under the rate limiter."""
    from snakemake.scheduling.job_scheduler import JobScheduler

    original = inspect.unwrap(JobScheduler._schedule_reevalutation)  # Snakemake's, patched in this process or not
    assert list(inspect.signature(original).parameters) == ["self", "delay"]
    assert source_hash(original) == "045057b7dc8d3f7d", (
        "Snakemake's _schedule_reevalutation changed: if it now keeps at most one timer pending, drop "
        "pipeline/snakemake_fixes.py and its call in rules/common.smk; else check the patch still fits")
    assert "self._schedule_reevalutation(self.job_rate_limiter.timespan)" in inspect.getsource(JobScheduler.schedule)


def test_the_configfile_loader_snakemake_startup_wraps_is_the_measured_one():
    """snakemake_startup.py's ConfigErrorsWithLines (docs/upstream/snakemake-configfile-yaml-position.md): a YAML
    syntax error in a --configfile names no file, line or column in Snakemake 9.27.1."""
    from snakemake.common import configfile

    loader = inspect.unwrap(configfile._load_configfile)  # Snakemake's, wrapped in this process or not
    assert str(inspect.signature(loader)) == "(configpath_or_obj, filetype='Config')"
    assert source_hash(loader) == "1beae3441af7e98d", (
        "Snakemake's _load_configfile changed: if its YAML error now names the file, line and column, drop "
        "ConfigErrorsWithLines from snakemake_startup.py")


def test_the_imports_snakemake_startup_defers_are_still_made_at_import_time():
    """snakemake_startup.py's LazyForSlurmPlugin (docs/upstream/slurm-plugin-pandas-import.md,
    docs/upstream/yte-numpy-import.md): both import what they use only later, at their top."""
    report = module_source("snakemake_executor_plugin_slurm.efficiency_report")
    assert {"pandas", "numpy"} <= top_level_imports(report), (
        "the SLURM plugin's efficiency report no longer imports pandas/numpy at its top: drop "
        "snakemake_executor_plugin_slurm from snakemake_startup.IMPORTERS")
    assert "efficiency_report" in module_source("snakemake_executor_plugin_slurm")
    assert "numpy" in top_level_imports(module_source("yte.value_handler")), (
        "yte no longer imports numpy at its top: drop yte from snakemake_startup.IMPORTERS")


def test_the_snakemake_internals_dvctrace_hooks_are_the_measured_ones():
    """pipeline/dvctrace.py replaces Workflow.rule, the rule directives and four Rule.expand_* methods in its own
    process (a dry run that records which params each rule reads); a directive it does not find is skipped
    silently there, so each is checked here."""
    import snakemake.api  # noqa: F401  (imports workflow and rules in the order they need)
    from snakemake import rules, workflow

    from pipeline.dvctrace import DIRECTIVES

    missing = [d for d in DIRECTIVES if not hasattr(workflow.Workflow, d)]
    assert not missing, f"Snakemake's Workflow lacks the directives {missing}: pipeline/dvctrace.py would miss them"
    assert str(inspect.signature(workflow.Workflow.rule)) == "(self, name=None, lineno=None, snakefile=None, checkpoint=False)"
    for method, first in (("expand_input", "wildcards"), ("expand_params", "wildcards"),
                          ("expand_resources", "wildcards"), ("expand_output", "wildcards")):
        params = list(inspect.signature(getattr(rules.Rule, method)).parameters)
        assert params[:2] == ["self", first], (method, params)
