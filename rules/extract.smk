# Stage 3: static API extraction (libcst) over the manifest's Python files.


rule extract:
    input:
        manifest="data/manifest.parquet",
    output:
        usages="data/extract/usages.parquet",
        imports="data/extract/imports.parquet",
        inventory="data/extract/inventory.parquet",
        rejects="data/extract/rejects.parquet",
        metrics="reports/metrics/extract.json",
    params:
        timeout_s=config["extract"]["timeout_s"],
        max_file_bytes=config["extract"]["max_file_bytes"],
        cache=config["extract"]["cache_dir"],
        # distributions (pipeline/extract/library.py): the stdlib source, and sources of many projects
        stdlib=[s["name"] for s in config["corpus"]["sources"] if s.get("builtin") == "stdlib"],
        per_repo=[s["name"] for s in config["corpus"]["sources"] if s["kind"] == "jsonl"],
    threads: config["extract"]["workers"]
    resources:
        mem_mb=jobres.stage_mem_mb(config["extract"]["workers"]),
        runtime=lambda wildcards, input: jobres.stage_runtime(input, config["extract"]["workers"]),
    conda:
        CONDA_ENV
    log:
        "logs/extract/build.log",
    shell:
        "python -m pipeline.extract.build --manifest {input.manifest:q} --workers {threads}"
        " --timeout-s {params.timeout_s} --max-file-bytes {params.max_file_bytes} --cache {params.cache:q}"
        " --stdlib-sources {params.stdlib:q} --per-repository-sources {params.per_repo:q}"
        " --usages {output.usages:q} --imports {output.imports:q} --inventory {output.inventory:q}"
        " --rejects {output.rejects:q} --metrics {output.metrics:q} 2> {log:q}"
