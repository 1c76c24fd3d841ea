"""Step 4 of scoring, causal LMs: log p(token | tokens before it) summed over each sequence's scored tokens.

- `tree_logprob`: an item's sequences as one token tree (`TokenTree`: every distinct token prefix once, the
  shared context, fills that share leading tokens, the no-context rows' start token), one forward pass per tree
  with a 4D ancestor mask, on the architectures that take one (`TREE_MODELS`); an item's scores are then a
  function of the item alone (the same bytes for any shard count);
- `shared_prefix_logprob`: groups of sequences that share a token prefix (one item's candidates): the prefix
  runs once with the KV cache, which is expanded over the group, and only each sequence's own tokens run again;
- `sequence_logprob`: whole sequences, batched.
The LM head runs on the scored positions only (never on the context or padding) and the log-softmax is fused
with the gather (`_scored_logprobs`). Methods of `pipeline.runtime.scorer.Scorer`, which sets what they read:
`model`, `pad`, `device`, `batch_size`, `budget`, `min_shared_prefix`, `tree_batched`, `_causal`
(`causal_lm_head`) and the `_tree_rows` cache.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

from pipeline.runtime.batching import common_prefix, length_sorted_batches, padded


class CausalScoring:
    """The causal LMs' score paths of a `Scorer`."""

    def _scored_logprobs(self, inputs: dict, rows: torch.Tensor, pos: torch.Tensor, target: torch.Tensor):
        """Causal LMs: log p(target[k] | tokens up to pos[k] of row rows[k]) for the scored positions only,
        and the model's output (its KV cache). The LM head runs on the scored positions alone when it can be
        split off (`causal_lm_head`), never on the prefix or the padding, and the log-softmax is fused
        with the gather (cross-entropy: no [tokens, vocab] log-probability tensor); else full logits.
        A position that predicts several targets (a token tree's node with several children: the end of an
        item's context before each fill) gets its logits and their log-normaliser once."""
        width = inputs["input_ids"].shape[1]
        flat = rows * width + pos
        unique, inverse = torch.unique(flat, return_inverse=True)
        if len(unique) < len(flat):
            rows, pos = unique // width, unique % width
        if self._causal is not None:
            base, head = self._causal
            out = base(**inputs)
            logits = head(out.last_hidden_state[rows, pos]).float()
        else:
            out = self.model(**inputs)
            logits = out.logits[rows, pos].float()
        if len(unique) < len(flat):
            return logits[inverse, target] - torch.logsumexp(logits, dim=-1)[inverse], out
        return -torch.nn.functional.cross_entropy(logits, target, reduction="none"), out

    @torch.inference_mode()
    def shared_prefix_logprob(self, groups: list[list[list[int]]],
                              starts: list[list[int]] | None = None) -> list[list[float]]:
        """Causal LMs, for groups of sequences that share a token prefix (one item's candidates):
        log p(each sequence's own tokens | the shared prefix). Each group's longest common prefix (at
        least one own token left per sequence) runs once, the prefixes of many groups in one left-padded
        batch (positions counted from each prefix's first real token) with `use_cache=True` and logits
        at the last position only; then the sequences of those groups, batched across groups under the
        token budget, run only their own tokens on their group's row of that KV cache. The plain path's `sequence_logprob` differs by
        the prefix's log-probability, the same for every sequence of a group, so ranks within a
        group are the same. Groups with a shared prefix shorter than `min_shared_prefix` tokens
        (at least 2) or a single sequence take the plain path (whole sequences: there the prefix is
        counted unless `starts` cut it): re-running a few prefix tokens costs less than the cache.

        `starts` (per group, per sequence): sum only the log-probabilities of the tokens at positions
        >= start (a candidate's own tokens and what follows them); the shared prefix is then cut at
        the group's smallest start, so the sums are exactly the plain path's with the same starts."""
        out: list[list[float]] = [[] for _ in groups]
        plain: list[int] = []
        cut: dict[int, int] = {}  # group -> length of its shared prefix
        for g, rows in enumerate(groups):
            n = common_prefix(rows)
            if starts is not None:
                n = min(n, *starts[g])
            if n < max(2, self.min_shared_prefix) or len(rows) < 2:
                plain.append(g)
            else:
                cut[g] = n
        # Prefixes of many groups run together, left-padded (positions counted from each one's first
        # real token), then every sequence of those groups runs its own tokens on its group's cache row.
        for chunk in length_sorted_batches(list(cut), [cut[g] for g in cut], self.batch_size, self.budget):
            width = max(cut[g] for g in chunk)
            ids = torch.full((len(chunk), width), self.pad, dtype=torch.long)
            pmask = torch.zeros((len(chunk), width), dtype=torch.long)
            for r, g in enumerate(chunk):
                ids[r, width - cut[g]:] = torch.tensor(groups[g][0][: cut[g]])
                pmask[r, width - cut[g]:] = 1
            ids, pmask = ids.to(self.device), pmask.to(self.device)
            res = self.model(input_ids=ids, attention_mask=pmask, position_ids=(pmask.cumsum(1) - 1).clamp(min=0),
                             use_cache=True, logits_to_keep=1)
            if res.past_key_values is None:
                plain.extend(chunk)
                continue
            last = torch.log_softmax(res.logits[:, -1].float(), dim=-1)  # [groups, vocab]
            members = [(r, g, i) for r, g in enumerate(chunk) for i in range(len(groups[g]))]
            for g in chunk:
                out[g] = [0.0] * len(groups[g])
            lengths = [width + len(groups[g][i]) - cut[g] for _, g, i in members]
            for batch in length_sorted_batches(members, lengths, self.batch_size, self.budget):
                own_ids, mask = padded([groups[g][i][cut[g]:] for _, g, i in batch], self.pad, self.device)
                rows_of = torch.tensor([r for r, _, _ in batch], device=self.device)
                cache = copy.deepcopy(res.past_key_values)
                cache.batch_select_indices(rows_of)
                attn = torch.cat([pmask[rows_of], mask], dim=1)
                first_pos = torch.tensor([cut[g] for _, g, _ in batch], device=self.device)[:, None]
                # padding after a short row stays at its first position: within the model's positions
                pos = torch.where(mask.bool(), first_pos + torch.arange(own_ids.shape[1], device=self.device)[None, :],
                                  first_pos)
                r_of, p_of = [], []  # own tokens scored: own[j][k + 1] predicted at own position k
                for j, (_, g, i) in enumerate(batch):
                    skip = 0 if starts is None else starts[g][i] - cut[g]
                    n_own = len(groups[g][i]) - cut[g]
                    r_of += [j] * max(n_own - max(skip, 1), 0)
                    p_of += range(max(skip, 1) - 1, n_own - 1)
                r = torch.tensor(r_of, dtype=torch.long, device=self.device)
                p = torch.tensor(p_of, dtype=torch.long, device=self.device)
                lp, _ = self._scored_logprobs({"input_ids": own_ids, "attention_mask": attn, "position_ids": pos,
                                               "past_key_values": cache, "use_cache": True}, r, p, own_ids[r, p + 1])
                own = torch.zeros(len(batch), dtype=lp.dtype, device=lp.device).index_add_(0, r, lp).cpu()
                first = last[rows_of].gather(-1, own_ids[:, :1]).squeeze(-1).cpu()
                for j, (_, g, i) in enumerate(batch):
                    skip = 0 if starts is None else starts[g][i] - cut[g]  # the first own token: the prefix's logits
                    out[g][i] = (float(first[j]) if skip == 0 else 0.0) + float(own[j])
        if plain:
            flat = [r for g in plain for r in groups[g]]
            values = self.sequence_logprob(flat, None if starts is None else [s for g in plain for s in starts[g]])
            at = 0
            for g in plain:
                out[g] = values[at: at + len(groups[g])]
                at += len(groups[g])
        return out

    @torch.inference_mode()
    def tree_logprob(self, groups: list[list[list[int]]], starts: list[list[int]]) -> list[list[float]]:
        """Causal LMs, for groups of sequences (one item's candidates): the sum of log p(token | tokens before
        it) over each sequence's positions >= its start, as `sequence_logprob` gives it, with every distinct
        token prefix run once. A group's sequences become one token tree (`TokenTree`: a node per distinct
        prefix, so the shared context, fills that share leading tokens and the no-context rows' start token
        run once; a sequence's last token, which predicts nothing scored, does not run at all) and the tree
        one row of one forward pass: each node at the position of its depth,
        attending to its ancestors only (a 4D attention mask), the LM head on the scored nodes' parents
        only. A group whose tree passes `TREE_ROW_TOKENS` nodes is cut into consecutive runs of sequences.

        On the CPU one row per forward pass, never rows of other items beside it: a sequence's sum is a
        function of its group alone (not of the shard's other items, the batch size or the token budget), so
        outputs are the same bytes for any shard count; on an accelerator rows are batched under the token
        budget. Equal rows are computed once per scorer (items with the same fills and suffix share their
        no-context rows; an item with an empty context has its own rows as its no-context rows)."""
        keys: list[list[tuple]] = []
        todo: dict[tuple, None] = {}  # rows not computed before, in a fixed order
        for rows, firsts in zip(groups, starts):
            keys.append([tuple((tuple(rows[i]), firsts[i]) for i in chunk)
                         for chunk in tree_chunks(rows, TREE_ROW_TOKENS)])
            todo.update((k, None) for k in keys[-1] if k not in self._tree_rows)
        trees = {k: TokenTree.of([list(r) for r, _ in k]) for k in todo}
        if not self.tree_batched:
            batches = [[k] for k in todo]  # one row per pass: a row's bytes do not depend on its neighbours
        else:  # accelerators: rows batched under the token budget (their kernels differ with shapes anyway)
            batches = length_sorted_batches(list(todo), [len(trees[k].inner()) for k in todo], self.batch_size, self.budget)
        for batch in batches:
            for k, values in zip(batch, self._tree_batch([trees[k] for k in batch], [[s for _, s in k] for k in batch])):
                self._tree_rows[k] = values
        return [[v for k in group for v in self._tree_rows[k]] for group in keys]

    def _tree_batch(self, trees: list["TokenTree"], starts: list[list[int]]) -> list[list[float]]:
        """One forward pass over token trees, one per row (padding attends to itself only, at position 0).
        Only the nodes some node follows run (`TokenTree.inner`): a last token predicts nothing scored."""
        import numpy as np

        inner = [t.inner() for t in trees]
        width = max(max((len(f) for f in inner), default=0), 1)
        ids = torch.full((len(trees), width), self.pad, dtype=torch.long)
        pos = torch.zeros((len(trees), width), dtype=torch.long)
        allowed = np.zeros((len(trees), 1, width, width), dtype=bool)
        allowed[:, 0, np.arange(width), np.arange(width)] = True
        r_of, parent_of, target, seq_of = [], [], [], []  # every scored node once, and who sums it
        which: list[int] = []
        n_seq = 0
        for j, (tree, fed, firsts) in enumerate(zip(trees, inner, starts)):
            m = len(fed)
            column = {node: k for k, node in enumerate(fed)}
            if m:
                ids[j, :m] = torch.tensor([tree.tokens[n] for n in fed])
                pos[j, :m] = torch.tensor([tree.depth[n] for n in fed])
                allowed[j, 0, :m, :m] = tree.ancestors()[np.ix_(fed, fed)]
            at: dict[int, int] = {}
            for i, (path, s) in enumerate(zip(tree.paths, firsts)):
                for t in range(max(s, 1), len(path)):
                    node = path[t]
                    if node not in at:
                        at[node] = len(target)
                        r_of.append(j)
                        parent_of.append(column[tree.parent[node]])
                        target.append(tree.tokens[node])
                    which.append(at[node])
                    seq_of.append(n_seq + i)
            n_seq += len(tree.paths)
        sums = torch.zeros(n_seq, dtype=torch.float32)
        if target:
            dtype = next(self.model.parameters()).dtype
            mask = torch.zeros(allowed.shape, dtype=dtype).masked_fill_(~torch.from_numpy(allowed), torch.finfo(dtype).min)
            ids, pos, mask = ids.to(self.device), pos.to(self.device), mask.to(self.device)
            lp, _ = self._scored_logprobs({"input_ids": ids, "attention_mask": mask, "position_ids": pos},
                                          torch.tensor(r_of, dtype=torch.long, device=self.device),
                                          torch.tensor(parent_of, dtype=torch.long, device=self.device),
                                          torch.tensor(target, dtype=torch.long, device=self.device))
            sums = sums.to(lp.device, lp.dtype).index_add_(0, torch.tensor(seq_of, device=lp.device),
                                                           lp[torch.tensor(which, device=lp.device)]).cpu()
        out, at = [], 0
        for tree in trees:
            out.append([float(v) for v in sums[at: at + len(tree.paths)]])
            at += len(tree.paths)
        return out

    @torch.inference_mode()
    def sequence_logprob(self, rows: list[list[int]], starts: list[int] | None = None) -> list[float]:
        """Causal LMs: sum of log p(token | tokens before it) over each sequence (from position
        `starts[i]` on when given; default 1: every token but the first)."""
        out = [0.0] * len(rows)
        indexed = list(range(len(rows)))
        for batch in length_sorted_batches(indexed, [len(rows[i]) for i in indexed], self.batch_size, self.budget):
            r_of, p_of = [], []  # every scored token: its row and the position that predicts it
            for j, i in enumerate(batch):
                first = max(1 if starts is None else starts[i], 1)
                r_of += [j] * max(len(rows[i]) - first, 0)
                p_of += range(first - 1, len(rows[i]) - 1)
            if not r_of:
                continue
            ids, mask = padded([rows[i] for i in batch], self.pad, self.device)
            r = torch.tensor(r_of, device=ids.device)
            p = torch.tensor(p_of, device=ids.device)
            lp, _ = self._scored_logprobs({"input_ids": ids, "attention_mask": mask}, r, p, ids[r, p + 1])
            sums = torch.zeros(len(batch), dtype=lp.dtype, device=lp.device).index_add_(0, r, lp).cpu()
            for j, i in enumerate(batch):
                out[i] = float(sums[j])
        return out


