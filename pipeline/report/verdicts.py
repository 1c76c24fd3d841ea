"""What a headline row shows, in words: each real model's headline score paired against its random twin and
against the baseline it must beat, on the same items, with the difference, its 95% CI and p (10,000 seeded
bootstrap replicates per cell, pipeline.metrics.bootstrap), and one verdict vocabulary (`verdict`) for every
family. The first screen of reports/index.md is the summary table of these rows (`summary_table`); each family's
page lists every comparison (`family_table`). The rows come from pipeline.report.headlines (one query per family,
per-item data only)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from pipeline.metrics.bootstrap import HEADLINE_REPLICATES, PairedTest
from pipeline.report.common import TOO_FEW, floored, fraction, markdown_table

ALPHA = 0.05
MC_SIGMAS = 2.0  # a p within this many Monte Carlo standard errors of ALPHA is undecided


@dataclass(frozen=True)
class Comparison:
    """The model against one reference (`name`: a noun phrase the verdict prints: "its twin", "jedi", "chance",
    "the majority class"), paired on the same items."""

    name: str
    test: PairedTest


@dataclass(frozen=True)
class Row:
    """One headline row: a family's real model on its headline metric (`score` over `n` items), against its twin
    and against the baselines it must beat (the summary reads the strongest of them: `to_beat`)."""

    family: str
    model: str
    metric: str
    score: float | None
    n: int
    twin: Comparison | None = None
    baselines: tuple[Comparison, ...] = field(default=())
    lower_is_better: bool = False  # an error (probing): a negative difference is the model's gain
    summary: bool = True  # printed in the first read's summary table (else on the family's page only)
    # the other real models on the same metric, each paired on the items both have (pipeline.report.headlines.peers)
    peers: tuple[Comparison, ...] = field(default=())
    # the per-item values behind `score`, keyed by item (a row made from per-item values): what `peers` pairs
    items: tuple[str, ...] = field(default=(), compare=False, repr=False)
    values: tuple[float, ...] = field(default=(), compare=False, repr=False)
    # how `score` comes from `values`, a name of pipeline.report.headlines.PAIRED: "mean" (the items' mean) or
    # "spearman" (Spearman's rho of the values with `gold`, each item's gold value aligned with `items`)
    statistic: str = field(default="mean", compare=False, repr=False)
    gold: tuple[float, ...] = field(default=(), compare=False, repr=False)

    def to_beat(self) -> Comparison | None:
        """The strongest baseline on these items (its own score best), the one the verdict reads first."""
        tested = [c for c in self.baselines if c.test.n and c.test.b == c.test.b]
        if not tested:
            return None
        return (min if self.lower_is_better else max)(tested, key=lambda c: c.test.b)


def verdict(name: str, test: PairedTest | None, floor: int, lower_is_better: bool = False,
            alpha: float = ALPHA) -> str:
    """The verdict on one paired comparison, in words, from its CI and p:

    - "no comparison": there is none (no such reference, or no shared item);
    - "undecided (n = N)": n under `report.min_n` (too few items to read a difference);
    - "undecided vs NAME (p = P, at 0.05 within its Monte Carlo error)": a p within MC_SIGMAS Monte Carlo errors of
      alpha (more replicates could tip it either way);
    - "above NAME" / "below NAME": p < alpha (and the CI on that side of zero);
    - "no better than NAME": not significant and the model no better on these items (difference <= 0);
    - "not shown above NAME (p = P)": a gain on these items whose CI still holds zero (n at or over the floor:
      the difference is not resolved at this n, which is not the same as no difference)."""
    if test is None or not test.n or test.diff != test.diff:
        return "no comparison"
    n = int(test.n)
    if floored(n, floor):
        return f"undecided (n = {n})"
    gain = -test.diff if lower_is_better else test.diff
    p = test.p_value
    near = test.p_error == test.p_error and abs(p - alpha) <= MC_SIGMAS * test.p_error
    lo, hi = (-test.hi, -test.lo) if lower_is_better else (test.lo, test.hi)
    if near:
        return f"undecided vs {name} (p = {p:.3f}, at {alpha:g} within its Monte Carlo error)"
    if p < alpha and gain > 0 and lo > 0:
        return f"above {name}"
    if p < alpha and gain < 0 and hi < 0:
        return f"below {name}"
    if gain <= 0:
        return f"no better than {name}"
    return f"not shown above {name} (p = {p:.3f})"


def row_verdict(row: Row, floor: int) -> str:
    """A row's verdict: against the baseline to beat first, then against its twin ("above jedi; above its
    twin"); a score under the floor is "undecided (n = N)" whatever its comparisons."""
    if floored(row.n, floor):
        return f"undecided (n = {int(row.n or 0)})"
    parts = []
    base = row.to_beat()
    if base is not None:
        parts.append(verdict(base.name, base.test, floor, row.lower_is_better))
    if row.twin is not None:
        parts.append(verdict(row.twin.name, row.twin.test, floor, row.lower_is_better))
    return "; ".join(parts) or "no comparison"


