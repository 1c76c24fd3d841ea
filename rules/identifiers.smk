# Shared analysis: identifier tokens per file, in source order (tree-sitter; JavaScript, Python,
# Java), for the families that learn from identifiers (idbench's word2vec / FastText). Built by
# `rule all` like extract: the corpus's identifier table is part of every run (a few seconds).


rule identifiers:
    input:
        manifest="data/manifest.parquet",
    output:
        sequences="data/identifiers/sequences.parquet",
        rejects="data/identifiers/rejects.parquet",
        metrics="reports/metrics/identifiers.json",
    params:
        languages=as_json(config["identifiers"]["languages"]),
        max_error_fraction=config["identifiers"]["max_error_fraction"],
        max_file_bytes=config["identifiers"]["max_file_bytes"],
        cache=config["identifiers"]["cache_dir"],
    threads: config["identifiers"]["workers"]
    resources:
        mem_mb=jobres.stage_mem_mb(config["identifiers"]["workers"]),
        runtime=lambda wildcards, input: jobres.stage_runtime(input, config["identifiers"]["workers"]),
    conda:
        CONDA_ENV
    log:
        "logs/identifiers.log",
    shell:
        "python -m pipeline.identifiers.build --manifest {input.manifest:q} --languages {params.languages:q}"
        " --workers {threads} --max-error-fraction {params.max_error_fraction}"
        " --max-file-bytes {params.max_file_bytes} --cache {params.cache:q}"
        " --sequences {output.sequences:q} --rejects {output.rejects:q} --metrics {output.metrics:q} 2> {log:q}"
