# Helpers shared by all rules: config validation, source lookup, the interpreter.
import glob
import json
import os
import re
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version

# The Snakefile reads the zoo and the family registry with the pipeline's own code (no torch
# import: a no-op run stays fast).
sys.path.insert(0, workflow.basedir)
from pipeline import registry  # noqa: E402
from pipeline import resources as jobres  # noqa: E402
from pipeline.config import ParamsError, check_devices, check_inputs, normalised, validate  # noqa: E402
from pipeline.models.entries import INFERENCE_ONLY, PLANNING_ONLY, fill_sizes, parse_zoo  # noqa: E402
from pipeline.models import weights as model_weights  # noqa: E402

min_version("9.0")

# One pending re-evaluation timer in Snakemake's scheduler, not one more per finished job (pipeline/snakemake_fixes.py).
from snakemake.scheduling.job_scheduler import JobScheduler as _JobScheduler  # noqa: E402
from pipeline.snakemake_fixes import coalesce_reevaluations  # noqa: E402

coalesce_reevaluations(_JobScheduler)

try:
    validate(config)  # schemas/params.schema.yaml + each family's params.schema.yaml
    normalised(config)
    # every local input params.yaml names (paths, datasets, local hashes), before job 1
    check_inputs(config, dataset_bases=[Path("."), Path(os.path.relpath(workflow.basedir))])
except ParamsError as exc:
    raise WorkflowError(str(exc)) from None

# Rules call `python -m pipeline.<module>`: jobs get the interpreter Snakemake runs under
# first on PATH (a virtualenv needs no activation) and import this workflow's `pipeline`
# package, also when --directory points elsewhere.
os.environ.update(
    PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
    PYTHONPATH=os.pathsep.join([workflow.basedir, *filter(None, [os.environ.get("PYTHONPATH")])]),
)
# Software for `--use-conda` / `--sdm conda` (clusters); ignored otherwise.
CONDA_ENV = os.path.join(workflow.basedir, "envs", "pipeline.yaml")

# Every rule's command first checks, where it runs (a cluster node, a conda env), that its interpreter
# is params.yaml python.require (pipeline/preflight.py: no third-party import, ~20 ms).
shell.prefix(f"set -euo pipefail; python -m pipeline.preflight --python {config['python']['require']}; ")

# Scheduler requests (pipeline/resources.py): `gpu` only where models.device is a GPU for this run,
# `mem_mb` and `runtime` from the params that drive them; `--set-resources` overrides any.
LOCAL_RUN = workflow.local_exec
GPUS = jobres.gpus(config, LOCAL_RUN)

SOURCES = {s["name"]: s for s in config["corpus"]["sources"]}
if len(SOURCES) != len(config["corpus"]["sources"]):
    raise ValueError("params.yaml: corpus.sources has two entries with the same name; names must be unique")


def source_spec(wildcards):
    """The source's params entry as canonical JSON (a change to it reruns the fetch; its `history` is fetched by
    fetch_history, so adding an older release refetches nothing else)."""
    return json.dumps({k: v for k, v in SOURCES[wildcards.source].items() if k != "history"}, sort_keys=True)


def as_json(value):
    return json.dumps(value, sort_keys=True)


# The model zoo (params.yaml models.zoo), parsed and checked once; an entry without max_length / batch_size gets
# them from its model's config and the token budget (pipeline.models.entries.fill_sizes).
try:
    ZOO = parse_zoo(config.get("models", {}).get("zoo", []), config)
except ValueError as exc:
    raise WorkflowError(f"params.yaml {exc}") from None
TRAINED = [n for n, e in ZOO.items() if e.kind == "trained"]
RANDOM = [n for n, e in ZOO.items() if e.kind == "random"]
EXTERNAL = [n for n, e in ZOO.items() if e.kind in ("package", "hub", "path")]
GGUF = [n for n, e in ZOO.items() if e.kind == "gguf"]
LMS = [n for n, e in ZOO.items() if e.model_family in ("masked-lm", "causal-lm")]


def _names(names):
    """A wildcard pattern matching exactly these names (one that matches nothing when empty)."""
    return "|".join(re.escape(n) for n in names) or "(?!)"


def zoo_subset(wildcards):
    """The model's own zoo entry (its max_length and batch_size filled in where left out: fill_sizes), plus its
    twin's for a random one: editing one entry reruns only its rules
    (less the fields that only choose which jobs exist: skip_families; and the cutoff, but for a model whose cap
    draws by contamination label: its predict jobs label items by the date, and the date is valid only with its kind)."""
    keep = ("training_cutoff", "training_cutoff_kind") if draws_by_label(wildcards.model) else ()
    drop = [k for k in PLANNING_ONLY if k not in keep]
    entries = {e["name"]: {k: v for k, v in fill_sizes(e, config).items() if k not in drop}
               for e in config["models"]["zoo"]}
    entry = entries[wildcards.model]
    twin = [entries[ZOO[wildcards.model].value]] if ZOO[wildcards.model].kind == "random" else []
    return json.dumps(twin + [entry], sort_keys=True)


