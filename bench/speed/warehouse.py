"""The warehouse at scale: every metric view of every family over synthetic rows with the real
schemas, against a pandas groupby doing the same computation on the same Parquet, in one run.

Issue 14 item 3 (SPEC: "DuckDB over 10M prediction rows < 2 s, >= 5x pandas"). The bench writes,
once and seeded, every family's tables with their REAL schemas, builds a real warehouse over them
with `pipeline.warehouse.build` (views, macros, the tables materialised at build, provenance, a zoo
of 10 models and their random twins), and times:

- DuckDB: `SELECT * FROM <view>` fetched in full to an Arrow table, on the warehouse's own read-only
  query connection (`pipeline.query.connect`), the Parquet read included. Views over a table the
  build materialises (apiquiz_rank_counts, apiquiz_twin_rank_pairs, codesyntax_head_scores,
  apirec_point_scores, idbench_model_cosine) read that table: its own cost is printed first, once
  (the `SELECT` that defines it, fetched alone), so a from-scratch figure is the view's time plus it;
- pandas: `pd.read_parquet` of the columns the view needs, then the same joins/groupbys/ranks
  (the CI views: a pandas groupby feeding the metric library's Python twin, which draws the same
  replicates with scipy's Poisson inverse CDF).

Sizes: apiquiz and codesyntax predictions at `--rows` (10M for the SPEC figure); the other tables at
their families' natural scale (apirec: `--apirec-points` code points and a quarter as many queries,
ranked by 3 baselines and every zoo model; idbench: 3 x 300 rated pairs, every model's vectors at 7
layers and 2 poolings, dimension 64; probing: 12 tasks and their controls x 20 models x 2 probes x
14 layers x 5 folds; codesyntax samples/relations/baselines: 40k functions, 2M edges). Results are
compared (same groups, same numbers to 1e-9 or to the view's rounding) before a time is printed, so
the pandas side is a real twin and not a strawman. Views printed without a twin are timed only.

Usage: python -m bench.speed.warehouse [--rows 10000000] [--apirec-points 20000] [--views ...]
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

from pipeline import families, schemas
from pipeline import metrics as M
from pipeline.query import connect
from pipeline.warehouse.build import build

from bench import best_of

REPO = Path(__file__).resolve().parents[2]
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
    pool = np.array([f"api_{'x' * (i % 17)}{i}" for i in range(60)], dtype=object)
    cand = rng.integers(0, len(pool), (n_quizzes, 5))
    quizzes = pa.table({
        "quiz_id": ids,
        "answer": pool[cand[:, 0]],
        "candidates": pa.ListArray.from_arrays(np.arange(0, 5 * n_quizzes + 1, 5, dtype=np.int32),
                                               pa.array(pool[cand].reshape(-1))),
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
            "n_ranked": pa.array(rng.choice(np.array([3, 5, 50], dtype=np.int32), n)),
            "top": pa.ListArray.from_arrays(np.arange(n + 1, dtype=np.int32), pa.array(pool[rng.integers(0, len(pool), n)])),
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
            table = pa.table({f.name: pa.array(cols[f.name], type=f.type) if f.name in cols else pa.nulls(n, f.type)
                              for f in schema}, schema=schema)  # sample_id null: the summed rows
            path = folder / f"codesyntax_predictions_{m:02d}_{shard}.parquet"
            pq.write_table(table, path, row_group_size=1 << 20)
            files.append(path)
    return {"codesyntax_predictions": [str(f) for f in files]}


# ---------------------------------------------------------------- the other families (their natural sizes)


def fill(schema: pa.Schema, cols: dict, n: int) -> pa.Table:
    """A table of the real schema: the given columns, every other one a typed default (NULL where
    nullable, else 0 / "x" / false / [])."""
    out = {}
    for f in schema:
        if f.name in cols:
            out[f.name] = pa.array(cols[f.name], type=f.type) if not isinstance(cols[f.name], pa.Array) else cols[f.name]
        elif f.nullable:
            out[f.name] = pa.nulls(n, f.type)
        elif pa.types.is_list(f.type):
            out[f.name] = pa.array([[]] * n, type=f.type)
        elif pa.types.is_string(f.type):
            out[f.name] = pa.array(["x"] * n, type=f.type)
        elif pa.types.is_boolean(f.type):
            out[f.name] = pa.array(np.zeros(n, dtype=bool))
        else:
            out[f.name] = pa.array(np.zeros(n), type=f.type)
    return pa.table(out, schema=schema)


def _write(table: pa.Table, path: Path) -> str:
    pq.write_table(table, path, row_group_size=1 << 20)
    return str(path)


def write_codesyntax_inputs(folder: Path, seed: int, samples: int = 40_000, edges_per_sample: int = 50) -> dict:
    """Samples, relations (CodeSyntax's natural scale: ~40k functions, ~2M edges) and baselines."""
    rng = np.random.default_rng(seed + 2)
    fam = families.load("codesyntax")
    schemas_ = {t.name: t.schema for t in fam.tables}
    ids = np.array([f"s{i:07d}" for i in range(samples)], dtype=object)
    lang = np.where(np.arange(samples) % 2 == 0, "python", "java").astype(object)
    sam = fill(schemas_["samples"], {"sample_id": ids, "language": lang, "n_tokens": rng.integers(20, 400, samples)
                                     .astype(np.int32)}, samples)
    n = samples * edges_per_sample
    head = rng.integers(0, 300, n).astype(np.int32)
    rel = fill(schemas_["relations"], {"sample_id": np.repeat(ids, edges_per_sample),
                                       "relation": np.array([f"Rel{i:02d}:head->dep" for i in range(40)], dtype=object)
                                       [rng.integers(0, 40, n)], "head": head,
                                       "dep_start": head + rng.integers(-20, 40, n).astype(np.int32),
                                       "dep_end": head + 50}, n)
    grid = pd.MultiIndex.from_product(
        [["python", "java"], ["plain"], ["dev", "test"], ["offset", "keyword", "combined"], ["first", "last", "any"],
         [f"Rel{i:02d}:head->dep" for i in range(40)], [1, 3, 10, 20]],
        names=["language", "variant", "chosen_on", "baseline", "metric", "relation", "k"]).to_frame(index=False)
    total = rng.integers(0, 500, len(grid))
    base = fill(schemas_["baselines"],
                {**{c: grid[c].to_numpy() for c in grid.columns}, "k": grid["k"].to_numpy().astype(np.int32),
                 "hits": rng.binomial(total, 0.4), "total": total}, len(grid))
    # variant comes from the file path for samples and relations: /codesyntax/<variant>/
    (folder / "codesyntax/plain").mkdir(parents=True, exist_ok=True)
    return {"codesyntax_samples": [_write(sam, folder / "codesyntax/plain/samples.parquet")],
            "codesyntax_relations": [_write(rel, folder / "codesyntax/plain/relations.parquet")],
            "codesyntax_baselines": [_write(base, folder / "codesyntax_baselines.parquet")]}


APIREC_CLASSES = 400  # lib.C<i>, 12 methods each


def write_apirec(folder: Path, models: list[str], seed: int, points: int, queries: int) -> dict:
    """APIBench at its natural scale: code points and queries, two baselines on points and one on
    queries, and every zoo model's re-ranking of both: top-10 lists of API names."""
    rng = np.random.default_rng(seed + 3)
    fam = families.load("apirec")
    sch = {t.name: t.schema for t in fam.tables}
    cls = rng.integers(0, APIREC_CLASSES, points + queries)
    api = np.array([f"lib.C{c}.m{m}" for c, m in zip(cls, rng.integers(0, 12, points + queries))], dtype=object)
    api_class = np.array([f"lib.C{c}" for c in cls], dtype=object)
    cats = np.array(["stdlib", "third_party", "project"], dtype=object)
    pt = fill(sch["points"], {
        "point_id": np.array([f"p{i:07d}" for i in range(points)], dtype=object), "api": api[:points],
        "api_class": api_class[:points], "category": cats[rng.integers(0, 3, points)],
        "position": np.array(["front", "middle", "back"], dtype=object)[rng.integers(0, 3, points)],
        "length_bucket": np.array(["short", "moderate", "long"], dtype=object)[rng.integers(0, 3, points)],
        "domain": np.array(["web", "ml", "db", "cli"], dtype=object)[rng.integers(0, 4, points)],
        "seen": rng.random(points) < 0.6, "class_siblings": rng.integers(0, 12, points).astype(np.int32),
        "line_in_function": rng.integers(1, 80, points).astype(np.int32),
        "path": np.where(rng.random(points) < 0.8, "a/b.py", "A/B.java").astype(object)}, points)
    qs = fill(sch["queries"], {
        "query_id": np.array([f"q{i:07d}" for i in range(queries)], dtype=object), "api": api[points:],
        "api_class": api_class[points:], "category": cats[rng.integers(0, 3, queries)],
        "origin": np.array(["docstring", "comment"], dtype=object)[rng.integers(0, 2, queries)],
        "domain": np.array(["web", "ml", "db", "cli"], dtype=object)[rng.integers(0, 4, queries)],
        "leaky": rng.random(queries) < 0.3, "class_siblings": rng.integers(0, 12, queries).astype(np.int32),
        "path": np.full(queries, "a/b.py", dtype=object)}, queries)

    def rankings(ids, gold_api, gold_class, model, ranker):
        n = len(ids)
        # a top-10 list: the gold at a geometric rank (or absent), other methods of its class, other APIs
        top = []
        gold_rank = np.full(n, -1, dtype=np.int64)
        class_rank = np.full(n, -1, dtype=np.int64)
        pos = rng.geometric(0.25, n)
        same = rng.random((n, 10)) < 0.2
        others = rng.integers(0, APIREC_CLASSES, (n, 10))
        meth = rng.integers(0, 12, (n, 10))
        length = np.where(rng.random(n) < 0.1, rng.integers(0, 10, n), 10)
        for i in range(n):
            row = []
            for j in range(length[i]):
                if j + 1 == pos[i]:
                    row.append(gold_api[i])
                elif same[i, j]:
                    row.append(f"{gold_class[i]}.x{meth[i, j]}")
                else:
                    row.append(f"lib.C{others[i, j]}.m{meth[i, j]}")
            top.append(row)
            if gold_api[i] in row:
                gold_rank[i] = row.index(gold_api[i]) + 1
            r = next((j + 1 for j, x in enumerate(row) if x.rsplit(".", 1)[0] == gold_class[i]), -1)
            class_rank[i] = r
        status = np.where(rng.random(n) < 0.95, "ok", "too_long").astype(object)
        return {"point_id": ids, "model": np.full(n, model, dtype=object), "ranker": np.full(n, ranker, dtype=object),
                "status": status, "gold_rank": pa.array(gold_rank, mask=gold_rank < 0, type=pa.int32()),
                "class_rank": pa.array(class_rank, mask=class_rank < 0, type=pa.int32()),
                "n_candidates": rng.integers(10, 200, n).astype(np.int32), "gold_in_candidates": rng.random(n) < 0.8,
                "top": pa.array(top, type=pa.list_(pa.string()))}

    pid, qid = pt["point_id"].to_numpy(zero_copy_only=False), qs["query_id"].to_numpy(zero_copy_only=False)
    pa_, pc = api[:points], api_class[:points]
    qa, qc = api[points:], api_class[points:]
    out = {"apirec_points": [_write(pt, folder / "apirec_points.parquet")],
           "apirec_queries": [_write(qs, folder / "apirec_queries.parquet")]}
    schema = fam.inference.schema
    base = [fill(schema, rankings(pid, pa_, pc, "-", r), points) for r in ("ngram", "ide")]
    out["apirec_baselines"] = [_write(pa.concat_tables(base), folder / "apirec_baselines.parquet")]
    out["apirec_query_baselines"] = [_write(fill(schema, rankings(qid, qa, qc, "-", "bm25"), queries),
                                            folder / "apirec_query_baselines.parquet")]
    out["apirec_predictions"] = []
    for m, model in enumerate(models):
        t = pa.concat_tables([fill(schema, rankings(pid, pa_, pc, model, "rerank_ngram"), points),
                              fill(schema, rankings(qid, qa, qc, model, "embed_bm25"), queries)])
        out["apirec_predictions"].append(_write(t, folder / f"apirec_predictions_{m:02d}.parquet"))
    return out


def write_probing(folder: Path, models: list[str], seed: int, tasks: int = 12, layers: int = 13, folds: int = 5) -> dict:
    """probing fits (tasks and their controls x models x probes x layers x folds, plus layer-free
    baseline rows) and the family's own baselines: the natural size of a full zoo run."""
    rng = np.random.default_rng(seed + 4)
    names = [f"t{i:02d}" for i in range(tasks)]
    grid = pd.MultiIndex.from_product([names + [f"{t}-control" for t in names], models, ["mean"], ["ridge", "sgd"],
                                       list(range(layers)) + [-1], range(folds)],
                                      names=["task", "model", "pooling", "probe", "layer", "fold"]).to_frame(index=False)
    n = len(grid)
    layer = grid["layer"].to_numpy()
    best = rng.integers(0, layers, n)[grid.groupby(["task", "model", "pooling", "probe"]).ngroup().to_numpy()]
    fits = fill(schemas.FIT_RESULTS, {
        "task": grid["task"].to_numpy(), "task_type": np.full(n, "classification", dtype=object),
        "model": grid["model"].to_numpy(), "pooling": grid["pooling"].to_numpy(), "probe": grid["probe"].to_numpy(),
        "layer": pa.array(layer, mask=layer < 0, type=pa.int16()), "fold": grid["fold"].to_numpy().astype(np.int16),
        "metric": np.full(n, "error", dtype=object), "error": rng.random(n) * 0.5, "n_train": np.full(n, 800),
        "n_test": rng.integers(150, 250, n), "selected": layer == best}, n)
    bgrid = pd.MultiIndex.from_product([names, ["majority", "bag_of_words"], range(folds)],
                                       names=["task", "probe", "fold"]).to_frame(index=False)
    nb = len(bgrid)
    base = fill({t.name: t.schema for t in families.load("probing").tables}["baselines"], {"task": bgrid["task"].to_numpy(), "model": np.full(nb, "-", dtype=object),
                          "probe": bgrid["probe"].to_numpy(), "fold": bgrid["fold"].to_numpy().astype(np.int16),
                          "metric": np.full(nb, "error", dtype=object), "error": rng.random(nb) * 0.6,
                          "n_test": rng.integers(150, 250, nb)}, nb)
    return {"probing_fits": [_write(fits, folder / "probing_fits.parquet")],
            "probing_baselines": [_write(base, folder / "probing_baselines.parquet")]}


def write_idbench(folder: Path, models: list[str], seed: int, pairs_per_size: int = 300, layers: int = 7,
                  dim: int = 64) -> dict:
    """IdBench at its natural scale (three sizes of ~300 rated pairs), the string and corpus-embedding
    scores, the release's columns, an ensemble, and every zoo model's vectors at `layers` layers and two
    poolings (dimension `dim`, not the models' 768: the cosine is the same work per element)."""
    rng = np.random.default_rng(seed + 5)
    fam = families.load("idbench")
    sch = {t.name: t.schema for t in fam.tables}
    n_ids = 1500
    ident = np.array([f"i{i:05d}" for i in range(n_ids)], dtype=object)
    sizes = np.repeat(np.array(["small", "medium", "large"], dtype=object), pairs_per_size)
    n = len(sizes)
    pair_id = np.array([f"pr{i:05d}" for i in range(n)], dtype=object)
    a, b = rng.integers(0, n_ids, n), rng.integers(0, n_ids, n)

    def gold():
        v = rng.random(n)
        return pa.array(v, mask=rng.random(n) < 0.05)

    release = {c: pa.array(rng.random(n), mask=rng.random(n) < 0.1) for c in
               ("ft_cbow", "ft_sg", "w2v_sg", "w2v_cbow", "path_based", "lv", "nw")}
    pairs = fill(sch["pairs"], {"size": sizes, "pair_id": pair_id, "id1": ident[a], "id2": ident[b],
                                "id1_id": ident[a], "id2_id": ident[b], "relatedness": gold(), "similarity": gold(),
                                "contextual_similarity": gold(), **release, "comparable": rng.random(n) < 0.8}, n)
    tech = np.repeat(np.array(["LV", "NW"], dtype=object), n)
    scores = fill(sch["scores"], {"pair_id": np.tile(pair_id, 2), "technique": tech,
                                  "kind": np.full(2 * n, "string", dtype=object), "score": rng.random(2 * n)}, 2 * n)
    emb = fill(sch["embedding_scores"], {"pair_id": np.tile(pair_id, 2),
                                         "technique": np.repeat(np.array(["w2v", "fasttext"], dtype=object), n),
                                         "kind": np.full(2 * n, "embedding", dtype=object),
                                         "score": pa.array(rng.random(2 * n), mask=rng.random(2 * n) < 0.1)}, 2 * n)
    interesting = fill(sch["interesting"], {"pair_id": pair_id[: n // 3], "subset": np.array(
        ["abbreviations", "synonyms", "opposites"], dtype=object)[rng.integers(0, 3, n // 3)]}, n // 3)
    gold_names = np.array(["relatedness", "similarity", "contextual_similarity"], dtype=object)
    ens = fill(sch["ensemble"], {"size": np.tile(sizes, 3), "gold": np.repeat(gold_names, n),
                                 "pair_id": np.tile(pair_id, 3), "technique": np.full(3 * n, "ensemble_svr", dtype=object),
                                 "score": rng.random(3 * n)}, 3 * n)
    out = {"idbench_pairs": [_write(pairs, folder / "idbench_pairs.parquet")],
           "idbench_scores": [_write(scores, folder / "idbench_scores.parquet")],
           "idbench_embedding_scores": [_write(emb, folder / "idbench_embedding_scores.parquet")],
           "idbench_interesting": [_write(interesting, folder / "idbench_interesting.parquet")],
           "idbench_ensemble": [_write(ens, folder / "idbench_ensemble.parquet")], "idbench_predictions": []}
    schema = fam.inference.schema
    for m, model in enumerate(models):
        grid = pd.MultiIndex.from_product([ident, range(layers), ["mean", "first"]],
                                          names=["item_id", "layer", "pooling"]).to_frame(index=False)
        k = len(grid)
        vec = rng.integers(-3, 4, (k, dim)).astype(np.float32)  # small integers: exact dot products, real ties
        vectors = pa.ListArray.from_arrays(np.arange(0, k * dim + 1, dim, dtype=np.int32), pa.array(vec.reshape(-1)))
        t = fill(schema, {"item_id": grid["item_id"].to_numpy(), "model": np.full(k, model, dtype=object),
                          "layer": grid["layer"].to_numpy().astype(np.int16), "pooling": grid["pooling"].to_numpy(),
                          "vector": vectors}, k)
        out["idbench_predictions"].append(_write(t, folder / f"idbench_predictions_{m:02d}.parquet"))
    return out


def prepare(folder: Path, args: argparse.Namespace) -> tuple[dict, list[dict]]:
    """Write the synthetic tables once (kept: a second run reuses them) and return the warehouse spec."""
    cards = zoo(args.models)
    models = [c["name"] for c in cards]
    stamp = folder / "tables.json"
    key = {"rows": args.rows, "seed": args.seed, "models": models, "apirec_points": args.apirec_points, "version": 2}
    if stamp.exists() and json.loads(stamp.read_text()).get("key") == key:
        return json.loads(stamp.read_text())["tables"], cards
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.rglob("*.parquet"):
        old.unlink()
    seed = args.seed
    tables = {**write_apiquiz(folder, args.rows, models, seed), **write_codesyntax(folder, args.rows, models, seed),
              **write_codesyntax_inputs(folder, seed),
              **write_apirec(folder, models, seed, args.apirec_points, args.apirec_points // 4),
              **write_probing(folder, models, seed), **write_idbench(folder, models, seed)}
    stamp.write_text(json.dumps({"key": key, "tables": tables}))
    return tables, cards


FAMILIES = ["apiquiz", "apirec", "codesyntax", "idbench", "probing"]


def make_warehouse(root: Path, tables: dict, cards: list[dict]) -> Path:
    model_dirs = []
    for card in cards:
        d = root / "data/models" / card["name"]
        d.mkdir(parents=True, exist_ok=True)
        (d / "card.json").write_text(json.dumps(card))
        model_dirs.append(f"data/models/{card['name']}")
    import yaml

    params = {**yaml.safe_load((REPO / "params.yaml").read_text()), "families": FAMILIES}
    db = root / "data/warehouse.duckdb"
    build(db, {"tables": tables, "params": params, "models": model_dirs, "sources": [], "not_applicable": []}, root)
    return db


# ---------------------------------------------------------------- pandas twins of the views


def pd_apiquiz(tables: dict, with_quizzes: bool) -> pd.DataFrame:
    p = pd.concat([pd.read_parquet(f, columns=["quiz_id", "model", "protocol", "status", "gold_rank", "n_ranked"])
                   for f in tables["apiquiz_predictions"]], ignore_index=True)
    if with_quizzes:
        q = pd.read_parquet(tables["apiquiz_quizzes"][0], columns=["quiz_id", "setting", "mask_position", "context_leak"])
        p = p.merge(q, on="quiz_id")
        # each model's own seen (apiquiz_seen): the bench's cards record no corpus (unknown); a random twin read
        # nothing, so its every API is unseen, of an unseen library
        p["seen"] = np.where(p["model"].astype(str).str.endswith("-random"), "unseen_library", "unknown")
    return p


def hits(df: pd.DataFrame, ks: list[int]) -> pd.DataFrame:
    """Hit at k of every scored quiz with more than k ranked items (P@k does not count the saturated)."""
    ok = df["status"] == "ok"
    for k in ks:
        df[f"h{k}"] = np.where(ok & (df["n_ranked"] > k), (df["gold_rank"] <= k).astype(float), np.nan)
    return df


def pd_apiquiz_precision(tables: dict) -> pd.DataFrame:
    df = hits(pd_apiquiz(tables, True), [1, 5, 10, 20, 50])
    df["ok"] = df["status"] == "ok"
    g = df.groupby(["model", "protocol", "setting", "mask_position", "seen", "context_leak"], sort=True)
    out = g.agg(quizzes=("quiz_id", "size"), scored=("ok", "sum"), **{f"p_at_{k}": (f"h{k}", "mean") for k in [1, 5, 10, 20, 50]})
    return out.reset_index()


def pd_apiquiz_by_setting(tables: dict) -> pd.DataFrame:
    df = hits(pd_apiquiz(tables, True), [1, 5, 10])
    df = df[~df["context_leak"]].copy()
    df["ok"] = df["status"] == "ok"
    out = df.groupby(["model", "protocol", "setting"], sort=True).agg(
        scored=("ok", "sum"), **{f"p_at_{k}": (f"h{k}", "mean") for k in [1, 5, 10]})
    return out.reset_index()


def pd_apiquiz_p_at_k(tables: dict) -> pd.DataFrame:
    df = pd_apiquiz(tables, True)
    df = hits(df[(df["status"] == "ok") & ~df["context_leak"]].copy(), [1, 5, 10, 20, 50])
    out = df.groupby(["model", "protocol"], sort=True).agg(
        scored=("quiz_id", "size"), **{f"p_at_{k}": (f"h{k}", "mean") for k in [1, 5, 10, 20, 50]})
    return out.reset_index()


CS_KEYS = ["model", "language", "variant", "eval_split", "relation", "metric", "k", "layer", "head"]


def pd_cs_head_scores(tables: dict) -> pd.DataFrame:
    df = pd.concat([pd.read_parquet(f) for f in tables["codesyntax_predictions"]], ignore_index=True)
    df = df[df["sample_id"].isna()]  # the summed rows (the per-sample ones repeat the test side's)
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
    return out.rename(columns={"model": "system"})


def pd_hits_at_1(tables: dict) -> pd.DataFrame:
    p = pd_apiquiz(tables, True)
    p = p[(p["status"] == "ok") & (p["n_ranked"] > 1) & ~p["context_leak"]]
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
                     "p_at_1": ci.mean, "lo": ci.lo, "hi": ci.hi})
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
        rows.append({"model": model, "protocol": protocol, "setting": setting, "n": pb.n, "p_at_1": pb.mean_a,
                     "twin_p_at_1": pb.mean_b, "diff": pb.diff, "lo": pb.lo, "hi": pb.hi,
                     "p_value": pb.p_value})
    return pd.DataFrame(rows)




def pd_headline(tables: dict) -> pd.DataFrame:
    """apiquiz_headline: P@1 and its CI per model, protocol and setting; fill_mask on the paper's quiz set
    (every model with fill_mask rows scored the quiz), the candidate rankings on every scored quiz."""
    p = pd_apiquiz(tables, True)
    p["model"] = p["model"].astype(str)
    fm = p[p["protocol"] == "fill_mask"]
    per_quiz = fm.assign(ok=fm["status"] == "ok").groupby("quiz_id").agg(ok=("ok", "all"), models=("model", "nunique"))
    paper = per_quiz.index[per_quiz["ok"] & (per_quiz["models"] == fm["model"].nunique())]
    fill = p["protocol"] == "fill_mask"
    keep = ((p["status"] == "ok") & ~p["context_leak"] & (p["n_ranked"] > 1)
            & ((fill & p["quiz_id"].isin(paper)) | ~p["protocol"].str.startswith("fill_mask")))
    rows = []
    for (model, protocol, setting), g in p[keep].groupby(["model", "protocol", "setting"], sort=True):
        ci = M.poisson_bootstrap_mean(g["quiz_id"].to_numpy(), (g["gold_rank"].to_numpy() <= 1).astype(np.int64))
        rows.append({"model": model, "protocol": protocol, "setting": setting,
                     "quiz_set": "paper set" if protocol == "fill_mask" else "all scored", "n": ci.n,
                     "p_at_1": ci.mean, "lo": ci.lo, "hi": ci.hi})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- pandas twins: the other views


def pd_twin_diff(tables: dict, cards: list[dict]) -> pd.DataFrame:
    p = pd.concat([pd.read_parquet(f, columns=["quiz_id", "model", "protocol", "status", "gold_rank", "n_ranked"])
                   for f in tables["apiquiz_predictions"]], ignore_index=True)
    p = p[p["status"] == "ok"]
    twins = pd.DataFrame([{"model": c["twin_of"], "twin": c["name"]} for c in cards if c["random"]])
    t = p.merge(twins, on="model")
    r = p[["quiz_id", "model", "protocol", "gold_rank"]].rename(columns={"model": "twin", "gold_rank": "rank_b"})
    pairs = t.merge(r, on=["twin", "protocol", "quiz_id"])
    rows = []
    for (model, twin, protocol), g in pairs.groupby(["model", "twin", "protocol"], sort=True):
        for k in ([1, 10] if protocol.startswith("fill_mask") else [1]):
            g = g[g["n_ranked"] > k]  # P@k only where it does not saturate
            a = (g["gold_rank"].to_numpy() <= k).astype(np.int64)
            b = (g["rank_b"].to_numpy() <= k).astype(np.int64)
            pb = M.poisson_paired_bootstrap(g["quiz_id"].to_numpy(), a, b)
            nr = g["n_ranked"].to_numpy()
            rows.append({"model": model, "twin": twin, "protocol": protocol, "metric": f"P@{k}", "n": pb.n,
                         "score": pb.mean_a, "twin_score": pb.mean_b,
                         "chance": np.mean(np.minimum(k, nr) / nr), "diff": pb.diff, "lo": pb.lo,
                         "hi": pb.hi, "p_value": pb.p_value})
    return pd.DataFrame(rows)


def pd_strata(tables: dict) -> pd.DataFrame:
    q = pd.read_parquet(tables["apiquiz_quizzes"][0], columns=["quiz_id", "setting", "mask_position"])
    generated = q.groupby(["setting", "mask_position"]).size().rename("quizzes").reset_index()
    p = pd_apiquiz(tables, False).merge(q, on="quiz_id")
    p["ok"] = p["status"] == "ok"
    d = p.groupby(["setting", "mask_position", "protocol", "model"]).agg(drawn=("ok", "size"), scored=("ok", "sum"))
    d = d.groupby(["setting", "mask_position", "protocol"]).agg(
        drawn=("drawn", "max"), min_scored=("scored", "min"), max_scored=("scored", "max")).reset_index()
    return generated.merge(d, on=["setting", "mask_position"], how="left")


def pd_length_bias(tables: dict) -> pd.DataFrame:
    q = pd.read_parquet(tables["apiquiz_quizzes"][0], columns=["quiz_id", "answer", "candidates"])
    # per quiz: the lengths of the candidates other than the answer, in order, summed cumulatively
    width = max((len(c) for c in q["candidates"]), default=0)
    lengths = np.zeros((len(q), width + 1))
    for i, (answer, cands) in enumerate(zip(q["answer"], q["candidates"])):
        others = [len(c) for c in cands if c != answer]
        lengths[i, 1:len(others) + 1] = others
    cum = np.cumsum(lengths, axis=1)
    q = q.assign(row=np.arange(len(q)), gold_chars=q["answer"].str.len())[["quiz_id", "row", "gold_chars"]]
    p = pd.concat([pd.read_parquet(f, columns=["quiz_id", "model", "protocol", "status", "gold_rank", "n_ranked", "top"])
                   for f in tables["apiquiz_predictions"]], ignore_index=True)
    p = p[(p["status"] == "ok") & (p["protocol"] != "fill_mask")].merge(q, on="quiz_id")
    n = p["n_ranked"].to_numpy()
    pool = cum[p["row"].to_numpy(), np.minimum(np.maximum(n - 1, 0), width)]
    p = p.assign(top1=p["top"].str[0].str.len(), pool=(p["gold_chars"].to_numpy() + pool) / n,
                 hit=(p["gold_rank"].to_numpy() <= 1).astype(float), inv=1 / n)
    out = p.groupby(["model", "protocol"]).agg(scored=("quiz_id", "size"), top1_chars=("top1", "mean"),
                                               gold_chars=("gold_chars", "mean"), pool_chars=("pool", "mean"),
                                               p_at_1=("hit", "mean"), chance=("inv", "mean")).reset_index()
    return out


def pd_cs_twin_diff(tables: dict, cards: list[dict]) -> pd.DataFrame:
    b = pd_cs_best_heads(tables)
    b = b[(b["metric"] == "first") & (b["k"] == 1)]
    twins = pd.DataFrame([{"model": c["twin_of"], "twin": c["name"]} for c in cards if c["random"]])
    keys = ["chosen_on", "language", "variant", "metric", "k", "relation"]
    pairs = b.merge(twins, on="model").merge(
        b[[*keys, "model", "score"]].rename(columns={"model": "twin", "score": "b"}), on=[*keys, "twin"])
    rows = []
    for key, g in pairs.groupby(["chosen_on", "model", "twin", "language", "variant", "metric", "k"], sort=True):
        pb = M.poisson_paired_bootstrap(g["relation"].to_numpy(), g["score"].to_numpy(), g["b"].to_numpy())
        rows.append({**dict(zip(["chosen_on", "model", "twin", "language", "variant", "metric", "k"], key)),
                     "relations": pb.n, "score": pb.mean_a, "twin_score": pb.mean_b,
                     "diff": pb.diff, "lo": pb.lo, "hi": pb.hi, "p_value": pb.p_value})
    return pd.DataFrame(rows)


def pd_cs_baseline_scores(tables: dict) -> pd.DataFrame:
    b = pd.read_parquet(tables["codesyntax_baselines"][0])
    b = b[b["total"] > 0].assign(rate=lambda d: d["hits"] / d["total"])
    out = b.groupby(["language", "variant", "chosen_on", "baseline", "metric", "k"]).agg(
        relations=("rate", "size"), score=("rate", "mean")).reset_index()
    return out


def pd_cs_score_ci(tables: dict) -> pd.DataFrame:
    """codesyntax_score_ci: per system the first-token score over relations and its CI, relations resampled
    (models: the best head per relation; baselines: their hit rate)."""
    b = pd_cs_best_heads(tables).rename(columns={"model": "system"})[
        ["chosen_on", "system", "language", "variant", "metric", "k", "relation", "score"]]
    base = pd.read_parquet(tables["codesyntax_baselines"][0])
    base = base[base["total"] > 0].assign(score=lambda d: d["hits"] / d["total"]).rename(columns={"baseline": "system"})
    both = pd.concat([b, base[b.columns]], ignore_index=True)
    keys = ["chosen_on", "system", "language", "variant", "metric", "k"]
    rows = []
    for key, g in both[both["metric"] == "first"].groupby(keys, sort=True):
        ci = M.poisson_bootstrap_mean(g["relation"].to_numpy(), g["score"].to_numpy())
        rows.append({**dict(zip(keys, key)), "relations": ci.n, "score": ci.mean, "lo": ci.lo, "hi": ci.hi})
    return pd.DataFrame(rows)


def pd_cs_dataset_stats(tables: dict) -> pd.DataFrame:
    s = pd.read_parquet(tables["codesyntax_samples"][0], columns=["sample_id", "language", "n_tokens"])
    s["variant"] = "plain"  # the view reads it from the file's folder
    return s.groupby(["language", "variant"]).agg(samples=("sample_id", "nunique"), tokens=("n_tokens", "sum")).reset_index()


def pd_cs_relation_stats(tables: dict) -> pd.DataFrame:
    s = pd.read_parquet(tables["codesyntax_samples"][0], columns=["sample_id", "language"])
    r = pd.read_parquet(tables["codesyntax_relations"][0], columns=["sample_id", "relation", "head", "dep_start"])
    d = r.merge(s, on="sample_id").assign(variant="plain", offset=lambda x: x["dep_start"] - x["head"])
    return d.groupby(["language", "variant", "relation"]).agg(edges=("offset", "size"), mean_offset=("offset", "mean")) \
        .reset_index()


def pd_cs_scores_with_baselines(tables: dict) -> pd.DataFrame:
    models = pd_cs_scores(tables)
    b = pd.read_parquet(tables["codesyntax_baselines"][0])
    b = b[b["total"] > 0].assign(rate=lambda d: d["hits"] / d["total"])
    base = b.groupby(["chosen_on", "baseline", "language", "variant", "metric", "k"]).agg(
        relations=("rate", "size"), score=("rate", "mean")).reset_index().rename(columns={"baseline": "system"})
    return pd.concat([models, base], ignore_index=True)


# probing

T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571}


def _t_interval(s: pd.DataFrame, mean: str, n: str) -> pd.DataFrame:
    t = s[n].map(lambda k: T95.get(k - 1, 1.96))
    s["ci_low"] = s[mean] - t * s["sd"] / np.sqrt(s[n])
    s["ci_high"] = s[mean] + t * s["sd"] / np.sqrt(s[n])
    return s


def pd_probing_layers(tables: dict) -> pd.DataFrame:
    f = pd.read_parquet(tables["probing_fits"][0])
    f = f[f["layer"].notna()]
    return f.groupby(["task", "model", "pooling", "probe", "layer"]).agg(
        error=("error", "mean"), folds=("error", "size"), n_test=("n_test", "sum")).reset_index()


def pd_probing_best(tables: dict) -> pd.DataFrame:
    f = pd.read_parquet(tables["probing_fits"][0], columns=["task", "model", "pooling", "probe", "layer", "selected"])
    f = f[f["selected"] & f["layer"].notna()]
    return f.groupby(["task", "model", "pooling", "probe"]).agg(layer=("layer", "first")).reset_index()


def pd_probing_headline(tables: dict) -> pd.DataFrame:
    cols = ["task", "model", "probe", "layer", "metric", "error", "fold", "n_test"]
    f = pd.read_parquet(tables["probing_fits"][0])
    b = pd.read_parquet(tables["probing_baselines"][0])
    rows = pd.concat([f[f["selected"] & (f["fold"] > 0)][cols], f[f["layer"].isna() & (f["fold"] > 0)][cols],
                      b[b["fold"] > 0][cols]], ignore_index=True)
    s = rows.groupby(["task", "model", "probe"], dropna=False).agg(
        mean=("error", "mean"), sd=("error", "std"), folds=("error", "size"), n_test=("n_test", "sum")).reset_index()
    s["sd"] = s["sd"].fillna(0)
    return _t_interval(s, "mean", "folds")


def pd_probing_selectivity(tables: dict) -> pd.DataFrame:
    f = pd.read_parquet(tables["probing_fits"][0])
    t = f[f["layer"].notna()]
    c = f.assign(task=f["task"].str.removesuffix("-control"))[f["task"].str.endswith("-control")]
    p = t.merge(c, on=["task", "model", "layer", "pooling", "probe", "fold"], suffixes=("", "_c"))
    p["diff"] = p["error_c"] - p["error"]
    s = p.groupby(["task", "model", "layer"]).agg(
        task_error=("error", "mean"), control_error=("error_c", "mean"), selectivity=("diff", "mean"),
        sd=("diff", "std"), folds=("diff", "size"), samples=("n_test", "sum")).reset_index()
    s["sd"] = s["sd"].fillna(0)
    return _t_interval(s, "selectivity", "folds")


# apirec: the ranking metrics vectorised with numpy over the graded top-10 lists

APIREC_KS = (1, 3, 5, 10)
_APIREC = {}


def pd_apirec_scores(tables: dict) -> pd.DataFrame:
    """apirec_point_scores as a frame (computed once per run of the twins; the time of the first twin
    that needs it includes it)."""
    key = id(tables)
    if key in _APIREC:
        return _APIREC[key]
    cols = ["point_id", "model", "ranker", "status", "gold_rank", "class_rank", "top"]
    r = pd.concat([pd.read_parquet(f, columns=cols) for name in ("apirec_baselines", "apirec_query_baselines",
                                                                "apirec_predictions") for f in tables[name]],
                  ignore_index=True)
    # a ranking the model could not score (too long, no vector) stays: nothing returned, a miss at every k
    bad = r["status"] != "ok"
    r.loc[bad, ["gold_rank", "class_rank"]] = np.nan
    r["top"] = [t if ok else np.array([], dtype=object) for t, ok in zip(r["top"], ~bad)]
    p = pd.read_parquet(tables["apirec_points"][0], columns=["point_id", "api", "api_class", "category", "position",
                                                             "length_bucket", "domain", "seen", "class_siblings",
                                                             "line_in_function", "path"])
    p = p.rename(columns={"point_id": "item_id"}).assign(benchmark="code", leaky=False)
    p["context_lines"] = pd.cut(p["line_in_function"], [-np.inf, 5, 10, 20, 50, np.inf],
                                labels=["01-05", "06-10", "11-20", "21-50", "51+"]).astype(str)
    q = pd.read_parquet(tables["apirec_queries"][0], columns=["query_id", "api", "api_class", "category", "domain",
                                                              "leaky", "class_siblings", "path"])
    q = q.rename(columns={"query_id": "item_id"}).assign(benchmark="query")
    items = pd.concat([p, q], ignore_index=True)
    items["language"] = np.where(items["path"].str.endswith(".java"), "java",
                                 np.where(items["path"].str.endswith((".py", ".pyi")), "python", "other"))
    d = r.merge(items.drop(columns=["path", "line_in_function"]), left_on="point_id", right_on="item_id")
    # grades of the returned list, padded with 0 to 10 (a 0 is neither relevant nor a gain)
    flat = d[["api", "api_class", "top"]].explode("top")
    grade = np.where(flat["top"] == flat["api"], 2,
                     np.where(flat["top"].str.rsplit(".", n=1).str[0] == flat["api_class"], 1, 0))
    pos = flat.groupby(level=0).cumcount().to_numpy()
    row = np.repeat(np.arange(len(d)), d["top"].str.len().clip(lower=1).to_numpy())
    R = np.zeros((len(d), 10))
    has = flat["top"].notna().to_numpy()
    R[row[has], pos[has]] = grade[has]
    same_class = ((grade == 1) & has)
    class_others = np.maximum(d["class_siblings"].to_numpy(), np.bincount(row[same_class], minlength=len(d)))
    gold = d["gold_rank"].to_numpy(dtype=float)
    cls = d["class_rank"].to_numpy(dtype=float)
    disc = 1 / np.log2(np.arange(2, 12))
    out = []
    for k in APIREC_KS:
        Rk = R[:, :k]
        s = {"k": np.full(len(d), k)}
        with np.errstate(invalid="ignore", divide="ignore"):
            s["sr_method"] = (gold <= k).astype(float)
            s["sr_class"] = (cls <= k).astype(float)
            for g, level in ((2, "method"), (1, "class")):
                H = Rk >= g
                S = (np.cumsum(H, axis=1) / np.arange(1, k + 1) * H).sum(axis=1)
                m = H.sum(axis=1)
                s[f"map_apibench_{level}"] = np.where(m > 0, S / np.maximum(m, 1), 0.0)
                s[f"map_standard_{level}"] = S / (1 if g == 2 else 1 + class_others)
            s["mrr_method"] = np.where(gold <= 10, 1 / gold, 0.0)
            s["mrr_class"] = np.where(cls <= 10, 1 / cls, 0.0)
            dcg = (Rk * disc[:k]).sum(axis=1)
            idcg = (-np.sort(-Rk, axis=1) * disc[:k]).sum(axis=1)
            s["ndcg_apibench_topk"] = np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1), 0.0)
            # the paper's: IDCG@k from the whole returned list re-sorted; code points at method level (grade 2 -> 1)
            code = (d["benchmark"] == "code").to_numpy()
            G = np.where(code[:, None], (R == 2).astype(float), R)
            gdcg = (G[:, :k] * disc[:k]).sum(axis=1)
            gidcg = (-np.sort(-G, axis=1)[:, :k] * disc[:k]).sum(axis=1)
            s["ndcg_apibench"] = np.where(gidcg > 0, gdcg / np.where(gidcg > 0, gidcg, 1), 0.0)
            s["ndcg_standard_method"] = ((R[:, :k] == 2) * disc[:k]).sum(axis=1)
            ones = np.minimum(np.minimum(class_others, 9), k - 1)  # the ideal's 1s within the top k
            ideal = 2 * disc[0] + np.cumsum(np.concatenate([[0.0], disc[1:k]]))[ones]
            s["ndcg_standard"] = dcg / ideal
        out.append(pd.concat([d[["point_id", "model", "ranker", "benchmark", "leaky", "category", "position",
                                 "length_bucket", "domain", "seen", "context_lines", "language"]].reset_index(drop=True),
                              pd.DataFrame(s)], axis=1))
    _APIREC.clear()
    _APIREC[key] = pd.concat(out, ignore_index=True)
    return _APIREC[key]


APIREC_METRICS = ["sr_method", "sr_class", "map_apibench_method", "map_standard_method", "map_apibench_class",
                  "map_standard_class", "mrr_method", "mrr_class", "ndcg_apibench", "ndcg_apibench_topk",
                  "ndcg_standard", "ndcg_standard_method"]


def pd_apirec_subsets(s: pd.DataFrame) -> pd.DataFrame:
    """apirec_subset_scores: every item (`all`); queries also `non_leaky`, `stdlib`, `stdlib_non_leaky`."""
    q = s[s["benchmark"] == "query"]
    std = q[q["category"] == "stdlib"]
    return pd.concat([s.assign(subset="all"), q[~q["leaky"]].assign(subset="non_leaky"), std.assign(subset="stdlib"),
                      std[~std["leaky"]].assign(subset="stdlib_non_leaky")])


def pd_apirec_metrics(tables: dict) -> pd.DataFrame:
    s = pd_apirec_scores(tables)
    both = pd_apirec_subsets(s)
    out = both.groupby(["benchmark", "subset", "model", "ranker", "k"]).agg(
        points=("sr_method", "size"), **{m: (m, "mean") for m in APIREC_METRICS}).reset_index()
    return out


def pd_apirec_by_language(tables: dict) -> pd.DataFrame:
    s = pd_apirec_scores(tables)
    return s.groupby(["benchmark", "language", "model", "ranker", "k"]).agg(
        points=("sr_method", "size"), **{m: (m, "mean") for m in APIREC_METRICS}).reset_index()


def pd_apirec_sr_by_category(tables: dict) -> pd.DataFrame:
    s = pd_apirec_scores(tables)
    return s.groupby(["benchmark", "model", "ranker", "category", "k"]).agg(
        points=("sr_method", "size"), sr_method=("sr_method", "mean"), sr_class=("sr_class", "mean")).reset_index()


def pd_apirec_sr_ci(tables: dict) -> pd.DataFrame:
    s = pd_apirec_scores(tables)
    s = s[s["k"].isin([1, 10])]
    both = pd_apirec_subsets(s)
    rows = []
    for key, g in both.groupby(["benchmark", "subset", "model", "ranker", "k"], sort=True):
        ci = M.poisson_bootstrap_mean(g["point_id"].to_numpy(), g["sr_method"].to_numpy())
        rows.append({**dict(zip(["benchmark", "subset", "model", "ranker", "k"], key)), "n": ci.n,
                     "sr_method": ci.mean, "lo": ci.lo, "hi": ci.hi})
    return pd.DataFrame(rows)


def pd_apirec_coverage(tables: dict) -> pd.DataFrame:
    cols = ["point_id", "model", "ranker", "status", "gold_in_candidates", "n_candidates"]
    r = pd.concat([pd.read_parquet(f, columns=cols) for name in ("apirec_baselines", "apirec_query_baselines",
                                                                "apirec_predictions") for f in tables[name]],
                  ignore_index=True)
    items = pd.concat([pd.read_parquet(tables["apirec_points"][0], columns=["point_id"]).assign(benchmark="code"),
                       pd.read_parquet(tables["apirec_queries"][0], columns=["query_id"])
                       .rename(columns={"query_id": "point_id"}).assign(benchmark="query")])
    d = r.merge(items, on="point_id").assign(ok=lambda x: x["status"] == "ok",
                                             gic=lambda x: x["gold_in_candidates"].astype(float))
    out = d.groupby(["benchmark", "model", "ranker"]).agg(points=("ok", "size"), scored=("ok", "sum"),
                                                          gold_in_candidates=("gic", "mean"),
                                                          mean_candidates=("n_candidates", "mean")).reset_index()
    out["too_long"] = out["points"] - out["scored"]
    return out


# idbench: the judged pairs, then Spearman by average ranks

RELEASE = {"ft_cbow": "FT-cbow", "ft_sg": "FT-SG", "w2v_sg": "w2v-SG", "w2v_cbow": "w2v-cbow",
           "path_based": "Path-based", "lv": "LV", "nw": "NW"}
GOLDS = ["relatedness", "similarity", "contextual_similarity"]


def pd_idbench_judged(tables: dict) -> pd.DataFrame:
    pairs = pd.read_parquet(tables["idbench_pairs"][0])
    gold = pairs.melt(id_vars=["size", "pair_id", "comparable"], value_vars=GOLDS, var_name="gold").dropna(
        subset=["value"])
    sz = pairs[["pair_id", "size"]]
    parts = []
    for name, kind in (("idbench_scores", None), ("idbench_embedding_scores", None)):
        s = pd.read_parquet(tables[name][0]).merge(sz, on="pair_id")
        parts.append(s.rename(columns={"technique": "system"})[["system", "kind", "size", "pair_id", "score"]])
    rel = pairs.melt(id_vars=["size", "pair_id"], value_vars=list(RELEASE), var_name="t", value_name="score")
    parts.append(rel.assign(system="release:" + rel["t"].map(RELEASE), kind="release")[
        ["system", "kind", "size", "pair_id", "score"]])
    vec = pd.concat([pd.read_parquet(f) for f in tables["idbench_predictions"]], ignore_index=True)
    upairs = pairs[["pair_id", "size", "id1_id", "id2_id"]]
    for (model, layer, pooling), g in vec.groupby(["model", "layer", "pooling"], sort=False):
        index = pd.Series(np.arange(len(g)), index=g["item_id"].to_numpy())
        V = np.stack(g["vector"].to_numpy()).astype(np.float32)
        i, j = index.reindex(upairs["id1_id"]).to_numpy(), index.reindex(upairs["id2_id"]).to_numpy()
        ok = ~(np.isnan(i) | np.isnan(j))
        a, b = V[i[ok].astype(int)], V[j[ok].astype(int)]
        cos = np.full(len(upairs), np.nan)
        # in float32 as DuckDB's list_cosine_similarity on FLOAT[] (integer-valued vectors: exact sums, one rounding
        # in the sqrt and one in the division, so the same cosines and the same ties)
        dot, na, nb = (np.cumsum(x, axis=1, dtype=np.float32)[:, -1] for x in (a * b, a * a, b * b))
        cos[ok] = np.clip(dot / np.sqrt(na * nb), np.float32(-1), np.float32(1)).astype(np.float64)
        parts.append(pd.DataFrame({"system": model, "kind": "model", "layer": layer, "pooling": pooling,
                                   "size": upairs["size"].to_numpy(), "pair_id": upairs["pair_id"].to_numpy(),
                                   "score": cos}))
    systems = pd.concat(parts, ignore_index=True)
    j = gold.merge(systems, on=["size", "pair_id"])
    ens = pd.read_parquet(tables["idbench_ensemble"][0]).merge(gold, on=["size", "gold", "pair_id"])
    ens = ens.rename(columns={"technique": "system"}).assign(kind="ensemble")
    j = pd.concat([j, ens[["size", "gold", "pair_id", "comparable", "value", "system", "kind", "score"]]],
                  ignore_index=True)
    return pd.concat([j.assign(pair_set="all_rated"), j[j["comparable"]].assign(pair_set="comparable")],
                     ignore_index=True)


def pd_idbench_spearman(tables: dict) -> pd.DataFrame:
    j = pd_idbench_judged(tables)
    keys = ["system", "kind", "layer", "pooling", "size", "gold", "pair_set"]
    j["layer"] = j["layer"].astype("Int64")
    j[["pooling"]] = j[["pooling"]].fillna("-")
    j["layer"] = j["layer"].fillna(-1)
    rated = j.groupby(keys).size().rename("rated")
    c = j[j["score"].notna() & j["value"].notna()].copy()
    g = c.groupby(keys)
    c["rx"] = g["score"].rank(method="average")
    c["ry"] = g["value"].rank(method="average")
    c["xy"], c["xx"], c["yy"] = c["rx"] * c["ry"], c["rx"] ** 2, c["ry"] ** 2
    a = c.groupby(keys).agg(n=("rx", "size"), sx=("rx", "sum"), sy=("ry", "sum"), sxy=("xy", "sum"),
                            sxx=("xx", "sum"), syy=("yy", "sum"))
    vx, vy = a["sxx"] - a["sx"] ** 2 / a["n"], a["syy"] - a["sy"] ** 2 / a["n"]
    ok = (a["n"] >= 2) & (vx > 1e-9) & (vy > 1e-9)
    rho = pd.DataFrame({"n": a["n"], "rho": ((a["sxy"] - a["sx"] * a["sy"] / a["n"]) / np.sqrt(vx * vy)).where(ok)})
    out = rated.to_frame().join(rho).reset_index()
    out["n"] = out["n"].fillna(0).astype(int)
    out["layer"] = out["layer"].astype(float).where(out["layer"] >= 0)
    out["pooling"] = out["pooling"].where(out["pooling"] != "-")
    return out


# view -> (pandas twin or None, the columns compared: keys first, then numbers, number of key columns,
# tolerance of the numbers: the view's own rounding; apiquiz and codesyntax scores are fractions rounded to 4
# decimals). None: timed, no twin (say so in the table).
A2, R4 = 0.005 + 1e-9, 0.00005 + 1e-9
VIEWS: dict[str, tuple] = {
    # apiquiz (--rows prediction rows)
    "apiquiz_precision": (pd_apiquiz_precision, ["model", "protocol", "setting", "mask_position", "seen",
                                                 "context_leak", "quizzes", "scored", "p_at_1", "p_at_5", "p_at_10",
                                                 "p_at_20", "p_at_50"], 8, R4),
    "apiquiz_by_setting": (pd_apiquiz_by_setting, ["model", "protocol", "setting", "scored", "p_at_1", "p_at_5",
                                                   "p_at_10"], 4, R4),
    "apiquiz_p_at_k": (pd_apiquiz_p_at_k, ["model", "protocol", "scored", "p_at_1", "p_at_10", "p_at_50"], 3, R4),
    # 95% CIs (1000 replicates): the histogram Poisson bootstrap, against a pandas groupby feeding the Python twin
    "apiquiz_p_at_1_ci": (pd_p_at_1_ci, ["model", "protocol", "setting", "n", "p_at_1", "lo", "hi"], 4, R4),
    "apiquiz_vs_twin": (pd_vs_twin, ["model", "protocol", "setting", "n", "p_at_1", "twin_p_at_1", "diff", "lo", "hi",
                                     "p_value"], 4, R4),
    "apiquiz_twin_diff": (pd_twin_diff, ["model", "twin", "protocol", "metric", "n", "score", "twin_score", "chance",
                                         "diff", "lo", "hi", "p_value"], 5, R4),
    "apiquiz_headline": (pd_headline, ["model", "protocol", "quiz_set", "setting", "n", "p_at_1", "lo", "hi"], 4, R4),
    "apiquiz_strata": (pd_strata, ["setting", "mask_position", "protocol", "quizzes", "drawn", "min_scored",
                                   "max_scored"], 7, 0),
    "apiquiz_length_bias": (pd_length_bias, ["model", "protocol", "scored", "top1_chars", "gold_chars", "pool_chars",
                                             "p_at_1", "chance"], 3, A2),  # lengths rounded to 2 decimals
    # codesyntax (--rows head rows; samples/relations/baselines at CodeSyntax's natural scale)
    "codesyntax_head_scores": (pd_cs_head_scores, [*CS_KEYS, "hits", "total", "score"], 11, 1e-9),
    "codesyntax_best_heads": (pd_cs_best_heads, ["chosen_on", "model", "language", "relation", "metric", "k", "layer",
                                                 "head", "hits", "total", "score"], 10, 1e-9),
    "codesyntax_scores": (pd_cs_scores_with_baselines, ["chosen_on", "system", "language", "metric", "k", "relations",
                                                        "score"], 6, R4),
    "codesyntax_twin_diff": (pd_cs_twin_diff, ["chosen_on", "model", "twin", "language", "variant", "metric", "k",
                                               "relations", "score", "twin_score", "diff", "lo", "hi", "p_value"], 8, R4),
    "codesyntax_score_ci": (pd_cs_score_ci, ["chosen_on", "system", "language", "variant", "metric", "k",
                                             "relations", "score", "lo", "hi"], 6, R4),
    "codesyntax_baseline_scores": (pd_cs_baseline_scores, ["language", "variant", "chosen_on", "baseline", "metric",
                                                           "k", "relations", "score"], 7, R4),
    "codesyntax_dataset_stats": (pd_cs_dataset_stats, ["language", "variant", "samples", "tokens"], 4, 0),
    "codesyntax_relation_stats": (pd_cs_relation_stats, ["language", "variant", "relation", "edges", "mean_offset"], 4,
                                  A2),
    # apirec (APIBench scale: --apirec-points code points, a quarter as many queries, every zoo model)
    "apirec_metrics": (pd_apirec_metrics, ["benchmark", "subset", "model", "ranker", "k", "points", *APIREC_METRICS],
                       6, R4),
    "apirec_metrics_by_language": (pd_apirec_by_language, ["benchmark", "language", "model", "ranker", "k", "points",
                                                           "sr_method", "map_standard_method", "ndcg_standard"], 6, R4),
    "apirec_sr_by_category": (pd_apirec_sr_by_category, ["benchmark", "model", "ranker", "category", "k", "points",
                                                         "sr_method", "sr_class"], 6, 1e-9),
    "apirec_sr_ci": (pd_apirec_sr_ci, ["benchmark", "subset", "model", "ranker", "k", "n", "sr_method", "lo", "hi"], 6,
                     R4),
    "apirec_coverage": (pd_apirec_coverage, ["benchmark", "model", "ranker", "points", "scored", "too_long",
                                             "gold_in_candidates", "mean_candidates"], 6, 0.005 + 1e-9),
    "apirec_breakdown": (None, [], 0, 0),
    "apirec_breakdown_ci": (None, [], 0, 0),
    "apirec_headline": (None, [], 0, 0),
    # idbench (its natural scale: 3 x 300 rated pairs; every zoo model's vectors at 7 layers, 2 poolings)
    "idbench_spearman": (pd_idbench_spearman, ["system", "kind", "layer", "pooling", "size", "gold", "pair_set", "rated",
                                               "n", "rho"], 9, 1e-6),
    "idbench_headline": (None, [], 0, 0),
    "idbench_by_subset": (None, [], 0, 0),
    # probing (a full zoo run's fits: 12 tasks and their controls x 20 models x 2 probes x 14 layers x 5 folds)
    "probing_layers": (pd_probing_layers, ["task", "model", "pooling", "probe", "layer", "folds", "n_test", "error"], 7,
                       1e-9),
    "probing_best": (pd_probing_best, ["task", "model", "pooling", "probe", "layer"], 5, 0),
    "probing_headline": (pd_probing_headline, ["task", "model", "probe", "folds", "n_test", "mean", "ci_low",
                                               "ci_high"], 5, 1e-9),
    "probing_selectivity": (pd_probing_selectivity, ["task", "model", "layer", "folds", "samples", "task_error",
                                                     "control_error", "selectivity", "ci_low", "ci_high"], 5, 1e-9),
}
NEEDS_CARDS = {pd_vs_twin, pd_twin_diff, pd_cs_twin_diff}
FAMILY_ROWS = {  # the input rows each view's family is measured at
    "apiquiz": ["apiquiz_predictions"], "codesyntax": ["codesyntax_predictions"],
    "apirec": ["apirec_baselines", "apirec_query_baselines", "apirec_predictions"], "idbench": ["idbench_predictions"],
    "probing": ["probing_fits"]}
VIEW_ROWS = {  # views that read another input than their family's predictions
    "codesyntax_baseline_scores": ["codesyntax_baselines"], "codesyntax_dataset_stats": ["codesyntax_samples"],
    "codesyntax_relation_stats": ["codesyntax_relations"]}


def materialised() -> dict[str, str]:
    """The tables the families' SQL creates at build time: name -> the SELECT that defines it."""
    import re

    out = {}
    for name in FAMILIES:
        for sql in families.load(name).sql:
            for m in re.finditer(r"^CREATE TABLE (\w+) AS\n(.*?);\n", sql.read_text(), re.S | re.M):
                out[m.group(1)] = m.group(2)
    return out


def _text(col: pd.Series) -> np.ndarray:
    """A key column as text (NULL for a missing value; whole floats as integers: a nullable integer column
    reaches pandas as float)."""
    if pd.api.types.is_float_dtype(col) and ((col.dropna() % 1) == 0).all():
        col = col.astype("Int64")
    return col.astype(object).where(col.notna(), "NULL").astype(str).to_numpy()


def same(duck: pd.DataFrame, pand: pd.DataFrame, cols: list[str], nkeys: int, tol: float, view: str) -> None:
    """Same groups (the first nkeys columns, compared as text) and the same numbers within tol."""
    keys = cols[:nkeys]
    a, b = duck[cols].copy(), pand[cols].copy()
    for k in keys:
        a[k], b[k] = _text(a[k]), _text(b[k])
    a = a.sort_values(keys).reset_index(drop=True)
    b = b.sort_values(keys).reset_index(drop=True)
    if len(a) != len(b):
        raise SystemExit(f"{view}: DuckDB {len(a)} rows, pandas {len(b)}")
    for c in cols:
        x, y = a[c].to_numpy(), b[c].to_numpy()
        if c not in keys:
            x, y = pd.to_numeric(a[c]).to_numpy(dtype=float), pd.to_numeric(b[c]).to_numpy(dtype=float)
            if not np.allclose(x, y, atol=tol, rtol=0, equal_nan=True):
                bad = np.flatnonzero(~np.isclose(x, y, atol=tol, rtol=0, equal_nan=True))[:3]
                raise SystemExit(f"{view}: column {c} differs between DuckDB and pandas: rows {bad.tolist()}: "
                                 f"{x[bad].tolist()} vs {y[bad].tolist()}")
        elif not (x == y).all():
            bad = np.flatnonzero(x != y)[:3]
            raise SystemExit(f"{view}: column {c} differs between DuckDB and pandas: {x[bad]} vs {y[bad]}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.speed.warehouse", description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000, help="apiquiz and codesyntax prediction rows (default 10M)")
    ap.add_argument("--apirec-points", type=int, default=20_000, help="apirec code points (queries: a quarter)")
    ap.add_argument("--dir", type=Path, default=REPO / "data/bench/warehouse", help="where the synthetic tables are kept")
    ap.add_argument("--threads", type=int, default=2, help="DuckDB threads (pandas is single-threaded)")
    ap.add_argument("--repeat", type=int, default=2, help="DuckDB runs per view; the best is reported")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--models", type=int, default=10, help="trained models (each gets a random twin)")
    ap.add_argument("--views", nargs="+", choices=sorted(VIEWS), help="time only these views")
    args = ap.parse_args(argv)

    folder = args.dir / f"rows-{args.rows}"
    start = time.perf_counter()
    tables, cards = prepare(folder, args)
    written = time.perf_counter()
    db = make_warehouse(folder / "project", tables, cards)
    built = time.perf_counter() - written
    rows = {fam: sum(pq.ParquetFile(f).metadata.num_rows for t in names for f in tables[t])
            for fam, names in {**FAMILY_ROWS, **VIEW_ROWS}.items()}
    print(f"synthetic tables ready in {written - start:.1f} s; warehouse built in {built:.1f} s (views, plus the "
          f"tables materialised at build: {', '.join(materialised())}); "
          f"input rows: {', '.join(f'{k} {rows[k]:,}' for k in FAMILY_ROWS)}; {len(cards)} models", flush=True)
    con = connect(db, threads=args.threads)
    for name, sql in materialised().items():
        t, n = best_of(lambda: con.sql(sql).to_arrow_table().num_rows, 1)  # every column computed
        print(f"materialised at build: {name:28s} {n:10,d} rows {t:6.2f} s", flush=True)
    print(f"{'view':28s} {'input rows':>11s} {'rows out':>9s} {'DuckDB s':>9s} {'pandas s':>9s} {'ratio':>7s}  "
          "target <2 s, >=5x")
    results = []
    for view, (twin, cols, nkeys, tol) in VIEWS.items():
        if args.views and view not in args.views:
            continue
        family = view if view in VIEW_ROWS else view.split("_")[0]
        t_duck, duck = best_of(lambda: con.sql(f"SELECT * FROM {view}").to_arrow_table(), args.repeat)
        duck = duck.to_pandas()
        if twin is None:
            results.append((view, t_duck, None))
            print(f"{view:28s} {rows[family]:11,d} {len(duck):9,d} {t_duck:9.2f} {'-':>9s} {'-':>7s}  "
                  f"{'ok' if t_duck < 2 else 'MISS'} (no pandas twin)", flush=True)
            continue
        _APIREC.clear()  # each twin pays for the per-point scores it reads
        t_pd, pand = best_of(lambda: twin(tables, cards) if twin in NEEDS_CARDS else twin(tables), 1)
        same(duck, pand, cols, nkeys, tol, view)
        ok = "ok" if t_duck < 2 and t_pd / t_duck >= 5 else "MISS"
        results.append((view, t_duck, t_pd / t_duck))
        print(f"{view:28s} {rows[family]:11,d} {len(duck):9,d} {t_duck:9.2f} {t_pd:9.2f} {t_pd / t_duck:6.1f}x  {ok}",
              flush=True)

    ratios = [r for _, _, r in results if r is not None]
    print(f"slowest view: {max(results, key=lambda w: w[1])[0]} ({max(w[1] for w in results):.2f} s); smallest ratio: "
          f"{min(ratios) if ratios else float('nan'):.1f}x (DuckDB {args.threads} threads, pandas 1; {os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
