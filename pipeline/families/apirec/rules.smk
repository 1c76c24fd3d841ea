# apirec (APIBench-C and APIBench-Q): code points and the n-gram / jedi baselines from the shared API
# extraction; queries, the API universe and the BM25 baseline; the family's target merges their stats.

APIREC = config["apirec"]
APIREC_DOMAINS = [f"{k}={v}" for k, v in sorted(APIREC["domains"].items())]
APIREC_SHARDS = APIREC.get("shards", 1)
APIREC_SHARD_DIR = "data/families/apirec/shards"
from pipeline.families import apirec as apirec_family  # noqa: E402
APIREC_GENERATE_INPUT = dict(
    usages="data/extract/usages.parquet",
    imports="data/extract/imports.parquet",
    inventory="data/extract/inventory.parquet",
    manifest="data/manifest.parquet",
)


rule apirec_points:
    input:
        **APIREC_GENERATE_INPUT,
        parts=expand(f"{APIREC_SHARD_DIR}/jedi{{shard}}.json", shard=range(APIREC_SHARDS)) if APIREC_SHARDS > 1 else [],
        selected=f"{APIREC_SHARD_DIR}/selected.json" if APIREC_SHARDS > 1 else [],
    output:
        points="data/families/apirec/points.parquet",
        baselines="data/families/apirec/baselines.parquet",
        metrics="data/families/apirec/points.json",
    params:
        **apirec_family.generate_params(config),
    conda:
        CONDA_ENV
    log:
        "logs/apirec/generate.log",
    shell:
        apirec_family.generate_shell(
            *(["--merge {input.parts:q} --selected {input.selected:q}"] if APIREC_SHARDS > 1 else []),
            "--points {output.points:q} --baselines {output.baselines:q} --metrics {output.metrics:q} 2> {log:q}",
        )


# apirec.shards > 1 (pipeline/families/apirec/generate.py, "shards"): the evaluation files read and parsed in
# N jobs (by the hash of each file's source and path; their train functions' bigram counts, their Java files
# indexed), the global step (the seeded cap, the n-grams from the summed counts, the length buckets, the Java
# index merged) once, the jedi baseline and the Java files' resolution in N jobs, and apirec_points merges them
# (the Java n-gram, cap and points) into the same bytes.
rule apirec_points_scan_shard:
    input:
        **APIREC_GENERATE_INPUT,
    output:
        part=f"{APIREC_SHARD_DIR}/scan{{shard}}.json",
        raw=f"{APIREC_SHARD_DIR}/scan{{shard}}.raw.parquet",
        ngram=f"{APIREC_SHARD_DIR}/scan{{shard}}.ngram.parquet",
        java=f"{APIREC_SHARD_DIR}/scan{{shard}}.java.json",
    wildcard_constraints:
        shard=r"\d+",
    params:
        **apirec_family.generate_params(config),
        shards=APIREC_SHARDS,
    conda:
        CONDA_ENV
    log:
        "logs/apirec/generate.scan{shard}.log",
    shell:
        apirec_family.generate_shell(
            "--shard {wildcards.shard} --shards {params.shards} --scan-part {output.part:q} 2> {log:q}"
        )


rule apirec_points_select:
    input:
        **APIREC_GENERATE_INPUT,
        parts=expand(f"{APIREC_SHARD_DIR}/scan{{shard}}.json", shard=range(APIREC_SHARDS)),
    output:
        selected=f"{APIREC_SHARD_DIR}/selected.json",
        points=f"{APIREC_SHARD_DIR}/selected.points.parquet",
        baselines=f"{APIREC_SHARD_DIR}/selected.baselines.parquet",
        modules=f"{APIREC_SHARD_DIR}/selected.modules.parquet",
        java=f"{APIREC_SHARD_DIR}/selected.java.json",
    params:
        **apirec_family.generate_params(config),
    conda:
        CONDA_ENV
    log:
        "logs/apirec/generate.select.log",
    shell:
        apirec_family.generate_shell("--select {input.parts:q} --selected {output.selected:q} 2> {log:q}")


