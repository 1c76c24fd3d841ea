# Helpers shared by every rule file: config validation, source lookup, the interpreter.
import json
import re
import sys

from snakemake.utils import min_version, validate

min_version("9.0")

validate(config, "../schemas/params.schema.yaml")

# Rules run the interpreter Snakemake runs under, so a virtualenv needs no activation.
PYTHON = sys.executable

SOURCES = {s["name"]: s for s in config["corpus"]["sources"]}
if len(SOURCES) != len(config["corpus"]["sources"]):
    raise ValueError("params.yaml: corpus.sources has two entries with the same name; names must be unique")


wildcard_constraints:
    source="|".join(re.escape(n) for n in SOURCES),


def source_spec(wildcards):
    """The source's params entry as canonical JSON (a change to it reruns the fetch)."""
    return json.dumps(SOURCES[wildcards.source], sort_keys=True)


def as_json(value):
    return json.dumps(value, sort_keys=True)
