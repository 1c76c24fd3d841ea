"""Step 5 of scoring (plan -> encode -> batch -> score -> protocols): from one item's scores to its ranking.

`CandidateScores` (what `pipeline.runtime.scorer.score_plans` returns per item) gives each ranking protocol's
score per fill (`PROTOCOLS`); `rank_of` ranks them so that ranks do not depend on batch size or device (scores
rounded to `SCORE_DECIMALS`, ties by name).
"""

from __future__ import annotations

from dataclasses import dataclass

SCORE_DECIMALS = 4

# Ranking protocols over one scoring pass (a summed log-likelihood alone favours short candidates), named as
# they appear in predictions:
# `rank` the summed log-likelihood of the scored tokens (kept under its old name), `rank_mean` that sum
# over the number of scored TOKENS (the model's tokens, not bytes: lm-evaluation-harness's acc_norm
# divides by bytes; per token is the length the model itself pays per step), `rank_pmi` the sum minus
# the same tokens' log-likelihood without the context (a pointwise mutual information).
PROTOCOLS = ("rank", "rank_mean", "rank_pmi")


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


def rank_of(scores: list[float], names: list[str], gold: int) -> tuple[int, list[int]]:
    """1-based rank of `gold` and the order of all items: by rounded score, then by name."""
    order = sorted(range(len(scores)), key=lambda i: (-round(scores[i], SCORE_DECIMALS), names[i]))
    return order.index(gold) + 1, order
