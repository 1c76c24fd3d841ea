# Shared analysis: identifier tokens per file, in source order (tree-sitter; JavaScript, Python,
# Java), for the families that learn from identifiers (word2vec / FastText on the corpus). Built by
# `rule all` like extract: the corpus's identifier table is part of every run (a few seconds).
# identifiers.shards > 1 splits the files over that many jobs (pipeline.core.shards: by the hash of each
# file's source and path; a cluster spreads them over nodes) and merges their parts into the same bytes as one job.

IDENTIFIERS = config["identifiers"]
IDENTIFIER_SHARDS = IDENTIFIERS.get("shards", 1)


rule identifiers_shard:
    input:
        manifest="data/manifest.parquet",
    output:
        sequences="data/identifiers/shards/{shard}.sequences.parquet",
        rejects="data/identifiers/shards/{shard}.rejects.parquet",
        metrics="data/identifiers/shards/{shard}.json",
    params:
        languages=as_json(IDENTIFIERS["languages"]),
        max_error_fraction=IDENTIFIERS["max_error_fraction"],
        max_file_bytes=IDENTIFIERS["max_file_bytes"],
        max_file_tokens=IDENTIFIERS.get("max_file_tokens", 200000),
        cache=IDENTIFIERS["cache_dir"],
        shards=IDENTIFIER_SHARDS,
    threads: IDENTIFIERS["workers"]
    resources:
        mem_mb=jobres.stage_mem_mb(IDENTIFIERS["workers"]),
        runtime=lambda wildcards, input: jobres.stage_runtime(input, IDENTIFIERS["workers"] * IDENTIFIER_SHARDS),
    conda:
        CONDA_ENV
    log:
        "logs/identifiers/shard_{shard}.log",
    shell:
        "python -m pipeline.identifiers.build --manifest {input.manifest:q} --languages {params.languages:q}"
        " --workers {threads} --max-error-fraction {params.max_error_fraction}"
        " --max-file-bytes {params.max_file_bytes} --max-file-tokens {params.max_file_tokens} --cache {params.cache:q} --shard {wildcards.shard} --shards {params.shards}"
        " --sequences {output.sequences:q} --rejects {output.rejects:q} --metrics {output.metrics:q} 2> {log:q}"


rule identifiers:
    input:
        manifest="data/manifest.parquet",
        parts=expand("data/identifiers/shards/{shard}.json", shard=range(IDENTIFIER_SHARDS))
        if IDENTIFIER_SHARDS > 1 else [],
    output:
        sequences="data/identifiers/sequences.parquet",
        rejects="data/identifiers/rejects.parquet",
        metrics="reports/metrics/identifiers.json",
    params:
        languages=as_json(IDENTIFIERS["languages"]),
        max_error_fraction=IDENTIFIERS["max_error_fraction"],
        max_file_bytes=IDENTIFIERS["max_file_bytes"],
        max_file_tokens=IDENTIFIERS.get("max_file_tokens", 200000),
        cache=IDENTIFIERS["cache_dir"],
        merge="--merge" if IDENTIFIER_SHARDS > 1 else "",
    threads: IDENTIFIERS["workers"] if IDENTIFIER_SHARDS == 1 else 1
    priority: PRIORITY["analysis"]
    resources:
        mem_mb=jobres.stage_mem_mb(IDENTIFIERS["workers"]),
        runtime=lambda wildcards, input: jobres.stage_runtime(input, IDENTIFIERS["workers"]),
    conda:
        CONDA_ENV
    log:
        "logs/identifiers.log",
    shell:
        "python -m pipeline.identifiers.build --manifest {input.manifest:q} --languages {params.languages:q}"
        " --workers {threads} --max-error-fraction {params.max_error_fraction}"
        " --max-file-bytes {params.max_file_bytes} --max-file-tokens {params.max_file_tokens} --cache {params.cache:q} {params.merge} {input.parts:q}"
        " --sequences {output.sequences:q} --rejects {output.rejects:q} --metrics {output.metrics:q} 2> {log:q}"
