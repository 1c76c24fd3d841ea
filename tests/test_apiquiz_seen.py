"""apiquiz views of issue 23 on hand-made tables in a real DuckDB warehouse: each model's own seen/unseen
from the text its card says it read (and the paper's RQ4 split), the nl leak flag left out of the
headline, the paper's quiz set (one token in every compared model), and P@k only where it does not
saturate, chance beside it."""

from __future__ import annotations

import copy
import json

import pyarrow as pa
import pytest

from pipeline import schemas
from pipeline.families.apiquiz import schemas as aq
from pipeline.io import write_parquet
from pipeline.query import connect, run
from pipeline.warehouse.build import build
from tests.conftest import default_params

CANDIDATES = ["a", "bb", "ccc", "dddd", "eeeee"]


def quiz(quiz_id, api, answer, setting="call", leak=False, position="whole"):
    library = api.split(".")[0]
    return {"quiz_id": quiz_id, "api": api, "library": library, "repository": None, "category": "third_party",
            "private": False, "setting": setting, "level": 1, "n_levels": 2, "level_name": answer,
            "level_role": "callable", "level_kind": "function", "mask_position": position, "alias": None,
            "context": "ccc it" if setting == "nl" else None, "text": f"{library}.<mask>(", "prefix": f"{library}.",
            "suffix": "(", "answer": answer, "candidates": CANDIDATES, "candidates_siblings": 5,
            "candidates_same_kind": 5, "candidates_same_kind_known": 5, "candidates_same_role": 5, "seen": True,
            "uses": 1, "context_leak": leak}


QUIZZES = [quiz("q1", "lib.a", "ccc"), quiz("q2", "lib.b", "bb"), quiz("q3", "other.c", "dddd"),
           quiz("q4", "lib.a", "ccc", setting="nl", leak=True)]


def usage(fqn, file_id, line, col):
    return {"file_id": file_id, "sha256": "0" * 64, "source": "s", "repository": "r", "path": "p.py",
            "split": "train", "module": "p", "line": line, "col": col, "kind": "call", "chain": fqn, "attr": None,
            "fqn": fqn, "category": "third_party", "via": "import", "import_target": None, "alias": None,
            "import_statement": None, "enclosing_class": None, "enclosing_function": None}


# m read f1 from line 1 column 0 up to line 3 column 4: lib.a's call (line 3, column 2) inside, lib.b's
# (line 3, column 4) just past the end; f2 (other.c) never read.
USAGES = [usage("lib.a", "f1", 3, 2), usage("lib.b", "f1", 3, 4), usage("other.c", "f2", 1, 0)]
READ = {"files": 1, "bytes": 40, "text": [{"file_id": "f1", "bytes": 40, "ranges": [[1, 0, 3, 4]]}]}


def prediction(model, protocol, quiz_id, rank, n_ranked):
    return {"quiz_id": quiz_id, "model": model, "protocol": protocol, "status": "ok" if rank else "multi_token",
            "gold_rank": rank, "n_ranked": n_ranked if rank else None, "top": [], "gold_logprob": None}


