"""Step 2 of scoring (plan -> encode -> batch -> score -> protocols): texts to token ids.

`Encoder` is one model's tokenizer as the scoring path uses it: the language variants of a model that marks
its inputs' language (PLBART; `pipeline.runtime.languages`), built once and held here, the tokenizer itself left
unchanged; the start-token policy of a causal LM (`pipeline.models.start`). `encode_fills` tokenizes a text
completed by each fill, with the token positions that cover the fill; `lm_eval_jobs` splits a context and its
continuations as lm-evaluation-harness does.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.models.start import StartPolicy, special_frame, start_policy
from pipeline.runtime.languages import Languages


@dataclass(frozen=True)
class Encoded:
    """A completed text, tokenized, with the token positions that cover the filled-in part."""

    ids: list[int]
    span: list[int]  # token positions overlapping the answer's characters
    exact: bool  # one token covering exactly the answer's characters


class Encoder:
    """One model's tokenizer for scoring: its per-language variants (made once, kept here), its special-token
    frame and its start-token policy (recomputed only when the tokenizer's BOS/EOS change)."""

    def __init__(self, tokenizer, model_family: str, convention: str = "pipeline"):
        self.tok = tokenizer
        self.languages = Languages(tokenizer)
        self.model_family = model_family
        self.convention = convention
        self._start: tuple[tuple, StartPolicy] | None = None

    def for_language(self, language: str | None):
        """The tokenizer that writes `language`'s code after the text (PLBART), else the tokenizer itself."""
        return self.languages.tokenizer(language)

    @property
    def start(self) -> StartPolicy:
        key = (self.tok.bos_token, self.tok.eos_token)
        if self._start is None or self._start[0] != key:
            self._start = (key, start_policy(self.tok, self.model_family, self.convention))
        return self._start[1]

    def frame(self) -> tuple[list[int], list[int]]:
        """What the tokenizer puts before and after a text (`<s>` … `</s>`, [CLS] … [SEP])."""
        return special_frame(self.tok)


def encode(tokenizer, prefix: str, fill: str, suffix: str) -> Encoded:
    return encode_fills(tokenizer, prefix, [fill], suffix)[0]


def encode_fills(tokenizer, prefix: str, fills, suffix: str) -> list[Encoded]:
    """`encode` for every fill of one item, in one tokenizer call (a fast tokenizer encodes the batch
    in one pass; the same ids and offsets as one call per fill)."""
    fills = list(fills)
    if not fills:
        return []
    enc = tokenizer([prefix + f + suffix for f in fills], return_offsets_mapping=True, add_special_tokens=True)
    out = []
    start = len(prefix)
    for fill, ids, offsets in zip(fills, enc["input_ids"], enc["offset_mapping"]):
        end = start + len(fill)
        span = [i for i, (a, b) in enumerate(offsets) if b > a and a < end and b > start]
        exact = len(span) == 1 and tuple(offsets[span[0]]) == (start, end)
        out.append(Encoded(list(ids), span, exact))
    return out


def with_bos(tokenizer, ids: list[int]) -> list[int]:
    """Causal LMs score every token given the ones before it: start with the start token (`start_policy`)
    so the first one counts too."""
    return start_policy(tokenizer, "causal-lm").apply(ids)


def lm_eval_job(tokenizer, context: str, continuation: str, prefix_token_id: int | None = None) -> tuple[list[int], int]:
    """(ids, start) as lm-evaluation-harness 0.4.13 scores `continuation` after `context` with an HF causal LM
    (`TemplateLM.loglikelihood`/`_encode_pair`, `HFLM.tok_encode` with add_bos_token unset): trailing spaces of
    the context move to the continuation; the whole text and the context are tokenized with the tokenizer's
    defaults (not adding specials when the text starts with the decoded prefix token), and the continuation's
    tokens are the whole text's tokens after the context's token count (so a merge across the boundary,
    `._`, shifts what is scored: lm-eval's handling, kept); an empty context is `prefix_token_id` (BOS, else
    EOS) unless the continuation starts with it. The score is the sum of log p over ids[start:]."""
    if prefix_token_id is None:
        prefix_token_id = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    if context == "":
        cont = tokenizer(continuation, add_special_tokens=False)["input_ids"]
        ctx, cont = ([prefix_token_id], cont) if cont[:1] != [prefix_token_id] else (cont[:1], cont[1:])
        return ctx + cont, len(ctx)
    spaces = len(context) - len(context.rstrip())
    if spaces:
        context, continuation = context[:-spaces], context[-spaces:] + continuation
    bos_text = tokenizer.decode(prefix_token_id)

    def tok_encode(text: str) -> list[int]:
        kwargs = {"add_special_tokens": False} if text.startswith(bos_text) else {}
        return tokenizer.encode(text, **kwargs)

    whole, ctx = tok_encode(context + continuation), tok_encode(context)
    return ctx + whole[len(ctx):], len(ctx)


def lm_eval_jobs(tokenizer, context: str, continuations,
                 prefix_token_id: int | None = None) -> list[tuple[list[int], int]]:
    """`lm_eval_job` for every continuation of one context: the context tokenized once and the whole
    texts in one tokenizer call per `add_special_tokens` setting (the same ids as one call each)."""
    continuations = list(continuations)
    if context == "" or not continuations:
        return [lm_eval_job(tokenizer, context, c, prefix_token_id) for c in continuations]
    if prefix_token_id is None:
        prefix_token_id = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    spaces = len(context) - len(context.rstrip())
    if spaces:
        context, continuations = context[:-spaces], [context[-spaces:] + c for c in continuations]
    bos_text = tokenizer.decode(prefix_token_id)
    texts = [context] + [context + c for c in continuations]
    plain = [not t.startswith(bos_text) for t in texts]
    ids: list[list[int] | None] = [None] * len(texts)
    for add in (True, False):
        which = [i for i, p in enumerate(plain) if p == add]
        if which:
            got = tokenizer([texts[i] for i in which], add_special_tokens=add)["input_ids"]
            for i, g in zip(which, got):
                ids[i] = list(g)
    ctx = ids[0]
    return [(ctx + whole[len(ctx):], len(ctx)) for whole in ids[1:]]
