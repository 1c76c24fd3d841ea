"""Step 4 of scoring (plan -> encode -> batch -> score -> protocols): run the planned jobs through the model.

`Scorer` is one model with its scoring settings and caches; its methods are the score paths, one file per
model family, each batching its jobs by length under the token budget (`pipeline.runtime.batching`):
- masked LMs (`pipeline.runtime.score_masked`): `masked_token_logprobs`, the pseudo-log-likelihood terms (every
  layer but the last on all positions, the last layer and the LM head at the masked position only), and
  `masked_position_logprobs`, the log-softmax over the vocabulary at a masked position (fill-mask ranks);
- causal LMs (`pipeline.runtime.score_causal`): `tree_logprob` (an item's candidates as one token tree per
  forward pass), `shared_prefix_logprob` (the shared prefix once through the KV cache), `sequence_logprob`
  (whole sequences); the LM head on the scored positions only;
- encoder-decoder models (`pipeline.runtime.score_seq2seq`): `seq2seq_logprob`, the encoder once per source.
`score_plans` runs every plan's jobs (`pipeline.runtime.plan`) through the path of the model family in one
pass, so batches mix items and stay full, and the no-context jobs of the scored-token keys this scorer has not
seen; it returns each item's `CandidateScores` (`pipeline.runtime.protocols`), which the ranking protocols read.
"""

from __future__ import annotations

import torch

from pipeline.runtime.encode import Encoder
from pipeline.runtime.plan import CandidatePlan
from pipeline.runtime.protocols import CandidateScores
from pipeline.runtime.score_causal import MIN_SHARED_PREFIX, CausalScoring, causal_lm_head, tree_capable
from pipeline.runtime.score_masked import MaskedScoring, masked_last_layer, masked_lm_head
from pipeline.runtime.score_seq2seq import Seq2SeqScoring


class Scorer(MaskedScoring, CausalScoring, Seq2SeqScoring):
    """Runs one model over batches of token id lists; every method returns log-probabilities."""

    def __init__(self, loaded, token_budget: int, prefix_cache: bool = True, head_only: bool = True,
                 min_shared_prefix: int | None = None, tree: bool | None = None, last_layer_at_mask: bool = True):
        self.model = loaded.model
        self.tok = loaded.tokenizer
        self.device = loaded.device
        self.batch_size = loaded.entry.batch_size
        self.max_length = loaded.entry.max_length
        self.budget = token_budget
        self.pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else 0
        self.model_family = loaded.entry.model_family
        self.convention = getattr(loaded.entry, "scoring", "pipeline")
        # the tokenizer as plans use it: its language variants made once, its start-token policy
        self.encoder = Encoder(self.tok, self.model_family, self.convention)
        self.prefix_cache = prefix_cache  # causal LMs: share each item's token prefix through the KV cache
        self._head = masked_lm_head(self.model) if head_only else None  # masked LMs: the head at the mask only
        # masked LMs: the last layer too at the mask only (`MASKED_LAST_LAYER`), its keys and values from every position
        self._last_layer = masked_last_layer(self.model) if head_only and last_layer_at_mask else None
        self._causal = causal_lm_head(self.model) if head_only else None  # causal LMs: the head where scored
        # causal LMs: groups whose shared prefix is shorter than this take the plain path (the KV-cache
        # path's cache copy and second call cost more than re-running a few tokens; docs/scaling.md)
        self.min_shared_prefix = MIN_SHARED_PREFIX if min_shared_prefix is None else min_shared_prefix
        self._no_context: dict[tuple[int, ...], float] = {}  # the no-context pass's cache: scored tokens -> value
        # causal LMs: each item's candidates as one token tree per forward pass (`tree_logprob`); None: where
        # the architecture takes it (`TREE_MODELS`) and the prefix cache is not switched off
        self.tree = (prefix_cache and tree_capable(self.model)) if tree is None else (tree and tree_capable(self.model))
        self._tree_rows: dict[tuple, list[float]] = {}  # tree_logprob's cache: a row's content -> its sums
        self.tree_batched = torch.device(self.device).type != "cpu"  # trees of several items in one pass

    @property
    def start(self):
        """The start-token policy of this model (`Encoder.start`)."""
        return self.encoder.start


