"""The ranking protocols of pipeline.runtime.protocols (issue 16 item 3): the summed log-likelihood
(`rank`), its per-token mean (`rank_mean`) and the PMI against the no-context log-likelihood
(`rank_pmi`), checked by hand on tiny random models (the MiniLM tokenizer, no download) with direct
transformers forward passes, for causal, masked and encoder-decoder models; then the protocol
rows apiquiz writes."""

from __future__ import annotations

import pytest
import torch

from pipeline.families.apiquiz.infer import Quiz, rank_candidates
from pipeline.runtime.encode import encode
from pipeline.runtime.plan import plan_candidates
from pipeline.runtime.protocols import PROTOCOLS, CandidateScores, rank_of
from pipeline.runtime.scorer import Scorer, score_plans
from tests.test_scoring_cache import tiny  # the same tiny random models (MiniLM tokenizer)

CONTEXTS = [
    "import os\nimport json as js\n\n\ndef work(path):\n    data = js.loads(path)\n    if ",
    "import re\n\n\ndef clean(text):\n    text = text.strip()\n    return ",
]
FILLS = ["os.path.exists", "js.dumps", "len", "re.sub"]
SUFFIX = "("


def causal_sum(model, ids: list[int], start: int) -> float:
    """log p(ids[start:] | ids[:start]) from one plain forward pass."""
    x = torch.tensor([ids])
    logp = torch.log_softmax(model(input_ids=x).logits.float(), -1)[0]
    return float(sum(logp[p - 1, ids[p]] for p in range(start, len(ids))))


def pll(model, ids: list[int], positions: list[int], mask_id: int) -> float:
    total = 0.0
    for p in positions:
        masked = list(ids)
        masked[p] = mask_id
        logits = model(input_ids=torch.tensor([masked])).logits[0, p].float()
        total += float(torch.log_softmax(logits, -1)[ids[p]])
    return total


def seq2seq_sum(model, source: list[int], target: list[int]) -> float:
    logits = model(input_ids=torch.tensor([source]), labels=torch.tensor([target])).logits[0].float()
    return float(torch.log_softmax(logits, -1).gather(-1, torch.tensor(target)[:, None]).sum())


def check_protocols(s: CandidateScores, logprob: list[float], n_tokens: list[int], bare: list[float]) -> None:
    assert list(s.n_tokens) == n_tokens
    assert s.protocol("rank") == pytest.approx(logprob, abs=1e-4)
    assert s.protocol("rank_mean") == pytest.approx([lp / n for lp, n in zip(logprob, n_tokens)], abs=1e-4)
    assert list(s.no_context) == pytest.approx(bare, abs=1e-4)
    assert s.protocol("rank_pmi") == pytest.approx([lp - b for lp, b in zip(logprob, bare)], abs=1e-4)


@pytest.mark.parametrize("cached,tree", [(True, True), (True, False), (False, False)])
def test_causal_protocols_by_hand(tmp_path, cached, tree):
    lm = tiny(tmp_path, "causal-lm")
    tok, model = lm.tokenizer, lm.model
    scorer = Scorer(lm, 512, prefix_cache=cached, min_shared_prefix=2, tree=tree)
    assert scorer.tree == tree
    plans = [plan_candidates(scorer, "causal-lm", ctx, FILLS, SUFFIX) for ctx in CONTEXTS]
    results = score_plans(scorer, "causal-lm", plans)
    assert tok.bos_token_id is None  # BERT's tokenizer: the sequence starts with [CLS], the neutral prefix
    for ctx, result in zip(CONTEXTS, results):
        logprob, n_tokens, bare = [], [], []
        for fill in FILLS:
            e = encode(tok, ctx, fill, SUFFIX)
            start = e.span[0]  # the first token overlapping the fill: the fill, the suffix and [SEP] are scored
            assert all(encode(tok, ctx, f, SUFFIX).ids[:start] == e.ids[:start] for f in FILLS)
            assert tok.decode(e.ids[start:], skip_special_tokens=True).replace(" ", "") == (fill + SUFFIX).replace(" ", "")
            logprob.append(causal_sum(model, e.ids, start))
            n_tokens.append(len(e.ids) - start)
            bare.append(causal_sum(model, [tok.cls_token_id] + e.ids[start:], 1))  # without the context
        check_protocols(result, logprob, n_tokens, bare)
    if tree:  # one tree per item and one for the no-context rows, which every item here shares
        assert len(scorer._tree_rows) == len(plans) + 1 and not scorer._no_context
    else:  # the same fills after the same kind of context: the no-context pass ran once per distinct key
        assert len(scorer._no_context) == len({k for p in plans for k in p.bare}) <= 2 * len(FILLS)


