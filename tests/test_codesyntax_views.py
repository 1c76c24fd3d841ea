"""CodeSyntax views on hand-made tables: models are compared with the baselines of the labelled
variant they were evaluated on, and the report section follows codesyntax.ks and the variant."""

from __future__ import annotations

import copy

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
