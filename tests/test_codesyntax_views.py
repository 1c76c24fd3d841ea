"""CodeSyntax views on hand-made tables: models are compared with the baselines of the labelled
variant they were evaluated on, and the report section follows codesyntax.ks and the variant."""

from __future__ import annotations

import copy
import os

import pyarrow as pa

from pipeline.families.codesyntax import schemas
from pipeline.io import write_parquet
from pipeline.query import connect, run
from pipeline.warehouse.build import build
from tests.conftest import default_params


def hits_rows(variant: str, hits: dict[tuple[str, int], tuple[int, int]]) -> list[dict]:
    """(eval split, head) -> (hits, total) for one relation, one layer, metric first, k 1."""
    return [{"model": "m", "language": "python", "variant": variant, "eval_split": split, "relation": "R",
             "metric": "first", "k": 1, "layer": 0, "head": head, "hits": h, "total": t}
            for (split, head), (h, t) in hits.items()]


def baseline(variant: str, hits: int) -> dict:
    return {"language": "python", "variant": variant, "chosen_on": "test", "baseline": "offset", "metric": "first",
            "relation": "R", "k": 1, "chosen": ["offset=1"], "hits": hits, "total": 10}


def test_models_meet_the_baselines_of_their_own_variant(tmp_path):
    params = copy.deepcopy(default_params())
    params["codesyntax"]["inference"]["variant"] = "with_newlines"
    params["codesyntax"]["ks"] = [1, 2]
    preds = tmp_path / "data/predictions/codesyntax/python/m/0.parquet"
    # head 1 is best on dev (8/10) but head 0 on test (6/10): chosen on dev -> 3/10, on test -> 6/10
    write_parquet(pa.Table.from_pylist(hits_rows("with_newlines", {("dev", 0): (2, 10), ("dev", 1): (8, 10),
                                                                   ("test", 0): (6, 10), ("test", 1): (3, 10)}),
                                       schema=schemas.ATTENTION_HITS), preds, schemas.ATTENTION_HITS)
    base = {}
    for variant, h in (("plain", 4), ("with_newlines", 7)):
        base[variant] = tmp_path / f"data/families/codesyntax/{variant}/python/baselines.parquet"
        write_parquet(pa.Table.from_pylist([baseline(variant, h)], schema=schemas.BASELINES), base[variant],
                      schemas.BASELINES)
    spec = {"params": params, "tables": {"codesyntax_predictions": [str(preds.relative_to(tmp_path))],
                                         "codesyntax_baselines": [str(p.relative_to(tmp_path)) for p in base.values()]}}
    build(tmp_path / "data/warehouse.duckdb", spec, tmp_path)
    con = connect(tmp_path / "data/warehouse.duckdb")
    rows = run(con, "SELECT chosen_on, system, variant, score FROM codesyntax_scores ORDER BY ALL").fetchall()
    assert rows == [("dev", "m", "with_newlines", 0.3), ("test", "m", "with_newlines", 0.6),
                    ("test", "offset", "plain", 0.4), ("test", "offset", "with_newlines", 0.7)]  # fractions
    from pipeline.families.codesyntax.report import section

    text = str(section(con, tmp_path / "figures", "figures", params, tmp_path / "plots"))
    assert "`with_newlines` labels" in text
    header = next(line for line in text.splitlines() if line.startswith("| system"))
    # codesyntax.ks, and per language the test edges the scores are over
    assert header == "| system | chosen on | python @1 | python @2 | python n | java @1 | java @2 | java n |"
    offset = next(line for line in text.splitlines() if line.startswith("| offset"))
    assert "0.700" in offset and "0.400" not in offset  # the with_newlines baseline, not the plain one
    assert offset.split(" | ")[4] == "10"  # its 10 test edges
    assert run(con, "SELECT chosen_on, edges FROM codesyntax_scores WHERE system = 'm' ORDER BY ALL").fetchall() == [
        ("dev", 10), ("test", 10)]


