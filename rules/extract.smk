# Stage 3: static API extraction (libcst) over the manifest's Python files.
# extract.shards > 1 splits the files over that many jobs (pipeline.core.shards: by the hash of each
# file's source and path; a cluster spreads them over nodes) and `extract` merges their parts into the
# same bytes as one job.

EXTRACT_SHARDS = config["extract"].get("shards", 1)


rule extract_shard:
    input:
        manifest="data/manifest.parquet",
    output:
        usages="data/extract/shards/{shard}.usages.parquet",
        imports="data/extract/shards/{shard}.imports.parquet",
        inventory="data/extract/shards/{shard}.inventory.parquet",
        rejects="data/extract/shards/{shard}.rejects.parquet",
        metrics="data/extract/shards/{shard}.json",
    wildcard_constraints:
        shard=r"\d+",
    params:
        timeout_s=config["extract"]["timeout_s"],
        max_file_bytes=config["extract"]["max_file_bytes"],
        max_file_tokens=config["extract"].get("max_file_tokens", 200000),
        cache=config["extract"]["cache_dir"],
        # distributions (pipeline/extract/library.py): the stdlib source, and sources of many projects
        stdlib=[s["name"] for s in config["corpus"]["sources"] if s.get("builtin") == "stdlib"],
        per_repo=[s["name"] for s in config["corpus"]["sources"] if s["kind"] == "jsonl"],
        shards=EXTRACT_SHARDS,
    threads: config["extract"]["workers"]
    resources:
        mem_mb=jobres.stage_mem_mb(config["extract"]["workers"]),
        runtime=lambda wildcards, input: jobres.stage_runtime(input, config["extract"]["workers"] * EXTRACT_SHARDS),
    conda:
        CONDA_ENV
    log:
        "logs/extract/shard_{shard}.log",
    shell:
        "python -m pipeline.extract.build --manifest {input.manifest:q} --workers {threads}"
        " --timeout-s {params.timeout_s} --max-file-bytes {params.max_file_bytes}"
        " --max-file-tokens {params.max_file_tokens} --cache {params.cache:q}"
        " --stdlib-sources {params.stdlib:q} --per-repository-sources {params.per_repo:q}"
        " --shard {wildcards.shard} --shards {params.shards}"
        " --usages {output.usages:q} --imports {output.imports:q} --inventory {output.inventory:q}"
        " --rejects {output.rejects:q} --metrics {output.metrics:q} 2> {log:q}"


rule extract:
    input:
        manifest="data/manifest.parquet",
        parts=expand("data/extract/shards/{shard}.json", shard=range(EXTRACT_SHARDS)) if EXTRACT_SHARDS > 1 else [],
    output:
        usages="data/extract/usages.parquet",
        imports="data/extract/imports.parquet",
        inventory="data/extract/inventory.parquet",
        rejects="data/extract/rejects.parquet",
        metrics="reports/metrics/extract.json",
    params:
        timeout_s=config["extract"]["timeout_s"],
        max_file_bytes=config["extract"]["max_file_bytes"],
        max_file_tokens=config["extract"].get("max_file_tokens", 200000),
        cache=config["extract"]["cache_dir"],
        # distributions (pipeline/extract/library.py): the stdlib source, and sources of many projects
        stdlib=[s["name"] for s in config["corpus"]["sources"] if s.get("builtin") == "stdlib"],
        per_repo=[s["name"] for s in config["corpus"]["sources"] if s["kind"] == "jsonl"],
    threads: config["extract"]["workers"] if EXTRACT_SHARDS == 1 else 1
    resources:
        mem_mb=jobres.stage_mem_mb(config["extract"]["workers"]),
        runtime=lambda wildcards, input: jobres.stage_runtime(input, config["extract"]["workers"]),
    conda:
        CONDA_ENV
    log:
        "logs/extract/build.log",
    shell:
        "python -m pipeline.extract.build --manifest {input.manifest:q} --workers {threads}"
        " --timeout-s {params.timeout_s} --max-file-bytes {params.max_file_bytes}"
        " --max-file-tokens {params.max_file_tokens} --cache {params.cache:q}"
        " --stdlib-sources {params.stdlib:q} --per-repository-sources {params.per_repo:q}" + (
            " --merge {input.parts:q}" if EXTRACT_SHARDS > 1 else "") +
        " --usages {output.usages:q} --imports {output.imports:q} --inventory {output.inventory:q}"
        " --rejects {output.rejects:q} --metrics {output.metrics:q} 2> {log:q}"
