"""The `.test` build through profiles/slurm on a real one-node SLURM (issue 26): bench/cluster/slurm_cluster.sh
installs Debian's slurm-wlm + munge and starts it (root), bench/cluster/slurm_run.py builds `.test` locally and
through the profile. Slow (two `.test` builds); `make test-all` runs it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster():
    if os.geteuid() != 0 and not shutil.which("sinfo"):
        pytest.skip("installing and starting SLURM needs root (or a running cluster)")
    if os.geteuid() == 0:
        subprocess.run(["bash", str(REPO / "bench" / "cluster" / "slurm_cluster.sh"), "start"], check=True, timeout=1800)
    return True


def test_test_build_through_the_slurm_profile_is_byte_identical_to_local(cluster, tmp_path):
    out = tmp_path / "report.json"
    res = subprocess.run([sys.executable, "-m", "bench.cluster.slurm_run", "--workdir", str(tmp_path / "runs"),
                          "--out", str(out)], cwd=REPO, capture_output=True, text=True, timeout=7200)
    report = json.loads(out.read_text())
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert report["local"]["rc"] == report["cluster"]["rc"] == 0
    assert report["parquet_files"] > 50 and report["parquet_differ"] == []
    # every job declares its resources: no "No wall time information" / memory warnings
    assert not [w for w in report["warnings"] if "wall time" in w.lower() or "mem" in w.lower()]
    # the predict shards share submissions: far fewer sbatch calls than the 80 jobs
    assert report["cluster"]["sbatch_jobs"] < 40
