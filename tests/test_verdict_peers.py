"""Real models against each other (pipeline.report.headlines.peers): every summary row with per-item values is
paired with each other real model's row of its family and metric on the items both scored, and the family's
verdict table prints each pair."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from pipeline.metrics.bootstrap import cell_seed, paired_mean_test
from pipeline.report.headlines import _mean_row, peers
from pipeline.report.verdicts import Row, family_table


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


def spearman_row(model, pairs):
    """A row of a correlation (idbench): each pair's model score and gold value, as pipeline.families.idbench
    .headline makes it."""
    keys = sorted(pairs)
    return Row("idbench", model, "rho, relatedness (large)", None, len(keys), items=tuple(keys),
               values=tuple(pairs[k][0] for k in keys), statistic="spearman", gold=tuple(pairs[k][1] for k in keys))


def test_a_correlation_row_is_paired_by_the_difference_of_the_two_rhos_on_the_pairs_both_scored():
    """idbench (a correlation, not a mean): each real model against every other on the summary's gold score, a
    paired bootstrap of the difference of their rhos over the identifier pairs both scored; one `peers` for every
    family, the statistic named by the row."""
    from pipeline.metrics.bootstrap import paired_spearman_tests

    rng = np.random.default_rng(0)
    gold = rng.random(70)
    a = {f"p{i}": (g + 0.05 * rng.random(), g) for i, g in enumerate(gold)}  # close to gold
    b = {f"p{i}": (rng.random(), g) for i, g in enumerate(gold) if i >= 20}  # noise, 50 pairs shared with a
    c = {"z": (1.0, 1.0)}  # shares no pair with a or b
    d = {"p1": (0.5, gold[1]), "p2": (0.1, gold[2])}  # two shared pairs: too few for a rho, left out
    mean = row("m", ["p1"], [1.0], family="idbench", metric="rho, relatedness (large)")  # another statistic
    out = peers([spearman_row("a", a), spearman_row("b", b), spearman_row("c", c), spearman_row("d", d), mean], 7)
    assert [p.name for p in out[0].peers] == ["b"] and out[2].peers == () and out[3].peers == ()
    assert out[4].peers == ()
    shared = sorted(k for k in a if k in b)
    assert out[0].peers[0].test == paired_spearman_tests(
        [a[k][0] for k in shared], {"b": [b[k][0] for k in shared]}, [a[k][1] for k in shared],
        cell_seed(7, "idbench", "a", "rho, relatedness (large)", "peer", "b"))["b"]
    test = out[0].peers[0].test
    assert test.n == 50 and test.diff > 0.5 and test.p_value < 0.001
    assert out[1].peers[0].test.diff == pytest.approx(-test.diff)
