# The benchmark factory: one DAG from pinned sources to tables.
# Run `snakemake --cores 8`; `dvc repro` runs the same rules through dvc.yaml.

configfile: "params.yaml"


include: "rules/common.smk"
include: "rules/corpus.smk"
include: "rules/manifest.smk"
include: "rules/models.smk"


rule all:
    default_target: True
    input:
        rules.manifest.output,
        rules.models.output,
