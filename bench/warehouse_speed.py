"""The warehouse at scale: every prediction-metric view over ten million synthetic prediction rows,
against a pandas groupby doing the same computation on the same Parquet, in one run.

Issue 14 item 3 (SPEC: "DuckDB over 10M prediction rows < 2 s, >= 5x pandas"). The bench writes,
once and seeded, prediction tables with the REAL schemas of the families (apiquiz predictions and
quizzes, codesyntax attention predictions), builds a real warehouse over them with
`pipeline.warehouse.build` (views, macros, provenance, a model zoo with random twins), and times:

- DuckDB: `SELECT * FROM <view>` fetched in full to an Arrow table, on the warehouse's own read-only query
  connection (`pipeline.query.connect`), the Parquet read included;
- pandas: `pd.read_parquet` of the columns the view needs, then the same joins/groupbys/ranks.

Results are compared (same groups, same numbers to 1e-9, or to the view's rounding) before a time is
printed, so the pandas side is a real twin and not a strawman. The bootstrap CI views
(`apiquiz_p_at_1_ci`, `apiquiz_vs_twin`) run at the full 10M rows too: the histogram Poisson
bootstrap (pipeline/metrics/README.md) costs one scan plus replicates x distinct values per group;
their twin is a pandas groupby feeding the metric library's Python twin, which draws the same
replicates (scipy's Poisson inverse CDF), so the CIs are compared exactly (to the views' rounding).

Usage: python -m bench.warehouse_speed [--rows 10000000] [--dir data/bench/warehouse] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline import families
from pipeline import metrics as M
from pipeline.query import connect
from pipeline.warehouse.build import build

from bench import best_of

REPO = Path(__file__).resolve().parent.parent
SETTINGS = ["call", "import", "alias", "adversarial_alias", "nl"]
POSITIONS = ["first", "last", "whole"]
PROTOCOLS = ["fill_mask", "rank"]


def zoo(n_trained: int) -> list[dict]:
    """Trained models and one random twin each (the twin views pair them through their cards)."""
    cards = []
    for i in range(n_trained):
        cards.append({"name": f"m{i:02d}", "family": "masked-lm", "source": "bench", "random": False})
        cards.append({"name": f"m{i:02d}-random", "family": "masked-lm", "source": "bench", "random": True,
                      "twin_of": f"m{i:02d}"})
    return cards


def write_apiquiz(folder: Path, rows: int, models: list[str], seed: int) -> dict[str, list[str]]:
    rng = np.random.default_rng(seed)
    n_quizzes = rows // (len(models) * len(PROTOCOLS))
    ids = np.array([f"q{i:08d}" for i in range(n_quizzes)], dtype=object)
    quizzes = pa.table({
        "quiz_id": ids,
        "setting": np.array(SETTINGS, dtype=object)[rng.integers(0, len(SETTINGS), n_quizzes)],
        "mask_position": np.array(POSITIONS, dtype=object)[rng.integers(0, len(POSITIONS), n_quizzes)],
        "seen": rng.random(n_quizzes) < 0.7,
    })
    quiz_schema = families.load("apiquiz").tables[0].schema
    full = {}
    for field in quiz_schema:
        if field.name in quizzes.column_names:
            full[field.name] = quizzes[field.name]
        elif pa.types.is_list(field.type):
            full[field.name] = pa.array([[]] * n_quizzes, type=field.type)
        elif pa.types.is_string(field.type):
            full[field.name] = pa.array(["x"] * n_quizzes, type=field.type)
        else:
            full[field.name] = pa.array(np.zeros(n_quizzes), type=field.type) if not pa.types.is_boolean(field.type) \
                else pa.array(np.zeros(n_quizzes, dtype=bool))
    pq.write_table(pa.table(full, schema=quiz_schema), folder / "apiquiz_quizzes.parquet")

    schema = families.load("apiquiz").inference.schema
    files = []
    for m, model in enumerate(models):  # one file per model, like the shards of a real run
        n = n_quizzes * len(PROTOCOLS)
        gold = rng.geometric(0.08 if model.endswith("random") else 0.2, n).astype(np.int32)
        status = np.where(rng.random(n) < 0.97, "ok", "too_long").astype(object)
        cols = {
            "quiz_id": np.tile(ids, len(PROTOCOLS)),
            "model": np.full(n, model, dtype=object),
            "protocol": np.repeat(np.array(PROTOCOLS, dtype=object), n_quizzes),
            "status": status,
            "gold_rank": pa.array(np.where(status == "ok", gold, 0), mask=status != "ok", type=pa.int32()),
            "n_ranked": pa.array(np.full(n, 50, dtype=np.int32)),
            "top": pa.array([["x"]] * n, type=pa.list_(pa.string())),
            "gold_logprob": pa.array(-rng.exponential(3.0, n)),
        }
        table = pa.table({f.name: cols.get(f.name, pa.nulls(n, f.type)) for f in schema}, schema=schema)
        path = folder / f"apiquiz_predictions_{m:02d}.parquet"
        pq.write_table(table, path, row_group_size=1 << 20)
        files.append(path)
    return {"apiquiz_quizzes": [str(folder / "apiquiz_quizzes.parquet")], "apiquiz_predictions": [str(f) for f in files]}


def write_codesyntax(folder: Path, rows: int, models: list[str], seed: int) -> dict[str, list[str]]:
    rng = np.random.default_rng(seed + 1)
    relations = [f"Rel{i:02d}:head->dep" for i in range(40)]
    grid = pd.MultiIndex.from_product(
        [["python", "java"], ["dev", "test"], relations, ["first", "last", "any"], [1, 3, 10, 20], range(6), range(8)],
        names=["language", "eval_split", "relation", "metric", "k", "layer", "head"]).to_frame(index=False)
    shards = max(1, rows // (len(grid) * len(models)))
    schema = families.load("codesyntax").inference.schema
    files = []
    for m, model in enumerate(models):
        for shard in range(shards):
            n = len(grid)
            total = rng.integers(1, 40, n)
            cols = {**{c: grid[c].to_numpy() for c in grid.columns}, "model": np.full(n, model, dtype=object),
                    "variant": np.full(n, "plain", dtype=object), "hits": rng.binomial(total, 0.3), "total": total}
            table = pa.table({f.name: pa.array(cols[f.name], type=f.type) for f in schema}, schema=schema)
            path = folder / f"codesyntax_predictions_{m:02d}_{shard}.parquet"
            pq.write_table(table, path, row_group_size=1 << 20)
            files.append(path)
    return {"codesyntax_predictions": [str(f) for f in files]}


def prepare(folder: Path, rows: int, seed: int, n_trained: int) -> tuple[dict, list[dict]]:
    """Write the synthetic tables once (kept: a second run reuses them) and return the warehouse spec."""
    cards = zoo(n_trained)
    models = [c["name"] for c in cards]
    stamp = folder / "tables.json"
    key = {"rows": rows, "seed": seed, "models": models, "version": 1}
    if stamp.exists() and json.loads(stamp.read_text()).get("key") == key:
        return json.loads(stamp.read_text())["tables"], cards
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.parquet"):
        old.unlink()
    tables = {**write_apiquiz(folder, rows, models, seed), **write_codesyntax(folder, rows, models, seed)}
    stamp.write_text(json.dumps({"key": key, "tables": tables}))
    return tables, cards


def make_warehouse(root: Path, tables: dict, cards: list[dict]) -> Path:
    model_dirs = []
    for card in cards:
        d = root / "data/models" / card["name"]
        d.mkdir(parents=True, exist_ok=True)
        (d / "card.json").write_text(json.dumps(card))
        model_dirs.append(f"data/models/{card['name']}")
    import yaml

    params = {**yaml.safe_load((REPO / "params.yaml").read_text()), "families": ["apiquiz", "codesyntax"]}
    db = root / "data/warehouse.duckdb"
    build(db, {"tables": tables, "params": params, "models": model_dirs, "sources": [], "not_applicable": []}, root)
    return db


# ---------------------------------------------------------------- pandas twins of the views


def pd_apiquiz(tables: dict, with_quizzes: bool) -> pd.DataFrame:
    p = pd.concat([pd.read_parquet(f, columns=["quiz_id", "model", "protocol", "status", "gold_rank"])
                   for f in tables["apiquiz_predictions"]], ignore_index=True)
    if with_quizzes:
        q = pd.read_parquet(tables["apiquiz_quizzes"][0], columns=["quiz_id", "setting", "mask_position", "seen"])
        p = p.merge(q, on="quiz_id")
    return p


def hits(df: pd.DataFrame, ks: list[int]) -> pd.DataFrame:
    ok = df["status"] == "ok"
    for k in ks:
        df[f"h{k}"] = np.where(ok, (df["gold_rank"] <= k).astype(float), np.nan)
    return df


def pd_apiquiz_precision(tables: dict) -> pd.DataFrame:
    df = hits(pd_apiquiz(tables, True), [1, 5, 10, 20, 50])
    df["ok"] = df["status"] == "ok"
    g = df.groupby(["model", "protocol", "setting", "mask_position", "seen"], sort=True)
    out = g.agg(quizzes=("quiz_id", "size"), scored=("ok", "sum"), **{f"p_at_{k}": (f"h{k}", "mean") for k in [1, 5, 10, 20, 50]})
    for k in [1, 5, 10, 20, 50]:
        out[f"p_at_{k}"] = 100 * out[f"p_at_{k}"]  # the view rounds to 2 decimals (compared within 0.005)
    return out.reset_index()


def pd_apiquiz_by_setting(tables: dict) -> pd.DataFrame:
    df = hits(pd_apiquiz(tables, True), [1, 5, 10])
    df["ok"] = df["status"] == "ok"
    out = df.groupby(["model", "protocol", "setting"], sort=True).agg(
        scored=("ok", "sum"), **{f"p_at_{k}": (f"h{k}", "mean") for k in [1, 5, 10]})
    for k in [1, 5, 10]:
        out[f"p_at_{k}"] = 100 * out[f"p_at_{k}"]  # the view rounds to 2 decimals (compared within 0.005)
    return out.reset_index()


def pd_apiquiz_p_at_k(tables: dict) -> pd.DataFrame:
    df = pd_apiquiz(tables, False)
    df = hits(df[df["status"] == "ok"].copy(), [1, 5, 10, 20, 50])
    out = df.groupby(["model", "protocol"], sort=True).agg(
        scored=("quiz_id", "size"), **{f"p_at_{k}": (f"h{k}", "mean") for k in [1, 5, 10, 20, 50]})
    for k in [1, 5, 10, 20, 50]:
        out[f"p_at_{k}"] = 100 * out[f"p_at_{k}"]
    return out.reset_index()


CS_KEYS = ["model", "language", "variant", "eval_split", "relation", "metric", "k", "layer", "head"]


def pd_cs_head_scores(tables: dict) -> pd.DataFrame:
    df = pd.concat([pd.read_parquet(f) for f in tables["codesyntax_predictions"]], ignore_index=True)
    out = df.groupby(CS_KEYS, sort=False)[["hits", "total"]].sum().reset_index()
    out = out[out["total"] > 0]
    out["score"] = out["hits"] / out["total"]
    return out


def pd_cs_best_heads(tables: dict) -> pd.DataFrame:
    s = pd_cs_head_scores(tables)
    group = ["model", "language", "variant", "eval_split", "relation", "metric", "k"]
    ranked = s.sort_values([*group, "score", "layer", "head"], ascending=[True] * len(group) + [False, True, True])
    best = ranked.drop_duplicates(group, keep="first")
    test = s[s["eval_split"] == "test"].drop(columns=["eval_split"])
    out = best[[*group, "layer", "head"]].merge(test, on=[g for g in group if g != "eval_split"] + ["layer", "head"])
    return out.rename(columns={"eval_split": "chosen_on"})


def pd_cs_scores(tables: dict) -> pd.DataFrame:
    b = pd_cs_best_heads(tables)
    out = b.groupby(["chosen_on", "model", "language", "variant", "metric", "k"], sort=True).agg(
        relations=("relation", "size"), score=("score", "mean")).reset_index()
    out["score"] = 100 * out["score"]  # the view rounds to 1 decimal (compared within 0.05)
    return out.rename(columns={"model": "system"})


def pd_hits_at_1(tables: dict) -> pd.DataFrame:
    p = pd_apiquiz(tables, True)
    p = p[p["status"] == "ok"]
    return pd.DataFrame({"model": p["model"].astype("category"), "protocol": p["protocol"].astype("category"),
                         "setting": p["setting"].astype("category"),
                         "item_id": p["quiz_id"].astype("category").cat.codes,  # ids only pair items here
                         "value": (p["gold_rank"].to_numpy() <= 1).astype(np.int64)})


def pd_p_at_1_ci(tables: dict) -> pd.DataFrame:
    """groupby, then the metric library's Python twin of the histogram Poisson bootstrap per group."""
    rows = []
    for (model, protocol, setting), g in pd_hits_at_1(tables).groupby(["model", "protocol", "setting"], sort=True,
                                                                         observed=True):
        ci = M.poisson_bootstrap_mean(g["item_id"].to_numpy(), g["value"].to_numpy())
        rows.append({"model": model, "protocol": protocol, "setting": setting, "n": ci.n,
                     "p_at_1": 100 * ci.mean, "lo": 100 * ci.lo, "hi": 100 * ci.hi})
    return pd.DataFrame(rows)


