"""bench/gpu/recipe_sweep.py's scoring mirrors the warehouse views: checked by hand on tiny tables."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench.gpu.recipe_sweep import apiquiz_scores, codesyntax_best, main, paired_ci
from pipeline.families.apiquiz import schemas as apiquiz_schemas
from pipeline.families.codesyntax import schemas as codesyntax_schemas


def _hits(rows):
    cols = {n: [r[i] for r in rows] for i, n in enumerate(["eval_split", "relation", "layer", "head", "hits", "total"])}
    n = len(rows)
    table = {"model": ["m"] * n, "language": ["python"] * n, "variant": ["plain"] * n, "eval_split": cols["eval_split"],
             "relation": cols["relation"], "metric": ["first"] * n, "k": [1] * n, "layer": cols["layer"], "head": cols["head"],
             "hits": cols["hits"], "total": cols["total"], "sample_id": [None] * n}  # summed rows: no sample
    return pa.table(table, schema=codesyntax_schemas.ATTENTION_HITS)


def test_codesyntax_heads_chosen_on_dev_scored_on_test_ties_to_lowest_layer_then_head(tmp_path):
    rows = [
        # relation A: dev picks (0, 1) (0.5 > 0.25); test scores it 3/10 although (1, 0) is better on test
        ("dev", "A", 0, 0, 1, 4), ("dev", "A", 0, 1, 2, 4), ("dev", "A", 1, 0, 0, 4),
        ("test", "A", 0, 0, 0, 10), ("test", "A", 0, 1, 3, 10), ("test", "A", 1, 0, 9, 10),
        # relation B: a dev tie between (0, 1) and (1, 0) goes to layer 0
        ("dev", "B", 0, 1, 1, 2), ("dev", "B", 1, 0, 1, 2),
        ("test", "B", 0, 1, 1, 4), ("test", "B", 1, 0, 4, 4),
    ]
    path = tmp_path / "cs.parquet"
    pq.write_table(_hits(rows), path)
    assert codesyntax_best(path, "dev") == {"python": {"A": 0.3, "B": 0.25}}
    assert codesyntax_best(path, "test") == {"python": {"A": 0.9, "B": 1.0}}


def test_paired_ci_of_a_constant_difference_is_that_difference():
    a, b = {"A": 0.5, "B": 0.25, "C": 0.75}, {"A": 0.25, "B": 0.0, "C": 0.5, "D": 0.9}  # D: not in a, left out
    assert paired_ci(a, b) == pytest.approx((25.0, 25.0, 25.0))
    d, lo, hi = paired_ci({"A": 1.0, "B": 0.0}, {"A": 0.0, "B": 0.0})
    assert d == pytest.approx(50.0) and lo == pytest.approx(0.0) and hi == pytest.approx(100.0)


def test_apiquiz_p_at_1_per_protocol_and_fill_mask_p_at_10(tmp_path):
    rows = [("q1", "rank", "ok", 1), ("q2", "rank", "ok", 3), ("q1", "rank_mean", "ok", 1), ("q2", "rank_mean", "ok", 1),
            ("q1", "fill_mask", "ok", 10), ("q2", "fill_mask", "ok", 11), ("q3", "fill_mask", "multi_token", None)]
    n = len(rows)
    table = pa.table({"quiz_id": [r[0] for r in rows], "model": ["m"] * n, "protocol": [r[1] for r in rows],
                      "status": [r[2] for r in rows], "gold_rank": [r[3] for r in rows], "n_ranked": [50] * n,
                      "top": [[] for _ in rows], "gold_logprob": [None] * n}, schema=apiquiz_schemas.PREDICTIONS)
    pq.write_table(table, tmp_path / "aq.parquet")
    assert apiquiz_scores(tmp_path / "aq.parquet") == {"rank": 50.0, "rank_mean": 100.0, "fill_mask P@10": 50.0}


def test_no_arguments_prints_help_and_runs_nothing(capsys):
    assert main([]) == 0
    assert "nothing run" in capsys.readouterr().out


def test_command_line_arguments_are_read_when_main_gets_none(tmp_path, monkeypatch, capsys):
    """`python -m bench.gpu.recipe_sweep table DIR` (main(None): sys.argv) runs the command, not the help."""
    monkeypatch.setattr("sys.argv", ["recipe_sweep", "table", str(tmp_path)])
    assert main(None) == 0
    out = capsys.readouterr().out
    assert out.startswith("| recipe | model |") and "nothing run" not in out
