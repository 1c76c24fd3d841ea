# Helpers shared by all rules: config validation, source lookup, the interpreter.
import glob
import json
import os
import re
import sys

from snakemake.utils import min_version, validate

min_version("9.0")

validate(config, "../schemas/params.schema.yaml")

# Rules call `python -m pipeline.<module>`: jobs get the interpreter Snakemake runs under
# first on PATH (a virtualenv needs no activation) and import this workflow's `pipeline`
# package, also when --directory points elsewhere.
os.environ.update(
    PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
    PYTHONPATH=workflow.basedir,
)
# Software for `--use-conda` / `--sdm conda` (clusters); ignored otherwise.
CONDA_ENV = "../envs/pipeline.yaml"

SOURCES = {s["name"]: s for s in config["corpus"]["sources"]}
if len(SOURCES) != len(config["corpus"]["sources"]):
    raise ValueError("params.yaml: corpus.sources has two entries with the same name; names must be unique")


def source_spec(wildcards):
    """The source's params entry as canonical JSON (a change to it reruns the fetch)."""
    return json.dumps(SOURCES[wildcards.source], sort_keys=True)


def as_json(value):
    return json.dumps(value, sort_keys=True)