@dataclass(frozen=True)
class TokenTree:
    """Sequences as a prefix tree, in row order (every node after its parent): node tokens, parents
    (-1: a root), depths (the node's position in its sequences) and each sequence's node per token."""

    tokens: list[int]
    parent: list[int]
    depth: list[int]
    paths: list[list[int]]

    @classmethod
    def of(cls, rows: list[list[int]]) -> "TokenTree":
        index: dict[tuple[int, int], int] = {}
        tokens, parent, depth, paths = [], [], [], []
        for row in rows:
            at, path = -1, []
            for d, t in enumerate(row):
                node = index.get((at, t))
                if node is None:
                    node = index[(at, t)] = len(tokens)
                    tokens.append(t)
                    parent.append(at)
                    depth.append(d)
                at = node
                path.append(node)
            paths.append(path)
        return cls(tokens, parent, depth, paths)

    def inner(self) -> list[int]:
        """The nodes another node follows, in row order: what a forward pass needs to run (a node no token
        follows, the last of its sequences, is only a target)."""
        followed = set(self.parent)
        return [i for i in range(len(self.tokens)) if i in followed]

    def ancestors(self):
        """[nodes, nodes] booleans: row i is true at i and at its ancestors (what node i attends to)."""
        import numpy as np

        m = len(self.tokens)
        out = np.zeros((m, m), dtype=bool)
        for i, p in enumerate(self.parent):
            if p >= 0:
                out[i] = out[p]
            out[i, i] = True
        return out