def _row(schema: pa.Schema, **given) -> dict:
    """A row of `schema`: the given values, every other field a neutral filler of its type."""
    def filler(t):
        return ([] if pa.types.is_list(t) else 0 if pa.types.is_integer(t) else False if pa.types.is_boolean(t)
                else None if pa.types.is_date(t) else "")
    return {f.name: given.get(f.name, filler(f.type)) for f in schema}


def _write(path, schema, rows) -> str:
    write_parquet(pa.Table.from_pylist(rows, schema=schema), path, schema)
    return str(path)


def test_score_split_by_contamination_label_paired_with_the_twin(tmp_path):
    """Per-sample rows give the headline split by label: each test function's share of edges found by the best head
    (chosen on dev, or on test), averaged per label, with n; the twin paired on the same functions. A function in
    both labelled variants is one item."""
    import datetime as dt
    import json

    from pipeline.contamination.firstseen import FUNCTIONS
    from pipeline.families.codesyntax.report import contamination
    from pipeline.schemas import MANIFEST

    params = copy.deepcopy(default_params())
    params["models"]["zoo"] = [{"name": "m", "source": "package:x", "family": "masked-lm", "training_cutoff": "2024-11-01",
                                "training_cutoff_kind": "data"},
                               {"name": "m-random", "source": "random:m"}]
    d = tmp_path / "data"
    models = []
    for name, card in (("m", {"source": "package:x", "family": "masked-lm", "random": False}),
                       ("m-random", {"source": "random:m", "family": "masked-lm", "random": True, "twin_of": "m"})):
        (d / "models" / name).mkdir(parents=True)
        (d / "models" / name / "card.json").write_text(json.dumps(card))
        models.append(f"data/models/{name}")
    # f1 released before the cutoff, f2 after; g in f1 is first seen (history) after it
    manifest = _write(d / "manifest.parquet", MANIFEST, [
        _row(MANIFEST, file_id="f1", language="python", released=dt.date(2024, 1, 1)),
        _row(MANIFEST, file_id="f2", language="python", released=dt.date(2025, 1, 1))])
    # h in f2 too (f2's own date, its release, is only an upper bound: after the cutoff alone it would be `unknown`)
    seen = _write(d / "contamination/first_seen_functions.parquet", FUNCTIONS, [
        _row(FUNCTIONS, file_id="f1", function="g", first_version="2", first_released=dt.date(2025, 2, 1)),
        _row(FUNCTIONS, file_id="f2", function="h", first_version="2", first_released=dt.date(2025, 1, 1))])
    where = {"s1": ("f1", "f", "test"), "s2": ("f1", "g", "test"), "s3": ("f2", "h", "test"), "s4": ("f1", "k", "dev")}
    samples = [_write(d / f"families/codesyntax/{v}/python/samples.parquet", schemas.SAMPLES, [
        _row(schemas.SAMPLES, sample_id=s, language="python", file_id=f, function=fn, eval_split=split, start_line=i)
        for i, (s, (f, fn, split)) in enumerate(where.items())]) for v in ("plain", "with_newlines")]

    def hits(model, split, head, h, t, sample=None):
        return {"model": model, "language": "python", "variant": "plain", "eval_split": split, "relation": "R",
                "metric": "first", "k": 1, "layer": 0, "head": head, "hits": h, "total": t, "sample_id": sample}

    # per test sample and head (hits, edges): m finds s1 2/2 | 1/2, s2 0/1 | 1/1, s3 1/1 | 0/1 with heads 0 | 1;
    # the twin s1 0/2, s2 1/1, s3 0/1 with head 0
    per = {"m": {"s1": ((2, 2), (1, 2)), "s2": ((0, 1), (1, 1)), "s3": ((1, 1), (0, 1))},
           "m-random": {"s1": ((0, 2), (0, 2)), "s2": ((1, 1), (0, 1)), "s3": ((0, 1), (0, 1))}}
    dev = {"m": ((2, 10), (8, 10)), "m-random": ((5, 10), (1, 10))}  # dev chooses head 1 for m, head 0 for the twin
    preds = []
    for model in per:
        rows = [hits(model, "dev", head, *dev[model][head]) for head in (0, 1)]
        rows += [hits(model, "test", head, sum(v[head][0] for v in per[model].values()),
                      sum(v[head][1] for v in per[model].values())) for head in (0, 1)]
        rows += [hits(model, "test", head, *v[head], sample) for sample, v in per[model].items() for head in (0, 1)]
        preds.append(_write(d / f"predictions/codesyntax/python/{model}/0.parquet", schemas.ATTENTION_HITS, rows))
    spec = {"params": params, "models": models,
            "tables": {"manifest": [manifest], "first_seen_functions": [seen], "codesyntax_samples": samples,
                       "codesyntax_predictions": preds}}
    spec["tables"] = {k: [os.path.relpath(p, tmp_path) for p in v] for k, v in spec["tables"].items()}
    build(tmp_path / "data/warehouse.duckdb", spec, tmp_path)
    con = connect(tmp_path / "data/warehouse.duckdb")
    # one row per function and model, whatever the variants labelled
    assert run(con, "SELECT sample_id, label, date_basis FROM codesyntax_contamination WHERE model = 'm' "
                    "ORDER BY 1").fetchall() == [
        ("s1", "released_before_cutoff", "release"), ("s2", "released_after_cutoff", "first_seen"),
        ("s3", "released_after_cutoff", "first_seen"), ("s4", "released_before_cutoff", "release")]
    # the summed rows alone make the headline (the per-sample rows repeat them): m on test at its dev head 1
    assert run(con, "SELECT score, edges FROM codesyntax_scores WHERE system = 'm' AND chosen_on = 'dev' "
                    "AND k = 1").fetchall() == [(0.5, 4)]
    scores = run(con, "SELECT chosen_on, model, label, n, score FROM codesyntax_contamination_scores "
                      "ORDER BY ALL").fetchall()
    assert scores == [  # dev: m's head 1 (s1 1/2; s2 1, s3 0), the twin's head 0 (s1 0; s2 1, s3 0)
        ("dev", "m", "released_after_cutoff", 2, 0.5), ("dev", "m", "released_before_cutoff", 1, 0.5),
        ("dev", "m-random", "released_after_cutoff", 2, 0.5), ("dev", "m-random", "released_before_cutoff", 1, 0.0),
        # on test, m's head 0 (s1 1; s2 0, s3 1); the twin's stays head 0
        ("test", "m", "released_after_cutoff", 2, 0.5), ("test", "m", "released_before_cutoff", 1, 1.0),
        ("test", "m-random", "released_after_cutoff", 2, 0.5), ("test", "m-random", "released_before_cutoff", 1, 0.0)]
    twins = run(con, "SELECT model, twin, label, n, score, twin_score, diff FROM codesyntax_contamination_vs_twin "
                     "WHERE chosen_on = 'dev' ORDER BY ALL").fetchall()
    assert twins == [("m", "m-random", "released_after_cutoff", 2, 0.5, 0.5, 0.0),
                     ("m", "m-random", "released_before_cutoff", 1, 0.5, 0.0, 0.5)]
    text = "\n".join(contamination(con, 1))
    # test functions per label, labelled by their code's date (a data cutoff); none dated by release after the cutoff
    assert "| m | cutoff | data | its code's first release | 0 | 0 | 1 | 2 | 0 | 0 |" in text  # s3 now first seen
    assert "| m | python | after the cutoff | 2 | 0.500 |" in text
    assert "| m | m-random | python | before the cutoff | 1 | 0.500 | 0.000 | 0.500 |" in text
    assert "too few items (n = 2)" in "\n".join(contamination(con, 3))