def pd_vs_twin(tables: dict, cards: list[dict]) -> pd.DataFrame:
    h = pd_hits_at_1(tables)
    twins = pd.DataFrame([{"model": c["twin_of"], "twin": c["name"]} for c in cards if c["random"]])
    h["model"] = h["model"].astype(str)
    t = h.merge(twins, on="model")
    r = h.rename(columns={"model": "twin", "value": "b"})
    pairs = t.rename(columns={"value": "a"}).merge(r, on=["twin", "protocol", "setting", "item_id"])
    rows = []
    for (model, protocol, setting), g in pairs.groupby(["model", "protocol", "setting"], sort=True, observed=True):
        pb = M.poisson_paired_bootstrap(g["item_id"].to_numpy(), g["a"].to_numpy(), g["b"].to_numpy())
        rows.append({"model": model, "protocol": protocol, "setting": setting, "n": pb.n, "p_at_1": 100 * pb.mean_a,
                     "twin_p_at_1": 100 * pb.mean_b, "diff": 100 * pb.diff, "lo": 100 * pb.lo, "hi": 100 * pb.hi,
                     "p_value": pb.p_value})
    return pd.DataFrame(rows)


ROUNDED = {"apiquiz_precision": 0.005, "apiquiz_by_setting": 0.005, "codesyntax_scores": 0.05,  # the views' round()
           "apiquiz_p_at_1_ci": 0.005, "apiquiz_vs_twin": 0.005}
