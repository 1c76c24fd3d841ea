"""bench/run_cost's per-job cost records come from a sitecustomize hook on the build's PYTHONPATH, so no
pipeline module (and no DVC stage's dependencies) carries the bench's code."""

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_hook_records_a_pipeline_job(tmp_path):
    log = tmp_path / "cost.jsonl"
    env = {**os.environ, "PIPELINE_COST_LOG": str(log),
           "PYTHONPATH": os.pathsep.join([str(REPO / "bench" / "cost" / "_costhook"), str(REPO)])}
    subprocess.run([sys.executable, "-m", "pipeline.preflight", "--python", "3.11.7"], env=env, check=True,
                   cwd=REPO, capture_output=True)
    (rec,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert rec["module"] == "pipeline.preflight" and rec["args"] == ["--python", "3.11.7"]
    assert rec["cpu_s"] >= 0 and rec["peak_rss_mb"] > 0


def test_hook_off_without_the_variable(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PIPELINE_COST_LOG"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "bench" / "cost" / "_costhook"), str(REPO)])
    out = subprocess.run([sys.executable, "-c", "import sys; print('sitecustomize' in sys.modules)"], env=env,
                         check=True, capture_output=True, text=True, cwd=tmp_path)
    assert out.stdout.strip() == "True"  # imported, but it registers nothing
    assert not list(tmp_path.iterdir())


def test_no_pipeline_module_imports_the_hook():
    for path in (REPO / "pipeline").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "_cost" not in text and "costhook" not in text, path
