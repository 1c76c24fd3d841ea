"""Score apiquiz quizzes with one model, for one shard.

Protocols (the `protocol` column):
- `fill_mask` (the paper's, masked LMs): the answer must be one token of this model's
  tokenizer in context; the mask replaces it and the row keeps the gold token's rank over the
  whole vocabulary and the top-k fill-ins.
- `fill_mask_own_first` / `fill_mask_own_last` (masked LMs): the paper's first/last-token masks under
  the model's own tokenizer, on the whole-level quizzes whose level it splits (the quizzes' own
  first/last masks come from the generator's tokenizer, apiquiz.tokenizers[0]).
- `rank` (beyond the paper, every model family with an LM head): each candidate completes the text
  and is scored by log-likelihood; masked LMs by pseudo-log-likelihood of the candidate's
  tokens (each masked in turn, the rest visible), causal LMs by the log-probability of the whole
  sequence, encoder-decoder models by the log-probability of the candidate as the target for
  the masked input. Multi-token answers work the same as single-token ones. The summed
  log-likelihood favours short candidates (fewer tokens to pay for), so two more rankings come
  from the same pass (pipeline.runtime.protocols.PROTOCOLS):
- `rank_mean`: the sum over the number of scored tokens (model tokens; lm-evaluation-harness's
  acc_norm divides by bytes instead);
- `rank_pmi`: the sum minus the same tokens' log-likelihood without the context (a pointwise mutual
  information; pipeline.runtime.plan.plan_candidates says what "without the context" is per model family),
  one extra pass per distinct candidate, cached per model (causal LMs on the token-tree path: one tree
  of the quiz's no-context rows, pipeline.runtime.scorer.no_context_logprobs).
Encoder-only models (no LM head) get no job: the warehouse lists them once in `not_applicable`.

Scores are rounded to 1e-4 and ties broken by candidate text before ranking, so ranks do not
depend on batch size, shard count or device.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import torch
from tqdm import tqdm

from pipeline.families.apiquiz import schemas
from pipeline.runtime.predict import draw
from pipeline.runtime.encode import encode
from pipeline.runtime.plan import plan_candidates
from pipeline.runtime.protocols import PROTOCOLS, SCORE_DECIMALS, rank_of
from pipeline.runtime.scorer import Scorer, score_plans
from pipeline.io import read_parquet

QUIZ_LANGUAGE = "python"  # quizzes are built from the Python extraction: PLBART's `</s> __python__`
log = logging.getLogger("pipeline.families.apiquiz.infer")

APPLIES_TO = ("masked-lm", "causal-lm", "encoder-decoder")  # every model family with an LM head


@dataclass(frozen=True)
class Quiz:
    quiz_id: str
    prefix: str
    answer: str
    suffix: str
    candidates: tuple[str, ...]
    mask_position: str = "whole"  # first / last token of the level (the generator's tokenizer), or whole level


OWN_MASKS = ("fill_mask_own_first", "fill_mask_own_last")


def own_masks(tok, q: Quiz) -> list[tuple[str, list[int], int]]:
    """The paper's first/last-token masks under this model's own tokenizer: for a whole-level quiz whose
    level it splits, (protocol, ids, position) of its first token (starting where the level starts) and of
    its last token (ending where it ends); a boundary token that runs past the level gives no quiz."""
    if q.mask_position != "whole":
        return []
    text = q.prefix + q.answer + q.suffix
    enc = tok(text, return_offsets_mapping=True, add_special_tokens=True)
    start, end = len(q.prefix), len(q.prefix) + len(q.answer)
    span = [i for i, (a, b) in enumerate(enc["offset_mapping"]) if b > a and a < end and b > start]
    if len(span) < 2:
        return []  # one token: the level's own fill_mask row
    (a0, _), (_, b1) = enc["offset_mapping"][span[0]], enc["offset_mapping"][span[-1]]
    out = []
    if a0 == start:
        out.append((OWN_MASKS[0], list(enc["input_ids"]), span[0]))
    if b1 == end:
        out.append((OWN_MASKS[1], list(enc["input_ids"]), span[-1]))
    return out


def fill_mask(scorer: Scorer, quizzes: list[Quiz], model: str, top_k: int) -> list[dict]:
    """`fill_mask` rows (the quiz's answer, when it is one token of this model's tokenizer) and, for
    whole-level quizzes this tokenizer splits, `fill_mask_own_first` / `fill_mask_own_last` rows (its own
    first/last token masked, the rest of the level visible)."""
    rows, jobs, owners = [], [], []
    for q in quizzes:
        enc = encode(scorer.tok, q.prefix, q.answer, q.suffix)
        base = {"quiz_id": q.quiz_id, "model": model, "protocol": "fill_mask", "gold_rank": None,
                "n_ranked": None, "top": [], "gold_logprob": None}
        masks = [("fill_mask", list(enc.ids), enc.span[0])] if enc.exact else []
        if not enc.exact:
            rows.append({**base, "status": "multi_token"})
        masks += own_masks(scorer.tok, q)
        for protocol, ids, at in masks:
            if len(ids) > scorer.max_length:
                rows.append({**base, "protocol": protocol, "status": "too_long"})
                continue
            gold = ids[at]
            ids[at] = scorer.tok.mask_token_id
            jobs.append((ids, at))
            owners.append(({**base, "protocol": protocol}, gold))
    for (base, gold), logp in zip(owners, scorer.masked_position_logprobs(jobs)):
        rounded = torch.round(logp, decimals=SCORE_DECIMALS)
        g = rounded[gold]
        rank = int((rounded > g).sum()) + int((rounded[:gold] == g).sum()) + 1  # ties: lower id first
        top = torch.topk(logp, top_k).indices.tolist()
        rows.append({**base, "status": "ok", "gold_rank": rank, "n_ranked": int(logp.numel()),
                     "top": [scorer.tok.decode([t]).strip() for t in top], "gold_logprob": float(logp[gold])})
    return rows


def rank_candidates(scorer: Scorer, family: str, quizzes: list[Quiz], model: str, top_k: int,
                    protocols: tuple[str, ...] = PROTOCOLS) -> list[dict]:
    """One row per quiz and ranking protocol (pipeline.runtime.protocols.PROTOCOLS), all from one scoring pass (and the
    cached no-context pass when `rank_pmi` is asked for); `gold_logprob` is the gold's score under the
    row's protocol (summed / per-token mean log-likelihood, or PMI)."""
    rows, plans = [], []
    for q in quizzes:
        base = {"quiz_id": q.quiz_id, "model": model, "gold_rank": None, "n_ranked": None, "top": [],
                "gold_logprob": None}
        plan = plan_candidates(scorer, family, q.prefix, q.candidates, q.suffix, QUIZ_LANGUAGE)
        if plan is None:
            rows += [{**base, "protocol": p, "status": "too_long"} for p in protocols]
        else:
            plans.append((q, base, plan))
    scored = score_plans(scorer, family, [plan for _, _, plan in plans], no_context="rank_pmi" in protocols)
    for (q, base, _), result in zip(plans, scored):
        gold = q.candidates.index(q.answer)
        for protocol in protocols:
            scores = result.protocol(protocol)
            rank, order = rank_of(scores, list(q.candidates), gold)
            rows.append({**base, "protocol": protocol, "status": "ok", "gold_rank": rank,
                         "n_ranked": len(q.candidates), "top": [q.candidates[i] for i in order[:top_k]],
                         "gold_logprob": scores[gold]})
    return rows


