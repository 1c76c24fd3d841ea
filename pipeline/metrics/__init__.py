"""The shared metric library: every metric as a DuckDB macro and a Python twin giving the same number.

    import duckdb
    from pipeline import metrics
    con = duckdb.connect()
    metrics.install(con)   # CREATE OR REPLACE every macro of macros.sql (idempotent)
    con.sql("SELECT avg(success_at_k(gold_rank, 5)) FROM predictions")
    metrics.success_at_k([1, 7, None], 5).mean()   # the same number in Python

`METRICS` lists the metrics (name -> Metric); README.md beside this file has the definitions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pipeline.metrics.bootstrap import (
    POISSON_THRESHOLDS,
    BootstrapCI,
    PairedBootstrap,
    bootstrap_hash52,
    bootstrap_mean,
    paired_bootstrap,
    poisson_bootstrap_hist,
    poisson_bootstrap_mean,
    poisson_paired_bootstrap,
    poisson_paired_bootstrap_hist,
    poisson_weight,
    poisson_histogram_weights,
    poisson_weights,
    quantile_linear,
)
from pipeline.metrics.runs import GradedRuns, RunScores, evaluate_run, measure, read_run
from pipeline.metrics.correlation import Spearman, avg_ranks, spearman, spearman_rho
from pipeline.metrics.ranking import (
    abs_error,
    ap_at_k_apibench,
    ap_at_k_standard,
    error_rate,
    first_rank,
    is_error,
    mae,
    ndcg_at_k_apibench,
    ndcg_at_k_apibench_topk,
    ndcg_at_k_standard,
    reciprocal_rank,
    success_at_k,
)

MACROS_SQL = Path(__file__).with_name("macros.sql")


@dataclass(frozen=True)
class Metric:
    """One metric: its SQL macro and its Python twin.

    kind: "per_item" (a scalar macro per row; the metric is avg() of it, np.mean of the twin's
    array), or "lists" (a scalar macro over list() aggregates, e.g. spearman_rho(list(x), list(y));
    the twin takes the two columns and returns the number).
    """

    name: str
    sql: str  # the macro's name in macros.sql
    python: Callable
    description: str
    higher_is_better: bool
    kind: str = "per_item"


METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("success_at_k", "success_at_k", success_at_k,
           "1 if the gold's rank <= k else 0 (NULL rank -> 0); mean = P@k (INK) = SR@k (APIBench)", True),
    Metric("mrr_at_k", "reciprocal_rank", reciprocal_rank,
           "1/gold_rank if <= k else 0 (k NULL: no cutoff); mean = MRR@k", True),
    Metric("map_at_k_standard", "ap_at_k_standard", ap_at_k_standard,
           "trec_eval map_cut: sum of precision@i over relevant ranks <= k / all relevant items", True),
    Metric("map_at_k_apibench", "ap_at_k_apibench", ap_at_k_apibench,
           "APIBench MAP@k: the same sum / relevant items found within the top k (0 if none)", True),
    Metric("ndcg_at_k_standard", "ndcg_at_k_standard", ndcg_at_k_standard,
           "trec_eval ndcg_cut: gain = grade, discount log2(rank+1), IDCG from the ideal grades", True),
    Metric("ndcg_at_k_apibench", "ndcg_at_k_apibench", ndcg_at_k_apibench,
           "APIBench NDCG@k (Tables 6-7): IDCG@k from the whole returned list re-sorted by grade", True),
    Metric("ndcg_at_k_apibench_topk", "ndcg_at_k_apibench_topk", ndcg_at_k_apibench_topk,
           "a looser APIBench reading: IDCG@k from the returned top k only, re-sorted by grade", True),
    Metric("error_rate", "is_error", is_error,
           "1 if the prediction differs from the gold (NULL prediction: error); mean = 1 - accuracy", False),
    Metric("mae", "abs_error", abs_error,
           "|pred - gold| (NULL skipped); mean = mean absolute error", False),
    Metric("spearman", "spearman_rho", spearman_rho,
           "Spearman's rho: Pearson of average ranks, on floats, pairs with a NULL dropped", True, "lists"),
)}


def install(con) -> None:
    """Create (or replace) every macro of macros.sql in a DuckDB connection."""
    con.execute(MACROS_SQL.read_text())


__all__ = [
    "METRICS", "MACROS_SQL", "Metric", "install",
    "success_at_k", "reciprocal_rank", "first_rank", "ap_at_k_standard", "ap_at_k_apibench",
    "ndcg_at_k_standard", "ndcg_at_k_apibench", "ndcg_at_k_apibench_topk", "is_error", "abs_error", "error_rate", "mae",
    "GradedRuns", "RunScores", "evaluate_run", "measure", "read_run",
    "Spearman", "spearman", "spearman_rho", "avg_ranks",
    "BootstrapCI", "PairedBootstrap", "bootstrap_mean", "paired_bootstrap",
    "poisson_bootstrap_mean", "poisson_paired_bootstrap", "poisson_bootstrap_hist", "poisson_paired_bootstrap_hist", "poisson_weight", "poisson_weights", "poisson_histogram_weights",
    "bootstrap_hash52", "POISSON_THRESHOLDS", "quantile_linear",
]
