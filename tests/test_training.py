"""The pipeline-trained code LMs: the real Snakemake rules on a fixture corpus, determinism,
random twins, and perplexity against hand-computed values."""

import dataclasses
import json
import math
from contextlib import chdir
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch
import yaml
from safetensors.torch import load_file

from pipeline.models.entries import parse_zoo
from pipeline.models.evaluate import eval_mask, perplexity
from pipeline.models.data import blocks, token_stream
from pipeline.models.train import (EOS, MASK, TrainParams, corrupt_spans, lr_factor, make_random_twin, mask_for_training,
                                   model_config, pretrained_tokenizer, run_training, seed_everything, sentinel_tokens, span_counts,
                                   train)
from pipeline.models.zoo import auto_class, load_model, sentinels
from pipeline.runtime.plan import candidate_jobs
from pipeline.runtime.protocols import rank_of
from pipeline.runtime.scorer import Scorer, score_candidates

from tests.conftest import REPO, snakemake

SEED = 7

TINY_MODEL = {"layers": 1, "hidden_size": 32, "heads": 2, "intermediate_size": 64, "seq_length": 32, "batch_size": 8,
              "steps": 40, "learning_rate": 0.005, "warmup_steps": 4, "weight_decay": 0.01, "dropout": 0.1,
              "mlm_probability": 0.15, "eval_every": 20, "eval_blocks": 4}
T5_MODEL = {**TINY_MODEL, "schedule": "cosine"}  # the encoder-decoder: the same size, cosine schedule
ZOO = [
    {"name": "tiny-mlm", "source": "trained:mlm", "family": "masked-lm", "max_length": 32, "batch_size": 8},
    {"name": "tiny-clm", "source": "trained:causal", "family": "causal-lm", "max_length": 32, "batch_size": 8},
    {"name": "tiny-clm-random", "source": "random:tiny-clm"},
    {"name": "tiny-t5", "source": "trained:seq2seq", "family": "encoder-decoder", "max_length": 32, "batch_size": 8},
    {"name": "tiny-t5-random", "source": "random:tiny-t5"},
]


def python_module(i: int) -> str:
    return "\n".join(
        f"def compute_{i}_{k}(values, scale={k}):\n"
        f"    total = 0\n"
        f"    for value in values:\n"
        f"        if value > {k}:\n"
        f"            total += value * scale\n"
        f"    return total\n\n" for k in range(12)
    )


def java_class(i: int) -> str:
    methods = "\n".join(
        f"    public int sum{k}(int[] values) {{\n        int total = 0;\n"
        f"        for (int v : values) {{ if (v > {k}) {{ total += v; }} }}\n        return total;\n    }}\n"
        for k in range(10)
    )
    return f"package demo.p{i};\n\npublic class Counter{i} {{\n{methods}}}\n"


