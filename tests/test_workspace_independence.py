"""Issue 37 item G: `make test` after `make run` passes. No test reads the project's own data/ or reports/
unless it builds them: the tests that size jobs from model cards run here from a folder holding a fake built
workspace (cards of other shapes than params.yaml asks for, a report) and must pass as they do from a clean one."""

from __future__ import annotations

import json
import subprocess
import sys

from pipeline import resources
from tests.conftest import REPO, default_params

# the tests that read (or once read) what a build leaves in data/ and reports/
SUSPICIOUS = ["tests/test_cluster.py", "tests/test_gpu_profile.py"]


def _fake_workspace(root):
    for name in ("code-mlm", "code-mlm-random", "code-clm", "code-clm-random", "minilm", "code-t5"):
        (root / "data" / "models" / name).mkdir(parents=True)
        (root / "data" / "models" / name / "card.json").write_text(json.dumps(
            {"parameters": 1_000, "hidden_size": 8, "layers": 1, "vocab_size": 100}))
    (root / "reports").mkdir()
    (root / "reports" / "index.md").write_text("# a stale report\n")


def test_the_sizing_tests_pass_beside_a_built_workspace(tmp_path):
    _fake_workspace(tmp_path)
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
                          *(str(REPO / t) for t in SUSPICIOUS), "-k", "memory or card or runtime or shape"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]


def test_a_card_of_another_shape_than_params_asks_is_not_the_size(tmp_path):
    """The card of a pipeline-trained model the config would retrain (another width or depth) is stale."""
    config = default_params()
    _fake_workspace(tmp_path)
    models = str(tmp_path / "data" / "models")
    estimate = resources.model_shape(config, "code-mlm", str(tmp_path / "none"))
    assert resources.model_shape(config, "code-mlm", models) == estimate
    m = config["training"]["model"]
    card = {"parameters": 123_456, "hidden_size": m["hidden_size"], "layers": m["layers"], "vocab_size": 99}
    (tmp_path / "data" / "models" / "code-mlm" / "card.json").write_text(json.dumps(card))
    assert resources.model_shape(config, "code-mlm", models)["parameters"] == 123_456
