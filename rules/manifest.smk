# Stage 2: one manifest row per source file, one reject row per file left out.

import dataclasses


SCAN_SHARDS = config["manifest"].get("shards", 1)


# manifest.shards > 1: each source's files are scanned by that many jobs (pipeline.core.shards: by the
# hash of the source and the file's path) and scan_source merges their parts into the same bytes.
rule scan_source_shard:
    input:
        tree="data/corpus/{source}",
        record="data/sources/{source}.json",
        origins="data/sources/{source}.origins.parquet",
    output:
        files="data/manifest/shards/{source}/{shard}.parquet",
        rejects="data/manifest/shards/{source}/{shard}.rejects.parquet",
    wildcard_constraints:
        shard=r"\d+",
    params:
        repository=lambda wildcards: SOURCES[wildcards.source].get("repository", wildcards.source),
        languages=as_json(config["manifest"]["languages"]),
        max_file_bytes=config["corpus"]["limits"]["max_file_bytes"],
        exclude=as_json(config["manifest"].get("exclude", [])),
        shards=SCAN_SHARDS,
    threads: config["manifest"]["workers"]
    resources:
        mem_mb=jobres.stage_mem_mb(config["manifest"]["workers"]),
        runtime=lambda wildcards, input: jobres.stage_runtime([input.record], config["manifest"]["workers"] * SCAN_SHARDS),
    conda:
        CONDA_ENV
    log:
        "logs/scan/{source}.shard_{shard}.log",
    shell:
        "python -m pipeline.manifest.scan --name {wildcards.source:q} --root {input.tree:q}"
        " --repository {params.repository:q} --languages {params.languages:q}"
        " --max-file-bytes {params.max_file_bytes} --workers {threads} --origins {input.origins:q}"
        " --exclude {params.exclude:q} --shard {wildcards.shard} --shards {params.shards}"
        " --out {output.files:q} --rejects {output.rejects:q} 2> {log:q}"


rule scan_source:
    input:
        tree="data/corpus/{source}",
        record="data/sources/{source}.json",
        origins="data/sources/{source}.origins.parquet",
        parts=lambda wildcards: expand("data/manifest/shards/{source}/{shard}.parquet", source=wildcards.source,
                                       shard=range(SCAN_SHARDS)) if SCAN_SHARDS > 1 else [],
    output:
        files="data/manifest/parts/{source}.parquet",
        rejects="data/manifest/parts/{source}.rejects.parquet",
    params:
        repository=lambda wildcards: SOURCES[wildcards.source].get("repository", wildcards.source),
        languages=as_json(config["manifest"]["languages"]),
        max_file_bytes=config["corpus"]["limits"]["max_file_bytes"],
        exclude=as_json(config["manifest"].get("exclude", [])),
    threads: config["manifest"]["workers"] if SCAN_SHARDS == 1 else 1
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
        " --exclude {params.exclude:q}" + (" --merge {input.parts:q}" if SCAN_SHARDS > 1 else "") +
        " --out {output.files:q} --rejects {output.rejects:q} 2> {log:q}"


# Every source scanned: DVC's `scan` stage, apart from the manifest's split (a split change reruns no scan).
rule scan_sources:
    input:
        expand("data/manifest/parts/{source}.parquet", source=SOURCES),
        expand("data/manifest/parts/{source}.rejects.parquet", source=SOURCES),


rule manifest:
    input:
        files=expand("data/manifest/parts/{source}.parquet", source=SOURCES),
        scan_rejects=expand("data/manifest/parts/{source}.rejects.parquet", source=SOURCES),
        fetch_rejects=expand("data/sources/{source}.rejects.parquet", source=SOURCES),
        records=expand("data/sources/{source}.json", source=SOURCES),
    output:
        manifest="data/manifest.parquet",
        rejects="data/rejects.parquet",
        metrics="reports/metrics/manifest.json",
    params:
        seed=config["seed"],
        split=as_json(config["manifest"]["split"]),
        split_policy=as_json(config["manifest"].get("split_policy", {})),
        licenses_allow=as_json((config["corpus"].get("licenses") or {}).get("allow")),
    conda:
        CONDA_ENV
    log:
        "logs/manifest.log",
    shell:
        "python -m pipeline.manifest.build --scanned {input.files:q}"
        " --rejects-in {input.fetch_rejects:q} {input.scan_rejects:q}"
        " --records {input.records:q} --seed {params.seed} --split {params.split:q}"
        " --split-policy {params.split_policy:q} --licenses-allow {params.licenses_allow:q}"
        " --out {output.manifest:q} --rejects {output.rejects:q} --metrics {output.metrics:q} 2> {log:q}"


# Every enabled family's evaluation set holds manifest.evaluation.min_items items per language, and every source with
# library code items of each set drawn from a split, or the run fails naming each family and language (and source)
# (pipeline.manifest.evaluation; docs/splits.md). Two jobs, so that a failed check never takes its figures with it
# (Snakemake removes a failed job's outputs): evaluation_metrics writes reports/metrics/evaluation.json and never
# fails on the check; evaluation_sizes reads it and fails the run when the check fails (rule all and the report wait
# for it). Both run as soon as the benchmarks exist (priority), before the inference they feed.
EVALUATION_SETS = [
    {"family": _f.name, **dataclasses.asdict(_s)}
    for _f in FAMILIES
    for _s in _f.evaluation(config)
    if _s.language in config["manifest"]["languages"]
]


rule evaluation_metrics:
    input:
        sets=sorted({s["file"] for s in EVALUATION_SETS}),
        # the families' own reasons a source gives a set no item (EvaluationSet.why_none: a family's metrics)
        why_none=sorted({s["why_none"] for s in EVALUATION_SETS if s["why_none"]}),
        manifest="data/manifest.parquet",
    output:
        metrics="reports/metrics/evaluation.json",
    params:
        sets=as_json(EVALUATION_SETS),
        min_items=config["manifest"]["evaluation"]["min_items"],
        allow_small="--allow-small" if config["manifest"]["evaluation"]["allow_small"] else "",
        # every source with library code holds items of each set drawn from a split, or the run fails (opt-out)
        allow_unevaluated="--allow-unevaluated" if config["manifest"]["evaluation"].get("allow_unevaluated") else "",
        # a source left unevaluated: one warning with the reason; a failure only under strict
        strict="--strict" if config["manifest"]["evaluation"].get("strict") else "",
        scripts=as_json((config["manifest"].get("split_policy") or {}).get("scripts")),
    priority: 100
    conda:
        CONDA_ENV
    log:
        "logs/evaluation_metrics.log",
    shell:  # the metrics, `ok` in them, whatever the check says: it is evaluation_sizes' to fail
        "python -m pipeline.manifest.evaluation --measure-only --sets {params.sets:q} --min-items {params.min_items}"
        " {params.allow_small} {params.allow_unevaluated} {params.strict} --manifest {input.manifest:q}"
        " --scripts {params.scripts:q} --metrics {output.metrics:q} 2> {log:q}"


rule evaluation_sizes:
    input:
        metrics=rules.evaluation_metrics.output.metrics,
    output:
        # written only when the check passes: what rule all and the report wait for
        passed="data/evaluation_check.json",
    priority: 100
    conda:
        CONDA_ENV
    log:
        "logs/evaluation_sizes.log",
    shell:  # a failure's log reaches the console (profiles/default: show-failed-logs); allow_small's warnings: onsuccess
        "python -m pipeline.manifest.evaluation --check-metrics {input.metrics:q} --passed {output.passed:q} 2> {log:q}"