def ranked_candidates(answer: str, candidates: list[str], cap: int) -> tuple[str, ...]:
    """The gold plus the first `cap - 1` other candidates in the generator's order (siblings of the
    gold first, then names of the same kind by frequency), `cap` in all (0: every candidate), sorted."""
    others = [c for c in candidates if c != answer]
    if cap:
        others = others[: cap - 1]
    return tuple(sorted([answer, *others]))


def score_shard(quizzes: pa.Table, loaded, shard: int, shards: int, token_budget: int, fill_top_k: int,
                rank_top_k: int, max_items: int = 0, seed: int = 0, max_candidates: int = 0,
                min_per_stratum: int = 0, setting_caps: dict | None = None,
                protocols: tuple[str, ...] = PROTOCOLS, labels: list[str | None] | None = None) -> pa.Table:
    """Score this shard's part of the subset, drawn as `predict` draws it (pipeline.runtime.predict.draw):
    `max_items` quizzes per stratum (setting, mask position) with at least `min_per_stratum` of each, so small
    settings are not lost to a uniform draw; `setting_caps` ({setting: n}, a zoo entry's per-setting cap): n
    quizzes of each named setting and none of the others; with contamination labels ({label: n}, or
    {setting: {label: n}}; `labels`: each quiz's, in order) n of each label."""
    ids = quizzes.column("quiz_id").to_pylist()
    mine = quizzes.filter(pa.array(draw(ids, shard, shards, max_items, seed, setting_caps,
                                        quizzes.column("setting").to_pylist(), labels, strata(quizzes),
                                        min_per_stratum), pa.bool_()))
    return score_quizzes(mine, loaded, shard, token_budget, fill_top_k, rank_top_k, max_candidates, protocols)