def test_causal_sum_counts_prefix_tokens_the_fills_change(tmp_path):
    """A fill that completes a word can change how the prefix's last word is tokenized (`Stre` +
    `am` is the one token `stream`, `Stre` + `x` is `st ##re ##x`): the scored tokens then start at the first token
    not shared by every fill, so the sums differ from the whole texts' log-likelihoods by one constant
    (the shared tokens') and rank the fills as the whole texts do."""
    lm = tiny(tmp_path, "causal-lm")
    tok, model = lm.tokenizer, lm.model
    ctx, fills = "import Stre", ["am", "ss", "x", "ing"]
    encs = [encode(tok, ctx, f, "(") for f in fills]
    assert len({tuple(e.ids[: e.span[0]]) for e in encs}) > 1  # the fills do change the prefix's tokens
    scorer = Scorer(lm, 512)
    plan = plan_candidates(scorer, "causal-lm", ctx, fills, "(")
    (result,) = score_plans(scorer, "causal-lm", [plan])
    shared = min(next((i for i, (x, y) in enumerate(zip(e.ids, encs[0].ids)) if x != y), len(e.ids)) for e in encs)
    assert [start for _, start in plan.jobs] == [min(e.span[0], shared) for e in encs]
    whole = [causal_sum(model, e.ids, 1) for e in encs]
    constant = [w - s for w, s in zip(whole, result.logprob)]
    assert max(constant) - min(constant) < 1e-4 and abs(constant[0] - causal_sum(model, encs[0].ids[:shared], 1)) < 1e-4
    assert rank_of(list(result.logprob), fills, 0)[1] == rank_of(whole, fills, 0)[1]
    assert list(result.n_tokens) == [len(e.ids) - min(e.span[0], shared) for e in encs]


def masked_by_hand(lm, ctx: str) -> tuple[list[float], list[int], list[float]]:
    """(log-probs, token counts, no-context log-probs) of FILLS after `ctx`: pseudo-log-likelihoods."""
    tok, model = lm.tokenizer, lm.model
    logprob, n_tokens, bare = [], [], []
    for fill in FILLS:
        e = encode(tok, ctx, fill, SUFFIX)
        logprob.append(pll(model, e.ids, e.span, tok.mask_token_id))
        n_tokens.append(len(e.span))
        alone = [tok.cls_token_id] + [e.ids[p] for p in e.span] + [tok.sep_token_id]  # [CLS] fill [SEP]
        bare.append(pll(model, alone, list(range(1, len(alone) - 1)), tok.mask_token_id))
    assert n_tokens[FILLS.index("len")] == 1 and n_tokens[FILLS.index("os.path.exists")] == 5
    return logprob, n_tokens, bare


def seq2seq_by_hand(lm, ctx: str) -> tuple[list[float], list[int], list[float]]:
    """The same for an encoder-decoder: no sentinels in this tokenizer, so the mask token opens the
    span and [SEP] ends the target; the neutral source is the mask token alone."""
    tok, model = lm.tokenizer, lm.model
    source = tok(ctx.rstrip(" ") + tok.mask_token + SUFFIX)["input_ids"]
    neutral = tok(tok.mask_token)["input_ids"]
    assert neutral == [tok.cls_token_id, tok.mask_token_id, tok.sep_token_id]
    targets = [tok(tok.mask_token + " " + f)["input_ids"] for f in FILLS]
    return ([seq2seq_sum(model, source, t) for t in targets], [len(t) for t in targets],
            [seq2seq_sum(model, neutral, t) for t in targets])


@pytest.mark.parametrize("model_family, ctx, by_hand", [
    pytest.param("masked-lm", CONTEXTS[0], masked_by_hand, id="masked"),
    pytest.param("encoder-decoder", CONTEXTS[1], seq2seq_by_hand, id="seq2seq"),
])
def test_protocols_by_hand(tmp_path, model_family, ctx, by_hand):
    lm = tiny(tmp_path, model_family)
    scorer = Scorer(lm, 512)
    (result,) = score_plans(scorer, model_family, [plan_candidates(scorer, model_family, ctx, FILLS, SUFFIX)])
    check_protocols(result, *by_hand(lm, ctx))


