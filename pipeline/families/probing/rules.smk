# probing: task generators per language (corpus tasks from the manifest; on Python also the
# algorithm task from the algo-1671A dataset) and the family's summary. Features, the record of
# each model's items, the probes and the family's baselines come from the shared predict and fit stages
# (pipeline/families/probing/__init__.py declares them): one predict subset per language.

PROBING = config["probing"]
PROBING_FAMILY = FAMILY_BY_NAME["probing"]
from pipeline.families import probing as probing_family  # noqa: E402
PROBING_SHARDS = PROBING.get("shards", 1)


for _language in PROBING_FAMILY.subsets(config):

    rule:
        name:
            f"probing_generate_{_language}"
        input:
            **probing_family.generate_inputs(config, _language),
            parts=[f"data/families/probing/{_language}/shards/{k}.json" for k in range(PROBING_SHARDS)]
            if PROBING_SHARDS > 1 else [],
        output:
            **probing_family.generate_outputs(config, _language),
        params:
            **probing_family.generate_params(config, _language),
        conda:
            CONDA_ENV
        log:
            f"logs/probing/generate_{_language}.log",
        shell:
            probing_family.generate_shell(
                *(["--merge {input.parts:q}"] if PROBING_SHARDS > 1 else []),
                "--out data/families/probing/{params.language} --summary {output.summary:q} 2> {log:q}",
            )

    # probing.shards > 1: the language's files are read and parsed for their methods by that many jobs (by the
    # hash of each file's source and path, pipeline.core.shards); the merge above caps the methods over all
    # shards, parses again only the kept methods' files and builds the tasks (the same bytes as one job).
    if PROBING_SHARDS > 1:

        rule:
            name:
                f"probing_generate_{_language}_shard"
            input:
                manifest="data/manifest.parquet",
            output:
                part=f"data/families/probing/{_language}/shards/{{shard}}.json",
            wildcard_constraints:
                shard=r"\d+",
            params:
                **probing_family.generate_params(config, _language),
                shards=PROBING_SHARDS,
            conda:
                CONDA_ENV
            log:
                f"logs/probing/generate_{_language}.shard_{{shard}}.log",
            shell:
                probing_family.generate_shell(
                    "--shard {wildcards.shard} --shards {params.shards} --summary {output.part:q} 2> {log:q}"
                )


rule probing:
    input:
        summaries=[f"data/families/probing/{s}/summary.json" for s in PROBING_FAMILY.subsets(config)],
    output:
        metrics="reports/metrics/probing.json",
    conda:
        CONDA_ENV
    log:
        "logs/probing/summary.log",
    shell:
        "python -m pipeline.families.probing.generate summary --summaries {input.summaries:q}"
        " --out {output.metrics:q} 2> {log:q}"


localrules:
    probing,  # a summary: cheaper to run than to submit to a cluster
