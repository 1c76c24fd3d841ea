"""The benchmark-family registry: every family declares itself once, in its own folder.

A family is a package (`pipeline/families/<name>/`, or any importable package `<name>`) whose
`__init__.py` defines `FAMILY = Family(...)` from the declarations here; `load(name)` imports it by
name, so this module imports no family (the families build on the runtime, the report helpers and the
metric library, all of which read this registry: it lives below them). `params.yaml` lists the families to build
(`families: [...]`) and gives each its own params block, validated by the family's
`params.schema.yaml`. Everything central is computed from here: `rule all`, the inference
jobs (one predict rule keyed by family, subset, model and shard), the warehouse tables and
views, the report sections, the DVC stages and the params schema.

This module imports neither torch nor the families' heavy modules: the Snakefile reads it on
every run, and a no-op run must stay fast. "Family" alone always means a benchmark family;
the kind of model (masked LM, causal LM, ...) is a "model family".
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import pyarrow as pa

from pipeline.io import load_yaml as parse_yaml

from pipeline.models.entries import MODEL_FAMILIES  # noqa: F401 (the kinds of model a family may apply to)

# where the families of this repository live: `load(name)` imports `<FAMILIES_PACKAGE>.<name>` when that folder
# exists, else the importable package `<name>`
FAMILIES_PACKAGE = "pipeline.families"
FAMILIES_FOLDER = Path(__file__).parent / "families"

Config = Mapping[str, object]


@dataclass(frozen=True)
class Table:
    """A table a family writes: its warehouse view `<family>_<name>` over `files(config)`."""

    name: str
    schema: pa.Schema
    description: str
    files: Callable[[Config], list[str]]  # paths (relative to the project) the view reads
    derived: str = ""  # extra SQL columns derived from each row's file path (`filename`)


@dataclass(frozen=True)
class SubsetTask:
    """A subset whose inference differs from the family's default one: its own task module and the
    model families it applies to (e.g. LMs re-rank code points, encoders rank queries)."""

    task: str  # module with `predict(ctx)`, writing the family's predictions schema
    model_families: tuple[str, ...]


@dataclass(frozen=True)
class ItemDates:
    """How a family dates its items before any model, so that a zoo cap may draw by contamination label
    (`max_items: {family: {released_after_cutoff: n, ...}}`, docs/contamination.md): `sql`, a file of the family's
    sql/ folder that the warehouse runs too (one SQL text for both), creates `view` with one row per item a label
    is given to (`id`, `released`, `date_basis`), reading only the warehouse `tables` named (core tables or the
    family's views). `python -m pipeline.warehouse.dates` runs it over those tables' Parquet files and writes
    `data/contamination/item_dates/<family>.parquet`, which the predict jobs of a model whose cap names labels
    read; the draw then labels each item as the warehouse does (the date against the model's cutoff)."""

    sql: str  # e.g. "15_contamination_dates.sql"
    view: str  # e.g. "<family>_item_dates": one row per item with its date
    id: str  # the item id column of `view`, as the task's items name it (e.g. quiz_id or item_id)
    tables: tuple[str, ...]  # warehouse tables the SQL reads
    subsets: tuple[str, ...] = ()  # the subsets whose items these are (empty: every subset)
    # a column of `view` a matched draw balances across the two sides (e.g. an item's library); None: the
    # family's items cannot be drawn matched (docs/contamination.md, "A matched draw")
    group: str | None = None

    def applies(self, subset: str) -> bool:
        return not self.subsets or subset in self.subsets


@dataclass(frozen=True)
class Inference:
    """What a family asks of every model it applies to: one job per (subset, model, shard).
    `task` and `model_families` hold for every subset not named in `per_subset`."""

    task: str  # module with `predict(ctx: pipeline.runtime.predict.ShardContext) -> pa.Table`
    schema: pa.Schema  # the predictions table, view `<family>_predictions`
    description: str
    inputs: Callable[[Config, str], dict[str, str]]  # the subset's input files, by name
    params: Callable[[Config], dict]  # the params the task reads (a change reruns only its jobs)
    model_families: tuple[str, ...]  # model families it applies to; other models get no job
    not_applicable: str  # the one line the warehouse shows for the others
    attentions: bool = False  # the model must return attention weights
    hidden_states: bool = False  # the model must return hidden states
    per_subset: Mapping[str, SubsetTask] = field(default_factory=dict)  # subsets with their own task
    # What a zoo entry's cap on this family may name per stratum (`max_items: {family: {value: n}}`: n items of
    # each named value, none of the others), and what a value is (messages): e.g. a quiz's setting. Every value
    # the family can have, not only those the params select (a cap naming one they leave out draws nothing), so
    # that the check reads no params. The task passes each item's value to the draw (`ShardContext.select(...,
    # keys=)`). None: a number only.
    strata: Callable[[Config], Sequence[str]] | None = None
    strata_name: str = ""
    # How its items are dated before inference, for a zoo cap by contamination label (None: no such cap).
    item_dates: ItemDates | None = None

    def task_for(self, subset: str) -> str:
        return self.per_subset[subset].task if subset in self.per_subset else self.task

    def families_for(self, subset: str) -> tuple[str, ...]:
        return self.per_subset[subset].model_families if subset in self.per_subset else self.model_families

    @property
    def all_model_families(self) -> tuple[str, ...]:
        """Every model family some subset applies to, in first-declared order."""
        out = list(self.model_families)
        for st in self.per_subset.values():
            out += [m for m in st.model_families if m not in out]
        return tuple(out)


@dataclass(frozen=True)
class Fit:
    """Probes or regressors fitted on the pooled features a family's inference writes (its
    predictions in the FEATURES schema). The fit stage runs, per family:

    - one items job (`python -m pipeline.fit.items`, `data/fits/<family>/_items.parquet`, view
      `<family>_fit_items`): the record, per model, of the items it has features for in every layer
      and why it lacks the others (it drops nothing for another model);
    - one fit job per model over all the family's tasks (`python -m pipeline.fit --tasks ...`,
      each layer read once for every task; `data/fits/<family>/<model>.parquet`, view `<family>_fits`),
      on that model's own items only (it reads no other model's features);
    - when `baselines` names a module, one baselines job on the full labelled item set
      (`python -m <baselines> --tasks JSON --folds K --seed S --out OUT --metrics M`,
      FIT_RESULTS rows at `data/fits/<family>/_baselines.parquet`)."""

    tasks: Callable[[Config], list[str]]
    subset: Callable[[Config, str], str]  # the predictions subset holding the task's features
    labels: Callable[[Config, str], str]  # the task's labels (PROBE_LABELS schema)
    task_type: Callable[[Config, str], str]  # classification / regression
    params: Callable[[Config], dict]  # probe, folds, alphas, seed (as pipeline.fit takes them)
    baselines: str = ""  # module scoring the family's own baselines on all labelled items
    # the `paper` probe per task: the estimator the paper's released code fits there, {"estimator": sgd |
    # logistic_cv | ridge_cv, "alphas": [...]} (pipeline.fit.probe.release_estimator), or None where it fits none
    # (the paper probe skips the task); unset: every task gets the default paper probe
    paper: Callable[[Config, str], dict | None] | None = None

    def spec(self, config: Config) -> list[dict]:
        """Every task as the fit CLIs take it: task, subset, labels, task_type (and paper, when declared)."""
        return [{"task": t, "subset": self.subset(config, t), "labels": self.labels(config, t),
                 "task_type": self.task_type(config, t), **({"paper": self.paper(config, t)} if self.paper else {})}
                for t in self.tasks(config)]


@dataclass(frozen=True)
class Plot:
    """A CSV under reports/plots/ that a family's report writes for `dvc plots show/diff`: its plotted
    columns are named `x` and `y`, and the columns before `x` name the series (one line per model and
    protocol, ...; pipeline.report.common.write_plot joins them into a `series` column, which the
    template `.dvc/plots/series.json` colours by). The labels name the axes in dvc.yaml (pipeline.dvcgen)."""

    file: str
    x_label: str
    y_label: str
    title: str = ""


@dataclass(frozen=True)
class Reference:
    """A params key whose values name something defined elsewhere in params.yaml (pipeline.config checks
    every one, whether or not the family is enabled)."""

    key: str  # dotted params key, e.g. "<family>.domains"
    used: tuple[str, ...]  # the names it holds (a mapping's keys whose value is not null)
    defined: tuple[str, ...]  # the names they must be among
    where: str  # where those are defined, for the message ("corpus.sources names")
    null_drops: bool = False  # the key is a mapping whose null entries mean "no entry" (dropped before use)


@dataclass(frozen=True)
class EvaluationSet:
    """Items a family's scores are computed on, in one language: rows of a Parquet file it builds, those
    matching `where` (column -> value) and, when `suffixes` is set, whose `path` column ends with one of
    them; `distinct` counts distinct values of a column instead of rows (e.g. snippets, not samples), per `by`
    value too.
    pipeline.manifest.evaluation checks each holds manifest.evaluation.min_items."""

    name: str  # what the items are: "points", "test samples", ...
    language: str
    file: str
    where: tuple[tuple[str, str], ...] = ()
    suffixes: tuple[str, ...] = ()
    distinct: str = ""
    fix: str = ""  # the family's own advice when the set is small (after the corpus-wide advice)
    # Items drawn from one manifest split (named by their `split` column, e.g. a family's `eval_split` param): every
    # source with library code in `language` must hold at least one (their `source` column), or the run fails
    # (manifest.evaluation.allow_unevaluated opts out).
    every_source: bool = False
    by: tuple[str, ...] = ()  # columns its items are counted by in reports/metrics/evaluation.json (source first)
    # a column holding a top-level module name (apiquiz's `library`): its items are counted per source through the
    # manifest's library files (which source's library defines that top-level name)
    source_of: str = ""
    # counted per source (by source / source_of) but not checked per source: a source may give none (apirec's queries
    # need a docstring or comment that names the call); the per-source table still shows it
    checked_per_source: bool = True
    # a JSON file the family writes whose `why_none` maps a value of `source_of` (or a source) to the reason it gives
    # no item (e.g. why a library's called APIs are all left out); the check's line for that source quotes it
    why_none: str = ""


@dataclass(frozen=True)
class Family:
    """A benchmark family. Its folder holds `rules.smk` (a rule named after the family that builds
    its benchmark under data/families/<name>/ and reports/metrics/<name>.json), `params.schema.yaml`
    (its params block), `sql/*.sql` (its views, run after the tables exist), its report module and
    a README with the paper-conformance checklist."""

    name: str  # = params key, data folder, table and view prefix, report section
    title: str
    paper: str  # the paper (file in ../shared/seeds/) and its arXiv id
    version: str  # bumped when the family's outputs change meaning; stored with its predictions
    folder: Path
    subsets: Callable[[Config], list[str]]  # e.g. languages; one inference job set per subset
    targets: Callable[[Config], list[str]]  # the family's benchmark outputs (`rule <name>` builds them)
    tables: tuple[Table, ...] = ()
    rejects: Callable[[Config], list[str]] = lambda config: []  # files in the core REJECTS schema, for `rejects`
    inference: Inference | None = None
    fit: Fit | None = None
    report: str = ""  # module with `section(con, figures: Path, link: str, config) -> str`
    # SQL returning (model, metric, value, n) rows: the family's scores in reports/metrics/scores.json, each with
    # its sample count n (a 3-column query, without n, is still read)
    headline: str = ""
    plots: tuple[Plot, ...] = ()  # CSV files under reports/plots/ its report section writes (DVC plots)
    # its evaluation sets, per language (manifest.evaluation.min_items is checked on each); [] for a family whose
    # items do not come from the corpus's evaluation split (rated pairs of a pinned dataset, say)
    evaluation: Callable[[Config], list[EvaluationSet]] = lambda config: []
    references: Callable[[Config], list[Reference]] = lambda config: []  # params keys naming things elsewhere

    @property
    def rules(self) -> Path:
        return self.folder / "rules.smk"

    @property
    def sql(self) -> list[Path]:
        return sorted((self.folder / "sql").glob("*.sql"))

    @property
    def params_schema(self) -> Path:
        return self.folder / "params.schema.yaml"

    @property
    def module(self) -> str:
        return _MODULES[self.name]

    def applies_to(self, model_family: str, subset: str | None = None) -> bool:
        """Whether the family runs models of this family (on `subset`; on any subset when None)."""
        if self.inference is None:
            return False
        if subset is None:
            return model_family in self.inference.all_model_families
        return model_family in self.inference.families_for(subset)

    def view(self, table: str) -> str:
        return f"{self.name}_{table}"


_MODULES: dict[str, str] = {}


def load(name: str) -> Family:
    """The family called `name`: `pipeline.families.<name>` if that folder exists, else the
    importable package `<name>` (a family living outside this repository)."""
    candidates = [f"{FAMILIES_PACKAGE}.{name}"] if (FAMILIES_FOLDER / name).is_dir() else [name]
    for module in candidates:
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name == module:
                continue
            raise
        family = getattr(mod, "FAMILY", None)
        if not isinstance(family, Family):
            raise TypeError(f"{module} has no FAMILY = Family(...) declaration")
        if family.name != name:
            raise ValueError(f"{module} declares the family {family.name!r}, but params.yaml calls it {name!r}")
        _MODULES[name] = module
        return family
    raise ValueError(f"params.yaml families: no family {name!r}; create pipeline/families/{name}/ with a FAMILY "
                     f"declaration (see docs/architecture.md), or put a package {name!r} on PYTHONPATH")


def enabled(config: Config) -> list[Family]:
    """The families params.yaml selects, in its order."""
    return [load(name) for name in config.get("families", [])]


def params_schema(base: Path, config: Config) -> dict:
    """The params schema: the central one plus each selected family's fragment under its name."""
    schema = parse_yaml(base.read_text())
    schema["additionalProperties"] = False
    for family in enabled(config):
        fragment = parse_yaml(family.params_schema.read_text())
        schema["properties"][family.name] = fragment
        schema["required"] = [*schema["required"], family.name]
    # blocks of families not selected are allowed (switching one off keeps its params) and validated all
    # the same, so that switching one on never meets an error its block had all along
    for key in config:
        if key not in schema["properties"] and _is_family_folder(key):
            schema["properties"][key] = parse_yaml((FAMILIES_FOLDER / key / "params.schema.yaml").read_text())
    return schema


def _is_family_folder(name: str) -> bool:
    return (FAMILIES_FOLDER / name / "__init__.py").is_file()


def is_family_block(name: str) -> bool:
    """Whether a top-level params key is the block of a family in pipeline/families/ (enabled or not)."""
    return _is_family_folder(name)


def available() -> list[str]:
    """Every family in pipeline/families/ (enabled or not), by name: for central code that reads what a build
    holds (a warehouse, a build folder) without its params' `families` list."""
    return sorted(p.name for p in FAMILIES_FOLDER.iterdir() if _is_family_folder(p.name))


def hook(family: Family, name: str):
    """The family's optional module `<its package>.<name>` (e.g. `contamination`: its part of the contamination
    results file; `run_warnings`: its end-of-run warnings), imported; None when the family has none."""
    import importlib.util

    module = f"{family.module}.{name}"
    return importlib.import_module(module) if importlib.util.find_spec(module) is not None else None


@dataclass(frozen=True)
class PredictionFile:
    family: str
    subset: str
    model: str
    shard: int

    @property
    def path(self) -> str:
        return f"data/predictions/{self.family}/{self.subset}/{self.model}/{self.shard}.parquet"


def prediction_files(family: Family, config: Config, models: Mapping[str, str]) -> list[PredictionFile]:
    """Every shard file of `family` over `models` (name -> model family) it applies to."""
    shards = int(config["inference"]["shards"])
    return [PredictionFile(family.name, subset, model, shard)
            for subset in family.subsets(config)
            for model, model_family in models.items() if family.applies_to(model_family, subset)
            for shard in range(shards)]


def fit_files(family: Family, config: Config, models: Mapping[str, str]) -> list[str]:
    """Every model's fit result of `family`: one per model the family's inference applies to."""
    if family.fit is None:
        return []
    return [f"data/fits/{family.name}/{model}.parquet" for model, model_family in models.items()
            if family.applies_to(model_family)]


def fit_items_file(family: Family) -> str:
    """The family's item record (FIT_ITEMS: per model, the items it has and why not), written by the items job."""
    return f"data/fits/{family.name}/_items.parquet"


def fit_baselines_file(family: Family) -> str:
    """The family's baselines on the full labelled item set (FIT_RESULTS), when its Fit names a module."""
    return f"data/fits/{family.name}/_baselines.parquet"


SKIPPED_REASON = "left out by its params.yaml models.zoo entry (skip_families; a random twin inherits its model's)"


def not_applicable(families: list[Family], models: Mapping[str, str],
                   skipped: Mapping[str, Sequence[str]] | None = None) -> list[dict]:
    """One row per (family, model) that gets no inference job, with the family's reason; `skipped`: model ->
    the families its zoo entry leaves out (`skip_families`), listed with that reason where the family would
    apply."""
    skipped = skipped or {}

    def reason(f: Family, model: str, mf: str) -> str | None:
        if not f.applies_to(mf):
            return f.inference.not_applicable if f.inference else "the family runs no model"
        if f.name in skipped.get(model, ()):
            return SKIPPED_REASON
        return None

    return [{"family": f.name, "model": model, "model_family": mf, "reason": r}
            for f in families for model, mf in models.items() if (r := reason(f, model, mf))]