def _sum_by_owner(plans, values) -> list[list[float]]:
    out, at = [], 0
    for jobs, owner, n in plans:
        scores = [0.0] * n
        for c, v in zip(owner, values[at : at + len(jobs)]):
            scores[c] += v
        at += len(jobs)
        out.append(scores)
    return out


def _start(job: tuple) -> int:
    return job[1] if len(job) > 1 else 1


def score_candidates(scorer: Scorer, model_family: str, plans: list[tuple[list[tuple], list[int], int]]) -> list[list[float]]:
    """Each plan's (jobs, owner, number of fills) -> the summed log-likelihood of every fill's scored
    tokens. All jobs of all plans run in one pass, so batches mix items and stay full."""
    flat = [job for jobs, _, _ in plans for job in jobs]
    if model_family == "masked-lm":
        values = scorer.masked_token_logprobs(flat)
    elif model_family == "causal-lm" and scorer.tree:
        values = [v for group in scorer.tree_logprob([[job[0] for job in jobs] for jobs, _, _ in plans],
                                                     [[_start(job) for job in jobs] for jobs, _, _ in plans])
                  for v in group]
    elif model_family == "causal-lm" and scorer.prefix_cache:
        values = [v for group in scorer.shared_prefix_logprob([[job[0] for job in jobs] for jobs, _, _ in plans],
                                                              [[_start(job) for job in jobs] for jobs, _, _ in plans])
                  for v in group]
    elif model_family == "causal-lm":
        values = scorer.sequence_logprob([job[0] for job in flat], [_start(job) for job in flat])
    else:
        values = scorer.seq2seq_logprob(flat)
    return _sum_by_owner(plans, values)


def no_context_logprobs(scorer: Scorer, model_family: str, plans: list[CandidatePlan]) -> list[tuple[float, ...]]:
    """Per plan, each fill's scored tokens' log-likelihood without the context (the plan's `bare_jobs`;
    `plan_candidates` says what "without the context" is per model family), cached on the scorer (one model)
    by the scored tokens across items and chunks: candidates repeat across quizzes. Keys not seen before run
    in sorted order. Causal LMs on the tree path: each item's no-context rows as one token tree
    (`tree_logprob`), so a value is a function of its item alone (items with the same fills and suffix reuse
    the row's sums)."""
    if model_family == "causal-lm" and scorer.tree:
        groups = scorer.tree_logprob([[jobs[0][0] for jobs in p.bare_jobs] for p in plans],
                                     [[jobs[0][1] for jobs in p.bare_jobs] for p in plans])
        return [tuple(g) for g in groups]
    cache = scorer._no_context
    jobs_of: dict[tuple[int, ...], tuple[tuple, ...]] = {}
    for p in plans:
        for k, jobs in zip(p.bare, p.bare_jobs):
            if k not in cache:
                jobs_of.setdefault(k, jobs)
    todo = sorted(jobs_of)
    if todo:
        if model_family == "masked-lm":
            flat = [job for k in todo for job in jobs_of[k]]
            owner = [c for c, k in enumerate(todo) for _ in jobs_of[k]]
            values = _sum_by_owner([(flat, owner, len(todo))], scorer.masked_token_logprobs(flat))[0]
        elif model_family == "causal-lm":
            values = scorer.sequence_logprob([jobs_of[k][0][0] for k in todo], [jobs_of[k][0][1] for k in todo])
        else:
            values = scorer.seq2seq_logprob([jobs_of[k][0] for k in todo])
        cache.update(zip(todo, values))
    return [tuple(cache[k] for k in p.bare) for p in plans]


def score_plans(scorer: Scorer, model_family: str, plans: list[CandidatePlan],
                no_context: bool = True) -> list[CandidateScores]:
    """Every plan's fills scored in one pass (`score_candidates`), plus the no-context pass over the
    distinct scored-token keys not seen before by this scorer (`no_context_logprobs`) when asked."""
    sums = score_candidates(scorer, model_family, [(p.jobs, p.owner, len(p.n_tokens)) for p in plans])
    bare = no_context_logprobs(scorer, model_family, plans) if no_context else None
    return [CandidateScores(tuple(s), p.n_tokens, None if bare is None else bare[i])
            for i, (p, s) in enumerate(zip(plans, sums))]