def write_corpus(root: Path) -> None:
    """Sixteen small repositories (top-level folders), Python and Java, so every split gets some."""
    for i in range(16):
        repo = root / f"repo{i:02d}"
        repo.mkdir(parents=True)
        (repo / "util.py").write_text(python_module(i))
        (repo / f"Counter{i}.java").write_text(java_class(i))


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A fixture corpus taken through the real rules to a trained tiny causal LM (the training rule);
    the masked LM, the encoder-decoder and the random twins are made in-process from the same manifest
    and tokenizer."""
    root = tmp_path_factory.mktemp("zoo")
    write_corpus(root / "corpus")
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["seed"] = SEED
    params["corpus"]["sources"] = [{"name": "fixture", "kind": "local", "path": str(root / "corpus"), "repository": "top_dir"}]
    params["apirec"]["domains"] = {}  # the default's name the default's sources
    params["manifest"]["split"] = {"train": 0.6, "valid": 0.2, "test": 0.2}
    params["models"] = {"device": "cpu", "zoo": ZOO}
    params["training"]["threads"] = 1
    params["training"]["tokenizer"] = {"vocab_size": 400, "min_frequency": 2}
    params["training"]["model"] = TINY_MODEL
    params["training"]["evaluation"] = {"max_blocks": 16, "mlm_probability": 0.15}
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    snakemake(root, "data/models/tiny-clm")
    zoo = parse_zoo(ZOO)
    with chdir(root):  # manifest locations are relative to the project folder
        run_training(zoo["tiny-mlm"], Path("data/manifest.parquet"), Path("data/tokenizer"), params["training"]["data"],
                     TrainParams(**TINY_MODEL), SEED, 1, "cpu", Path("data/models/tiny-mlm"),
                     Path("reports/figures/models/loss_tiny-mlm.png"))
        run_training(zoo["tiny-t5"], Path("data/manifest.parquet"), Path("data/tokenizer"), params["training"]["data"],
                     TrainParams(**T5_MODEL), SEED, 1, "cpu", Path("data/models/tiny-t5"),
                     Path("reports/figures/models/loss_tiny-t5.png"))
        for twin in ("tiny-clm", "tiny-t5"):
            make_random_twin(zoo[f"{twin}-random"], zoo[twin], SEED, Path("data/models"), Path(f"data/models/{twin}-random"))
    return root


def test_training_rule_builds_model_folders_cards_and_curves(project):
    for name in ("tiny-mlm", "tiny-clm"):
        folder = project / "data/models" / name
        assert {"config.json", "model.safetensors", "tokenizer.json", "card.json", "training.json"} <= {p.name for p in folder.iterdir()}
        card = json.loads((folder / "card.json").read_text())
        vocab = json.loads((project / "data/tokenizer/record.json").read_text())["vocab_size"]
        assert 300 < vocab <= 400  # 256 bytes + 5 specials + merges, up to the requested size
        assert card["layers"] == 1 and card["heads"] == 2 and card["hidden_size"] == 32 and card["vocab_size"] == vocab
        assert card["train_data"]["split"] == "train" and card["train_data"]["files"] > 0
        assert card["training"]["steps"] == 40 and card["seed"] == SEED
        blocks = card["train_data"]["tokens"] // 32
        assert card["train_data"]["full_epoch"] == (40 * 8 >= blocks)
        assert card["train_data"]["epochs"] == round(40 * 8 / blocks, 3)
        read = card["train_data"]["read"]  # exactly what it read (issue 23 item 1)
        assert 0 < read["files"] <= card["train_data"]["files"] <= card["train_data"]["split_files"]
        assert read["blocks"] == blocks and read["blocks_read"] <= blocks and read["bytes"] > 0
        assert read["blocks_read"] == blocks or not card["train_data"]["full_epoch"]
        curve = json.loads((folder / "training.json").read_text())
        assert len(curve["train_loss"]) == 40 and curve["eval_step"] == [20, 40]
        assert curve["train_loss"][-1] < curve["train_loss"][0]
        assert (project / f"reports/figures/models/loss_{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    manifest = pq.read_table(project / "data/manifest.parquet").to_pylist()
    train_ids = sorted(r["file_id"] for r in manifest if r["split"] == "train" and not r["duplicate"])
    card = json.loads((project / "data/models/tiny-clm/card.json").read_text())
    assert card["train_data"]["files"] == len(train_ids)  # the whole (small) train split, nothing else


def test_trained_model_beats_its_random_twin_on_the_test_split(project):
    zoo = parse_zoo(ZOO)
    rows = pq.read_table(project / "data/manifest.parquet").to_pylist()
    texts = [(project / r["location"]).read_text() for r in rows if r["split"] == "test" and not r["duplicate"]]
    assert texts
    got = {name: perplexity(load_model(zoo[name], device="cpu", models_dir=project / "data/models"), texts, 32, 16, SEED, 0.15)
           for name in ("tiny-clm", "tiny-clm-random")}
    assert got["tiny-clm"]["tokens_scored"] == got["tiny-clm-random"]["tokens_scored"] > 0
    assert got["tiny-clm"]["perplexity"] < 0.5 * got["tiny-clm-random"]["perplexity"]


def test_perplexity_does_not_depend_on_batch_size(project):
    zoo = parse_zoo(ZOO)
    texts = [(project / "corpus/repo03/util.py").read_text(), (project / "corpus/repo03/Counter3.java").read_text()]
    got = []
    for name in ("tiny-mlm", "tiny-clm"):
        for batch_size in (1, 7):
            entry = dataclasses.replace(zoo[name], batch_size=batch_size)
            got.append(perplexity(load_model(entry, device="cpu", models_dir=project / "data/models"), texts, 32, 12, SEED, 0.15))
    assert got[0]["tokens_scored"] == got[1]["tokens_scored"] > 0 and got[2]["tokens_scored"] == got[3]["tokens_scored"] > 0
    assert got[0]["perplexity"] == pytest.approx(got[1]["perplexity"], rel=1e-5)
    assert got[2]["perplexity"] == pytest.approx(got[3]["perplexity"], rel=1e-5)


@pytest.mark.slow
def test_models_target_writes_the_metrics_report(project):
    """The whole stage through Snakemake: random twin and evaluation rules, and the DVC metric."""
    snakemake(project, "models")
    metrics = json.loads((project / "reports/metrics/models.json").read_text())["models"]
    assert set(metrics) == {"tiny-mlm", "tiny-clm", "tiny-clm-random"}
    assert metrics["tiny-clm"]["test_perplexity"] < metrics["tiny-clm-random"]["test_perplexity"]
    assert metrics["tiny-clm-random"]["perplexity_ratio_to_twin"] == pytest.approx(
        metrics["tiny-clm-random"]["test_perplexity"] / metrics["tiny-clm"]["test_perplexity"])


def test_random_twin_has_same_config_and_tokenizer_but_other_weights(project):
    trained, twin = project / "data/models/tiny-clm", project / "data/models/tiny-clm-random"
    assert json.loads((trained / "config.json").read_text()) == json.loads((twin / "config.json").read_text())
    assert (trained / "tokenizer.json").read_bytes() == (twin / "tokenizer.json").read_bytes()
    a, b = load_file(trained / "model.safetensors"), load_file(twin / "model.safetensors")
    assert a.keys() == b.keys()
    assert all(a[k].shape == b[k].shape for k in a)
    assert not torch.equal(a["transformer.wte.weight"], b["transformer.wte.weight"])
    card = json.loads((twin / "card.json").read_text())
    assert card["random"] is True and card["seed"] == SEED and card["twin_of"] == "tiny-clm"


def test_same_seed_gives_identical_weights_and_other_seed_does_not(project, tmp_path, monkeypatch):
    monkeypatch.chdir(project)
    zoo = parse_zoo(ZOO)
    params = yaml.safe_load((project / "params.yaml").read_text())["training"]
    p = TrainParams(**{**TINY_MODEL, "steps": 6, "eval_every": 3})
    cards = []
    for run, seed in (("a", SEED), ("b", SEED), ("c", SEED + 1)):
        cards.append(run_training(zoo["tiny-mlm"], project / "data/manifest.parquet", project / "data/tokenizer",
                                  params["data"], p, seed, 1, "cpu", tmp_path / run, tmp_path / f"{run}.png"))
    assert (tmp_path / "a/model.safetensors").read_bytes() == (tmp_path / "b/model.safetensors").read_bytes()
    assert cards[0]["weights_sha256"] == cards[1]["weights_sha256"] != cards[2]["weights_sha256"]


def test_trained_model_loads_through_the_same_loader(project):
    entry = parse_zoo(ZOO)["tiny-mlm"]
    lm = load_model(entry, attentions=True, hidden_states=True, device="cpu", models_dir=project / "data/models")
    batch = lm.tokenizer(["for value in values:"], return_tensors="pt")
    ids = batch["input_ids"][0].tolist()
    assert ids[0] == lm.tokenizer.bos_token_id and ids[-1] == lm.tokenizer.eos_token_id  # <s> … </s> like RoBERTa
    out = lm(**batch)
    n = len(ids)
    assert [tuple(a.shape) for a in out.attentions] == [(1, 2, n, n)]
    assert [tuple(h.shape) for h in out.hidden_states] == [(1, n, 32)] * 2
    assert out.logits.shape == (1, n, lm.model.config.vocab_size)
    assert lm.card["name"] == "tiny-mlm"


def test_training_masks_follow_bert_recipe():
    gen = torch.Generator().manual_seed(0)
    batch = torch.randint(5, 1000, (64, 128))
    batch[:, 0] = 0  # <s> is never masked
    inputs, labels = mask_for_training(batch, 0.15, 1000, gen)
    picked = labels != -100
    assert not picked[:, 0].any()
    assert torch.equal(labels[picked], batch[picked])
    assert torch.equal(inputs[~picked], batch[~picked])
    rate = picked.float().mean().item()
    assert 0.13 < rate < 0.17
    masked = (inputs[picked] == MASK).float().mean().item()
    unchanged = (inputs[picked] == batch[picked]).float().mean().item()
    assert 0.76 < masked < 0.84 and 0.07 < unchanged < 0.14  # 80% <mask>, 10% kept (+ random hits of itself)


def test_eval_masks_every_row_and_only_real_tokens():
    batch = torch.tensor([[0, 10, 11, 12, 2], [0, 20, 21, 22, 2]])
    special = torch.tensor([[1, 0, 0, 0, 1]] * 2).bool()
    inputs, labels = eval_mask(batch, special, 1e-9, 4, torch.Generator().manual_seed(0))
    assert inputs.tolist() == [[0, 4, 11, 12, 2], [0, 4, 21, 22, 2]]  # none drawn: the first real token
    assert labels.tolist() == [[-100, 10, -100, -100, -100], [-100, 20, -100, -100, -100]]
    inputs, labels = eval_mask(batch, special, 1.0, 4, torch.Generator().manual_seed(0))
    assert inputs.tolist() == [[0, 4, 4, 4, 2], [0, 4, 4, 4, 2]]


def test_perplexity_of_a_uniform_model_is_the_vocabulary_size(project):
    """Zero output embeddings => uniform next-token distribution => perplexity exactly |V| (and for
    the masked LM as well, with the decoder bias zeroed too)."""
    for name in ("tiny-clm", "tiny-mlm", "tiny-t5"):
        entry = parse_zoo(ZOO)[name]
        lm = load_model(entry, device="cpu", models_dir=project / "data/models")
        with torch.no_grad():
            lm.model.get_output_embeddings().weight.zero_()
            if getattr(lm.model.get_output_embeddings(), "bias", None) is not None:
                lm.model.get_output_embeddings().bias.zero_()
        texts = [(project / "corpus/repo00/util.py").read_text()]
        got = perplexity(lm, texts, 32, 4, SEED, 0.15)
        assert got["tokens_scored"] > 0
        assert got["perplexity"] == pytest.approx(lm.model.config.vocab_size, rel=1e-4)


def test_short_stream_gives_one_padded_block_and_empty_test_split_no_perplexity(project):
    from pipeline.models.data import blocks

    assert blocks([5, 6, 7], 5, pad_id=1).tolist() == [[5, 6, 7, 1, 1]]
    assert blocks([5, 6, 7], 5).shape == (0, 5)
    assert blocks(list(range(12)), 5, pad_id=1).tolist() == [list(range(5)), list(range(5, 10))]
    lm = load_model(parse_zoo(ZOO)["tiny-mlm"], device="cpu", models_dir=project / "data/models")
    assert perplexity(lm, [], 32, 4, SEED, 0.15) == {"perplexity": None, "tokens_scored": 0, "blocks": 0, "block_length": 32}


def test_span_counts_and_corruption_by_hand():
    assert span_counts(128, 0.15, 3.0) == (19, 6)  # T5: round(128 * 0.15) noise tokens, round(19 / 3) spans
    assert span_counts(32, 0.15, 3.0) == (5, 2)
    assert span_counts(8, 0.15, 3.0) == (1, 1)  # at least one noise token and one span
    assert span_counts(4, 0.9, 1.0) == (2, 1)  # at most length - 2 noise tokens; a kept run after each span
    gen = torch.Generator().manual_seed(0)
    batch = torch.arange(100, 164).view(2, 32)  # distinct tokens: every one can be traced
    inputs, targets = corrupt_spans(batch, 0.15, 3.0, [900, 901, 902], gen)
    assert inputs.shape == (2, 32 - 5 + 2 + 1) and targets.shape == (2, 5 + 2 + 1 + 1)
    lengths = []
    for row, src, tgt in zip(batch.tolist(), inputs.tolist(), targets.tolist()):
        assert src[-1] == tgt[-1] == 2  # </s> ends input and target
        assert [t for t in src if t >= 900] == [900, 901] and [t for t in tgt if t >= 900] == [900, 901, 902]
        assert tgt[-2] == 902  # the next sentinel closes the last span (T5's `<X> … <Y> … <Z>`)
        tgt = tgt[:-2] + tgt[-1:]
        assert tgt[0] == 900 and src[0] < 900 and src[-2] < 900  # kept text before the first span and after the last
        spans: dict[int, list[int]] = {}
        for t in tgt[:-1]:
            if t >= 900:
                spans[t] = []
                current = t
            else:
                spans[current].append(t)
        lengths += [len(v) for v in spans.values()]
        assert [x for t in src[:-1] for x in (spans[t] if t >= 900 else [t])] == row  # spans back in place: the row
    assert min(lengths) >= 1 and sum(lengths) == 10
    again = corrupt_spans(batch, 0.15, 3.0, [900, 901, 902], torch.Generator().manual_seed(0))
    assert torch.equal(again[0], inputs) and torch.equal(again[1], targets)  # seeded


def test_lr_schedules():
    p = TrainParams(**{**TINY_MODEL, "steps": 110, "warmup_steps": 10, "schedule": "cosine"})
    assert lr_factor(0, p) == pytest.approx(0.1) and lr_factor(9, p) == pytest.approx(1.0)
    assert lr_factor(10, p) == pytest.approx(1.0) and lr_factor(60, p) == pytest.approx(0.5)
    assert lr_factor(35, p) == pytest.approx(0.5 * (1 + math.cos(math.pi / 4)))
    assert lr_factor(110, p) == pytest.approx(0.0)
    linear = dataclasses.replace(p, schedule="linear")
    assert lr_factor(60, linear) == pytest.approx(0.5) and lr_factor(35, linear) == pytest.approx(0.75)


def test_encoder_decoder_folder_card_and_sentinels(project):
    folder = project / "data/models/tiny-t5"
    assert {"config.json", "model.safetensors", "tokenizer.json", "card.json", "training.json"} <= {p.name for p in folder.iterdir()}
    vocab = json.loads((project / "data/tokenizer/record.json").read_text())["vocab_size"]
    card = json.loads((folder / "card.json").read_text())
    n = span_counts(32, 0.15, 3.0)[1] + 1  # one per span and one closing the last
    assert card["family"] == "encoder-decoder" and card["model_type"] == "t5" and card["vocab_size"] == vocab + n
    assert card["layers"] == card["decoder_layers"] == 1 and card["heads"] == 2 and card["hidden_size"] == 32
    assert card["training"]["objective"] == "seq2seq" and card["training"]["schedule"] == "cosine"
    lm = load_model(parse_zoo(ZOO)["tiny-t5"], device="cpu", models_dir=project / "data/models")
    assert sentinels(lm.tokenizer) == [f"<extra_id_{i}>" for i in range(n)]
    assert lm.tokenizer.convert_tokens_to_ids("<extra_id_0>") == vocab  # after the shared vocabulary
    ids = lm.tokenizer("x = <extra_id_0>(y)")["input_ids"]
    assert vocab in ids and ids[-1] == lm.tokenizer.eos_token_id  # the sentinel is one token; </s> ends the text
    curve = json.loads((folder / "training.json").read_text())
    assert curve["valid_loss"][-1] < curve["valid_loss"][0] and curve["train_loss"][-1] < curve["train_loss"][0]
    twin = json.loads((project / "data/models/tiny-t5-random/card.json").read_text())
    assert twin["twin_of"] == "tiny-t5" and twin["vocab_size"] == card["vocab_size"] and twin["parameters"] == card["parameters"]


def test_encoder_decoder_trains_deterministically(project, tmp_path, monkeypatch):
    monkeypatch.chdir(project)
    zoo = parse_zoo(ZOO)
    params = yaml.safe_load((project / "params.yaml").read_text())["training"]
    p = TrainParams(**{**T5_MODEL, "steps": 6, "eval_every": 3})
    cards = [run_training(zoo["tiny-t5"], project / "data/manifest.parquet", project / "data/tokenizer", params["data"],
                          p, seed, 1, "cpu", tmp_path / run, tmp_path / f"{run}.png")
             for run, seed in (("a", SEED), ("b", SEED), ("c", SEED + 1))]
    assert (tmp_path / "a/model.safetensors").read_bytes() == (tmp_path / "b/model.safetensors").read_bytes()
    assert cards[0]["weights_sha256"] == cards[1]["weights_sha256"] != cards[2]["weights_sha256"]


def test_seq2seq_scoring_ranks_first_the_fill_the_model_was_trained_on(project, tmp_path):
    """A tiny encoder-decoder trained for a few steps on a repeated pattern puts the fill it was trained
    to produce first (its untrained init does not), with T5's target `<extra_id_0> fill <extra_id_1>`, and
    the scoring path's log-probability is the hand sum of the target's log-softmax under teacher forcing."""
    p = TrainParams(**{**TINY_MODEL, "steps": 60, "schedule": "cosine", "dropout": 0.0})
    tok = pretrained_tokenizer(project / "data/tokenizer", "seq2seq", p.seq_length, sentinel_tokens(p))
    train_blocks = blocks(token_stream(tok, ["    result = compute(total)\n" * 200], EOS), 32)
    seed_everything(SEED, 1)
    untrained = auto_class("encoder-decoder").from_config(model_config("seq2seq", len(tok), p))
    model, _ = train("seq2seq", p, train_blocks, train_blocks[:0], len(tok), SEED, torch.device("cpu"))
    fills = ["scale", "total", "value", "values"]
    got = {}
    for name, m in (("trained", model), ("untrained", untrained)):
        m.save_pretrained(tmp_path / name)
        tok.save_pretrained(tmp_path / name)
        entry = parse_zoo([{"name": name, "source": f"path:{tmp_path / name}", "family": "encoder-decoder",
                            "max_length": 32, "batch_size": 3}])[name]
        lm = load_model(entry, device="cpu")
        scorer = Scorer(lm, 4096)
        jobs, owner = candidate_jobs(scorer, "encoder-decoder", "    result = compute(", fills, ")\n")
        source, target = jobs[1]
        first, second = tok.convert_tokens_to_ids(["<extra_id_0>", "<extra_id_1>"])
        assert source.count(first) == 1 and source[-1] == tok.eos_token_id
        assert target[0] == first and target[-1] == second and tok.decode(target[1:-1]) == "total"
        got[name] = score_candidates(scorer, "encoder-decoder", [(jobs, owner, len(fills))])[0]
        with torch.no_grad():  # by hand: teacher forcing from the decoder start token
            decoder_input = torch.tensor([[lm.model.config.decoder_start_token_id] + target[:-1]])
            logits = lm.model(input_ids=torch.tensor([source]), decoder_input_ids=decoder_input).logits[0]
        assert got[name][1] == pytest.approx(float(torch.log_softmax(logits, -1)[range(len(target)), target].sum()), abs=1e-4)
    assert rank_of(got["trained"], fills, 1)[0] == 1 and rank_of(got["untrained"], fills, 1)[0] > 1
    assert got["trained"][1] > got["untrained"][1] + 1.0


def test_encoder_decoder_span_perplexity_beats_twin(project):
    zoo = parse_zoo(ZOO)
    rows = pq.read_table(project / "data/manifest.parquet").to_pylist()
    texts = [(project / r["location"]).read_text() for r in rows if r["split"] == "test" and not r["duplicate"]]
    got = {name: perplexity(load_model(zoo[name], device="cpu", models_dir=project / "data/models"), texts, 32, 16, SEED, 0.15)
           for name in ("tiny-t5", "tiny-t5-random")}
    assert got["tiny-t5"]["tokens_scored"] == got["tiny-t5-random"]["tokens_scored"] == 16 * (5 + 2 + 1 + 1)
    assert got["tiny-t5"]["perplexity"] < 0.5 * got["tiny-t5-random"]["perplexity"]


def test_pre_layer_norm_masked_lm_trains_deterministically_loads_and_scores(project, tmp_path, monkeypatch):
    """training.model.mlm_architecture: roberta-prelayernorm (docs/model_recipes.md: the pre-LN masked LM crosses
    its loss plateau where the post-LN one stays on it): same seed, same weights; the zoo's loader gives its
    attentions and hidden states, and the masked scoring path runs its LM head on selected positions."""
    from pipeline.runtime.score_masked import masked_lm_head

    monkeypatch.chdir(project)
    zoo = parse_zoo(ZOO)
    data = yaml.safe_load((project / "params.yaml").read_text())["training"]["data"]
    p = TrainParams(**{**TINY_MODEL, "steps": 6, "eval_every": 3, "mlm_architecture": "roberta-prelayernorm"})
    cards = [run_training(zoo["tiny-mlm"], project / "data/manifest.parquet", project / "data/tokenizer", data, p, SEED, 1,
                          "cpu", tmp_path / run / "tiny-mlm", tmp_path / f"{run}.png") for run in ("a", "b")]
    assert (tmp_path / "a/tiny-mlm/model.safetensors").read_bytes() == (tmp_path / "b/tiny-mlm/model.safetensors").read_bytes()
    assert cards[0]["model_type"] == "roberta-prelayernorm" and cards[0]["training"]["mlm_architecture"] == "roberta-prelayernorm"
    curve = json.loads((tmp_path / "a/tiny-mlm/training.json").read_text())
    assert curve["train_loss"][-1] < curve["train_loss"][0]
    lm = load_model(zoo["tiny-mlm"], attentions=True, hidden_states=True, device="cpu", models_dir=tmp_path / "a")
    assert type(lm.model).__name__ == "RobertaPreLayerNormForMaskedLM"
    out = lm(**lm.tokenizer(["for value in values:"], return_tensors="pt"))
    assert len(out.attentions) == 1 and len(out.hidden_states) == 2
    assert masked_lm_head(lm.model) is not None
    with pytest.raises(SystemExit, match="mlm_architecture"):
        run_training(zoo["tiny-mlm"], project / "data/manifest.parquet", project / "data/tokenizer", data,
                     TrainParams(**{**TINY_MODEL, "steps": 1, "mlm_architecture": "bert"}), SEED, 1, "cpu",
                     tmp_path / "c", tmp_path / "c.png")


def test_perplexity_passes_bound_the_logits():
    """A big vocabulary scores fewer rows per forward pass (SmolLM2's batch of 16 blocks made a 6.5 GB peak),
    a small model's pass is its batch."""
    from types import SimpleNamespace

    from pipeline.models.evaluate import LOGITS_BUDGET, rows_per_pass

    def lm(vocab, batch):
        return SimpleNamespace(model=SimpleNamespace(config=SimpleNamespace(vocab_size=vocab)), tokenizer=[],
                               entry=SimpleNamespace(batch_size=batch))

    assert rows_per_pass(lm(49152, 16), 256) == LOGITS_BUDGET // (256 * 49152) == 2
    assert rows_per_pass(lm(1000, 16), 128) == 16
    assert rows_per_pass(lm(10_000_000, 16), 512) == 1