def strata(quizzes: pa.Table) -> list[tuple[str, str]]:
    """Each quiz's stratum of the draw: (setting, mask position)."""
    return list(zip(quizzes.column("setting").to_pylist(), quizzes.column("mask_position").to_pylist()))


def score_quizzes(mine: pa.Table, loaded, shard: int, token_budget: int, fill_top_k: int, rank_top_k: int,
                  max_candidates: int = 0, protocols: tuple[str, ...] = PROTOCOLS) -> pa.Table:
    """Score these quizzes (a shard's draw): fill-mask for a masked LM, then every ranking protocol."""
    items = [Quiz(r["quiz_id"], r["prefix"], r["answer"], r["suffix"],
                  ranked_candidates(r["answer"], r["candidates"], max_candidates), r["mask_position"])
             for r in mine.select(["quiz_id", "prefix", "answer", "suffix", "candidates", "mask_position"]).to_pylist()]
    model, family = loaded.entry.name, loaded.entry.model_family
    if family not in APPLIES_TO:
        raise ValueError(f"apiquiz needs an LM head; {model} is {family}")
    rows: list[dict] = []
    scorer = Scorer(loaded, token_budget)
    chunk = 256  # quizzes per progress step; batches are formed inside each chunk
    for start in tqdm(range(0, len(items), chunk), desc=f"apiquiz {model} shard {shard}", unit="chunk",
                      file=sys.stderr, mininterval=5):
        part = items[start : start + chunk]
        if family == "masked-lm":
            rows += fill_mask(scorer, part, model, fill_top_k)
        rows += rank_candidates(scorer, family, part, model, rank_top_k, protocols)
    table = pa.Table.from_pylist(rows, schemas.PREDICTIONS)
    return table.sort_by([("quiz_id", "ascending"), ("protocol", "ascending")])


def predict(ctx) -> pa.Table:
    """The shared runner's entry point (pipeline.runtime.predict)."""
    p = ctx.params["inference"]
    quizzes = read_parquet(ctx.inputs["quizzes"], schemas.QUIZZES)
    mine = quizzes.filter(ctx.select(quizzes.column("quiz_id").to_pylist(), p["max_items"],
                                     keys=quizzes.column("setting").to_pylist(), strata=strata(quizzes),
                                     floor=p["min_per_stratum"]))
    table = score_quizzes(mine, ctx.loaded, ctx.shard, ctx.token_budget, p["fill_top_k"], p["rank_top_k"],
                          p["max_candidates"], tuple(p.get("protocols") or PROTOCOLS))
    ok = pc.sum(pc.equal(table.column("status"), "ok")).as_py() or 0
    log.info("%s: %d rows, %d scored", ctx.description, table.num_rows, ok)
    return table