PREDICTIONS = {
    "m": [prediction("m", "rank", q, r, 5) for q, r in (("q1", 1), ("q2", 5), ("q3", 2), ("q4", 1))]
    + [prediction("m", "fill_mask", q, r, 1000) for q, r in (("q1", 1), ("q2", 3), ("q3", None), ("q4", 1))],
    "m-random": [prediction("m-random", "fill_mask", q, r, 1000) for q, r in (("q1", 9), ("q2", None), ("q3", None),
                                                                              ("q4", 2))],
}


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    root = tmp_path_factory.mktemp("seen")
    files = {}
    for name, rows, schema in (("apiquiz_quizzes", QUIZZES, aq.QUIZZES), ("usages", USAGES, schemas.USAGES),
                               ("apiquiz_api_names", [{"api": u["fqn"], "api_repository": None, "fqn": u["fqn"],
                                                       "source": "s", "repository": "r"} for u in USAGES],
                                aq.API_NAMES)):
        path = root / f"data/{name}.parquet"
        write_parquet(pa.Table.from_pylist(rows, schema=schema), path, schema)
        files[name] = [path]
    files["apiquiz_predictions"] = []
    for model, rows in PREDICTIONS.items():
        path = root / f"data/predictions/apiquiz/{model}/0.parquet"
        write_parquet(pa.Table.from_pylist(rows, schema=aq.PREDICTIONS), path, aq.PREDICTIONS)
        files["apiquiz_predictions"].append(path)
    models = []
    for name, card in (("m", {"random": False, "train_data": {"read": READ, "split_files": 2, "split_bytes": 90}}),
                       ("m-random", {"random": True, "twin_of": "m", "train_data": None}),
                       ("hub", {"random": False, "train_data": None})):
        folder = root / "data/models" / name
        folder.mkdir(parents=True)
        (folder / "card.json").write_text(json.dumps({"name": name, "source": "x", "family": "masked-lm", **card}))
        models.append(str(folder.relative_to(root)))
    spec = {"params": copy.deepcopy(default_params()), "models": models,
            "tables": {k: [str(p.relative_to(root)) for p in v] for k, v in files.items()}}
    build(root / "data/warehouse.duckdb", spec, root)
    return connect(root / "data/warehouse.duckdb")


def test_seen_is_per_model_from_the_text_its_card_says_it_read(con):
    seen = {(m, a): s for m, a, s in run(con, "SELECT model, api, seen FROM apiquiz_seen").fetchall()}
    assert seen[("m", "lib.a")] == "seen"
    assert seen[("m", "lib.b")] == "unseen_api_seen_library"  # its call starts where the read text ends
    assert seen[("m", "other.c")] == "unseen_library"  # the paper's RQ4 unseen split
    assert {seen[("hub", a)] for a in ("lib.a", "lib.b", "other.c")} == {"unknown"}  # never guessed
    assert {seen[("m-random", a)] for a in ("lib.a", "lib.b", "other.c")} == {"unseen_library"}  # read nothing
    row = run(con, "SELECT corpus, files_read, split_files, quizzes, split_seen, model_seen, seen_to_unseen, "
                   "unseen_to_seen, rq4_unseen_library FROM apiquiz_seen_vs_split WHERE model = 'm'").fetchall()[0]
    assert row == ("exact", 1, 2, 4, 4, 2, 2, 0, 1)


def test_leaking_nl_quizzes_are_left_out_of_the_headline(con):
    assert run(con, "SELECT mask_position, nl_quizzes, leaking, drawn_leaking FROM apiquiz_leaks").fetchall() == [
        ("whole", 1, 1, 1)]
    assert run(con, "SELECT setting, scored FROM apiquiz_by_setting WHERE model = 'm' AND protocol = 'rank'"
               ).fetchall() == [("call", 3)]
    assert run(con, "SELECT sum(scored) FROM apiquiz_precision WHERE model = 'm' AND protocol = 'rank' "
                    "AND context_leak").fetchall()[0] == (1,)


def test_paper_set_is_one_token_in_every_compared_model(con):
    assert run(con, "SELECT quiz_id FROM apiquiz_paper_set").fetchall() == [("q1",), ("q4",)]
    assert run(con, "SELECT model, scored, p_at_1 FROM apiquiz_fill_mask WHERE quiz_set = 'paper set'"
               ).fetchall() == [("m", 1, 1.0), ("m-random", 1, 0.0)]  # q4 leaks; fractions


def test_p_at_k_only_below_the_number_ranked_with_chance(con):
    row = run(con, "SELECT p_at_1, p_at_5, p_at_50, chance_at_1 FROM apiquiz_p_at_k "
                   "WHERE model = 'm' AND protocol = 'rank'").fetchall()[0]
    assert row == (round(1 / 3, 4), None, None, 0.2)  # 5 candidates: P@5 and P@50 would be 1 by construction
