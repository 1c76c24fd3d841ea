"""The power floor's shared cells (pipeline.report.common): a headline cell under report.min_n prints its n and
"too few items", never a score; CIs clip to the metric's range; the detectable difference shrinks with n."""

from __future__ import annotations

from pipeline.report import common


def test_a_cell_under_the_floor_prints_its_n_not_its_score():
    assert common.score_cell(0.4567, 99, 100) == "too few items (n = 99)"
    assert common.score_cell(0.4567, None, 100) == "too few items (n = 0)"
    assert common.score_cell(0.4567, 100, 100) == "0.457"
    assert common.interval_cell(0.1, 0.9, 12, 100) == ""
    assert common.interval_cell(0.1, 0.9, 120, 100) == "[0.100, 0.900]"


def test_min_n_comes_from_params_with_a_default():
    assert common.min_n({}) == common.MIN_N == 100
    assert common.min_n({"report": {"min_n": 30}}) == 30


def test_clip_and_detectable_difference():
    assert common.clip(-0.2) == 0.0 and common.clip(2.101) == 1.0 and common.clip(None) is None
    assert common.clip(3.0, 0.0, float("inf")) == 3.0
    d100, d400 = common.detectable_difference(0.5, 100), common.detectable_difference(0.5, 400)
    assert abs(d100 - 1.96 * (0.5 / 100) ** 0.5) < 1e-12 and abs(d400 - d100 / 2) < 1e-12
    assert common.detectable_difference(0.5, 0) is None
