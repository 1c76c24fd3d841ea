"""Re-rank the n-gram baseline's top-N candidates of each apirec point with one model, for one shard.

Retrieve then re-rank: the first stage is the n-gram (generate.py), whose top `candidates` per
point are stored with how each is written in the point's file. The model scores each completed
context `context + written candidate + "("`: masked LMs by pseudo-log-likelihood of the
candidate's tokens (each masked in turn), causal LMs by the log-probability of the candidate's
own tokens given the point's shared prefix (the context runs once: the point's candidates as one token
tree, Scorer.tree_logprob, or through the KV cache, Scorer.shared_prefix_logprob (pipeline.runtime.score_causal); the
same ranks as whole sequences), encoder-decoder models by log p(candidate | context with a sentinel). The context is
cut from the left (at a token boundary) so the longest completion fits the model's max_length.
Rankers: `rerank_ngram` by the summed log-likelihood, `rerank_ngram_mean` by its per-token mean,
`rerank_ngram_pmi` by the sum minus the no-context log-likelihood (pipeline.runtime.protocols.PROTOCOLS; one pass, the
no-context one cached per model). The row records whether the gold is in the pool (recall of the first stage); a gold outside it
has no rank (a miss at every k), and the class-level rank is the first candidate of the gold's class.

Scores are rounded (scoring.SCORE_DECIMALS) and ties broken by FQN, so ranks do not depend on
batch size, shard count or device.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.families.apirec import schemas
from pipeline.families.apirec.generate import api_class
from pipeline.io import read_parquet
from pipeline.runtime.predict import draw
from pipeline.runtime.plan import CandidatePlan, plan_candidates
from pipeline.runtime.protocols import PROTOCOLS, rank_of
from pipeline.runtime.scorer import Scorer, score_plans

log = logging.getLogger("pipeline.families.apirec.infer")

APPLIES_TO = ("masked-lm", "causal-lm", "encoder-decoder")
TOP_K = 10
SUFFIX = "("


@dataclass(frozen=True)
class Point:
    point_id: str
    context: str
    api: str
    candidates: tuple[str, ...]  # FQNs
    texts: tuple[str, ...]  # as written in the file
    language: str | None = None  # the file's (from its path): a model that marks it gets its code (PLBART)


def language_of_path(path: str | None) -> str | None:
    """A point's language from its file's extension (the views' `language`)."""
    if not path:
        return None
    return "java" if path.endswith(".java") else "python" if path.endswith((".py", ".pyi")) else None


def fit_context(tok, context: str, texts: tuple[str, ...], max_length: int) -> str:
    """The longest tail of `context` (from a token boundary) such that every completion fits."""
    longest = max(len(tok(t + SUFFIX, add_special_tokens=False)["input_ids"]) for t in texts)
    keep = max_length - longest - 4  # special tokens and a boundary merge
    offsets = tok(context, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    if keep <= 0:
        return ""
    if len(offsets) <= keep:
        return context
    return context[offsets[len(offsets) - keep][0]:]


def plan(scorer: Scorer, family: str, p: Point) -> CandidatePlan | None:
    """Scoring jobs of one point's candidates (pipeline.runtime.plan.plan_candidates); None if too long."""
    prefix = fit_context(scorer.tok, p.context, p.texts, scorer.max_length)
    return plan_candidates(scorer, family, prefix, p.texts, SUFFIX, p.language)


# ranker name per ranking protocol (pipeline.runtime.protocols.PROTOCOLS): the summed log-likelihood keeps
# its old name, the per-token mean and the PMI against the no-context log-likelihood get a suffix
RANKERS = {"rank": "rerank_ngram", "rank_mean": "rerank_ngram_mean", "rank_pmi": "rerank_ngram_pmi"}


def rerank(scorer: Scorer, family: str, points: list[Point], model: str,
           protocols: tuple[str, ...] = PROTOCOLS) -> list[dict]:
    """One row per point and ranking protocol (ranker `RANKERS[protocol]`), all from one scoring pass
    (and the cached no-context pass for the PMI); `gold_logprob` is the gold's score under it."""
    rows, plans = [], []
    for p in points:
        base = {"point_id": p.point_id, "model": model, "gold_rank": None,
                "class_rank": None, "n_candidates": len(p.candidates), "gold_in_candidates": p.api in p.candidates,
                "top": [], "gold_logprob": None}
        job = plan(scorer, family, p)
        if job is None:
            rows += [{**base, "ranker": RANKERS[pr], "status": "too_long"} for pr in protocols]
        else:
            plans.append((p, base, job))
    scored = score_plans(scorer, family, [job for _, _, job in plans], no_context="rank_pmi" in protocols)
    for (p, base, _), result in zip(plans, scored):
        names = list(p.candidates)
        gold = p.api
        klass = api_class(gold)
        for protocol in protocols:
            scores = result.protocol(protocol)
            _, order = rank_of(scores, names, 0)
            ranked = [names[i] for i in order]
            rows.append({**base, "ranker": RANKERS[protocol], "status": "ok",
                         "gold_rank": ranked.index(gold) + 1 if gold in ranked else None,
                         "class_rank": next((i + 1 for i, a in enumerate(ranked) if api_class(a) == klass), None),
                         "top": ranked[:TOP_K],
                         "gold_logprob": scores[names.index(gold)] if gold in names else None})
    return rows


def score_shard(points: pa.Table, loaded, shard: int, shards: int, token_budget: int, max_items: int, seed: int,
                candidates: int, language_caps: dict | None = None,
                protocols: tuple[str, ...] = PROTOCOLS, labels: list[str | None] | None = None) -> pa.Table:
    """Score this shard's part of the points, drawn as `predict` draws it (pipeline.runtime.predict.draw):
    `language_caps` ({language: n}, a zoo entry's per-language cap): n points of each named language, none of the
    others; by contamination label ({label: n}, or {language: {label: n}}; `labels`: each point's) n of each label."""
    mine = points.filter(pa.array(draw(points.column("point_id").to_pylist(), shard, shards, max_items, seed,
                                       language_caps, languages(points), labels), pa.bool_()))
    return score_points(mine, loaded, token_budget, candidates, protocols)


def languages(points: pa.Table) -> list[str]:
    """Each point's language (its file's), the stratum a per-language cap draws from."""
    return [language_of_path(p) for p in points.column("path").to_pylist()]


def score_points(mine: pa.Table, loaded, token_budget: int, candidates: int,
                 protocols: tuple[str, ...] = PROTOCOLS) -> pa.Table:
    """Rerank these points' candidates (a shard's draw) by every protocol."""
    items = [Point(r["point_id"], r["context"], r["api"], tuple(r["candidates"][:candidates]),
                   tuple(r["candidate_texts"][:candidates]), language_of_path(r["path"]))
             for r in mine.select(["point_id", "context", "api", "candidates", "candidate_texts", "path"]).to_pylist()
             if r["candidates"]]
    model, family = loaded.entry.name, loaded.entry.model_family
    if family not in APPLIES_TO:
        raise ValueError(f"apirec needs an LM head; {model} is {family}")
    scorer = Scorer(loaded, token_budget)
    rows: list[dict] = []
    chunk = 128
    for start in range(0, len(items), chunk):
        rows += rerank(scorer, family, items[start : start + chunk], model, protocols)
    return pa.Table.from_pylist(rows, schemas.PREDICTIONS).sort_by([("point_id", "ascending"), ("ranker", "ascending")])


def predict(ctx) -> pa.Table:
    """The shared runner's entry point (pipeline.runtime.predict)."""
    p = ctx.params["inference"]
    points = read_parquet(ctx.inputs["points"], schemas.POINTS)
    mine = points.filter(ctx.select(points.column("point_id").to_pylist(), p["max_items"], keys=languages(points)))
    table = score_points(mine, ctx.loaded, ctx.token_budget, p["candidates"], tuple(p.get("protocols") or PROTOCOLS))
    ok = pc.sum(pc.equal(table.column("status"), "ok")).as_py() or 0
    log.info("%s: %d rows, %d scored", ctx.description, table.num_rows, ok)
    return table