def tree_size(rows: list[list[int]]) -> int:
    """Nodes of the rows' prefix tree."""
    return len({tuple(r[: d + 1]) for r in rows for d in range(len(r))})


def tree_chunks(rows: list[list[int]], cap: int) -> list[list[int]]:
    """Consecutive runs of the rows whose prefix tree has at most `cap` nodes (a longer row alone)."""
    chunks: list[list[int]] = []
    seen: set[tuple[int, ...]] = set()
    for i, r in enumerate(rows):
        new = {tuple(r[: d + 1]) for d in range(len(r))} - seen
        if chunks and len(seen) + len(new) > cap:
            chunks.append([])
            seen = set()
            new = {tuple(r[: d + 1]) for d in range(len(r))}
        if not chunks:
            chunks.append([])
        chunks[-1].append(i)
        seen |= new
    return chunks


# Causal LMs that take a custom 4D attention mask as it is (transformers' masking_utils) and read positions
# from `position_ids` alone: their candidates run as token trees (`Scorer.tree_logprob`); tests/test_scoring_cache.py
# checks each against whole sequences scored alone
TREE_MODELS = ("llama", "gpt2", "qwen2", "codegen")
# Nodes per tree row: attention over a row costs rows^2 (what a node does not attend to is computed and
# masked), a small part of the layers' cost up to a few hundred nodes
TREE_ROW_TOKENS = 512


