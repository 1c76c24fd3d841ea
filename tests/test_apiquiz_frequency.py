"""apiquiz's frequency baseline (`apiquiz_frequency_baseline`), the guess of a model that knows only how often
each name is called in the train split: on hand-made tables in a real DuckDB warehouse, and in the headline row
each real model is read against."""

from __future__ import annotations

import copy
import json

import pyarrow as pa
import pytest

from pipeline import schemas
from pipeline.families.apiquiz import headline
from pipeline.families.apiquiz import schemas as aq
from pipeline.io import write_parquet
from pipeline.query import connect, run
from pipeline.warehouse.build import build
from tests.conftest import default_params
from tests.test_apiquiz_seen import prediction, quiz, usage

# Level 1 (whole names): lib.a's ccc has 3 train calls, other.c's dddd 3 (its 5 test-split calls do not count),
# lib.b's bb 1, lib.e's eeeee 0, and "a" names no API: ccc and dddd tie at the top. The first-token pool holds
# only ccc (q5). Level 0: lib (lib.a's 3 calls) ties with other (other.c's 3).
QUIZZES = [quiz("q1", "lib.a", "ccc"), quiz("q2", "lib.b", "bb"), quiz("q3", "other.c", "dddd"),
           quiz("q4", "lib.e", "eeeee", setting="import"), quiz("q5", "lib.a", "ccc", position="first"),
           dict(quiz("q6", "lib.a", "lib"), level=0, candidates=["lib", "other", "x"]),
           dict(quiz("q7", "other.c", "other"), level=0, candidates=["lib", "other", "x"])]
USAGES = ([usage("lib.a", "f1", i, 0) for i in range(3)] + [usage("lib.b", "f1", 9, 0)]
          + [usage("other.c", "f2", i, 0) for i in range(3)]
          + [dict(usage("other.c", "f3", i, 0), split="test") for i in range(5)])
RANKS = {"m": (1, 2, 1, 3, 1, 1, 2), "m-random": (2,) * 7}


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    root = tmp_path_factory.mktemp("frequency")
    files = {}
    names = [{"api": a, "api_repository": None, "fqn": a, "source": "s", "repository": "r"}
             for a in ("lib.a", "lib.b", "other.c", "lib.e")]
    for name, rows, schema in (("apiquiz_quizzes", QUIZZES, aq.QUIZZES), ("usages", USAGES, schemas.USAGES),
                               ("apiquiz_api_names", names, aq.API_NAMES)):
        path = root / f"data/{name}.parquet"
        write_parquet(pa.Table.from_pylist(rows, schema=schema), path, schema)
        files[name] = [path]
    files["apiquiz_predictions"] = []
    for model, ranks in RANKS.items():
        path = root / f"data/predictions/apiquiz/{model}/0.parquet"
        rows = [prediction(model, "rank", f"q{i + 1}", r, 5) for i, r in enumerate(ranks)]
        write_parquet(pa.Table.from_pylist(rows, schema=aq.PREDICTIONS), path, aq.PREDICTIONS)
        files["apiquiz_predictions"].append(path)
    models = []
    for name, card in (("m", {"random": False}), ("m-random", {"random": True, "twin_of": "m"})):
        folder = root / "data/models" / name
        folder.mkdir(parents=True)
        (folder / "card.json").write_text(json.dumps({"name": name, "source": "x", "family": "masked-lm",
                                                      "train_data": None, **card}))
        models.append(str(folder.relative_to(root)))
    spec = {"params": copy.deepcopy(default_params()), "models": models,
            "tables": {k: [str(p.relative_to(root)) for p in v] for k, v in files.items()}}
    build(root / "data/warehouse.duckdb", spec, root)
    return connect(root / "data/warehouse.duckdb")


def test_the_most_called_candidate_in_the_train_split_is_the_guess_and_ties_share_it(con):
    got = {q: (p, tied, gold, top) for q, p, tied, gold, top in run(
        con, "SELECT quiz_id, p_at_1, tied_at_top, gold_calls, top_calls FROM apiquiz_frequency_baseline").fetchall()}
    # ccc and dddd tie (other.c's test-split calls are not read): each right half the time, the expected P@1 of a
    # random tie-break
    assert got["q1"] == (0.5, 2, 3, 3) and got["q3"] == (0.5, 2, 3, 3)
    assert got["q2"] == (0.0, 2, 1, 3) and got["q4"] == (0.0, 2, 0, 3)
    assert got["q5"] == (1.0, 1, 3, 3)  # another mask position is its own pool
    assert got["q6"] == (0.5, 2, 3, 3) and got["q7"] == (0.5, 2, 3, 3)  # another level too


def test_the_headline_row_reads_each_model_against_chance_frequency_and_its_twin(con):
    rows = headline.rows(con, default_params())
    assert [r.model for r in rows] == ["m"]
    row = rows[0]
    assert row.n == 7 and row.score == pytest.approx(4 / 7)
    assert [c.name for c in row.baselines] == ["chance", "frequency"]
    frequency = row.baselines[1].test
    assert frequency.n == 7 and frequency.b == pytest.approx(3 / 7) and frequency.diff == pytest.approx(1 / 7)
    assert row.twin.test.b == 0.0