def zoo_subset_for_models(wildcards):
    """zoo_subset without the fields only inference reads (batch size, dtype): they never retrain a model."""
    entries = json.loads(zoo_subset(wildcards))
    return json.dumps([{k: v for k, v in e.items() if k not in INFERENCE_ONLY + PLANNING_ONLY} for e in entries],
                      sort_keys=True)


def twin_inputs(wildcards):
    """A random twin of a pipeline-made model needs that model's folder (config and tokenizer); a twin of a
    `path:` model its card, which is rewritten when the folder's content changes (external_weights)."""
    twin = ZOO[ZOO[wildcards.model].value]
    return [f"data/models/{twin.name}"] if twin.pipeline_made or twin.kind == "path" else []


def external_weights(wildcards):
    """A `path:` model's folder as an input whose mtime is ignored (`ancient`): its content digest, the
    `weights` param (external_weights_digest), decides what reruns. DVC gets the folder as a dep
    (pipeline.dvcgen). Nothing for package and hub models (pinned by version and revision)."""
    entry = ZOO[wildcards.model]
    if entry.kind != "path":
        return []
    try:
        return [ancient(str(model_weights.check_folder(entry.name, entry.value)))]
    except model_weights.WeightsError as exc:
        raise WorkflowError(str(exc)) from None


def external_weights_digest(wildcards):
    """sha256 of a `path:` model folder's content (pipeline.models.weights; unchanged files are not reread)."""
    entry = ZOO[wildcards.model]
    if entry.kind != "path":
        return ""
    try:
        return model_weights.planned(entry.name, entry.value)
    except model_weights.WeightsError as exc:
        raise WorkflowError(str(exc)) from None


# The benchmark families params.yaml selects (pipeline/families/<name>/), in report order.
FAMILIES = registry.enabled(config)
MODEL_FAMILY = {n: e.model_family for n, e in ZOO.items()}  # zoo name -> model family
INFERENCE_MODELS = {n: MODEL_FAMILY[n] for n in (config["inference"]["models"] or ZOO)}
SKIPPED = {n: ZOO[n].skip_families for n in INFERENCE_MODELS if ZOO[n].skip_families}  # zoo skip_families


def family_models(family):
    """The inference models a family runs (name -> model family): all but those whose zoo entry skips it."""
    return {n: mf for n, mf in INFERENCE_MODELS.items() if ZOO[n].runs(family.name)}
FAMILY_BY_NAME = {f.name: f for f in FAMILIES}
PREDICTED = [f for f in FAMILIES if f.inference is not None]
SHARDS = config["inference"]["shards"]


# Rule priorities: what Snakemake starts first among ready jobs (its MILP maximises the summed priority,
# then the cores used). The default on 2 cores packs its tail when the training chain starts as soon as the manifest
# exists (every trained model's predict, fit and evaluate jobs wait for it) and the long predict jobs of the
# pretrained models (SmolLM2's are the build's longest single-thread jobs) start as soon as their inputs exist, not
# at the end; everything else keeps 0 (evaluation_sizes keeps its own 100: it fails a run early). Priorities never
# change an output (Snakemake does not rerun a job for them; bench/cost/schedule_sim.py predicts their effect).
# "analysis": a chain no model's predictions feed (the identifier analysis and what trains on it): at 0 it was left
# for the end, where its last jobs ran alone before the warehouse (the default's tail, docs/benchmarks.md)
PRIORITY = {"training": 90, "convert": 80, "pretrained_predict": 50, "analysis": 10}


def predict_priority(wildcards):
    """A predict job's priority: high for a pretrained model (package, gguf, hub or path source, or a random twin
    of one): their jobs are the long ones and their inputs exist early; trained models' jobs follow their training."""
    entry = ZOO[wildcards.model]
    base = ZOO[entry.value] if entry.kind == "random" else entry
    return PRIORITY["pretrained_predict"] if base.kind in ("package", "gguf", "hub", "path") else 0


def draws_by_label(model, family=None):
    """Whether a zoo model's cap draws a family's items (any family's when None) by contamination label."""
    return any(ZOO[model].draws_by_label(f.name) for f in PREDICTED if family in (None, f.name))


def task_inputs(wildcards):
    """A predict job's inputs by name: the family's, and its item dates (`item_dates`, rule item_dates) when the
    model's cap draws this subset's items by contamination label (only then: no other job reads them)."""
    inference = FAMILY_BY_NAME[wildcards.family].inference
    inputs = dict(inference.inputs(config, wildcards.subset))
    if (inference.item_dates is not None and inference.item_dates.applies(wildcards.subset)
            and draws_by_label(wildcards.model, wildcards.family)):
        inputs["item_dates"] = item_dates_path(wildcards.family)
    return inputs


