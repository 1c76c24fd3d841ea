"""Cluster readiness (issue 26): every job's scheduler request (pipeline/resources.py), the interpreter
check in every rule's command (pipeline/preflight.py), the SLURM profile's plan for the GPU overlay.
The real one-node SLURM run is tests/test_slurm.py (slow)."""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from snakemake.utils import update_config

from pipeline import preflight, resources
from tests.conftest import BIN, REPO


def params(*overlays) -> dict:
    config = yaml.safe_load((REPO / "params.yaml").read_text())
    for o in overlays:
        update_config(config, yaml.safe_load((REPO / o).read_text()))
    return config


def with_device(config, device):
    config = copy.deepcopy(config)
    config["models"]["device"] = device
    return config


@pytest.mark.parametrize("device,local,expected", [("cuda", False, 1), ("cuda:1", True, 1), ("cpu", True, 0),
                                                   ("mps", True, 0), ("auto", False, 0)])
def test_gpu_only_where_the_device_is_a_gpu(device, local, expected):
    assert resources.gpus(with_device(params(), device), local) == expected


def test_auto_is_a_gpu_only_on_a_local_machine_that_has_one(monkeypatch):
    config = with_device(params(), "auto")
    monkeypatch.setattr(resources, "gpu_visible_here", lambda: True)
    assert resources.gpus(config, local=True) == 1 and resources.gpus(config, local=False) == 0
    monkeypatch.setattr(resources, "gpu_visible_here", lambda: False)
    assert resources.gpus(config, local=True) == 0


def test_memory_has_the_measured_floor_and_grows_with_what_drives_it():
    config = with_device(params(), "cpu")
    assert resources.stage_mem_mb(1) >= resources.PYTHON_MB and resources.stage_mem_mb(4) > resources.stage_mem_mb(1)
    small = resources.predict_mem_mb(config, "code-mlm", local=True)
    assert small >= resources.TORCH_MB
    bigger = copy.deepcopy(config)
    bigger["training"]["model"].update(hidden_size=1024, layers=24, intermediate_size=4096)
    bigger["training"]["tokenizer"]["vocab_size"] = 50000
    assert resources.predict_mem_mb(bigger, "code-mlm", local=True) > 2 * small
    assert resources.train_mem_mb(bigger, "code-mlm", local=True) > resources.predict_mem_mb(bigger, "code-mlm", True)
    # a twin is sized as its trained model; a built model's card wins over the estimate
    assert resources.model_shape(config, "code-mlm-random") == resources.model_shape(config, "code-mlm")


def test_a_card_gives_the_size_once_the_model_is_built(tmp_path):
    config = params()
    (tmp_path / "minilm").mkdir()
    (tmp_path / "minilm" / "card.json").write_text('{"parameters": 22713216, "hidden_size": 384, "layers": 6,'
                                                   ' "vocab_size": 30522}')
    assert resources.model_shape(config, "minilm", str(tmp_path))["parameters"] == 22713216
    assert resources.model_shape(config, "minilm", str(tmp_path / "none"))["parameters"] == resources.FALLBACK_PARAMETERS


def test_runtime_scales_with_the_work_and_stays_within_floor_and_cap(tmp_path):
    config = with_device(params(), "cpu")
    assert resources.train_runtime(config, "code-mlm", True) >= resources.RUNTIME_FLOOR
    longer = copy.deepcopy(config)
    longer["training"]["model"]["steps"] *= 1000
    assert resources.train_runtime(longer, "code-mlm", True) > resources.train_runtime(config, "code-mlm", True)
    assert resources.train_runtime(with_device(longer, "cuda"), "code-mlm", False) < \
        resources.train_runtime(longer, "code-mlm", True)
    longer["training"]["model"]["steps"] *= 10**6
    assert resources.train_runtime(longer, "code-mlm", True) == resources.RUNTIME_CAP
    record = tmp_path / "src.json"
    record.write_text('{"files": 2000000}')
    assert resources.stage_runtime([record], workers=1) > resources.stage_runtime([record], workers=8) > 10


def test_preflight_refuses_another_interpreter_and_says_what_to_do():
    assert preflight.check("3.11.7", "3.11.7") is None
    message = preflight.check("3.11.7", "3.12.1")
    assert "3.12.1" in message and "python.require" in message and "envs/pipeline.yaml" in message
    res = subprocess.run([sys.executable, "-m", "pipeline.preflight", "--python", "0.0.1"], cwd=REPO,
                         capture_output=True, text=True)
    assert res.returncode == 1 and "ERROR preflight" in res.stderr


