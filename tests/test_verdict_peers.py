"""Real models against each other (pipeline.report.headlines.peers): every summary row with per-item values is
paired with each other real model's row of its family and metric on the items both scored, and the family's
verdict table prints each pair."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from pipeline.metrics.bootstrap import cell_seed, paired_mean_test
from pipeline.report.headlines import _mean_row, peers
from pipeline.report.verdicts import family_table


def row(model, keys, values, family="f", metric="P@1", summary=True):
    r = _mean_row(family, model, metric, 7, np.array(values, dtype=float), None, {}, keys=keys)
    return replace(r, summary=summary)


def test_each_pair_is_tested_on_the_items_both_scored_in_model_order():
    a = row("a", [f"q{i}" for i in range(200)], [1.0] * 150 + [0.0] * 50)
    b = row("b", [f"q{i}" for i in range(50, 250)], [0.0] * 100 + [1.0] * 100)  # shares q50..q199 with a
    c = row("c", ["z"], [1.0])  # no item in common with a or b: no comparison
    other = row("d", ["q1"], [1.0], metric="P@5")  # another metric: never paired
    page = row("e", ["q1"], [0.0], summary=False)  # a page-only row: never paired
    out = peers([a, b, c, other, page], 7)
    assert [p.name for p in out[0].peers] == ["b"] and [p.name for p in out[1].peers] == ["a"]
    assert out[2].peers == () and out[3].peers == () and out[4].peers == ()
    test = out[0].peers[0].test
    shared_a = np.array([1.0] * 100 + [0.0] * 50)
    shared_b = np.array([0.0] * 100 + [1.0] * 50)
    assert test.n == 150 and test.a == pytest.approx(100 / 150) and test.b == pytest.approx(50 / 150)
    assert test == paired_mean_test(shared_a, shared_b, cell_seed(7, "f", "a", "P@1", "peer", "b"))
    assert out[1].peers[0].test.diff == pytest.approx(-test.diff)


def test_the_family_table_prints_each_pair_with_its_verdict():
    a = row("a", [f"q{i}" for i in range(200)], [1.0] * 150 + [0.0] * 50)
    b = row("b", [f"q{i}" for i in range(200)], [0.0] * 100 + [1.0] * 100)
    table = family_table(peers([a, b], 7), 100)
    lines = [line for line in table.splitlines() if line.startswith("| a |")]
    assert len(lines) == 1 and "| b |" in lines[0] and lines[0].endswith("| above b |"), table