def predict_inputs(wildcards):
    """The files a predict job reads (a plain list: the names families give their inputs could
    clash with Snakemake's reserved ones; the task gets them by name through --inputs)."""
    if not ZOO[wildcards.model].runs(wildcards.family):
        raise WorkflowError(f"{wildcards.family} does not run {wildcards.model}: params.yaml models.zoo leaves it out "
                            f"(skip_families); remove {wildcards.family} from its skip_families to run it")
    return [*task_inputs(wildcards).values(), f"data/models/{wildcards.model}"]


def predict_task_inputs(wildcards):
    return as_json(task_inputs(wildcards))


def prediction_paths(family):
    return [p.path for p in registry.prediction_files(family, config, family_models(family))]


def warehouse_tables():
    """Warehouse table -> the files the workflow builds for it."""
    tables = {
        "manifest": [rules.manifest.output.manifest],
        "rejects": [rules.manifest.output.rejects, rules.extract.output.rejects, rules.identifiers.output.rejects]
        + [path for f in FAMILIES for path in f.rejects(config)],
        "usages": [rules.extract.output.usages],
        "imports": [rules.extract.output.imports],
        "inventory": [rules.extract.output.inventory],
        "first_seen_functions": [rules.first_seen.output.functions],
        "first_seen_apis": [rules.first_seen.output.apis],
        "identifier_sequences": [rules.identifiers.output.sequences],
    }
    for f in FAMILIES:
        if f.fit is not None:
            tables[f.view("fits")] = registry.fit_files(f, config, family_models(f))
            tables[f.view("fit_items")] = [registry.fit_items_file(f)]
        for t in f.tables:
            tables[f.view(t.name)] = t.files(config)
        if f.inference is not None:
            tables[f.view("predictions")] = prediction_paths(f)
    return tables


def fit_subsets(family):
    return sorted({t["subset"] for t in family.fit.spec(config)})


def fit_model_features(family, model):
    return [registry.PredictionFile(family.name, subset, model, s).path
            for subset in fit_subsets(family) for s in range(SHARDS)]


def fit_items_inputs(wildcards):
    family = FAMILY_BY_NAME[wildcards.family]
    models = [m for m, mf in family_models(family).items() if family.applies_to(mf)]
    return {"features": [p for m in models for p in fit_model_features(family, m)],
            "labels": sorted({t["labels"] for t in family.fit.spec(config)})}


def fit_items_spec(wildcards):
    family = FAMILY_BY_NAME[wildcards.family]
    models = [m for m, mf in family_models(family).items() if family.applies_to(mf)]
    spec = family.fit.spec(config)
    return as_json({
        "features": {s: {m: [registry.PredictionFile(family.name, s, m, k).path for k in range(SHARDS)] for m in models}
                     for s in fit_subsets(family)},
        "caps": {m: ZOO[m].items_cap(family.name) if m in ZOO else None for m in models},
        "labels": {s: sorted({t["labels"] for t in spec if t["subset"] == s}) for s in fit_subsets(family)},
    })


def fit_inputs(wildcards):
    family = FAMILY_BY_NAME[wildcards.family]
    # one model's features only: a model is fitted on its own items, so no other model's run changes (or reruns) it
    return {"features": fit_model_features(family, wildcards.model),
            "labels": sorted({t["labels"] for t in family.fit.spec(config)})}


def fit_baselines_inputs(wildcards):
    family = FAMILY_BY_NAME[wildcards.family]
    return {"labels": sorted({t["labels"] for t in family.fit.spec(config)}),
            "inputs": sorted({p for s in fit_subsets(family) for p in family.inference.inputs(config, s).values()})}


def fit_tasks_json(wildcards):
    return as_json([{k: t[k] for k in ("task", "labels", "task_type", "paper") if k in t}
                    for t in FAMILY_BY_NAME[wildcards.family].fit.spec(config)])


def fit_params(wildcards):
    return FAMILY_BY_NAME[wildcards.family].fit.params(config)


def fit_outputs(family):
    """What the fit stage's index gathers for one family (every model's summary, the items, the baselines)."""
    if family.fit is None:
        return []
    out = [p.replace(".parquet", ".json") for p in registry.fit_files(family, config, family_models(family))]
    out.append(registry.fit_items_file(family))
    if family.fit.baselines:
        out.append(registry.fit_baselines_file(family))
    return out


# A family's item dates before inference (rules/contamination.smk, rule item_dates).
def item_dates_path(family):
    return f"data/contamination/item_dates/{family}.parquet"


def item_dates_tables(wildcards):
    """The warehouse tables the family's dating SQL reads, each with the files the warehouse reads for it."""
    tables = warehouse_tables()
    return {t: tables[t] for t in FAMILY_BY_NAME[wildcards.family].inference.item_dates.tables}


def item_dates_sql(wildcards):
    """The SQL files the job runs (the warehouse runs them too), relative to the working directory."""
    from pipeline.warehouse.dates import sql_files

    return [os.path.relpath(p) for p in sql_files(FAMILY_BY_NAME[wildcards.family])]