PREFIX_PROBE = """
import sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings
from snakemake.shell import shell
with SnakemakeApi(OutputSettings(quiet=True)) as api:
    api.workflow(resource_settings=ResourceSettings(cores=1), config_settings=ConfigSettings(),
                 snakefile=Path(sys.argv[1]), workdir=Path(sys.argv[2])).dag()
    print(shell._process_prefix)
"""


def _test_inputs(root):
    """The local inputs .test/params.yaml names (planning checks they exist: pipeline.config.check_inputs)."""
    for name in ("corpus", "npm"):
        (root / name).symlink_to(REPO / ".test" / name)


def test_every_rule_command_starts_with_the_interpreter_check(tmp_path):
    """The workflow sets Snakemake's shell prefix (what every shell command runs first, where it runs) to
    the preflight; `-p` does not print it, so the parsed workflow is asked. Strict mode is kept."""
    shutil.copy(REPO / ".test" / "params.yaml", tmp_path / "params.yaml")
    _test_inputs(tmp_path)
    res = subprocess.run([sys.executable, "-c", PREFIX_PROBE, str(REPO / "Snakefile"), str(tmp_path)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    prefix = res.stdout.strip().splitlines()[-1]
    assert prefix == "set -euo pipefail; python -m pipeline.preflight --python 3.11.7;"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    assert subprocess.run(["bash", "-c", f"{prefix} true"], env=env).returncode == 0
    bad = subprocess.run(["bash", "-c", prefix.replace("3.11.7", "3.9.0") + " echo ran"], env=env,
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "ran" not in bad.stdout and "ERROR preflight" in bad.stderr


def _plan(tmp_path, *extra, env_extra=None):
    shutil.copy(REPO / "params.yaml", tmp_path / "params.yaml")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": "",
           **(env_extra or {})}
    return subprocess.run([str(BIN / "snakemake"), "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path),
                           *extra, "-n"], capture_output=True, text=True, env=env, timeout=600)


def requests(stdout: str) -> dict[str, set[int]]:
    """rule -> the gpu values its planned jobs request."""
    out, rule = {}, None
    for line in stdout.splitlines():
        if m := re.match(r"\s*(?:local)?rule (\w+):", line):
            rule = m.group(1)
        elif "resources:" in line and rule:
            gpu = re.search(r"\bgpu=(\d+)", line)
            out.setdefault(rule, set()).add(int(gpu.group(1)) if gpu else 0)
    return out


def _slurm_client_stubs(folder) -> dict:
    """The SLURM client commands the plugin looks for when it starts (a dry run submits nothing), as stubs on
    PATH where this machine has none; {} where it has them (then they are asked, as on a login node)."""
    if shutil.which("sinfo"):
        return {}
    folder.mkdir()
    for name in ("sinfo", "squeue", "sacct", "scontrol", "sbatch", "scancel"):
        (folder / name).write_text("#!/bin/sh\nexit 0\n")
        (folder / name).chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}


def test_slurm_profile_plans_gpus_only_for_gpu_jobs(tmp_path):
    res = _plan(tmp_path, "--configfile", str(REPO / "params.gpu.yaml"), "--profile", str(REPO / "profiles/slurm"),
                "--slurm-no-account", env_extra=_slurm_client_stubs(tmp_path / "bin"))
    assert res.returncode == 0, res.stderr[-3000:]
    planned = requests(res.stdout)
    assert {r for r, g in planned.items() if 1 in g} == {"train_model", "evaluate_model", "predict"}
    assert all(g == {1} for r, g in planned.items() if r in ("train_model", "evaluate_model", "predict"))
    assert "mem_mb=" in res.stdout and "runtime=" in res.stdout
    # the default params through the profile too: its groups hold every path that leaves them and comes back
    res = _plan(tmp_path, "--profile", str(REPO / "profiles/slurm"), "--slurm-no-account",
                env_extra=_slurm_client_stubs(tmp_path / "bin2"))
    assert res.returncode == 0, res.stderr[-3000:]


def test_local_cpu_plan_requests_no_gpu(tmp_path):
    res = _plan(tmp_path, "--cores", "2")
    assert res.returncode == 0, res.stderr[-3000:]
    assert all(g == {0} for g in requests(res.stdout).values())


# ---- corpus stages in shards (issue 26 item 5; identifiers so far) --------------------------------------

from tests.test_identifiers import small_manifest  # noqa: E402,F401  (a fixture)


def test_identifier_shards_merge_to_the_one_job_bytes(small_manifest, tmp_path):  # noqa: F811
    from pipeline import schemas
    from pipeline.core.shards import in_shard
    from pipeline.identifiers.build import main
    from pipeline.io import write_parquet

    manifest = tmp_path / "manifest.parquet"
    write_parquet(small_manifest, manifest, schemas.MANIFEST)
    common = ["--manifest", str(manifest), "--languages", '["javascript", "python", "java"]', "--workers", "1",
              "--max-error-fraction", "0.1", "--max-file-bytes", "400"]

    def outputs(stem):
        return ["--sequences", f"{stem}.sequences.parquet", "--rejects", f"{stem}.rejects.parquet",
                "--metrics", f"{stem}.json"]

    assert main(common + outputs(tmp_path / "one")) == 0
    shards = 4
    owners = [[k for k in range(shards) if in_shard(r["source"], r["path"], k, shards)]
              for r in small_manifest.select(["source", "path"]).to_pylist()]
    assert all(len(o) == 1 for o in owners) and len({o[0] for o in owners}) > 1
    for k in range(shards):
        assert main(common + ["--shard", str(k), "--shards", str(shards)] + outputs(tmp_path / f"part{k}")) == 0
    parts = [str(tmp_path / f"part{k}.json") for k in range(shards)]
    assert main(common + ["--merge", *parts] + outputs(tmp_path / "merged")) == 0
    for suffix in (".sequences.parquet", ".rejects.parquet", ".json"):
        assert (tmp_path / f"one{suffix}").read_bytes() == (tmp_path / f"merged{suffix}").read_bytes(), suffix
    with pytest.raises(SystemExit):
        main(common + ["--shard", "4", "--shards", "4"] + outputs(tmp_path / "bad"))


def test_identifier_shards_plan_n_jobs_and_one_merge(tmp_path):
    config = yaml.safe_load((REPO / ".test" / "params.yaml").read_text())
    config["identifiers"]["shards"] = 4
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(config))
    _test_inputs(tmp_path)
    res = subprocess.run([str(BIN / "snakemake"), "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path),
                          "-n", "--cores", "1", "data/identifiers/sequences.parquet"],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-2000:]
    assert re.search(r"identifiers_shard\s+4\b", res.stdout) and re.search(r"\bidentifiers\s+1\b", res.stdout)


