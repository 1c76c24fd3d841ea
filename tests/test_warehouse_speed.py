"""bench.speed.warehouse at a small size: every family's tables written with the real schemas, a real
warehouse built, and every view with a pandas twin checked equal to it (the bench exits non-zero on
the first difference), so the twins and the views cannot drift apart unnoticed."""

from __future__ import annotations

import re

import pytest


@pytest.mark.slow
def test_every_view_equals_its_pandas_twin_small(tmp_path, capsys):
    from bench.speed.warehouse import VIEWS, main

    assert main(["--rows", "40000", "--apirec-points", "600", "--models", "2", "--repeat", "1",
                 "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    timed = {m.group(1): m.group(2) for m in re.finditer(r"^(\w+)\s+[\d,]+\s+([\d,]+)\s+[\d.]+\s", out, re.M)}
    assert set(VIEWS) <= set(timed)
    # every view returned rows (an empty synthetic input would make the comparison vacuous)
    assert all(int(rows.replace(",", "")) > 0 for view, rows in timed.items() if view in VIEWS), timed
    for table in ("apiquiz_rank_counts", "apiquiz_twin_rank_pairs", "apirec_point_scores", "codesyntax_head_scores",
                  "idbench_model_cosine"):
        assert f"materialised at build: {table}" in out
