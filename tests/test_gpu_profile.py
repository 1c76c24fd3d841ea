"""The GPU-scale profile (params.gpu.yaml): `snakemake -n --configfile params.gpu.yaml` plans, on this CPU
machine with no network, every job the overlay implies, validated on the merged config; nothing downloads."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from collections import Counter

import pytest
import yaml
from snakemake.utils import update_config

from pipeline import families
from pipeline.models.entries import parse_zoo
from tests.conftest import BIN, REPO

OVERLAY = REPO / "params.gpu.yaml"


def merged() -> dict:
    """params.yaml with the overlay on top, merged the way Snakemake merges a --configfile."""
    config = yaml.safe_load((REPO / "params.yaml").read_text())
    update_config(config, yaml.safe_load(OVERLAY.read_text()))
    return config


def expected_jobs(config: dict) -> Counter:
    """Jobs per rule the config implies, counted from the zoo and each family's declared subsets."""
    zoo = parse_zoo(config["models"]["zoo"])
    run = {n: zoo[n].model_family for n in (config["inference"]["models"] or zoo)}
    shards = config["inference"]["shards"]
    fams = families.enabled(config)
    counts = Counter(
        train_model=sum(e.kind == "trained" for e in zoo.values()),
        random_model=sum(e.kind == "random" for e in zoo.values()),
        external_model=sum(e.kind in ("package", "hub", "path") for e in zoo.values()),
        evaluate_model=sum(e.model_family != "encoder-only" for e in zoo.values()),
        fetch_source=len(config["corpus"]["sources"]),
    )
    for f in fams:
        for subset in f.subsets(config):
            counts["predict"] += shards * sum(f.applies_to(mf, subset) for mf in run.values())
        if f.fit is not None:
            counts["fit"] += sum(f.applies_to(mf) for mf in run.values())
    return counts


