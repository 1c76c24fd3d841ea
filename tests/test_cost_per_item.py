"""bench.cost.per_item: seconds per scored item of each model's predict jobs, from a build's Snakemake log and its
predictions files (docs/models.md, "Cost per item, family by family")."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

from bench.cost.per_item import job_walls, main

LOG = """\
[Thu Dec  3 08:05:10 2026]
rule predict:
    input: data/families/apiquiz/all/quizzes.parquet
    output: data/predictions/apiquiz/all/big/0.parquet
    jobid: 7
    wildcards: family=apiquiz, subset=all, model=big, shard=0
    threads: 1
[Thu Dec  3 08:05:11 2026]
rule predict:
    output: data/predictions/apiquiz/all/small/0.parquet
    jobid: 8
    wildcards: family=apiquiz, subset=all, model=small, shard=0
[Thu Dec  3 08:05:12 2026]
rule warehouse:
    jobid: 9
[Thu Dec  3 08:05:51 2026]
Finished jobid: 8 (Rule: predict)
[Thu Dec  3 08:06:50 2026]
Finished jobid: 7 (Rule: predict)
[Thu Dec  3 08:06:59 2026]
Finished jobid: 9 (Rule: warehouse)
"""


def test_each_finished_predict_job_has_its_wall_by_its_wildcards():
    walls = job_walls(LOG)
    assert walls == {(("family", "apiquiz"), ("model", "big"), ("shard", "0"), ("subset", "all")): 100.0,
                     (("family", "apiquiz"), ("model", "small"), ("shard", "0"), ("subset", "all")): 40.0}
    assert job_walls(LOG.replace("Finished jobid: 7", "Error in jobid: 7")).keys() == {
        (("family", "apiquiz"), ("model", "small"), ("shard", "0"), ("subset", "all"))}  # unfinished: left out


def test_seconds_per_distinct_item_beside_the_reference(tmp_path, capsys):
    for model, ids in (("big", ["q1", "q1", "q2", "q3", "q4"]), ("small", ["q1", "q2", "q3", "q4"])):
        folder = tmp_path / "data/predictions/apiquiz/all" / model
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"quiz_id": ids, "model": [model] * len(ids)}), folder / "0.parquet")
    (tmp_path / "build.log").write_text(LOG)
    out = tmp_path / "cost.json"
    assert main(["--build", str(tmp_path), "--log", str(tmp_path / "build.log"), "--models", "big", "small",
                 "--reference", "small", "--out", str(out)]) == 0
    rows = {r["model"]: r for r in json.loads(out.read_text())["rows"]}
    assert rows["big"]["items"] == 4 and rows["big"]["s_per_item"] == 25.0 and rows["big"]["x_small"] == 2.5
    assert rows["small"]["s_per_item"] == 10.0 and rows["small"]["x_small"] == 1.0
    assert str(tmp_path) not in out.read_text()  # no machine path in the results file
    assert "2.50x small" in capsys.readouterr().out
