"""Step 1 of scoring (plan -> encode -> batch -> score -> protocols): what to score for one item.

`plan_candidates` turns one item (a prefix, its fills, a suffix, the item's language) into a `CandidatePlan`:
the token-id jobs that score every fill in context, each job's fill, each fill's number of scored tokens, and
the jobs that score the same tokens without the context (the `rank_pmi` protocol). It tokenizes through the
scorer's `Encoder` (`pipeline.runtime.encode`: the item's language applied there, once per item) and runs no
model; `pipeline.runtime.scorer.score_plans` runs the jobs.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.models.zoo import sentinels
from pipeline.runtime.batching import common_prefix
from pipeline.runtime.encode import Encoder, encode_fills, lm_eval_jobs

BART_STYLE = ("bart", "plbart", "mbart")  # denoising encoder-decoders trained to rebuild the whole text


@dataclass(frozen=True)
class CandidatePlan:
    """How to score one item's fills: the jobs, the fill each job belongs to, each fill's number of
    scored tokens, the key of its no-context value (the scored token ids, shared across items: the value is
    cached per model) and the jobs that compute that value (masked LMs: one per scored token; else one)."""

    jobs: list[tuple]
    owner: list[int]
    n_tokens: tuple[int, ...]
    bare: tuple[tuple[int, ...], ...]
    bare_jobs: tuple[tuple[tuple, ...], ...]


def is_bart_style(model, tok) -> bool:
    return getattr(getattr(model, "config", None), "model_type", None) in BART_STYLE and tok.mask_token is not None


def opening_closing(tok) -> tuple[str, str]:
    """The model's first two sentinels (T5's `<extra_id_0>`, `<extra_id_1>`), else its mask token and ""."""
    found = sentinels(tok)
    return (found[0], found[1]) if len(found) >= 2 else (tok.mask_token, "")


def causal_lead(encoder: Encoder) -> list[int]:
    """What a causal LM's no-context row starts with: lm-eval's empty context (the prefix token: BOS, else
    EOS), else the start token (else what the tokenizer puts first, [CLS])."""
    tok = encoder.tok
    if encoder.convention == "lm-eval":
        return [tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id]
    return encoder.start.apply(encoder.frame()[0])


def plan_candidates(scorer, model_family: str, prefix: str, fills, suffix: str,
                    language: str | None = None) -> CandidatePlan | None:
    """The scoring jobs that rank `fills` as completions of `prefix … suffix`; None when a completed
    text is longer than the model takes. `scorer`: a `pipeline.runtime.scorer.Scorer` (its encoder, model
    and max_length are read). `language`: the item's (python, java, ...): a model that marks its inputs'
    language (PLBART: `… </s> __java__`) gets that item's code (`Encoder.for_language`).
    What is scored (the "scored tokens") and what the context is:

    masked-lm: each token overlapping the fill masked in turn, the rest visible (pseudo-log-likelihood);
    scored: the fill's tokens; context: the prefix and the suffix.
    causal-lm: the completed text after the start token (`start_policy`: BOS unless it is a chat token);
    under the `lm-eval` convention lm-evaluation-harness's split instead (`lm_eval_job`); scored: the tokens from the first one overlapping the
    fill to the end (the fill and the suffix, which follows from it), from earlier where the fills
    tokenize the end of the prefix differently (from the first token not shared by all of them);
    context: the tokens before.
    encoder-decoder, BART-style (`BART_STYLE`: BART, PLBART, mBART): the whole completed text as the
    target (their text-infilling objective rebuilds the whole text) for the source with the mask token in
    the fill's place; scored: every target token.
    encoder-decoder, others: the fill between the model's first two sentinels (T5's span-corruption target)
    for the text with the first sentinel (or mask) in its place; scored: the target's tokens; context:
    the source's prefix and suffix.

    Without the context (`bare_jobs`): causal-lm: the scored tokens after BOS alone (or after what the
    tokenizer puts before a text, [CLS]; lm-eval: its empty context); masked-lm: the scored tokens alone
    between the tokenizer's special tokens (<s> … </s>), each masked in turn; encoder-decoder: the same target
    for a source that is the first sentinel alone (`<extra_id_0></s>`, in the item's language)."""
    encoder: Encoder = scorer.encoder
    max_length = scorer.max_length
    if model_family == "causal-lm" and encoder.convention == "lm-eval":
        jobs = lm_eval_jobs(encoder.tok, prefix, [f + suffix for f in fills])
        if any(len(ids) > max_length for ids, _ in jobs):
            return None
        return _plan(encoder, model_family, jobs, list(range(len(fills))), tuple(len(ids) - start for ids, start in jobs),
                     tuple(tuple(ids[start:]) for ids, start in jobs))
    tok = encoder.for_language(language)
    encs = encode_fills(tok, prefix, fills, suffix)
    if model_family == "causal-lm":
        start = encoder.start
        rows = [start.apply(e.ids) for e in encs]
        if any(len(r) > max_length for r in rows):
            return None
    elif any(len(e.ids) > max_length for e in encs):
        return None
    if model_family == "masked-lm":
        jobs, owner = [], []
        for c, e in enumerate(encs):
            for pos in e.span:
                ids = list(e.ids)
                ids[pos] = encoder.tok.mask_token_id
                jobs.append((ids, pos, e.ids[pos]))
                owner.append(c)
        return _plan(encoder, model_family, jobs, owner, tuple(len(e.span) for e in encs),
                     tuple(tuple(e.ids[p] for p in e.span) for e in encs))
    if model_family == "causal-lm":
        # the tokens before `start` are the same for every fill: a fill can change how the end of the
        # prefix is tokenized (`…Middle` + `tream` vs + `Write`), and those tokens are scored too
        shared = common_prefix(rows)
        jobs = []
        for e, ids in zip(encs, rows):
            shift = len(ids) - len(e.ids)
            first = max(1, min((e.span[0] if e.span else len(e.ids) - 1) + shift, shared))
            jobs.append((ids, first))
        return _plan(encoder, model_family, jobs, list(range(len(encs))), tuple(len(ids) - s for ids, s in jobs),
                     tuple(tuple(ids[s:]) for ids, s in jobs))
    opening, closing = opening_closing(encoder.tok)
    bare_source = tok(opening)["input_ids"]  # the no-context source, in the item's language
    if is_bart_style(scorer.model, encoder.tok):
        # BART/PLBART's text infilling: the source with the mask in the fill's place, the target the whole
        # completed text in the tokenizer's format (BART `<s> … </s>`, PLBART `… </s> [language code]`)
        source = tok(prefix.rstrip(" ") + tok.mask_token + suffix)["input_ids"]
        targets = [tok(prefix + f + suffix)["input_ids"] for f in fills]
        if len(source) > max_length or any(len(t) > max_length for t in targets):
            return None
    else:
        # T5's format: `prefix <extra_id_0> suffix` -> `<extra_id_0> fill <extra_id_1>`: the next sentinel
        # closes the span, and nothing after it is scored (what follows it in training is the next span or
        # </s>, the same for every fill); a model without sentinels gets its mask token and </s>
        # the prefix's trailing spaces go with the fill: byte-level BPE spells " scale" as one token `Ġscale`
        kept = prefix.rstrip(" ")
        source = tok(kept + opening + suffix)["input_ids"]
        space = prefix[len(kept):]
        targets = [tok(opening + space + f + closing, add_special_tokens=not closing)["input_ids"] for f in fills]
    return CandidatePlan([(source, t) for t in targets], list(range(len(fills))), tuple(len(t) for t in targets),
                         tuple(tuple(t) for t in targets), tuple(((bare_source, list(t)),) for t in targets))


def _plan(encoder: Encoder, model_family: str, jobs: list[tuple], owner: list[int], n_tokens: tuple[int, ...],
          bare: tuple[tuple[int, ...], ...]) -> CandidatePlan:
    """A masked or causal LM's plan, with the no-context jobs of its scored-token keys."""
    if model_family == "masked-lm":
        lead, trail = encoder.frame()
        mask = encoder.tok.mask_token_id
        bare_jobs = []
        for k in bare:
            ids = lead + list(k) + trail
            bare_jobs.append(tuple((ids[:p] + [mask] + ids[p + 1:], p, ids[p])
                                   for p in range(len(lead), len(lead) + len(k))))
    else:
        lead = causal_lead(encoder)
        first = max(len(lead), 1)  # no start token: the first token is not scored
        bare_jobs = [((lead + list(k), first),) for k in bare]
    return CandidatePlan(jobs, owner, n_tokens, bare, tuple(bare_jobs))


def candidate_jobs(scorer, model_family: str, prefix: str, fills, suffix: str) -> tuple[list[tuple], list[int]] | None:
    """`plan_candidates`' jobs and owners only (causal jobs are `(ids, start)`)."""
    plan = plan_candidates(scorer, model_family, prefix, fills, suffix)
    return None if plan is None else (plan.jobs, plan.owner)
