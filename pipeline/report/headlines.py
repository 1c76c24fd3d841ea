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

import duckdb
import numpy as np

from pipeline import registry
from pipeline.metrics.bootstrap import cell_seed, paired_mean_test
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
              baselines: dict[str, np.ndarray], lower_is_better: bool = False) -> Row:
    """A row from per-item values: a (the model's), its twin's (NaN where the twin has none) and each
    baseline's on the same items; every comparison a paired mean test seeded by its cell."""
    ok = ~np.isnan(a)
    return Row(family, model, metric, float(a[ok].mean()) if ok.any() else None, int(ok.sum()),
               None if twin is None else Comparison(TWIN, paired_mean_test(
                   a, twin, cell_seed(seed, family, model, metric, "twin"))),
               tuple(Comparison(name, paired_mean_test(a, b, cell_seed(seed, family, model, metric, name)))
                     for name, b in baselines.items()),
               lower_is_better)


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
                out += module.rows(con, config)
            except duckdb.Error as e:  # a warehouse without the family's tables (an older build): said, not hidden
                log.warning("%s: no headline rows for the summary: %s", name, e)
                FAILED[name] = str(e).split("\n")[0]
    return out
