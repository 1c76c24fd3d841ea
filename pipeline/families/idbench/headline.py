"""idbench's headline rows for the verdicts (pipeline.report.verdicts), found by pipeline.report.headlines."""

from __future__ import annotations

from pipeline.metrics.bootstrap import cell_seed, paired_spearman_tests
from pipeline.report.headlines import TWIN, _col, real_models, run_seed
from pipeline.report.verdicts import Comparison, Row


SIZE = "large"  # the headline's benchmark (pipeline.families.idbench.report.HEADLINE_SIZE)
SUMMARY_GOLD = "relatedness"  # the gold score the summary prints (the others: the family's page)
BASELINES = {"LV": "the LV baseline", "NW": "the NW baseline"}  # the string baselines (ours, kind string)


def rows(con, config) -> list[Row]:
    """Spearman's rho with the gold score per gold score, large benchmark, comparable pairs: the model's pair
    scores at the layer chosen on the other folds (idbench_held_out_scores), against its twin's (chosen the same
    way on its own scores) and against LV and NW, on the pairs all of them scored; the summary reads the
    stronger string baseline and prints relatedness (every gold score is on the page). One query: the held-out
    view is computed once."""
    seed, rows = run_seed(config), []
    real = set(real_models(con, "idbench_held_out_scores"))
    strings = [s for s in BASELINES
               if con.sql("SELECT count(*) FROM idbench_judged WHERE system = ? AND kind = 'string'",
                          params=[s]).fetchall()[0][0]]
    joins = "".join(
        f"LEFT JOIN idbench_judged s{i} ON s{i}.system = '{name}' AND s{i}.kind = 'string' AND s{i}.size = m.size "
        f"AND s{i}.gold = m.gold AND s{i}.pair_set = 'comparable' AND s{i}.pair_id = m.pair_id "
        for i, name in enumerate(strings))
    items = con.sql(
        "WITH h AS MATERIALIZED (SELECT model, size, gold, pair_id, x, value FROM idbench_held_out_scores "
        "WHERE size = ?) "
        f"SELECT m.model, m.gold, w.twin, m.x, m.value, t.x{''.join(f', s{i}.score' for i in range(len(strings)))}, "
        "m.pair_id "
        "FROM h m LEFT JOIN model_twins w ON w.model = m.model "
        "LEFT JOIN h t ON t.model = w.twin AND t.gold = m.gold AND t.pair_id = m.pair_id "
        f"{joins}ORDER BY m.model, m.gold, m.pair_id", params=[SIZE]).fetchall()
    groups: dict[tuple, list] = {}
    summary_x: dict[str, dict] = {}  # real model -> {pair_id: (x, gold value)} on the summary's gold score
    for r in items:
        groups.setdefault((r[0], r[1], r[2]), []).append(r[3:-1])
        if r[1] == SUMMARY_GOLD and r[0] in real and r[3] is not None:
            summary_x.setdefault(r[0], {})[r[-1]] = (r[3], r[4])
    for (model, gold, twin), group in groups.items():
        if model not in real:
            continue
        mine = summary_x.get(model, {}) if gold == SUMMARY_GOLD else {}
        pairs = sorted(mine)
        others = {BASELINES[name]: _col(group, 3 + i) for i, name in enumerate(strings)}
        if twin:
            others[TWIN] = _col(group, 2)
        metric = f"rho, {gold} ({SIZE})"
        tests = paired_spearman_tests(_col(group, 0), others, _col(group, 1),
                                      cell_seed(seed, "idbench", model, metric))
        first = next(iter(tests.values()), None)
        rows.append(Row("idbench", model, metric, None if first is None else first.a,
                        0 if first is None else first.n,
                        Comparison(TWIN, tests[TWIN]) if twin else None,
                        tuple(Comparison(name, tests[name]) for name in others if name != TWIN),
                        summary=gold == SUMMARY_GOLD,
                        # every other real model is paired on the pairs both scored by headlines.peers: the
                        # difference of the two rhos with the gold, each model at its own held-out layer
                        items=tuple(pairs), values=tuple(float(mine[k][0]) for k in pairs),
                        statistic="spearman", gold=tuple(float(mine[k][1]) for k in pairs)))
    return rows