def _python(code: str) -> str:
    """`code` in a fresh interpreter of the project's venv (its .pth files processed, as for `snakemake`)."""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/")
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout.strip()


def test_snakemake_start_defers_the_slurm_plugins_pandas_to_its_first_use():
    """snakemake_startup.py (named in the venv's benchmark_factory.pth by `make install`): the SLURM plugin,
    which every Snakemake start imports, gets a lazy pandas and numpy; the plugin's report code still works."""
    pth = [p for p in map(Path, sys.path) if (p / "benchmark_factory.pth").exists()]
    assert pth and "import snakemake_startup" in (pth[0] / "benchmark_factory.pth").read_text(), \
        "the venv's benchmark_factory.pth lacks `import snakemake_startup`: run `make install`"
    out = _python("import sys, snakemake_executor_plugin_slurm as p\n"
                  "print(*(type(sys.modules[m]).__name__ for m in ('pandas', 'numpy')))\n"
                  "from snakemake_executor_plugin_slurm.efficiency_report import parse_maxrss\n"
                  "print(parse_maxrss('2048K'), type(sys.modules['pandas']).__name__)")
    assert out.splitlines() == ["_LazyModule _LazyModule", "2.0 module"], out
    # anyone else's import of pandas (a job, a test) is the ordinary one, also after the plugin's
    assert _python("import sys, pandas; print(type(sys.modules['pandas']).__name__)") == "module"
    assert _python("import sys, pandas, snakemake_executor_plugin_slurm\n"
                   "print(type(sys.modules['pandas']).__name__, pandas.DataFrame({'a': [1]}).shape)") == "module (1, 1)"


def test_snakemake_startup_changes_only_the_plugins_imports():
    import snakemake_startup

    assert snakemake_startup.install() is False  # the .pth installed it: once per interpreter
    finder = next(f for f in sys.meta_path if isinstance(f, snakemake_startup.LazyForSlurmPlugin))
    assert finder.find_spec("pandas") is None  # imported from here, and pandas is loaded anyway
    assert finder.find_spec("json") is None
