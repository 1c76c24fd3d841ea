# Stage 3: static API extraction (libcst) over the manifest's Python files.
# extract.shards > 1 splits the files over that many jobs (pipeline.core.shards: by the hash of each
# file's source and path; a cluster spreads them over nodes) and `extract` merges their parts into the
# same bytes as one job.

EXTRACT = config["extract"]
EXTRACT_SHARDS = EXTRACT.get("shards", 1)


def extract_params():
    """Both extract rules' params, read while each rule is defined (pipeline.dvcgen attributes them to it)."""
    return dict(
        timeout_s=EXTRACT["timeout_s"],
        max_file_bytes=EXTRACT["max_file_bytes"],
        cache=EXTRACT["cache_dir"],
        # distributions (pipeline/extract/library.py): the stdlib source, and sources of many projects
        stdlib=[s["name"] for s in config["corpus"]["sources"] if s.get("builtin") == "stdlib"],
        per_repo=[s["name"] for s in config["corpus"]["sources"] if s["kind"] == "jsonl"],
    )


EXTRACT_ARGS = (
    "python -m pipeline.extract.build --manifest {input.manifest:q} --workers {threads}"
    " --timeout-s {params.timeout_s} --max-file-bytes {params.max_file_bytes} --cache {params.cache:q}"
    " --stdlib-sources {params.stdlib:q} --per-repository-sources {params.per_repo:q}"
)


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
        **extract_params(),
        shards=EXTRACT_SHARDS,
    threads: EXTRACT["workers"]
    resources:
        mem_mb=jobres.stage_mem_mb(EXTRACT["workers"]),
        runtime=lambda wildcards, input: jobres.stage_runtime(input, EXTRACT["workers"] * EXTRACT_SHARDS),
    conda:
        CONDA_ENV
    log:
        "logs/extract/shard_{shard}.log",
    shell:
        EXTRACT_ARGS + " --shard {wildcards.shard} --shards {params.shards}"
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
        **extract_params(),
    threads: EXTRACT["workers"] if EXTRACT_SHARDS == 1 else 1
    resources:
        mem_mb=jobres.stage_mem_mb(EXTRACT["workers"]),
        runtime=lambda wildcards, input: jobres.stage_runtime(input, EXTRACT["workers"]),
    conda:
        CONDA_ENV
    log:
        "logs/extract/build.log",
    shell:
        EXTRACT_ARGS + (" --merge {input.parts:q}" if EXTRACT_SHARDS > 1 else "") +
        " --usages {output.usages:q} --imports {output.imports:q} --inventory {output.inventory:q}"
        " --rejects {output.rejects:q} --metrics {output.metrics:q} 2> {log:q}"