ROUNDED_COLUMNS = ("p_at_1", "p_at_5", "p_at_10", "p_at_20", "p_at_50", "score", "lo", "hi", "diff", "twin_p_at_1")
VIEWS = {  # view -> (pandas twin, columns compared)
    "apiquiz_precision": (pd_apiquiz_precision, ["model", "protocol", "setting", "mask_position", "seen", "quizzes",
                                                 "scored", "p_at_1", "p_at_5", "p_at_10", "p_at_20", "p_at_50"]),
    "apiquiz_by_setting": (pd_apiquiz_by_setting, ["model", "protocol", "setting", "scored", "p_at_1", "p_at_5", "p_at_10"]),
    "apiquiz_p_at_k": (pd_apiquiz_p_at_k, ["model", "protocol", "scored", "p_at_1", "p_at_10", "p_at_50"]),
    "codesyntax_head_scores": (pd_cs_head_scores, [*CS_KEYS, "hits", "total", "score"]),
    "codesyntax_best_heads": (pd_cs_best_heads, ["chosen_on", "model", "language", "relation", "metric", "k", "layer",
                                                 "head", "hits", "total", "score"]),
    "codesyntax_scores": (pd_cs_scores, ["chosen_on", "system", "language", "metric", "k", "relations", "score"]),
    # 95% CIs (1000 replicates): the histogram Poisson bootstrap, against a pandas groupby feeding the Python twin
    "apiquiz_p_at_1_ci": (pd_p_at_1_ci, ["model", "protocol", "setting", "n", "p_at_1", "lo", "hi"]),
    "apiquiz_vs_twin": (None, ["model", "protocol", "setting", "n", "p_at_1", "twin_p_at_1", "diff", "lo", "hi",
                               "p_value"]),
}


