# The benchmark factory: one DAG from pinned sources to tables.
# Run `snakemake --cores 8`; `dvc repro` runs the same rules through dvc.yaml.
# Benchmark families plug in from pipeline/families/<name>/ (their rules.smk), selected by
# params.yaml `families`; nothing here names one.

# A YAML syntax error in params.yaml is reported with its line and column (Snakemake's own loader
# gives neither).
import os as _os
import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, workflow.basedir)
from pipeline.config import ParamsError as _ParamsError, load_yaml as _load_yaml  # noqa: E402

if _Path("params.yaml").exists():
    try:
        _load_yaml(_Path("params.yaml"))
    except _ParamsError as _exc:
        raise WorkflowError(str(_exc)) from None


configfile: "params.yaml"


include: "rules/common.smk"


wildcard_constraints:
    source="|".join(re.escape(n) for n in SOURCES),


include: "rules/corpus.smk"
include: "rules/datasets.smk"
include: "rules/manifest.smk"
include: "rules/extract.smk"
include: "rules/contamination.smk"
include: "rules/identifiers.smk"
include: "rules/models.smk"


for _family in FAMILIES:

    include: str(_family.rules)


include: "rules/inference.smk"
include: "rules/aggregate.smk"


# On a cluster (profiles/slurm/), these run where Snakemake runs: the steps that need the network
# (source and dataset fetches, hub downloads behind external models' cards; `snakemake --until
# fetch_source fetch_dataset external_model` does them ahead on a login node, docs/cluster.md) and one-line bookkeeping that would cost more to
# submit than to run (evaluation_metrics counts the evaluation sets' items from one or two of their columns; evaluation_sizes checks them). A family marks its own summary rules local in its rules.smk.
localrules:
    all,
    corpus,
    fetch_source,
    fetch_history,
    datasets,
    fetch_dataset,
    external_model,
    models,
    inference,
    fits,
    warehouse_spec,
    evaluation_metrics,
    evaluation_sizes,


rule all:
    default_target: True
    input:
        rules.manifest.output,
        rules.evaluation_metrics.output,
        rules.evaluation_sizes.output,
        rules.datasets.input,
        rules.extract.output,
        rules.first_seen.output,
        rules.identifiers.output,
        [path for f in FAMILIES for path in f.targets(config)],
        rules.models.output,
        rules.inference.input,
        rules.fits.output,
        rules.warehouse.output,
        rules.report.output,


onstart:
    # The GPU params.yaml names must be here before the first job of a local run; planning (-n) never
    # needs one. A cluster run plans on a login node, which has none: there it is a warning, and each GPU
    # job checks its own node when it loads its model (pipeline.models.zoo.pick_device).
    try:
        check_devices(config)
    except ParamsError as _exc:
        if LOCAL_RUN:
            raise WorkflowError(str(_exc)) from None
        print(f"WARNING (this machine only; the jobs check their own nodes): {_exc}", file=_sys.stderr)


onsuccess:
    # The warnings a user must see (pipeline.run_warnings: unpinned sources, caps that dropped members, splits and
    # evaluation sets under their floor, idbench languages short of new pairs, models loaded with tensors left
    # random), as one summary, in a fixed order; the report's corpus page has them too.
    from pipeline import run_warnings as _run_warnings
    from pipeline.corpus.fetch import failed_sources as _failed_sources

    # `make run` prints it itself after adopting the build (also after a run with nothing to do, where Snakemake
    # calls no onsuccess): BENCHMARK_FACTORY_WARNINGS=after.
    if _os.environ.get("BENCHMARK_FACTORY_WARNINGS") != "after":
        print(_run_warnings.console(_run_warnings.from_files(_Path("."), config)), end="", file=_sys.stderr)
    # A source that could not be had as pinned was left out (its record and reject row say why):
    # the rest was built, and the run ends loudly and non-zero.
    _failed = _failed_sources([_Path(f"data/sources/{_name}.json") for _name in SOURCES])
    for _line in _failed:
        print(f"ERROR fetch: {_line}", file=_sys.stderr)
    if _failed:
        raise WorkflowError(f"{len(_failed)} of {len(SOURCES)} corpus sources could not be fetched and were left "
                            "out (above; reject rows in data/rejects.parquet); everything else was built")


onerror:
    # The same summary over what the failed run did build (the failed job's log is printed above it).
    from pipeline import run_warnings as _run_warnings

    print(_run_warnings.console(_run_warnings.from_files(_Path("."), config)), end="", file=_sys.stderr)
