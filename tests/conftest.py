"""Shared fixtures: run the real Snakemake workflow on corpora that tests build locally."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def snakemake(workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run this repository's Snakefile with `workdir` as working directory and its params.yaml."""
    cmd = [str(BIN / "snakemake"), "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
           "--configfile", str(workdir / "params.yaml"), "--cores", "2", *args]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if check and res.returncode:
        logs = "\n".join(f"--- {p}\n{p.read_text()[-3000:]}" for p in sorted((workdir / "logs").rglob("*.log")))
        raise AssertionError(f"snakemake failed ({res.returncode}):\n{res.stdout[-4000:]}\n{res.stderr[-6000:]}\n{logs}")
    return res


def default_params() -> dict:
    return yaml.safe_load((REPO / "params.yaml").read_text())


def write_params(workdir: Path, sources: list[dict], **overrides) -> dict:
    """A params.yaml for `workdir`: the defaults with these sources and small limits."""
    params = default_params()
    params["corpus"]["sources"] = sources
    names = {s["name"] for s in sources}  # apirec.domains may only name these (pipeline.config.check_references)
    params["apirec"]["domains"] = {k: v for k, v in params["apirec"]["domains"].items() if k in names}
    params["corpus"]["limits"] = {"max_file_bytes": 2000, "max_total_bytes": 10_000_000, "max_members": 1000}
    for ds in params.get("datasets") or []:  # planning checks them (pipeline.config.check_inputs): found from any
        if ds.get("kind") == "local" and not Path(ds["path"]).is_absolute() and (REPO / ds["path"]).exists():
            ds["path"] = str((REPO / ds["path"]).resolve())  # workdir, also a copied project's (test_dvc)
    for dotted, value in overrides.items():
        node = params
        *parents, leaf = dotted.split("__")
        for key in parents:
            node = node[key]
        node[leaf] = value
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return params


def git(*args: str, cwd: Path, env: dict | None = None) -> str:
    base = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t", "GIT_AUTHOR_DATE": "2020-01-01T00:00:00Z",
            "GIT_COMMITTER_DATE": "2020-01-01T00:00:00Z", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=cwd, env={**base, **(env or {})}, check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo_root() -> Path:
    return REPO


TEST_CONFIG = REPO / ".test"  # the checked-in tiny configuration CI lints and runs (see its params.yaml)


def make_project(root: Path, shards: int = 2) -> Path:
    """A project folder running .test/params.yaml on .test/corpus and .test/npm (copied, so runs never
    share outputs)."""
    import shutil

    root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(TEST_CONFIG / "corpus", root / "corpus", dirs_exist_ok=True)
    shutil.copytree(TEST_CONFIG / "npm", root / "npm", dirs_exist_ok=True)  # the npm registry folder
    params = yaml.safe_load((TEST_CONFIG / "params.yaml").read_text())
    params["inference"]["shards"] = shards
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return root


@pytest.fixture(scope="session")
def e2e_project(tmp_path_factory) -> Path:
    """The whole DAG on the .test configuration (tiny trained models, every family), built once per session."""
    root = make_project(tmp_path_factory.mktemp("e2e"))
    snakemake(root)
    return root


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the xdist_group marks to group
def pytest_collection_modifyitems(config, items):
    """Under `pytest -n N --dist loadgroup` (make test), a module's tests stay on one worker, so each
    module-scoped fixture is built once; every test on the session's end-to-end build joins one group,
    so that build is made once too."""
    for item in items:
        group = "e2e" if "e2e_project" in getattr(item, "fixturenames", ()) else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(autouse=True)
def _no_workspace_outputs(tmp_path_factory, monkeypatch):
    """Tests never read the project's own built outputs (data/, reports/): a `make run` before `make test`
    must not change a result. pipeline.resources sizes jobs from built models' cards under data/models;
    every test sees an empty folder there instead (a test that wants a card passes its own folder).
    tests/test_workspace_independence.py runs the suspicious tests beside a fake built workspace."""
    from pipeline import resources

    monkeypatch.setattr(resources, "MODELS_DIR", str(tmp_path_factory.getbasetemp() / "no-built-models"))
