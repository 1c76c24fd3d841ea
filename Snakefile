# The benchmark factory: one DAG from pinned sources to tables.
# Run `snakemake --cores 8`; `dvc repro` runs the same rules through dvc.yaml.

configfile: "params.yaml"


include: "rules/common.smk"


wildcard_constraints:
    source="|".join(re.escape(n) for n in SOURCES),


include: "rules/corpus.smk"
include: "rules/datasets.smk"
include: "rules/manifest.smk"
include: "rules/codesyntax.smk"
include: "rules/extract.smk"
include: "rules/apiquiz.smk"
include: "rules/models.smk"
include: "rules/inference.smk"
include: "rules/aggregate.smk"


rule all:
    default_target: True
    input:
        rules.manifest.output,
        rules.datasets.input,
        rules.codesyntax.output,
        rules.extract.output,
        rules.apiquiz.output,
        rules.models.output,
        rules.warehouse.output,
        rules.report.output,