def same(duck: pd.DataFrame, pand: pd.DataFrame, cols: list[str], view: str) -> None:
    keys = [c for c in cols if not pd.api.types.is_float_dtype(duck[c])]
    a = duck[cols].sort_values(keys).reset_index(drop=True)
    b = pand[cols].sort_values(keys).reset_index(drop=True)
    if len(a) != len(b):
        raise SystemExit(f"{view}: DuckDB {len(a)} rows, pandas {len(b)}")
    for c in cols:
        x, y = a[c].to_numpy(), b[c].to_numpy()
        if x.dtype.kind in "fiu" and y.dtype.kind in "fiu":
            tol = ROUNDED.get(view, 0) + 1e-9 if c in ROUNDED_COLUMNS else 1e-9
            if not np.allclose(x.astype(float), y.astype(float), atol=tol, rtol=0, equal_nan=True):
                raise SystemExit(f"{view}: column {c} differs between DuckDB and pandas")
        elif not (x.astype(str) == y.astype(str)).all():
            raise SystemExit(f"{view}: column {c} differs between DuckDB and pandas")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.warehouse_speed", description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000, help="prediction rows per family (default 10M)")
    ap.add_argument("--dir", type=Path, default=REPO / "data/bench/warehouse", help="where the synthetic tables are kept")
    ap.add_argument("--threads", type=int, default=2, help="DuckDB threads (pandas is single-threaded)")
    ap.add_argument("--repeat", type=int, default=2, help="runs per measurement; the best is reported")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--models", type=int, default=10, help="trained models (each gets a random twin)")
    ap.add_argument("--views", nargs="+", choices=sorted(VIEWS), help="time only these views")
    args = ap.parse_args(argv)

    start = time.perf_counter()
    tables, cards = prepare(args.dir / f"rows-{args.rows}", args.rows, args.seed, args.models)
    written = time.perf_counter()
    db = make_warehouse(args.dir / f"rows-{args.rows}" / "project", tables, cards)
    print(f"synthetic tables ready in {written - start:.1f} s; warehouse built in {time.perf_counter() - written:.1f} s "
          "(views, plus the tables materialised at build: apiquiz_rank_counts, codesyntax_head_scores): "
          f"{sum(pq.ParquetFile(f).metadata.num_rows for f in tables['apiquiz_predictions']):,} apiquiz and "
          f"{sum(pq.ParquetFile(f).metadata.num_rows for f in tables['codesyntax_predictions']):,} codesyntax "
          f"prediction rows, {len(cards)} models", flush=True)
    con = connect(db, threads=args.threads)
    print(f"{'view':28s} {'rows out':>9s} {'DuckDB s':>9s} {'pandas s':>9s} {'ratio':>7s}  target <2 s, >=5x")
    worst = []
    for view, (twin, cols) in VIEWS.items():
        if args.views and view not in args.views:
            continue
        t_duck, duck = best_of(lambda: con.sql(f"SELECT * FROM {view}").to_arrow_table(), args.repeat)
        duck = duck.to_pandas()
        t_pd, pand = best_of(lambda: twin(tables) if twin is not None else pd_vs_twin(tables, cards), 1)
        same(duck, pand, cols, view)
        ok = "ok" if t_duck < 2 and t_pd / t_duck >= 5 else "MISS"
        worst.append((view, t_duck, t_pd / t_duck))
        print(f"{view:28s} {len(duck):9,d} {t_duck:9.2f} {t_pd:9.2f} {t_pd / t_duck:6.1f}x  {ok}", flush=True)

    print(f"slowest view: {max(worst, key=lambda w: w[1])[0]}; smallest ratio: {min(w[2] for w in worst):.1f}x "
          f"(DuckDB {args.threads} threads, pandas 1; {os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
