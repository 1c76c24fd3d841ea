"""CodeSyntax zero-shot attention evaluation for one model and one shard of samples.

For every relation edge and every attention head: rank the words of the sample by the
attention that flows from the head word, and count a hit at k when the dependent is in the
top k. Subtoken attention becomes word attention as SPEC.md says: attention TO a word is the
sum over its subtokens, FROM a word the mean of its subtokens' rows; special tokens and
whitespace tokens (NEWLINE, INDENT, ...: no subtokens) are never candidates; self-attention is
ignored. Only the rows of head words are ever computed, on the fly: the shard keeps hit counts
per (language, eval split, relation, metric, k, layer, head), never attention tensors, and, for
each test sample, its own counts at the headline's metric and k (first, 1) per relation and head:
the rows a score split by sample (its contamination label) is computed from.

Metrics: `first` (the dependent's first token, the paper's default), `last`, `any` (any token
of the span). An edge whose target token has no subtokens (cut off by the model's max length)
is not counted for that metric; `total` says how many were.
"""

from __future__ import annotations

import logging
import sys
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch
from tqdm import tqdm

from pipeline.families.codesyntax import schemas
from pipeline.runtime.align import align, word_spans
from pipeline.runtime.batching import length_sorted_batches, select_shard
from pipeline.runtime.languages import Languages
from pipeline.io import read_parquet

log = logging.getLogger("pipeline.families.codesyntax.infer")

KS = (1, 3, 10, 20)
METRICS = ("first", "last", "any")
PER_SAMPLE = ("test", "first", 1)  # the split, metric and k kept per sample too (the headline's)


@dataclass
class Sample:
    sample_id: str
    language: str
    eval_split: str
    code: str
    words: list[tuple[int, int]]  # character span of each word (token) in `code`
    edges: list[tuple[str, int, int, int]]  # relation, head, dep_start, dep_end


def sample_hits(s: Sample, att: torch.Tensor, offsets, ks: tuple[int, ...] = KS) -> Iterator[tuple[tuple, torch.Tensor, int]]:
    """Hit counts of one sample: ((language, eval split, relation, metric, k), hits [layers, heads], edges).

    `att` is the model's attention for this sample, [layers, heads, subtokens, subtokens]."""
    owner = align(offsets, s.words, len(s.code))
    n_words = len(s.words)
    member = torch.zeros((n_words, len(owner)))
    valid = owner >= 0
    member[owner[valid], np.nonzero(valid)[0]] = 1.0
    has_sub = member.sum(1) > 0
    usable = [e for e in s.edges if has_sub[e[1]]]
    if not usable:
        return
    heads = torch.tensor([e[1] for e in usable])
    from_rows = member[heads] / member[heads].sum(1, keepdim=True)  # mean over the head word's subtokens
    word_att = torch.einsum("et,lhts,ws->lhew", from_rows, att, member)  # [L, H, E, W]: sum over the target's
    word_att[..., ~has_sub] = -1.0  # words without subtokens are never candidates
    word_att[:, :, torch.arange(len(usable)), heads] = -1.0  # self-attention ignored
    k_max = min(max(ks), n_words)
    top = torch.topk(word_att, k_max, dim=-1).indices  # [L, H, E, K]
    for metric in METRICS:
        targets, eligible = [], []
        for e, (_, _, a, b) in enumerate(usable):
            span = [a] if metric == "first" else [b] if metric == "last" else list(range(a, b + 1))
            span = [t for t in span if has_sub[t]]
            if span:
                eligible.append(e)
                targets.append(span)
        if not eligible:
            continue
        width = max(len(t) for t in targets)
        tgt = torch.full((len(eligible), width), -2, dtype=torch.long)
        for r, t in enumerate(targets):
            tgt[r, : len(t)] = torch.tensor(t)
        match = (top[:, :, eligible][..., :, None] == tgt[None, None, :, None, :]).any(-1)  # [L, H, E', K]
        never = torch.full(match.shape[:-1], k_max + 1)
        first_hit = torch.where(match.any(-1), match.float().argmax(-1), never)  # 0-based rank of the first hit
        relations = [usable[e][0] for e in eligible]
        for rel in sorted(set(relations)):
            idx = torch.tensor([r for r, name in enumerate(relations) if name == rel])
            fh = first_hit[:, :, idx]
            for k in ks:
                yield (s.language, s.eval_split, rel, metric, k), (fh < k).sum(-1).to(torch.int64), len(idx)