rule apirec_points_jedi_shard:
    input:
        **APIREC_GENERATE_INPUT,
        selected=f"{APIREC_SHARD_DIR}/selected.json",
    output:
        part=f"{APIREC_SHARD_DIR}/jedi{{shard}}.json",
        rows=f"{APIREC_SHARD_DIR}/jedi{{shard}}.ide.parquet",
        java=f"{APIREC_SHARD_DIR}/jedi{{shard}}.java.parquet",
        java_meta=f"{APIREC_SHARD_DIR}/jedi{{shard}}.java.json",
        java_ngram=f"{APIREC_SHARD_DIR}/jedi{{shard}}.javangram.parquet",
    wildcard_constraints:
        shard=r"\d+",
    params:
        **apirec_family.generate_params(config),
        shards=APIREC_SHARDS,
    conda:
        CONDA_ENV
    log:
        "logs/apirec/generate.jedi{shard}.log",
    shell:
        apirec_family.generate_shell(
            "--shard {wildcards.shard} --shards {params.shards} --selected {input.selected:q}"
            " --ide-part {output.part:q} 2> {log:q}"
        )


rule apirec_queries:
    input:
        usages="data/extract/usages.parquet",
        inventory="data/extract/inventory.parquet",
        imports="data/extract/imports.parquet",
        manifest="data/manifest.parquet",
        parts=expand(f"{APIREC_SHARD_DIR}/queries{{shard}}.json", shard=range(APIREC_SHARDS)) if APIREC_SHARDS > 1 else [],
    output:
        queries="data/families/apirec/queries.parquet",
        api_docs="data/families/apirec/api_docs.parquet",
        baselines="data/families/apirec/query_baselines.parquet",
        metrics="data/families/apirec/queries.json",
    params:
        **apirec_family.queries_params(config),
    conda:
        CONDA_ENV
    log:
        "logs/apirec/queries.log",
    shell:
        apirec_family.queries_shell(
            *(["--merge {input.parts:q}"] if APIREC_SHARDS > 1 else []),
            "--queries {output.queries:q} --api-docs {output.api_docs:q} --baselines {output.baselines:q}"
            " --metrics {output.metrics:q} 2> {log:q}",
        )


# apirec.shards > 1 (pipeline/families/apirec/queries.py, shard_part): each shard reads its files' docstrings (of
# the universe's definitions) and its evaluation files' comments above calls; apirec_queries merges them and runs
# the rest once (the docstring queries from the inventory, dedup, the seeded cap, BM25) into the same bytes.
rule apirec_queries_shard:
    input:
        usages="data/extract/usages.parquet",
        inventory="data/extract/inventory.parquet",
        imports="data/extract/imports.parquet",
        manifest="data/manifest.parquet",
    output:
        part=f"{APIREC_SHARD_DIR}/queries{{shard}}.json",
    wildcard_constraints:
        shard=r"\d+",
    params:
        **apirec_family.queries_params(config),
        shards=APIREC_SHARDS,
    conda:
        CONDA_ENV
    log:
        "logs/apirec/queries.shard{shard}.log",
    shell:
        apirec_family.queries_shell("--shard {wildcards.shard} --shards {params.shards} --part {output.part:q} 2> {log:q}")


# The family's target (its DVC stage runs `snakemake apirec`): everything it builds, stats merged.
rule apirec:
    input:
        points=rules.apirec_points.output.metrics,
        queries=rules.apirec_queries.output.metrics,
    output:
        "reports/metrics/apirec.json",
    conda:
        CONDA_ENV
    log:
        "logs/apirec/summary.log",
    shell:
        "python -m pipeline.families.apirec.summary --points {input.points:q} --queries {input.queries:q}"
        " --out {output:q} 2> {log:q}"


localrules:
    apirec,  # a summary: cheaper to run than to submit to a cluster
