# codesyntax: CodeSyntax samples, relation edges, baselines and the paper-style statistics.

CODESYNTAX = config["codesyntax"]


wildcard_constraints:
    language="python|java",
    variant="plain|with_newlines",


CODESYNTAX_SHARDS = CODESYNTAX.get("shards", 1)


# codesyntax.shards > 1: each (variant, language)'s files are labelled by that many jobs (pipeline.core.shards:
# by the hash of each file's source and path) and codesyntax_label merges their parts into the same bytes.
rule codesyntax_label_shard:
    input:
        manifest="data/manifest.parquet",
    output:
        samples="data/families/codesyntax/{variant}/{language}/shards/{shard}.samples.parquet",
        relations="data/families/codesyntax/{variant}/{language}/shards/{shard}.relations.parquet",
        rejects="data/families/codesyntax/{variant}/{language}/shards/{shard}.rejects.parquet",
        summary="data/families/codesyntax/{variant}/{language}/shards/{shard}.json",
    wildcard_constraints:
        shard=r"\d+",
    params:
        max_tokens=CODESYNTAX["max_tokens"],
        max_samples=CODESYNTAX["max_samples_per_language"],
        dev_fraction=CODESYNTAX["dev_fraction"],
        seed=config["seed"],
        timeout_s=CODESYNTAX.get("timeout_s", 60),
        max_file_tokens=CODESYNTAX.get("max_file_tokens", 200000),
        shards=CODESYNTAX_SHARDS,
    threads: CODESYNTAX["workers"]
    resources:
        mem_mb=jobres.stage_mem_mb(CODESYNTAX["workers"]),
        runtime=lambda wildcards, input: jobres.stage_runtime(input, CODESYNTAX["workers"] * CODESYNTAX_SHARDS),
    conda:
        CONDA_ENV
    log:
        "logs/codesyntax/label_{variant}_{language}.shard_{shard}.log",
    shell:
        "python -m pipeline.families.codesyntax.label --manifest {input.manifest:q} --language {wildcards.language}"
        " --variant {wildcards.variant} --max-tokens {params.max_tokens} --max-samples {params.max_samples}"
        " --dev-fraction {params.dev_fraction} --seed {params.seed} --workers {threads} --timeout-s {params.timeout_s}"
        " --max-file-tokens {params.max_file_tokens}"
        " --shard {wildcards.shard} --shards {params.shards}"
        " --samples {output.samples:q} --relations {output.relations:q} --rejects {output.rejects:q}"
        " --summary {output.summary:q} 2> {log:q}"


rule codesyntax_label:
    input:
        manifest="data/manifest.parquet",
        parts=lambda wildcards: expand("data/families/codesyntax/{variant}/{language}/shards/{shard}.json",
                                       variant=wildcards.variant, language=wildcards.language,
                                       shard=range(CODESYNTAX_SHARDS)) if CODESYNTAX_SHARDS > 1 else [],
    output:
        samples="data/families/codesyntax/{variant}/{language}/samples.parquet",
        relations="data/families/codesyntax/{variant}/{language}/relations.parquet",
        rejects="data/families/codesyntax/{variant}/{language}/rejects.parquet",
        summary="data/families/codesyntax/{variant}/{language}/summary.json",
    params:
        max_tokens=CODESYNTAX["max_tokens"],
        max_samples=CODESYNTAX["max_samples_per_language"],
        dev_fraction=CODESYNTAX["dev_fraction"],
        seed=config["seed"],
        timeout_s=CODESYNTAX.get("timeout_s", 60),
        max_file_tokens=CODESYNTAX.get("max_file_tokens", 200000),
    threads: CODESYNTAX["workers"] if CODESYNTAX_SHARDS == 1 else 1
    resources:
        mem_mb=jobres.stage_mem_mb(CODESYNTAX["workers"]),
        runtime=lambda wildcards, input: jobres.stage_runtime(input, CODESYNTAX["workers"]),
    conda:
        CONDA_ENV
    log:
        "logs/codesyntax/label_{variant}_{language}.log",
    shell:
        "python -m pipeline.families.codesyntax.label --manifest {input.manifest:q} --language {wildcards.language}"
        " --variant {wildcards.variant} --max-tokens {params.max_tokens} --max-samples {params.max_samples}"
        " --dev-fraction {params.dev_fraction} --seed {params.seed} --workers {threads} --timeout-s {params.timeout_s}"
        " --max-file-tokens {params.max_file_tokens}" + (
            " --merge {input.parts:q}" if CODESYNTAX_SHARDS > 1 else "") +
        " --samples {output.samples:q} --relations {output.relations:q} --rejects {output.rejects:q}"
        " --summary {output.summary:q} 2> {log:q}"


rule codesyntax_baselines:
    input:
        samples="data/families/codesyntax/{variant}/{language}/samples.parquet",
        relations="data/families/codesyntax/{variant}/{language}/relations.parquet",
    output:
        baselines="data/families/codesyntax/{variant}/{language}/baselines.parquet",
        stats="data/families/codesyntax/{variant}/{language}/stats.json",
    params:
        ks=as_json(CODESYNTAX["ks"]),
    conda:
        CONDA_ENV
    log:
        "logs/codesyntax/baselines_{variant}_{language}.log",
    shell:
        "python -m pipeline.families.codesyntax.stats baselines --samples {input.samples:q} --relations {input.relations:q}"
        " --language {wildcards.language} --variant {wildcards.variant} --ks {params.ks:q}"
        " --out {output.baselines:q} --stats {output.stats:q} 2> {log:q}"


rule codesyntax:
    input:
        stats=expand("data/families/codesyntax/{variant}/{language}/stats.json",
                     variant=CODESYNTAX["variants"], language=CODESYNTAX["languages"]),
        summaries=expand("data/families/codesyntax/{variant}/{language}/summary.json",
                         variant=CODESYNTAX["variants"], language=CODESYNTAX["languages"]),
    output:
        metrics="reports/metrics/codesyntax.json",
        markdown="data/families/codesyntax/stats.md",
    conda:
        CONDA_ENV
    log:
        "logs/codesyntax/report.log",
    shell:
        "python -m pipeline.families.codesyntax.stats report --stats {input.stats:q} --summaries {input.summaries:q}"
        " --metrics {output.metrics:q} --markdown {output.markdown:q} 2> {log:q}"


localrules:
    codesyntax,  # a summary: cheaper to run than to submit to a cluster