class HitCounts:
    """A shard's hit counts: summed per (language, eval split, relation, metric, k) and, for each test sample at
    the headline's metric and k (PER_SAMPLE), its own per relation."""

    def __init__(self, ks: tuple[int, ...] = KS):
        self.ks = tuple(ks)
        self.hits: dict[tuple, torch.Tensor] = {}
        self.totals: dict[tuple, int] = defaultdict(int)
        self.per_sample: dict[tuple, tuple[torch.Tensor, int]] = {}  # (language, relation, sample_id) -> hits, edges

    def add(self, s: Sample, att: torch.Tensor, offsets) -> None:
        """One sample's attention ([layers, heads, subtokens, subtokens]) counted."""
        for key, hits, total in sample_hits(s, att, offsets, self.ks):
            self.hits[key] = self.hits[key] + hits if key in self.hits else hits
            self.totals[key] += total
            language, split, rel, metric, k = key
            if (split, metric, k) == PER_SAMPLE:
                self.per_sample[(language, rel, s.sample_id)] = (hits, total)

    def table(self, model: str, variant: str = "plain") -> pa.Table:
        """The summed rows (sample_id null), then each test sample's own (its id), in a fixed order."""
        rows = {name: [] for name in schemas.ATTENTION_HITS.names}

        def add(language, split, rel, metric, k, hits, total, sample_id):
            hits = hits.numpy()
            for layer in range(hits.shape[0]):
                for head in range(hits.shape[1]):
                    for name, v in zip(rows, (model, language, variant, split, rel, metric, k, layer, head,
                                              int(hits[layer, head]), total, sample_id)):
                        rows[name].append(v)

        for key in sorted(self.hits):
            add(*key, self.hits[key], self.totals[key], None)
        split, metric, k = PER_SAMPLE
        for language, rel, sample_id in sorted(self.per_sample, key=lambda t: (t[0], t[2], t[1])):
            hits, total = self.per_sample[(language, rel, sample_id)]
            add(language, split, rel, metric, k, hits, total, sample_id)
        return pa.table(rows, schema=schemas.ATTENTION_HITS)


class AttentionEvaluator(HitCounts):
    def __init__(self, loaded, token_budget: int, ks: tuple[int, ...] = KS):
        super().__init__(ks)
        self.model, self.tok, self.device = loaded.model, loaded.tokenizer, loaded.device
        self.languages = Languages(self.tok)  # each sample in its language's format, variants made once
        # encoder-decoders: the encoder's self-attention (the decoder reads no input text to attend over)
        self.forward = loaded.model.get_encoder() if loaded.model_family == "encoder-decoder" else loaded.model
        self.batch_size, self.max_length, self.budget = loaded.entry.batch_size, loaded.entry.max_length, token_budget
        self.pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else 0

    @torch.inference_mode()
    def run(self, samples: list[Sample], desc: str) -> None:
        # each sample in its language's format (PLBART: `… </s> __java__`; pipeline.runtime.languages)
        encs = [self.languages.tokenizer(s.language)(s.code, return_offsets_mapping=True, truncation=True,
                                                   max_length=self.max_length) for s in samples]
        order = list(range(len(samples)))
        bar = tqdm(total=len(samples), desc=desc, unit="fn", file=sys.stderr, mininterval=5)
        for batch in length_sorted_batches(order, [len(e["input_ids"]) for e in encs], self.batch_size, self.budget):
            width = max(len(encs[i]["input_ids"]) for i in batch)
            ids = torch.full((len(batch), width), self.pad, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for j, i in enumerate(batch):
                n = len(encs[i]["input_ids"])
                ids[j, :n] = torch.tensor(encs[i]["input_ids"])
                mask[j, :n] = 1
            out = self.forward(input_ids=ids.to(self.device), attention_mask=mask.to(self.device), output_attentions=True)
            for j, i in enumerate(batch):
                n = len(encs[i]["input_ids"])
                # one sample's [layers, heads, n, n] at a time: no batch-sized copy of the attentions
                att = torch.stack([layer[j, :, :n, :n] for layer in out.attentions]).float().cpu()
                self.add(samples[i], att, encs[i]["offset_mapping"])
            del out
            bar.update(len(batch))
        bar.close()


def load_samples(samples: pa.Table, relations: pa.Table, shard: int, shards: int, max_items: int = 0,
                 seed: int = 0) -> list[Sample]:
    ids = samples.column("sample_id").to_pylist()
    mine = samples.filter(pa.array(select_shard(ids, shard, shards, max_items, seed), pa.bool_()))
    edges: dict[str, list] = defaultdict(list)
    mine_edges = relations.filter(pc.is_in(relations.column("sample_id"), mine.column("sample_id")))
    for r in mine_edges.to_pylist():
        edges[r["sample_id"]].append((r["relation"], r["head"], r["dep_start"], r["dep_end"]))
    out = []
    for r in mine.select(["sample_id", "language", "eval_split", "code", "tokens", "token_lines", "token_cols"]).to_pylist():
        if edges[r["sample_id"]]:
            out.append(Sample(r["sample_id"], r["language"], r["eval_split"], r["code"],
                              word_spans(r["code"], r["tokens"], r["token_lines"], r["token_cols"]),
                              sorted(edges[r["sample_id"]])))
    return out


def predict(ctx) -> pa.Table:
    """The shared runner's entry point (pipeline.runtime.predict): one shard of one language."""
    p = ctx.params["inference"]
    samples = load_samples(read_parquet(ctx.inputs["samples"], schemas.SAMPLES),
                           read_parquet(ctx.inputs["relations"], schemas.RELATIONS), ctx.shard, ctx.shards,
                           p["max_items"], ctx.seed)
    evaluator = AttentionEvaluator(ctx.loaded, ctx.token_budget, tuple(ctx.params["ks"]))
    evaluator.run(samples, ctx.description)
    log.info("%s: %d samples", ctx.description, len(samples))
    return evaluator.table(ctx.loaded.entry.name, p["variant"])
