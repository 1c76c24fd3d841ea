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
- `Scorer.tree_logprob`: causal LMs, the same sums as `sequence_logprob` with an item's sequences as one
  token tree (`TokenTree`: every distinct token prefix once, the shared context, fills that share leading
  tokens, the no-context rows' start token), one forward pass per tree with a 4D ancestor mask, on the
  architectures that take one (`TREE_MODELS`; the others keep the KV-cache path); an item's scores are
  then a function of the item alone (the same bytes for any shard count);
- `Scorer.seq2seq_logprob`: encoder-decoder models, log p(target | source);
- `encode`: a completed text tokenized, with the token positions covering the filled-in part;
- `rank_of`: ranks that do not depend on batch size or device (scores rounded, ties by name);
- `plan_candidates` / `score_plans`: one item's fills scored in one pass, with each fill's number of
  scored tokens and (cached per model) their log-likelihood without the context, for the ranking
  protocols `PROTOCOLS` (summed, per-token mean, PMI; `CandidateScores.protocol`).
Batches are length-sorted under the token budget (pipeline.runtime.batching). Causal LMs run their
LM head on the scored positions only (never on the context or padding) and fuse the log-softmax with
the gather (`Scorer._scored_logprobs`); every fill of an item is tokenized in one call (`encode_fills`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

from pipeline.models.start import (CHAT_TOKEN, DOCUMENT_SEPARATOR, StartPolicy, is_chat_token,  # noqa: F401
                                   special_frame as _special_frame, start_policy)
from pipeline.models.zoo import sentinels
from pipeline.runtime.batching import length_sorted_batches
from pipeline.runtime.languages import for_language, language_of

SCORE_DECIMALS = 4


@dataclass(frozen=True)
class Encoded:
    """A completed text, tokenized, with the token positions that cover the filled-in part."""

    ids: list[int]
    span: list[int]  # token positions overlapping the answer's characters
    exact: bool  # one token covering exactly the answer's characters


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


def rank_of(scores: list[float], names: list[str], gold: int) -> tuple[int, list[int]]:
    """1-based rank of `gold` and the order of all items: by rounded score, then by name."""
    order = sorted(range(len(scores)), key=lambda i: (-round(scores[i], SCORE_DECIMALS), names[i]))
    return order.index(gold) + 1, order


class Scorer:
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
        self.prefix_cache = prefix_cache  # causal LMs: share each item's token prefix through the KV cache
        self._head = _masked_lm_head(self.model) if head_only else None  # masked LMs: the head at the mask only
        # masked LMs: the last layer too at the mask only (`MASKED_LAST_LAYER`), its keys and values from every position
        self._last_layer = _masked_last_layer(self.model) if head_only and last_layer_at_mask else None
        self._causal = _causal_lm_head(self.model) if head_only else None  # causal LMs: the head where scored
        # causal LMs: groups whose shared prefix is shorter than this take the plain path (the KV-cache
        # path's cache copy and second call cost more than re-running a few tokens; docs/scaling.md)
        self.min_shared_prefix = MIN_SHARED_PREFIX if min_shared_prefix is None else min_shared_prefix
        self._no_context: dict[tuple[int, ...], float] = {}  # no_context_logprobs' cache: scored tokens -> log-likelihood
        self.convention = getattr(loaded.entry, "scoring", "pipeline")
        self.model_family = loaded.entry.model_family
        self._start: tuple[tuple, StartPolicy] | None = None
        # causal LMs: each item's candidates as one token tree per forward pass (`tree_logprob`); None: where
        # the architecture takes it (`TREE_MODELS`) and the prefix cache is not switched off
        self.tree = (prefix_cache and _tree_capable(self.model)) if tree is None else (tree and _tree_capable(self.model))
        self._tree_rows: dict[tuple, list[float]] = {}  # tree_logprob's cache: a row's content -> its sums
        self.tree_batched = torch.device(self.device).type != "cpu"  # trees of several items in one pass

    @property
    def start(self) -> StartPolicy:
        """The start-token policy of this model (recomputed only when the tokenizer's BOS/EOS change)."""
        key = (self.tok.bos_token, self.tok.eos_token)
        if self._start is None or self._start[0] != key:
            self._start = (key, start_policy(self.tok, self.model_family, self.convention))
        return self._start[1]

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

    def _scored_logprobs(self, inputs: dict, rows: torch.Tensor, pos: torch.Tensor, target: torch.Tensor):
        """Causal LMs: log p(target[k] | tokens up to pos[k] of row rows[k]) for the scored positions only,
        and the model's output (its KV cache). The LM head runs on the scored positions alone when it can be
        split off (`_causal_lm_head`), never on the prefix or the padding, and the log-softmax is fused
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
        """For (ids with the mask in place, position, token): log p(token) at that position. Every layer
        but the last runs on every position, the last layer (its query, attention output and FFN; its keys
        and values from every position) and the LM head at the masked position only, through the model's
        own modules (`_hidden_at_mask`, on the architectures of `MASKED_LAST_LAYER`: BERT, RoBERTa, pre-LN
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
        for batch in self._batches(list(range(len(first))), [len(jobs[i][0]) for i in first]):
            ids, mask = self._pad([jobs[first[u]][0] for u in batch])
            pos = torch.tensor([jobs[first[u]][1] for u in batch], device=ids.device)
            rows = torch.arange(len(batch), device=ids.device)
            if self._last_layer is not None:
                base, head, pre_ln = self._last_layer
                logits = head(_hidden_at_mask(base, pre_ln, ids, mask, pos)).float()
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
            n = _common_prefix(rows)
            if starts is not None:
                n = min(n, *starts[g])
            if n < max(2, self.min_shared_prefix) or len(rows) < 2:
                plain.append(g)
            else:
                cut[g] = n
        # Prefixes of many groups run together, left-padded (positions counted from each one's first
        # real token), then every sequence of those groups runs its own tokens on its group's cache row.
        for chunk in self._batches(list(cut), [cut[g] for g in cut]):
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
            for batch in self._batches(members, [width + len(groups[g][i]) - cut[g] for _, g, i in members]):
                own_ids, mask = self._pad([groups[g][i][cut[g]:] for _, g, i in batch])
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
                         for chunk in _tree_chunks(rows, TREE_ROW_TOKENS)])
            todo.update((k, None) for k in keys[-1] if k not in self._tree_rows)
        trees = {k: TokenTree.of([list(r) for r, _ in k]) for k in todo}
        if not self.tree_batched:
            batches = [[k] for k in todo]  # one row per pass: a row's bytes do not depend on its neighbours
        else:  # accelerators: rows batched under the token budget (their kernels differ with shapes anyway)
            batches = self._batches(list(todo), [len(trees[k].inner()) for k in todo])
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
        for batch in self._batches(indexed, [len(rows[i]) for i in indexed]):
            r_of, p_of = [], []  # every scored token: its row and the position that predicts it
            for j, i in enumerate(batch):
                first = max(1 if starts is None else starts[i], 1)
                r_of += [j] * max(len(rows[i]) - first, 0)
                p_of += range(first - 1, len(rows[i]) - 1)
            if not r_of:
                continue
            ids, mask = self._pad([rows[i] for i in batch])
            r = torch.tensor(r_of, device=ids.device)
            p = torch.tensor(p_of, device=ids.device)
            lp, _ = self._scored_logprobs({"input_ids": ids, "attention_mask": mask}, r, p, ids[r, p + 1])
            sums = torch.zeros(len(batch), dtype=lp.dtype, device=lp.device).index_add_(0, r, lp).cpu()
            for j, i in enumerate(batch):
                out[i] = float(sums[j])
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


def _tree_chunks(rows: list[list[int]], cap: int) -> list[list[int]]:
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


def _tree_capable(model) -> bool:
    return getattr(getattr(model, "config", None), "model_type", None) in TREE_MODELS


# Causal LMs whose logits are `output embeddings(last hidden state)` and nothing else (no logit scaling or
# soft-capping: Gemma 2, Cohere, Granite are not here), so the head can run on the scored positions only.
PLAIN_CAUSAL_HEADS = ("gpt2", "gpt_neo", "gpt_neox", "gptj", "gpt_bigcode", "codegen", "llama", "mistral", "qwen2",
                      "qwen3", "starcoder2", "phi", "phi3", "olmo", "olmo2", "smollm3")
# The shortest shared prefix (tokens) that takes the KV-cache path; shorter ones take the plain path.
MIN_SHARED_PREFIX = 2


def _causal_lm_head(model):
    """(decoder, head) of a causal LM whose logits are its head over the decoder's last hidden state,
    else None (the full logits are used)."""
    if getattr(getattr(model, "config", None), "model_type", None) not in PLAIN_CAUSAL_HEADS:
        return None
    base, head = getattr(model, "base_model", None), model.get_output_embeddings()
    if base is None or base is model or head is None:
        return None
    return base, head


# Masked LMs whose last layer runs at the masked positions only (`_hidden_at_mask`): model_type -> pre-layer-norm
# (pre-LN RoBERTa normalises before attention and FFN and once after the last layer; BERT and RoBERTa after each).
# The last layer's query, attention output and FFN at one position of each row instead of all: ~40% of a 2-layer
# encoder's work. Its output differs from the full pass's by float rounding only (up to ~1e-6 on a PLL: the
# attention with one query row and the smaller matmuls sum in another order); tests/test_scoring_cache.py
# checks each architecture against the full logits.
MASKED_LAST_LAYER = {"bert": False, "roberta": False, "roberta-prelayernorm": True}


def _masked_last_layer(model):
    """(encoder, head, pre_ln) of a masked LM whose last layer can run at the masked positions only, else None
    (an architecture not in `MASKED_LAST_LAYER`, a decoder or cross-attention configuration, relative positions)."""
    config = getattr(model, "config", None)
    kind = getattr(config, "model_type", None)
    if kind not in MASKED_LAST_LAYER or getattr(config, "is_decoder", False) or \
            getattr(config, "add_cross_attention", False) or \
            getattr(config, "position_embedding_type", "absolute") not in (None, "absolute"):
        return None
    split = _masked_lm_head(model)
    if split is None or not len(getattr(getattr(split[0], "encoder", None), "layer", ())):
        return None
    return split[0], split[1], MASKED_LAST_LAYER[kind]


def _hidden_at_mask(base, pre_ln: bool, ids: torch.Tensor, mask: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
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


def _masked_lm_head(model):
    """(encoder, head) of a masked LM whose head can run on selected positions only, else None."""
    for base_name, head_name in (("roberta", "lm_head"), ("roberta_prelayernorm", "lm_head"), ("bert", "cls"),
                                 ("distilbert", None)):
        base, head = getattr(model, base_name, None), getattr(model, head_name, None) if head_name else None
        if base is not None and head is not None:
            return base, head
    return None


# Ranking protocols over one scoring pass (a summed log-likelihood alone favours short candidates), named as
# they appear in predictions:
# `rank` the summed log-likelihood of the scored tokens (kept under its old name), `rank_mean` that sum
# over the number of scored TOKENS (the model's tokens, not bytes: lm-evaluation-harness's acc_norm
# divides by bytes; per token is the length the model itself pays per step), `rank_pmi` the sum minus
# the same tokens' log-likelihood without the context (a pointwise mutual information).
PROTOCOLS = ("rank", "rank_mean", "rank_pmi")


@dataclass(frozen=True)
class CandidatePlan:
    """How to score one item's fills: the jobs, the fill each job belongs to, each fill's number of
    scored tokens and the key of its no-context job (the scored token ids, shared across items)."""

    jobs: list[tuple]
    owner: list[int]
    n_tokens: tuple[int, ...]
    bare: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class CandidateScores:
    """One item's fills: log-likelihood of the scored tokens in context (summed), their number, and
    their log-likelihood without the context (None when the no-context pass was not asked for)."""

    logprob: tuple[float, ...]
    n_tokens: tuple[int, ...]
    no_context: tuple[float, ...] | None

    def protocol(self, name: str) -> list[float]:
        if name == "rank":
            return list(self.logprob)
        if name == "rank_mean":
            return [lp / max(n, 1) for lp, n in zip(self.logprob, self.n_tokens)]
        if name == "rank_pmi":
            if self.no_context is None:
                raise ValueError("rank_pmi needs the no-context pass")
            return [lp - bare for lp, bare in zip(self.logprob, self.no_context)]
        raise ValueError(f"unknown ranking protocol {name!r}")


BART_STYLE = ("bart", "plbart", "mbart")  # denoising encoder-decoders trained to rebuild the whole text


def is_bart_style(scorer: "Scorer") -> bool:
    return (getattr(getattr(scorer.model, "config", None), "model_type", None) in BART_STYLE
            and scorer.tok.mask_token is not None)


def _opening_closing(tok) -> tuple[str, str]:
    found = sentinels(tok)
    return (found[0], found[1]) if len(found) >= 2 else (tok.mask_token, "")


def plan_candidates(scorer: Scorer, model_family: str, prefix: str, fills, suffix: str,
                    language: str | None = None) -> CandidatePlan | None:
    """The scoring jobs that rank `fills` as completions of `prefix … suffix`; None when a completed
    text is longer than the model takes. `language`: the item's (python, java, ...): a model that marks
    its inputs' language (PLBART: `… </s> __java__`) gets that item's code (`pipeline.runtime.languages`).
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
    the source's prefix and suffix."""
    if model_family == "causal-lm" and scorer.convention == "lm-eval":
        jobs = lm_eval_jobs(scorer.tok, prefix, [f + suffix for f in fills])
        if any(len(ids) > scorer.max_length for ids, _ in jobs):
            return None
        return CandidatePlan(jobs, list(range(len(fills))), tuple(len(ids) - start for ids, start in jobs),
                             tuple(tuple(ids[start:]) for ids, start in jobs))
    tok = for_language(scorer.tok, language)
    encs = encode_fills(tok, prefix, fills, suffix)
    if model_family == "causal-lm":
        start_policy_ = scorer.start
        rows = [start_policy_.apply(e.ids) for e in encs]
        if any(len(r) > scorer.max_length for r in rows):
            return None
    elif any(len(e.ids) > scorer.max_length for e in encs):
        return None
    if model_family == "masked-lm":
        jobs, owner = [], []
        for c, e in enumerate(encs):
            for pos in e.span:
                ids = list(e.ids)
                ids[pos] = scorer.tok.mask_token_id
                jobs.append((ids, pos, e.ids[pos]))
                owner.append(c)
        return CandidatePlan(jobs, owner, tuple(len(e.span) for e in encs),
                             tuple(tuple(e.ids[p] for p in e.span) for e in encs))
    if model_family == "causal-lm":
        # the tokens before `start` are the same for every fill: a fill can change how the end of the
        # prefix is tokenized (`…Middle` + `tream` vs + `Write`), and those tokens are scored too
        shared = _common_prefix(rows)
        jobs = []
        for e, ids in zip(encs, rows):
            shift = len(ids) - len(e.ids)
            start = max(1, min((e.span[0] if e.span else len(e.ids) - 1) + shift, shared))
            jobs.append((ids, start))
        return CandidatePlan(jobs, list(range(len(encs))), tuple(len(ids) - start for ids, start in jobs),
                             tuple(tuple(ids[start:]) for ids, start in jobs))
    if is_bart_style(scorer):
        # BART/PLBART's text infilling: the source with the mask in the fill's place, the target the whole
        # completed text in the tokenizer's format (BART `<s> … </s>`, PLBART `… </s> [language code]`)
        source = tok(prefix.rstrip(" ") + tok.mask_token + suffix)["input_ids"]
        targets = [tok(prefix + f + suffix)["input_ids"] for f in fills]
        if len(source) > scorer.max_length or any(len(t) > scorer.max_length for t in targets):
            return None
        return CandidatePlan([(source, t) for t in targets], list(range(len(fills))), tuple(len(t) for t in targets),
                             tuple(tuple(t) for t in targets))
    # T5's format: `prefix <extra_id_0> suffix` -> `<extra_id_0> fill <extra_id_1>`: the next sentinel
    # closes the span, and nothing after it is scored (what follows it in training is the next span or
    # </s>, the same for every fill); a model without sentinels gets its mask token and </s>
    opening, closing = _opening_closing(tok)
    # the prefix's trailing spaces go with the fill: byte-level BPE spells " scale" as one token `Ġscale`
    kept = prefix.rstrip(" ")
    source = tok(kept + opening + suffix)["input_ids"]
    space = prefix[len(kept):]
    targets = [tok(opening + space + f + closing, add_special_tokens=not closing)["input_ids"] for f in fills]
    return CandidatePlan([(source, t) for t in targets], list(range(len(fills))), tuple(len(t) for t in targets),
                         tuple(tuple(t) for t in targets))


def candidate_jobs(scorer: Scorer, model_family: str, prefix: str, fills, suffix: str) -> tuple[list[tuple], list[int]] | None:
    """`plan_candidates`' jobs and owners only (causal jobs are `(ids, start)`)."""
    plan = plan_candidates(scorer, model_family, prefix, fills, suffix)
    return None if plan is None else (plan.jobs, plan.owner)


def _sum_by_owner(plans, values) -> list[list[float]]:
    out, at = [], 0
    for jobs, owner, n in plans:
        scores = [0.0] * n
        for c, v in zip(owner, values[at : at + len(jobs)]):
            scores[c] += v
        at += len(jobs)
        out.append(scores)
    return out


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


def _start(job: tuple) -> int:
    return job[1] if len(job) > 1 else 1


def no_context_logprobs(scorer: Scorer, model_family: str, keys: list[tuple[int, ...]]) -> list[float]:
    """The log-likelihood of each key's scored tokens without the context, cached on the scorer (one
    model) across items and chunks: candidates repeat across quizzes. "Without the context" is:
    causal-lm: the tokens after BOS alone (or after what the tokenizer puts before a text, [CLS]); masked-lm: the tokens alone
    between the tokenizer's special tokens (<s> … </s>), each masked in turn; encoder-decoder: the same
    target for a source that is the first sentinel alone (`<extra_id_0></s>`)."""
    cache = scorer._no_context
    todo = sorted({k for k in keys if k not in cache})
    if todo:
        tok = scorer.tok
        if model_family == "masked-lm":
            lead, trail = _special_frame(tok)
            jobs, owner = [], []
            for c, k in enumerate(todo):
                ids = lead + list(k) + trail
                for p in range(len(lead), len(lead) + len(k)):
                    masked = list(ids)
                    masked[p] = tok.mask_token_id
                    jobs.append((masked, p, ids[p]))
                    owner.append(c)
            values = _sum_by_owner([(jobs, owner, len(todo))], scorer.masked_token_logprobs(jobs))[0]
        elif model_family == "causal-lm":
            lead = _causal_lead(scorer)
            rows = [lead + list(k) for k in todo]
            values = scorer.sequence_logprob(rows, [max(len(lead), 1)] * len(rows))  # none: 1st token unscored
        else:  # the target's language (PLBART's trailing code) is the source's too
            opening = _opening_closing(tok)[0]
            values = scorer.seq2seq_logprob([(for_language(tok, language_of(tok, k))(opening)["input_ids"], list(k))
                                             for k in todo])
        cache.update(zip(todo, values))
    return [cache[k] for k in keys]


def _causal_lead(scorer: Scorer) -> list[int]:
    """What a causal LM's no-context row starts with: lm-eval's empty context (the prefix token: BOS, else
    EOS), else the start token (else what the tokenizer puts first, [CLS])."""
    tok = scorer.tok
    if scorer.convention == "lm-eval":
        return [tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id]
    return scorer.start.apply(_special_frame(tok)[0])


def no_context_trees(scorer: Scorer, plans: list[CandidatePlan]) -> list[tuple[float, ...]]:
    """`no_context_logprobs` for causal LMs on the tree path: each item's no-context rows (the start
    token and each fill's scored tokens) as one token tree (`Scorer.tree_logprob`), so a value is a
    function of its item alone; items with the same fills and suffix (and an item with an empty context,
    whose main rows are these) reuse the row's sums."""
    lead = _causal_lead(scorer)
    first = max(len(lead), 1)  # no start token: the first token is not scored
    groups = scorer.tree_logprob([[lead + list(k) for k in p.bare] for p in plans],
                                 [[first] * len(p.bare) for p in plans])
    return [tuple(g) for g in groups]


def score_plans(scorer: Scorer, model_family: str, plans: list[CandidatePlan],
                no_context: bool = True) -> list[CandidateScores]:
    """Every plan's fills scored in one pass (`score_candidates`), plus the no-context pass over the
    distinct scored-token keys not seen before by this scorer (`no_context_logprobs`) when asked."""
    sums = score_candidates(scorer, model_family, [(p.jobs, p.owner, len(p.n_tokens)) for p in plans])
    bare = None
    if no_context and model_family == "causal-lm" and scorer.tree:
        bare = no_context_trees(scorer, plans)
    elif no_context:
        flat = no_context_logprobs(scorer, model_family, [k for p in plans for k in p.bare])
        bare, at = [], 0
        for p in plans:
            bare.append(tuple(flat[at : at + len(p.bare)]))
            at += len(p.bare)
    return [CandidateScores(tuple(s), p.n_tokens, None if bare is None else bare[i])
            for i, (p, s) in enumerate(zip(plans, sums))]
