"""The workflow as users meet it: lint, dry run, config validation, pinned environments, --help."""

from __future__ import annotations

import platform
import re
import subprocess
import sys

import pytest
import yaml

from tests.conftest import BIN, REPO, default_params, snakemake, write_params


@pytest.mark.parametrize("config", [[], ["--directory", ".test", "--configfile", ".test/params.yaml"]],
                         ids=["default", "test-config"])
def test_snakemake_lint_is_clean(config):
    res = subprocess.run([str(BIN / "snakemake"), "--lint", *config], cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 0 and "Congratulations" in res.stdout + res.stderr, res.stdout + res.stderr


def test_dry_run_on_fresh_checkout_lists_expected_jobs(tmp_path):
    work = tmp_path / "fresh"
    write_params(work, default_params()["corpus"]["sources"])
    res = snakemake(work, "-n")
    n = len(default_params()["corpus"]["sources"])
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", res.stdout, flags=re.M))
    expected = {"fetch_source": n, "scan_source": n, "manifest": 1, "all": 1}
    assert {k: int(counts.get(k, 0)) for k in expected} == expected, res.stdout


@pytest.mark.parametrize(
    "edit,needle",
    [
        (lambda p: p["corpus"]["limits"].update(max_members=0), "max_members"),
        (lambda p: p["corpus"]["sources"][2].update(sha256="nothex"), "sha256"),
        (lambda p: p["corpus"]["sources"][2].pop("package"), "package"),
        (lambda p: p["manifest"].update(languages=["cobol"]), "cobol"),
        (lambda p: p["manifest"].update(colour="red"), "colour"),
        (lambda p: p.update(colour="red"), "colour"),  # unknown top-level keys too
        (lambda p: p["inference"].update(models=["nope"]), "inference.models: 'nope' not in models.zoo"),
        (lambda p: p["codesyntax"]["inference"].update(variant="wavy"), "codesyntax.inference.variant"),
        (lambda p: p["apiquiz"].pop("inference"), "apiquiz"),
        (lambda p: p.update(families=["apiquiz", "nope"]), "no family 'nope'"),
        # issue 15 item 12: each of these failed late (or silently) before
        (lambda p: p["corpus"]["sources"][2].update(repository="dir:x"), "corpus.sources.2.repository: 'dir:x' is not allowed"),
        (lambda p: p["corpus"]["sources"][2].update(repository="dir:0"), "corpus.sources.2.repository: 'dir:0' is not allowed"),
        (lambda p: p["manifest"].update(split={"train": 0.8, "valid": 0.5, "test": 0.2}),
         "manifest.split: the fractions sum to 1.5"),
        (lambda p: p["training"]["model"].update(heads=3), "training.model.heads: 3 does not divide hidden_size 128"),
        (lambda p: (p["models"].update(device="cpu"), p["inference"].update(dtype="float16")),
         "inference.dtype: float16 on models.device 'cpu' is refused"),
        (lambda p: (p["models"].update(device="cpu"), p["models"]["zoo"][2].update(dtype="float16")),
         "models.zoo[code-clm].dtype: float16 on models.device 'cpu' is refused"),
        (lambda p: p["models"]["zoo"][1].update(max_length=1024),
         "models.zoo[code-mlm].max_length: 1024 is longer than the blocks"),
        (lambda p: p["models"]["zoo"][0].update(source="package:no-such-dist"),
         "models.zoo[minilm].source: the package 'no-such-dist' is not installed"),
        (lambda p: p.update(corpus=[1, 2]), "params.yaml corpus: [1, 2] is not of type 'object'"),
        (lambda p: p["python"].update(require="3.11"), "python.require"),
        # issue 13 item 15: another interpreter than the pinned one is refused, saying how to override
        (lambda p: p["python"].update(require="3.12.1"),
         f'this is Python {platform.python_version()}, but outputs are built with Python 3.12.1'),
        (lambda p: p.pop("python"), "'python' is a required property"),
    ],
)
def test_bad_params_fail_naming_the_key(tmp_path, edit, needle):
    params = default_params()
    edit(params)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    res = snakemake(tmp_path, "-n", check=False)
    assert res.returncode != 0
    assert needle in res.stdout + res.stderr


def test_missing_gpu_plans_but_refuses_to_run(tmp_path):
    """A GPU profile plans on a machine without one (`-n`); a real run stops before its first job."""
    import torch

    params = default_params()
    params["models"].update(device=f"cuda:{torch.cuda.device_count() + 98}")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    planned = snakemake(tmp_path, "-n", check=False)
    assert planned.returncode == 0 and "fetch_source" in planned.stdout, planned.stdout + planned.stderr
    res = snakemake(tmp_path, check=False)
    assert res.returncode != 0
    assert f"models.device: 'cuda:{torch.cuda.device_count() + 98}' but this machine has" in res.stdout + res.stderr
    assert not (tmp_path / "data").exists() and not (tmp_path / "logs").exists(), "no job ran"


def test_yaml_syntax_error_names_line_and_column(tmp_path):
    text = (REPO / "params.yaml").read_text().replace("seed: 20261122", "seed: [20261122", 1)
    (tmp_path / "params.yaml").write_text(text)
    # as users run it: `snakemake` in the project folder, params.yaml found by the Snakefile (a file passed with
    # --configfile is parsed by Snakemake itself, before the Snakefile runs)
    res = subprocess.run([str(BIN / "snakemake"), "--snakefile", str(REPO / "Snakefile"), "-n"], cwd=tmp_path,
                         capture_output=True, text=True)
    seed_line = next(i for i, l in enumerate(text.splitlines(), 1) if l.startswith("seed: ["))
    assert res.returncode != 0
    found = re.search(r"params.yaml:(\d+):\d+: YAML syntax error: expected ',' or ']'", res.stdout + res.stderr)
    assert found, res.stdout + res.stderr
    # YAML reports where the open bracket's sequence breaks: the next key after the seed line
    next_key = next(i for i, l in enumerate(text.splitlines(), 1) if i > seed_line and re.match(r"^\w", l))
    assert int(found.group(1)) == next_key


def test_duplicate_source_names_are_refused(tmp_path):
    source = default_params()["corpus"]["sources"][2]
    write_params(tmp_path, [source, source])
    res = snakemake(tmp_path, "-n", check=False)
    assert res.returncode != 0 and "same name" in res.stdout + res.stderr


def test_conda_env_is_the_lock_on_the_pinned_interpreter():
    """envs/pipeline.yaml (--sdm conda on a cluster) = python.require exactly + every pin of the lock (issue 26)."""
    pins = [l.strip() for l in (REPO / "requirements.txt").read_text().splitlines() if l.strip() and l[0] != "#"]
    assert all("==" in p for p in pins), "every direct dependency is pinned"
    lock = [l.strip() for l in (REPO / "requirements.lock").read_text().splitlines() if "==" in l and l[0] != "#"]
    assert {p.split("==")[0].lower() for p in pins} <= {p.split("==")[0].lower() for p in lock}
    env = yaml.safe_load((REPO / "envs/pipeline.yaml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert pip == lock
    require = yaml.safe_load((REPO / "params.yaml").read_text())["python"]["require"]
    assert f"python={require}" in env["dependencies"]


@pytest.mark.parametrize("module", ["pipeline.corpus.fetch", "pipeline.manifest.scan", "pipeline.manifest.build",
                                    "pipeline.manifest.evaluation"])
def test_cli_help_explains(module):
    res = subprocess.run([sys.executable, "-m", module, "--help"], cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 0 and "usage:" in res.stdout and len(res.stdout) > 300





def test_the_pinned_interpreter_is_the_one_running_and_the_message_says_how_to_override():
    from pipeline.config import ParamsError, check_interpreter
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    check_interpreter(params["python"]["require"])  # the tests run on the pinned version
    assert yaml.safe_load((REPO / ".test/params.yaml").read_text())["python"] == params["python"]
    with pytest.raises(ParamsError) as info:
        check_interpreter("3.11.7", running="3.12.1")
    assert 'set python.require: "3.12.1"' in str(info.value) and "make install" in str(info.value)


def test_makefile_finds_the_pinned_interpreter_or_says_which_it_needs(tmp_path):
    """`make python` prints the interpreter it would build .venv with; with none of the pinned
    version on PATH it fails naming the version and how to get it."""
    res = subprocess.run(["make", "-s", "python"], cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    found = res.stdout.strip().splitlines()[-1]
    pinned = yaml.safe_load((REPO / "params.yaml").read_text())["python"]["require"]
    assert subprocess.run([found, "-c", "import platform; print(platform.python_version())"], capture_output=True,
                          text=True).stdout.strip() == pinned
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python3").write_text("#!/bin/sh\necho 3.0.0\n")
    (fake / "python3").chmod(0o755)
    res = subprocess.run(["make", "-s", "python", "PYTHON_CANDIDATES=" + str(fake / "python3")], cwd=REPO,
                         capture_output=True, text=True)
    assert res.returncode != 0 and f"no Python {pinned}" in res.stderr and "pyenv install" in res.stderr