def signed(v) -> str:
    """A difference as printed: its sign always (+0.290, -0.046), 3 decimals."""
    if v is None or v != v:
        return ""
    text = fraction(v)
    return text if text.startswith("-") else "+" + text


def p_text(p: float, replicates: int) -> str:
    """p as printed: `p < 0.0001` when no replicate crossed zero (the resolution of 10,000), else 3 decimals."""
    if p != p:
        return ""
    if p == 0:
        return f"p < {1 / max(replicates, 1):g}"
    return f"p = {p:.4f}" if p < 0.001 else f"p = {p:.3f}"


def difference_cell(c: Comparison | None, floor: int, with_name: bool = False, row_n: int | None = None) -> str:
    """`+0.290 [+0.190, +0.390], p < 0.0001` (with `name: ` first when asked); empty without a comparison;
    under the floor `too few items`, with its n when it is not the row's (`row_n`)."""
    if c is None or not c.test.n or c.test.diff != c.test.diff:
        return ""
    t = c.test
    # a reference scored on fewer of the row's items (a baseline of one language of two) names its own n
    head = (f"{c.name}" + ("" if row_n is None or t.n == row_n or floored(t.n, floor) else f" (n = {t.n})") + ": "
            if with_name else "")
    if floored(t.n, floor):
        return f"{head}{TOO_FEW}" + ("" if t.n == row_n else f" (n = {t.n})")
    return f"{head}{signed(t.diff)} [{signed(t.lo)}, {signed(t.hi)}], {p_text(t.p_value, t.replicates)}"


SUMMARY_COLUMNS = ["family", "model", "headline metric", "score", "n", "vs its twin", "vs the baseline to beat",
                   "verdict"]


def summary_rows(rows: list[Row], floor: int) -> list[tuple]:
    out = []
    for r in rows:
        score = (TOO_FEW if floored(r.n, floor) else
                 "" if r.score is None or r.score != r.score else fraction(r.score))
        out.append((r.family, r.model, r.metric, score, r.n, difference_cell(r.twin, floor, row_n=r.n),
                    difference_cell(r.to_beat(), floor, with_name=True, row_n=r.n), row_verdict(r, floor)))
    return out


def summary_table(rows: list[Row], floor: int) -> str:
    """The first screen of reports/index.md: one row per family and real model."""
    if not rows:
        return "No headline rows (no family with a scored real model)."
    return markdown_table(SUMMARY_COLUMNS, summary_rows([r for r in rows if r.summary], floor))


def summary_lead(floor: int) -> str:
    return (f"Each real model against its random twin and the strongest baseline it must beat, paired on the same "
            f"items: difference, 95% CI, p ({HEADLINE_REPLICATES:,} bootstrap replicates a cell; for an error, lower "
            f"is better). Undecided: n under {floor} (`report.min_n`), or p within {MC_SIGMAS:g} Monte Carlo errors "
            f"of {ALPHA}; \"not shown above\": a gain whose CI holds zero. Every comparison: the family's page, "
            f"\"Verdicts\".")


FAMILY_COLUMNS = ["model", "metric", "score", "n", "against", "reference score", "difference [95% CI], p", "verdict"]


def family_table(rows: list[Row], floor: int) -> str:
    """A family's page: every comparison of every headline row (twin, each baseline, then each other real model
    on the items both have), one line each."""
    lines = []
    for r in rows:
        for c in ([r.twin] if r.twin else []) + list(r.baselines) + list(r.peers):
            lines.append((r.model, r.metric, "" if r.score is None or floored(r.n, floor) else fraction(r.score), r.n,
                          c.name, "" if floored(c.test.n, floor) or c.test.b != c.test.b else fraction(c.test.b),
                          difference_cell(c, floor, row_n=r.n), verdict(c.name, c.test, floor, r.lower_is_better)))
    return markdown_table(FAMILY_COLUMNS, lines) if lines else ""


def finite(v) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))
