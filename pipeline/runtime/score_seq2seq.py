"""Step 4 of scoring, encoder-decoder models: log p(target | source). A method of
`pipeline.runtime.scorer.Scorer`, which sets what it reads: `model`, `pad`, `device`, `batch_size`, `budget`.
"""

from __future__ import annotations

import torch

from pipeline.runtime.batching import length_sorted_batches, padded


class Seq2SeqScoring:
    """The encoder-decoder models' score path of a `Scorer`."""

    @torch.inference_mode()
    def seq2seq_logprob(self, jobs: list[tuple[list[int], list[int]]]) -> list[float]:
        """Encoder-decoder models: log p(target | source) summed over the target tokens. Within a
        batch the encoder runs once per distinct source (an item's candidates share one) and its
        states are repeated for the rows that read them; only the decoder runs per candidate."""
        from transformers.modeling_outputs import BaseModelOutput

        out = [0.0] * len(jobs)
        indexed = list(range(len(jobs)))
        encoder = self.model.get_encoder()
        lengths = [len(jobs[i][0]) + len(jobs[i][1]) for i in indexed]
        for batch in length_sorted_batches(indexed, lengths, self.batch_size, self.budget):
            distinct: dict[tuple[int, ...], int] = {}
            row_of = [distinct.setdefault(tuple(jobs[i][0]), len(distinct)) for i in batch]
            src, src_mask = padded([list(s) for s in distinct], self.pad, self.device)
            states = encoder(input_ids=src, attention_mask=src_mask).last_hidden_state
            pick = torch.tensor(row_of, device=states.device)
            tgt, tgt_mask = padded([jobs[i][1] for i in batch], self.pad, self.device)
            labels = tgt.masked_fill(tgt_mask == 0, -100)
            logits = self.model(encoder_outputs=BaseModelOutput(last_hidden_state=states[pick]),
                                attention_mask=src_mask[pick], labels=labels).logits.float()
            logp = torch.log_softmax(logits, dim=-1).gather(-1, tgt[..., None]).squeeze(-1) * tgt_mask
            for j, i in enumerate(batch):
                out[i] = float(logp[j].sum())
        return out
