"""Each family's headline rows for the verdicts (pipeline.report.verdicts): per real model (not a random twin),
the per-item values of its headline metric, of its twin's and of each baseline's on the same items, paired by
pipeline.metrics.bootstrap with 10,000 replicates seeded per cell (cell_seed(run seed, family, model, metric)).
Each family's own rows live in its folder: `<family module>.headline` with `rows(con, config) -> list[Row]`
(found through the registry, pipeline.registry); a family without that module has no summary row. The shared
helpers (real_models, twin_of, _mean_row, TWIN) are here."""

from __future__ import annotations

import importlib
import importlib.util
import logging
from dataclasses import replace

import duckdb
import numpy as np

from pipeline import registry
from pipeline.metrics.bootstrap import cell_seed, paired_mean_test, paired_spearman_tests
from pipeline.report.common import run_seed
from pipeline.report.verdicts import Comparison, Row

TWIN = "its twin"
log = logging.getLogger("pipeline.report.headlines")
FAILED: dict[str, str] = {}  # family -> why its rows could not be computed (the summary says so)


def real_models(con, table: str, column: str = "model") -> list[str]:
    """The models with rows in `table` that are no random twin (models.random), sorted."""
    models = [m for (m,) in con.sql(f"SELECT DISTINCT {column} FROM {table} ORDER BY 1").fetchall()]
    random = {m for (m,) in con.sql("SELECT name FROM models WHERE coalesce(random, false)").fetchall()}
    return [m for m in models if m not in random]


def twin_of(con, model: str) -> str | None:
    rows = con.sql("SELECT twin FROM model_twins WHERE model = ?", params=[model]).fetchall()
    return rows[0][0] if rows else None


def _col(rows, i) -> np.ndarray:
    return np.array([np.nan if r[i] is None else float(r[i]) for r in rows], dtype=np.float64)


def _mean_row(family: str, model: str, metric: str, seed: int, a: np.ndarray, twin: np.ndarray | None,
              baselines: dict[str, np.ndarray], lower_is_better: bool = False, keys=None) -> Row:
    """A row from per-item values: a (the model's), its twin's (NaN where the twin has none) and each
    baseline's on the same items; every comparison a paired mean test seeded by its cell. `keys` (each item's id,
    aligned with a) lets `peers` pair the row with another real model's on the items both have."""
    ok = ~np.isnan(a)
    return Row(family, model, metric, float(a[ok].mean()) if ok.any() else None, int(ok.sum()),
               None if twin is None else Comparison(TWIN, paired_mean_test(
                   a, twin, cell_seed(seed, family, model, metric, "twin"))),
               tuple(Comparison(name, paired_mean_test(a, b, cell_seed(seed, family, model, metric, name)))
                     for name, b in baselines.items()),
               lower_is_better,
               items=() if keys is None else tuple(str(k) for k in keys),
               values=() if keys is None else tuple(float(v) for v in a))


# A row's statistic (Row.statistic) -> its paired test of two models' values on the same items (each item's gold
# value beside them): the difference of the statistic, model minus the other, 10,000 replicates from `seed`.
PAIRED = {
    "mean": lambda a, b, gold, seed: paired_mean_test(a, b, seed),
    "spearman": lambda a, b, gold, seed: paired_spearman_tests(a, {"other": b}, gold, seed)["other"],
}


def peers(rows: list[Row], seed: int) -> list[Row]:
    """Real models against each other: each summary row with per-item values (`items`) gets, for every other real
    model's summary row of its family and metric, a paired test of its statistic (`Row.statistic` in PAIRED: the
    mean, or Spearman's rho with the items' gold) on the items both scored (the model's minus the other's, 10,000
    replicates seeded by cell), in model order. Models drawn on different subsets are compared only where their
    items coincide; a pair without a shared item is left out."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(rows):
        if r.items and r.summary:  # the summary's rows (a family's page would repeat each pair on every task)
            groups.setdefault((r.family, r.metric), []).append(i)
    out = list(rows)
    for (family, metric), members in groups.items():
        for i in members:
            mine = rows[i]
            test, gold = PAIRED[mine.statistic], mine.gold or (np.nan,) * len(mine.items)
            comparisons = []
            for j in sorted((j for j in members if j != i), key=lambda j: rows[j].model):
                other = rows[j]
                if other.statistic != mine.statistic:
                    continue
                theirs = dict(zip(other.items, other.values))
                shared = [(v, theirs[k], g) for k, v, g in zip(mine.items, mine.values, gold)
                          if k in theirs and v == v and theirs[k] == theirs[k]]
                if not shared:
                    continue
                a, b, g = (np.array(x, dtype=np.float64) for x in zip(*shared))
                paired = test(a, b, g, cell_seed(seed, family, mine.model, metric, "peer", other.model))
                if paired.n:  # rho needs 3 shared items with a gold value
                    comparisons.append(Comparison(other.model, paired))
            out[i] = replace(mine, peers=tuple(comparisons))
    return out


def family_rows(name: str):
    """The family's headline module (`<its module>.headline`, with `rows(con, config)`), or None without one."""
    module = f"{registry.load(name).module}.headline"
    return importlib.import_module(module) if importlib.util.find_spec(module) is not None else None


def rows(con, config, families: list[str]) -> list[Row]:
    """Every headline row of the enabled `families` (in their order), families without a headline module left out."""
    out: list[Row] = []
    FAILED.clear()
    for name in families:
        module = family_rows(name)
        if module is not None:
            try:
                out += peers(module.rows(con, config), run_seed(config))
            except duckdb.Error as e:  # a warehouse without the family's tables (an older build): said, not hidden
                log.warning("%s: no headline rows for the summary: %s", name, e)
                FAILED[name] = str(e).split("\n")[0]
    return out