def tree_capable(model) -> bool:
    return getattr(getattr(model, "config", None), "model_type", None) in TREE_MODELS


# Causal LMs whose logits are `output embeddings(last hidden state)` and nothing else (no logit scaling:
# Cohere, Granite are not here), so the head can run on the scored positions only.
PLAIN_CAUSAL_HEADS = ("gpt2", "gpt_neo", "gpt_neox", "gptj", "gpt_bigcode", "codegen", "llama", "mistral", "qwen2",
                      "qwen3", "starcoder2", "phi", "phi3", "olmo", "olmo2", "smollm3", "gemma")
# Causal LMs whose logits are the output embeddings of the last hidden state, then soft-capped when
# `config.final_logit_softcapping` is set (cap * tanh(logits / cap), as their forward does): Gemma 2 and 3. Their
# vocabulary is 262k (Gemma 3) or 256k (Gemma 2), so the head on every position would cost more than the body.
SOFTCAPPED_CAUSAL_HEADS = ("gemma2", "gemma3_text")
# The shortest shared prefix (tokens) that takes the KV-cache path; shorter ones take the plain path.
MIN_SHARED_PREFIX = 2


def causal_lm_head(model):
    """(decoder, head) of a causal LM whose logits are its head over the decoder's last hidden state,
    else None (the full logits are used)."""
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    if model_type not in PLAIN_CAUSAL_HEADS + SOFTCAPPED_CAUSAL_HEADS:
        return None
    base, head = getattr(model, "base_model", None), model.get_output_embeddings()
    if base is None or base is model or head is None:
        return None
    cap = getattr(model.config, "final_logit_softcapping", None) if model_type in SOFTCAPPED_CAUSAL_HEADS else None
    return base, head if cap is None else _SoftCapped(head, float(cap))


class _SoftCapped(torch.nn.Module):
    """An LM head followed by the logit soft-capping of Gemma 2/3's forward: cap * tanh(head(h) / cap)."""

    def __init__(self, head, cap: float):
        super().__init__()
        self.head, self.cap = head, cap

    def forward(self, hidden):
        return torch.tanh(self.head(hidden) / self.cap) * self.cap
