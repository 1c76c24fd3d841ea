# Stage 1: fetch every pinned source into data/corpus/<source>, verified and cached. A source
# that cannot be had as pinned is a `failed` record (one reject row) and the run goes on without
# it; the Snakefile's onsuccess names it and exits non-zero. The pipeline's bookkeeping (record,
# rejects, a jsonl source's origins) lives beside the tree, never in it.


rule fetch_source:
    output:
        tree=directory("data/corpus/{source}"),
        record="data/sources/{source}.json",
        rejects="data/sources/{source}.rejects.parquet",
        origins="data/sources/{source}.origins.parquet",
    params:
        spec=source_spec,
        limits=as_json(config["corpus"]["limits"]),
        cache=config["corpus"]["cache_dir"],
    conda:
        CONDA_ENV
    log:
        "logs/fetch/{source}.log",
    shell:
        "python -m pipeline.corpus.fetch --spec {params.spec:q} --limits {params.limits:q}"
        " --cache {params.cache:q} --dest {output.tree:q} --record {output.record:q}"
        " --rejects {output.rejects:q} --origins {output.origins:q} 2> {log:q}"


rule corpus:
    input:
        expand("data/sources/{source}.json", source=SOURCES),