def dry_run(workdir, *overlays, env_extra=None) -> subprocess.CompletedProcess:
    """`snakemake -n -p` in a fresh working directory holding params.yaml, with the overlays on top, offline."""
    env = {**os.environ, "HF_HOME": str(workdir / "hf"), "HF_HUB_CACHE": str(workdir / "hf" / "hub"),
           "HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "CUDA_VISIBLE_DEVICES": "", **(env_extra or {})}
    args = [arg for o in overlays for arg in ("--configfile", str(o))]
    return subprocess.run([str(BIN / "snakemake"), "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
                           *args, "-n", "-p", "--cores", "16"], capture_output=True, text=True, env=env, timeout=600)


@pytest.fixture
def workdir(tmp_path):
    shutil.copy(REPO / "params.yaml", tmp_path / "params.yaml")
    return tmp_path


def test_overlay_changes_what_it_says():
    base, config = yaml.safe_load((REPO / "params.yaml").read_text()), merged()
    assert config["models"]["device"] == "cuda" and config["inference"]["dtype"] in ("bfloat16", "float16")
    # no seeded subsets left: every key whose schema says "0: all" is 0
    assert config["apiquiz"]["inference"]["max_items"] == 0 and base["apiquiz"]["inference"]["max_items"] > 0
    assert config["codesyntax"]["inference"]["max_items"] == config["codesyntax"]["max_samples_per_language"] == 0
    assert config["probing"]["max_snippets"] == config["probing"]["max_samples"] == 0
    assert config["apirec"]["max_points"] == config["apirec"]["inference"]["max_items"] == 0
    assert config["apirec"]["queries"]["max_queries"] == config["apirec"]["inference"]["query_max_items"] == 0
    assert config["idbench"]["embeddings"]["max_tokens"] == config["idbench"]["inference"]["max_items"] == 0
    # bigger trained models; untouched blocks stay the defaults (a merge, not a replacement)
    assert config["training"]["model"]["layers"] > base["training"]["model"]["layers"]
    assert config["training"]["model"]["hidden_size"] >= 512
    assert config["training"]["model"]["dropout"] == base["training"]["model"]["dropout"]
    assert config["corpus"] == base["corpus"] and config["seed"] == base["seed"]
    zoo = parse_zoo(config["models"]["zoo"])
    hub = {e.value: e.model_family for e in zoo.values() if e.kind == "hub"}
    assert hub["microsoft/codebert-base-mlm"] == "masked-lm" and hub["Salesforce/codet5-base"] == "encoder-decoder"
    assert hub["uclanlp/plbart-base"] == "encoder-decoder" and hub["microsoft/graphcodebert-base"] == "masked-lm"
    trained = [e for e in zoo.values() if e.kind == "trained"]
    assert all(e.max_length <= config["training"]["model"]["seq_length"] for e in trained)


def test_dry_run_plans_the_overlays_jobs_offline_without_a_gpu(workdir):
    res = dry_run(workdir, OVERLAY)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    stats = res.stdout[res.stdout.index("Job stats"):]
    planned = {k: int(v) for k, v in re.findall(r"^(\w+)\s+(\d+)$", stats.split("\n\n")[0], flags=re.M)}
    expected = expected_jobs(merged())
    assert expected["predict"] > 100 and expected["external_model"] >= 14
    assert {k: planned.get(k, 0) for k in expected} == dict(expected)
    # the merged config reaches the jobs: every (family, subset, model, shard) it implies, hub models included,
    # inference on cuda in the overlay's precision and token budget
    config = merged()
    zoo = parse_zoo(config["models"]["zoo"])
    want = {f"data/predictions/{f.name}/{subset}/{m}/{k}.parquet"
            for f in families.enabled(config) for subset in f.subsets(config)
            for m in (config["inference"]["models"] or zoo) if f.applies_to(zoo[m].model_family, subset)
            for k in range(config["inference"]["shards"])}
    assert set(re.findall(r"^    output: (data/predictions/\S+)$", res.stdout, flags=re.M)) == want
    assert "data/predictions/apiquiz/all/codebert-mlm/0.parquet" in want  # a hub masked LM takes the quizzes
    assert '"source": "hub:uclanlp/plbart-base"' in res.stdout
    predict_cmds = [line for line in res.stdout.splitlines() if "pipeline.runtime.predict" in line]
    assert len(predict_cmds) == expected["predict"]
    assert all(f"--dtype {config['inference']['dtype']}" in c and "--device cuda" in c
               and f"--token-budget {config['inference']['token_budget']}" in c for c in predict_cmds)
    # each model's precision: its zoo entry's dtype, else inference.dtype (RoBERTa-family hub models in float16)
    effective = {}
    for c in predict_cmds:
        model = re.search(r"--model (\S+)", c).group(1)
        entries = {e["name"]: e for e in json.loads(re.search(r"--zoo '([^']*)'", c).group(1))}
        effective[model] = entries[model].get("dtype") or re.search(r"--dtype (\S+)", c).group(1)
    assert effective == {m: zoo[m].dtype or config["inference"]["dtype"] for m in effective}
    assert effective["codebert-mlm"] == "float16" and effective["codet5-base"] == "bfloat16"
    # nothing ran and nothing was fetched: no outputs, no Hugging Face cache
    assert not (workdir / "data").exists() and not (workdir / "hf").exists()


def test_overlay_is_validated_after_the_merge(workdir):
    bad = copy.deepcopy(yaml.safe_load(OVERLAY.read_text()))
    bad["models"]["device"] = "cpu"
    bad["inference"]["dtype"] = "float16"
    (workdir / "bad.yaml").write_text(yaml.safe_dump(bad))
    res = dry_run(workdir, OVERLAY, workdir / "bad.yaml")
    assert res.returncode != 0
    assert "inference.dtype: float16 on models.device 'cpu' is refused" in res.stdout + res.stderr


def test_syntax_overlay_plans_the_bigger_masked_lm(tmp_path):
    """params.syntax.yaml (the 2x256 masked LM that crosses its loss plateau on CPU): the merged config
    validates and plans, and the masked LM's training command carries the recipe."""
    config = yaml.safe_load((REPO / "params.yaml").read_text())
    update_config(config, yaml.safe_load((REPO / "params.syntax.yaml").read_text()))
    mlm = {**config["training"]["model"], **config["training"]["objectives"]["mlm"]}
    assert (mlm["hidden_size"], mlm["heads"], mlm["steps"], mlm["batch_size"]) == (256, 8, 2000, 32)
    assert mlm["mlm_architecture"] == "roberta-prelayernorm"
    out = subprocess.run([str(BIN / "snakemake"), "-n", "-p", "data/models/code-mlm", "--configfile", "params.syntax.yaml"],
                         cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    train = next(line for line in out.stdout.splitlines() if "pipeline.models.train train" in line)
    assert '"hidden_size": 256' in train and '"steps": 2000' in train and '"max_train_bytes": 30000000' in train
