"""Log-likelihood scoring primitives shared by every family that scores text with an LM.

- `Scorer.masked_position_logprobs`: the log-softmax over the vocabulary at a masked position
  (fill-mask ranks; pseudo-log-likelihood is the sum of these at each masked candidate token);
- `Scorer.masked_token_logprobs`: the log-probability of one given token at a masked position
  (pseudo-log-likelihood terms), the LM head applied at that position only;
- `Scorer.sequence_logprob`: causal LMs, sum of log p(token | prefix) over a sequence;
- `Scorer.shared_prefix_logprob`: for groups of sequences that share a token prefix (one item's
  candidates), log p(own tokens | prefix): the prefix runs once with the KV cache, which is
  expanded over the group, and only each sequence's own tokens run again (the same ranks as
  `sequence_logprob`, whose sums add the prefix's log-probability, a constant per group);
- `Scorer.seq2seq_logprob`: encoder-decoder models, log p(target | source);
- `encode`: a completed text tokenized, with the token positions covering the filled-in part;
- `rank_of`: ranks that do not depend on batch size or device (scores rounded, ties by name).
Batches are length-sorted under the token budget (pipeline.runtime.batching).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

from pipeline.models.zoo import sentinels
from pipeline.runtime.batching import length_sorted_batches

SCORE_DECIMALS = 4


@dataclass(frozen=True)
class Encoded:
    """A completed text, tokenized, with the token positions that cover the filled-in part."""

    ids: list[int]
    span: list[int]  # token positions overlapping the answer's characters
    exact: bool  # one token covering exactly the answer's characters


def encode(tokenizer, prefix: str, fill: str, suffix: str) -> Encoded:
    text = prefix + fill + suffix
    enc = tokenizer(text, return_offsets_mapping=True, add_special_tokens=True)
    start, end = len(prefix), len(prefix) + len(fill)
    span = [i for i, (a, b) in enumerate(enc["offset_mapping"]) if b > a and a < end and b > start]
    exact = len(span) == 1 and tuple(enc["offset_mapping"][span[0]]) == (start, end)
    return Encoded(enc["input_ids"], span, exact)


def with_bos(tokenizer, ids: list[int]) -> list[int]:
    """Causal LMs score every token given the ones before it: start with BOS so the first one counts too."""
    bos = tokenizer.bos_token_id
    return [bos] + ids if bos is not None and ids[:1] != [bos] else ids


def rank_of(scores: list[float], names: list[str], gold: int) -> tuple[int, list[int]]:
    """1-based rank of `gold` and the order of all items: by rounded score, then by name."""
    order = sorted(range(len(scores)), key=lambda i: (-round(scores[i], SCORE_DECIMALS), names[i]))
    return order.index(gold) + 1, order


class Scorer:
    """Runs one model over batches of token id lists; every method returns log-probabilities."""

    def __init__(self, loaded, token_budget: int, prefix_cache: bool = True, head_only: bool = True):
        self.model = loaded.model
        self.tok = loaded.tokenizer
        self.device = loaded.device
        self.batch_size = loaded.entry.batch_size
        self.max_length = loaded.entry.max_length
        self.budget = token_budget
        self.pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else 0
        self.prefix_cache = prefix_cache  # causal LMs: share each item's token prefix through the KV cache
        self._head = _masked_lm_head(self.model) if head_only else None  # masked LMs: the head at the mask only

    def _pad(self, rows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self.pad, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = torch.tensor(r)
            mask[i, : len(r)] = 1
        return ids.to(self.device), mask.to(self.device)

    def _batches(self, jobs: list, lengths: list[int]):
        return length_sorted_batches(jobs, lengths, self.batch_size, self.budget)

    @torch.inference_mode()
    def masked_position_logprobs(self, jobs: list[tuple[list[int], int]]) -> list[torch.Tensor]:
        """For (ids with the mask in place, position): the log-softmax over the vocabulary there."""
        out: list[torch.Tensor | None] = [None] * len(jobs)
        indexed = list(range(len(jobs)))
        for batch in self._batches(indexed, [len(jobs[i][0]) for i in indexed]):
            ids, mask = self._pad([jobs[i][0] for i in batch])
            logits = self.model(input_ids=ids, attention_mask=mask).logits.float()
            pos = torch.tensor([jobs[i][1] for i in batch], device=logits.device)
            rows = torch.log_softmax(logits[torch.arange(len(batch)), pos], dim=-1).cpu()
            for j, i in enumerate(batch):
                out[i] = rows[j]
        return out  # type: ignore[return-value]

    @torch.inference_mode()
    def masked_token_logprobs(self, jobs: list[tuple[list[int], int, int]]) -> list[float]:
        """For (ids with the mask in place, position, token): log p(token) at that position. The
        encoder runs once per batch and the LM head only at the masked positions (when the model's
        head can be split off: RoBERTa's `lm_head`, BERT's `cls`); else the full logits. Jobs whose
        masked text and position are the same (every single-token candidate of one item: the text
        with one mask where the fill goes) run once, and each reads its own token off that row."""
        out = [0.0] * len(jobs)
        unique: dict[tuple[tuple[int, ...], int], int] = {}
        readers: list[list[int]] = []
        for i, (ids, pos, _token) in enumerate(jobs):
            key = (tuple(ids), pos)
            if key not in unique:
                unique[key] = len(readers)
                readers.append([])
            readers[unique[key]].append(i)
        first = [r[0] for r in readers]  # the job that stands for each distinct masked text
        for batch in self._batches(list(range(len(first))), [len(jobs[i][0]) for i in first]):
            ids, mask = self._pad([jobs[first[u]][0] for u in batch])
            pos = torch.tensor([jobs[first[u]][1] for u in batch], device=ids.device)
            rows = torch.arange(len(batch), device=ids.device)
            if self._head is not None:
                base, head = self._head
                hidden = base(input_ids=ids, attention_mask=mask).last_hidden_state[rows, pos]
                logits = head(hidden).float()
            else:
                logits = self.model(input_ids=ids, attention_mask=mask).logits[rows, pos].float()
            logp = torch.log_softmax(logits, dim=-1)
            row_of = [j for j, u in enumerate(batch) for _ in readers[u]]
            target = [jobs[i][2] for u in batch for i in readers[u]]
            lp = logp[torch.tensor(row_of, device=logp.device), torch.tensor(target, device=logp.device)].cpu()
            at = 0
            for u in batch:
                for i in readers[u]:
                    out[i] = float(lp[at])
                    at += 1
        return out

    @torch.inference_mode()
    def shared_prefix_logprob(self, groups: list[list[list[int]]]) -> list[list[float]]:
        """Causal LMs, for groups of sequences that share a token prefix (one item's candidates):
        log p(each sequence's own tokens | the shared prefix). The longest common prefix (at least
        one own token left per sequence) runs once with `use_cache=True` and logits at its last
        position only; its KV cache is repeated over the group's sequences (in batches under the
        token budget) and only their own tokens run. The plain path's `sequence_logprob` differs by
        the prefix's log-probability, the same for every sequence of a group, so ranks within a
        group are the same. Groups with less than two shared tokens take the plain path (whole
        sequences: there the prefix is counted)."""
        out: list[list[float]] = []
        plain: list[int] = []
        for g, rows in enumerate(groups):
            out.append([])
            n = _common_prefix(rows)
            if n < 2:
                plain.append(g)
                continue
            prefix = torch.tensor([rows[0][:n]], device=self.device)
            res = self.model(input_ids=prefix, use_cache=True, logits_to_keep=1)
            if res.past_key_values is None:
                plain.append(g)
                continue
            last = torch.log_softmax(res.logits[0, -1].float(), dim=-1)
            scores = [0.0] * len(rows)
            indexed = list(range(len(rows)))
            for batch in self._batches(indexed, [len(rows[i]) for i in indexed]):
                ids, mask = self._pad([rows[i][n:] for i in batch])
                cache = copy.deepcopy(res.past_key_values)
                cache.batch_repeat_interleave(len(batch))
                attn = torch.cat([torch.ones((len(batch), n), dtype=mask.dtype, device=mask.device), mask], dim=1)
                lp = torch.log_softmax(self.model(input_ids=ids, attention_mask=attn, past_key_values=cache,
                                                  use_cache=True).logits.float(), dim=-1)
                own = lp[:, :-1].gather(-1, ids[:, 1:, None]).squeeze(-1) * mask[:, 1:]
                first = last[ids[:, 0]]
                for j, i in enumerate(batch):
                    scores[i] = float(first[j]) + float(own[j].sum())
            out[g] = scores
        if plain:
            flat = [r for g in plain for r in groups[g]]
            values = self.sequence_logprob(flat)
            at = 0
            for g in plain:
                out[g] = values[at: at + len(groups[g])]
                at += len(groups[g])
        return out

    @torch.inference_mode()
    def sequence_logprob(self, rows: list[list[int]]) -> list[float]:
        """Causal LMs: sum of log p(token | tokens before it) over each sequence."""
        out = [0.0] * len(rows)
        indexed = list(range(len(rows)))
        for batch in self._batches(indexed, [len(rows[i]) for i in indexed]):
            ids, mask = self._pad([rows[i] for i in batch])
            logp = torch.log_softmax(self.model(input_ids=ids, attention_mask=mask).logits.float(), dim=-1)
            tok = logp[:, :-1].gather(-1, ids[:, 1:, None]).squeeze(-1) * mask[:, 1:]
            for j, i in enumerate(batch):
                out[i] = float(tok[j].sum())
        return out

    @torch.inference_mode()
    def seq2seq_logprob(self, jobs: list[tuple[list[int], list[int]]]) -> list[float]:
        """Encoder-decoder models: log p(target | source) summed over the target tokens. Within a
        batch the encoder runs once per distinct source (an item's candidates share one) and its
        states are repeated for the rows that read them; only the decoder runs per candidate."""
        from transformers.modeling_outputs import BaseModelOutput

        out = [0.0] * len(jobs)
        indexed = list(range(len(jobs)))
        encoder = self.model.get_encoder()
        for batch in self._batches(indexed, [len(jobs[i][0]) + len(jobs[i][1]) for i in indexed]):
            distinct: dict[tuple[int, ...], int] = {}
            row_of = [distinct.setdefault(tuple(jobs[i][0]), len(distinct)) for i in batch]
            src, src_mask = self._pad([list(s) for s in distinct])
            states = encoder(input_ids=src, attention_mask=src_mask).last_hidden_state
            pick = torch.tensor(row_of, device=states.device)
            tgt, tgt_mask = self._pad([jobs[i][1] for i in batch])
            labels = tgt.masked_fill(tgt_mask == 0, -100)
            logits = self.model(encoder_outputs=BaseModelOutput(last_hidden_state=states[pick]),
                                attention_mask=src_mask[pick], labels=labels).logits.float()
            logp = torch.log_softmax(logits, dim=-1).gather(-1, tgt[..., None]).squeeze(-1) * tgt_mask
            for j, i in enumerate(batch):
                out[i] = float(logp[j].sum())
        return out


def _common_prefix(rows: list[list[int]]) -> int:
    """Tokens every row starts with, leaving each row at least one of its own."""
    n = min(len(r) for r in rows) - 1
    first = rows[0]
    for r in rows[1:]:
        k = 0
        while k < n and r[k] == first[k]:
            k += 1
        n = k
    return max(n, 0)


def _masked_lm_head(model):
    """(encoder, head) of a masked LM whose head can run on selected positions only, else None."""
    for base_name, head_name in (("roberta", "lm_head"), ("bert", "cls"), ("distilbert", None)):
        base, head = getattr(model, base_name, None), getattr(model, head_name, None) if head_name else None
        if base is not None and head is not None:
            return base, head
    return None


def candidate_jobs(scorer: Scorer, model_family: str, prefix: str, fills, suffix: str) -> tuple[list[tuple], list[int]] | None:
    """The scoring jobs that rank `fills` as completions of `prefix … suffix`, and the fill each job
    belongs to; None when a completed text is longer than the model takes.

    masked-lm: one job per token of the fill, that token masked, the rest visible (pseudo-log-likelihood);
    causal-lm: the whole completed text (BOS first); encoder-decoder: the fill between the model's first
    two sentinels (T5's span-corruption target) for the text with the first sentinel (or mask) in its place."""
    encs = [encode(scorer.tok, prefix, f, suffix) for f in fills]
    extra = 1 if model_family == "causal-lm" and scorer.tok.bos_token_id is not None else 0  # with_bos's token
    if any(len(e.ids) + (extra if e.ids[:1] != [scorer.tok.bos_token_id] else 0) > scorer.max_length for e in encs):
        return None
    if model_family == "masked-lm":
        jobs, owner = [], []
        for c, e in enumerate(encs):
            for pos in e.span:
                ids = list(e.ids)
                ids[pos] = scorer.tok.mask_token_id
                jobs.append((ids, pos, e.ids[pos]))
                owner.append(c)
        return jobs, owner
    if model_family == "causal-lm":
        return [(with_bos(scorer.tok, e.ids),) for e in encs], list(range(len(encs)))
    # T5's format: `prefix <extra_id_0> suffix` -> `<extra_id_0> fill <extra_id_1>`: the next sentinel
    # closes the span, and nothing after it is scored (what follows it in training is the next span or
    # </s>, the same for every fill); a model without sentinels gets its mask token and </s>
    opening, closing = (sentinels(scorer.tok) + ["", ""])[:2] if len(sentinels(scorer.tok)) >= 2 else (scorer.tok.mask_token, "")
    # the prefix's trailing spaces go with the fill: byte-level BPE spells " scale" as one token `Ġscale`
    kept = prefix.rstrip(" ")
    source = scorer.tok(kept + opening + suffix)["input_ids"]
    space = prefix[len(kept):]
    targets = [scorer.tok(opening + space + f + closing, add_special_tokens=not closing)["input_ids"] for f in fills]
    return [(source, t) for t in targets], list(range(len(fills)))


def score_candidates(scorer: Scorer, model_family: str, plans: list[tuple[list[tuple], list[int], int]]) -> list[list[float]]:
    """Each plan's (jobs, owner, number of fills) -> the log-likelihood of every fill. All jobs of all
    plans run in one pass, so batches mix items and stay full."""
    flat = [job for jobs, _, _ in plans for job in jobs]
    if model_family == "masked-lm":
        values = scorer.masked_token_logprobs(flat)
    elif model_family == "causal-lm" and scorer.prefix_cache:
        values = [v for group in scorer.shared_prefix_logprob([[job[0] for job in jobs] for jobs, _, _ in plans])
                  for v in group]
    elif model_family == "causal-lm":
        values = scorer.sequence_logprob([job[0] for job in flat])
    else:
        values = scorer.seq2seq_logprob(flat)
    out, at = [], 0
    for jobs, owner, n in plans:
        scores = [0.0] * n
        for c, v in zip(owner, values[at : at + len(jobs)]):
            scores[c] += v
        at += len(jobs)
        out.append(scores)
    return out
