"""Step 4 of scoring, masked LMs: the pseudo-log-likelihood terms (`masked_token_logprobs`) and the log-softmax
over the vocabulary at a masked position (`masked_position_logprobs`, fill-mask ranks). Methods of
`pipeline.runtime.scorer.Scorer`, which sets what they read: `model`, `pad`, `device`, `batch_size`, `budget`,
`_head` (`masked_lm_head`) and `_last_layer` (`masked_last_layer`).
"""

from __future__ import annotations

import torch

from pipeline.runtime.batching import length_sorted_batches, padded


class MaskedScoring:
    """The masked LMs' score paths of a `Scorer`."""

    @torch.inference_mode()
    def masked_position_logprobs(self, jobs: list[tuple[list[int], int]]) -> list[torch.Tensor]:
        """For (ids with the mask in place, position): the log-softmax over the vocabulary there."""
        out: list[torch.Tensor | None] = [None] * len(jobs)
        indexed = list(range(len(jobs)))
        for batch in length_sorted_batches(indexed, [len(jobs[i][0]) for i in indexed], self.batch_size, self.budget):
            ids, mask = padded([jobs[i][0] for i in batch], self.pad, self.device)
            logits = self.model(input_ids=ids, attention_mask=mask).logits.float()
            pos = torch.tensor([jobs[i][1] for i in batch], device=logits.device)
            rows = torch.log_softmax(logits[torch.arange(len(batch)), pos], dim=-1).cpu()
            for j, i in enumerate(batch):
                out[i] = rows[j]
        return out  # type: ignore[return-value]

    @torch.inference_mode()
    def masked_token_logprobs(self, jobs: list[tuple[list[int], int, int]]) -> list[float]:
        """For (ids with the mask in place, position, token): log p(token) at that position. Every layer
        but the last runs on every position, the last layer (its query, attention output and FFN; its keys
        and values from every position) and the LM head at the masked position only, through the model's
        own modules (`hidden_at_mask`, on the architectures of `MASKED_LAST_LAYER`: BERT, RoBERTa, pre-LN
        RoBERTa); other masked LMs run the whole encoder and the head at the masked positions only (when
        it can be split off), else the full logits. Jobs whose
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
        for batch in length_sorted_batches(list(range(len(first))), [len(jobs[i][0]) for i in first], self.batch_size,
                                           self.budget):
            ids, mask = padded([jobs[first[u]][0] for u in batch], self.pad, self.device)
            pos = torch.tensor([jobs[first[u]][1] for u in batch], device=ids.device)
            rows = torch.arange(len(batch), device=ids.device)
            if self._last_layer is not None:
                base, head, pre_ln = self._last_layer
                logits = head(hidden_at_mask(base, pre_ln, ids, mask, pos)).float()
            elif self._head is not None:
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


# Masked LMs whose last layer runs at the masked positions only (`hidden_at_mask`): model_type -> pre-layer-norm
# (pre-LN RoBERTa normalises before attention and FFN and once after the last layer; BERT and RoBERTa after each).
# The last layer's query, attention output and FFN at one position of each row instead of all: ~40% of a 2-layer
# encoder's work. Its output differs from the full pass's by float rounding only (up to ~1e-6 on a PLL: the
# attention with one query row and the smaller matmuls sum in another order); tests/test_scoring_cache.py
# checks each architecture against the full logits.
MASKED_LAST_LAYER = {"bert": False, "roberta": False, "roberta-prelayernorm": True}


def masked_last_layer(model):
    """(encoder, head, pre_ln) of a masked LM whose last layer can run at the masked positions only, else None
    (an architecture not in `MASKED_LAST_LAYER`, a decoder or cross-attention configuration, relative positions)."""
    config = getattr(model, "config", None)
    kind = getattr(config, "model_type", None)
    if kind not in MASKED_LAST_LAYER or getattr(config, "is_decoder", False) or \
            getattr(config, "add_cross_attention", False) or \
            getattr(config, "position_embedding_type", "absolute") not in (None, "absolute"):
        return None
    split = masked_lm_head(model)
    if split is None or not len(getattr(getattr(split[0], "encoder", None), "layer", ())):
        return None
    return split[0], split[1], MASKED_LAST_LAYER[kind]


def hidden_at_mask(base, pre_ln: bool, ids: torch.Tensor, mask: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """[rows, hidden]: the encoder's last hidden state at position pos[r] of row r, with the model's own
    modules: the embeddings and every layer but the last on all positions (what `base(...)` runs, with its
    bidirectional mask); then the last layer at pos only: its query from that position, its keys and values
    from every position (the attention function the model is configured with, a one-row mask made by the
    same mask factory as cross-attention's), its attention output, its FFN (`feed_forward_chunk`), and for
    pre-LN RoBERTa the encoder's final layer norm."""
    import sys

    from transformers.masking_utils import create_bidirectional_mask
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    rows = torch.arange(len(pos), device=ids.device)
    hidden = base.embeddings(input_ids=ids)
    every = create_bidirectional_mask(config=base.config, inputs_embeds=hidden, attention_mask=mask)
    *lower, last = base.encoder.layer
    for layer in lower:
        hidden = layer(hidden, every)
    attention = last.attention
    x = attention.LayerNorm(hidden) if pre_ln else hidden
    at = x[rows, pos][:, None]  # [rows, 1, hidden]: the masked position's input
    own = attention.self
    n, width = x.shape[0], x.shape[1]
    query = own.query(at).view(n, 1, -1, own.attention_head_size).transpose(1, 2)
    key = own.key(x).view(n, width, -1, own.attention_head_size).transpose(1, 2)
    value = own.value(x).view(n, width, -1, own.attention_head_size).transpose(1, 2)
    one = create_bidirectional_mask(config=base.config, inputs_embeds=at, attention_mask=mask, encoder_hidden_states=x)
    eager = sys.modules[type(own).__module__].eager_attention_forward  # the module's own default
    interface = ALL_ATTENTION_FUNCTIONS.get_interface(own.config._attn_implementation, eager)
    out, _ = interface(own, query, key, value, one, dropout=0.0, scaling=own.scaling)
    out = attention.output(out.reshape(n, 1, -1).contiguous(), hidden[rows, pos][:, None])
    out = last.feed_forward_chunk(out)
    if pre_ln:
        out = base.LayerNorm(out)
    return out[:, 0]


def masked_lm_head(model):
    """(encoder, head) of a masked LM whose head can run on selected positions only, else None."""
    for base_name, head_name in (("roberta", "lm_head"), ("roberta_prelayernorm", "lm_head"), ("bert", "cls"),
                                 ("distilbert", None)):
        base, head = getattr(model, base_name, None), getattr(model, head_name, None) if head_name else None
        if base is not None and head is not None:
            return base, head
    return None
