# Stage 2: one manifest row per source file, one reject row per file left out.


rule scan_source:
    input:
        tree="data/corpus/{source}",
        record="data/sources/{source}.json",
        origins="data/sources/{source}.origins.parquet",
    output:
        files="data/manifest/parts/{source}.parquet",
        rejects="data/manifest/parts/{source}.rejects.parquet",
    params:
        repository=lambda wildcards: SOURCES[wildcards.source].get("repository", wildcards.source),
        languages=as_json(config["manifest"]["languages"]),
        max_file_bytes=config["corpus"]["limits"]["max_file_bytes"],
        exclude=as_json(config["manifest"].get("exclude", [])),
    threads: config["manifest"]["workers"]
    resources:
        mem_mb=jobres.stage_mem_mb(config["manifest"]["workers"]),
        runtime=lambda wildcards, input: jobres.stage_runtime([input.record], config["manifest"]["workers"]),
    conda:
        CONDA_ENV
    log:
        "logs/scan/{source}.log",
    shell:
        "python -m pipeline.manifest.scan --name {wildcards.source:q} --root {input.tree:q}"
        " --repository {params.repository:q} --languages {params.languages:q}"
        " --max-file-bytes {params.max_file_bytes} --workers {threads} --origins {input.origins:q}"
        " --exclude {params.exclude:q}"
        " --out {output.files:q} --rejects {output.rejects:q} 2> {log:q}"


rule manifest:
    input:
        files=expand("data/manifest/parts/{source}.parquet", source=SOURCES),
        scan_rejects=expand("data/manifest/parts/{source}.rejects.parquet", source=SOURCES),
        fetch_rejects=expand("data/sources/{source}.rejects.parquet", source=SOURCES),
    output:
        manifest="data/manifest.parquet",
        rejects="data/rejects.parquet",
        metrics="reports/metrics/manifest.json",
    params:
        seed=config["seed"],
        split=as_json(config["manifest"]["split"]),
    conda:
        CONDA_ENV
    log:
        "logs/manifest.log",
    shell:
        "python -m pipeline.manifest.build --scanned {input.files:q}"
        " --rejects-in {input.fetch_rejects:q} {input.scan_rejects:q}"
        " --seed {params.seed} --split {params.split:q}"
        " --out {output.manifest:q} --rejects {output.rejects:q} --metrics {output.metrics:q} 2> {log:q}"