def test_pmi_cancels_what_the_context_does_not_explain(tmp_path):
    """A candidate's PMI does not depend on how likely it is on its own: the same tokens without
    context cost the same in every quiz, so the PMI ranking of a fill that merely is frequent
    (short, likely everywhere) falls to what the context adds. Checked as identities on real numbers:
    PMI = sum - bare, and a fill's bare value is the same in every quiz."""
    lm = tiny(tmp_path, "causal-lm")
    scorer = Scorer(lm, 512)
    plans = [plan_candidates(scorer, "causal-lm", ctx, FILLS, SUFFIX) for ctx in CONTEXTS]
    a, b = score_plans(scorer, "causal-lm", plans)
    same = [i for i in range(len(FILLS)) if plans[0].bare[i] == plans[1].bare[i]]
    assert same and all(a.no_context[i] == b.no_context[i] for i in same)


def test_apiquiz_rows_carry_every_protocol(tmp_path):
    lm = tiny(tmp_path, "causal-lm")
    scorer = Scorer(lm, 512)
    quizzes = [Quiz(f"q{i}", ctx, "len", SUFFIX, tuple(sorted(FILLS))) for i, ctx in enumerate(CONTEXTS)]
    quizzes.append(Quiz("long", "x = 1\n" * 200, "len", SUFFIX, tuple(sorted(FILLS))))  # too long for max_length 200
    rows = rank_candidates(scorer, "causal-lm", quizzes, "tiny", 3)
    assert sorted((r["quiz_id"], r["protocol"]) for r in rows) == sorted(
        (q.quiz_id, p) for q in quizzes for p in PROTOCOLS)
    assert {r["status"] for r in rows if r["quiz_id"] == "long"} == {"too_long"}
    results = score_plans(Scorer(lm, 512), "causal-lm",
                          [plan_candidates(scorer, "causal-lm", q.prefix, q.candidates, q.suffix) for q in quizzes[:2]])
    for q, result in zip(quizzes, results):
        for p in PROTOCOLS:
            (row,) = [r for r in rows if r["quiz_id"] == q.quiz_id and r["protocol"] == p]
            scores = result.protocol(p)
            gold = q.candidates.index("len")
            rank, order = rank_of(scores, list(q.candidates), gold)
            assert row["status"] == "ok" and row["gold_rank"] == rank and row["n_ranked"] == len(FILLS)
            assert row["top"] == [q.candidates[i] for i in order[:3]]
            assert row["gold_logprob"] == pytest.approx(scores[gold])
    # only the summed protocol asked for: no no-context pass
    fresh = Scorer(lm, 512)
    only = rank_candidates(fresh, "causal-lm", quizzes[:1], "tiny", 3, ("rank",))
    assert [r["protocol"] for r in only] == ["rank"] and fresh._no_context == {}


def test_apirec_rerank_rows_carry_every_protocol(tmp_path):
    from pipeline.families.apirec.infer import RANKERS, Point, plan, rerank

    lm = tiny(tmp_path, "masked-lm")
    apis = ("json.dumps", "json.loads", "os.path.join")
    points = [Point(f"p{i}", ctx, "json.loads", apis, ("js.dumps", "js.loads", "os.path.join"))
              for i, ctx in enumerate(CONTEXTS)]
    rows = rerank(Scorer(lm, 512), "masked-lm", points, "tiny")
    assert sorted((r["point_id"], r["ranker"]) for r in rows) == sorted(
        (p.point_id, RANKERS[pr]) for p in points for pr in PROTOCOLS)
    scorer = Scorer(lm, 512)
    results = score_plans(scorer, "masked-lm", [plan(scorer, "masked-lm", p) for p in points])
    for p, result in zip(points, results):
        for pr in PROTOCOLS:
            (row,) = [r for r in rows if r["point_id"] == p.point_id and r["ranker"] == RANKERS[pr]]
            scores = result.protocol(pr)
            order = rank_of(scores, list(apis), 0)[1]
            assert row["top"] == [apis[i] for i in order] and row["gold_rank"] == order.index(1) + 1
            assert row["gold_logprob"] == pytest.approx(scores[1])
