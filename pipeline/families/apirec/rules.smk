# apirec (APIBench-C and APIBench-Q): code points and the n-gram / jedi baselines from the shared API
# extraction; queries, the API universe and the BM25 baseline; the family's target merges their stats.

APIREC = config["apirec"]
APIREC_DOMAINS = [f"{k}={v}" for k, v in sorted(APIREC["domains"].items())]


rule apirec_points:
    input:
        usages="data/extract/usages.parquet",
        imports="data/extract/imports.parquet",
        inventory="data/extract/inventory.parquet",
        manifest="data/manifest.parquet",
    output:
        points="data/families/apirec/points.parquet",
        baselines="data/families/apirec/baselines.parquet",
        metrics="data/families/apirec/points.json",
    params:
        domains=APIREC_DOMAINS,
        default_domain=APIREC["default_domain"],
        eval_split=APIREC["eval_split"],
        max_points=APIREC["max_points"],
        candidates=APIREC["candidates"],
        top_k=APIREC["top_k"],
        ide_max_points=APIREC["ide_max_points"],
        ide_typed_chars=APIREC["ide_typed_chars"],
        popular=APIREC["popular_libraries"],
        cross_domain="--cross-domain" if APIREC["cross_domain"] else "",
        java_max_points=APIREC["java_max_points"],
        # distributions (pipeline/extract/library.py): the standard libraries (Python's, the JDK), sources of many projects
        stdlib=[s["name"] for s in config["corpus"]["sources"] if s.get("builtin") in ("stdlib", "jdk")],
        per_repo=[s["name"] for s in config["corpus"]["sources"] if s["kind"] == "jsonl"],
        seed=config["seed"],
    conda:
        CONDA_ENV
    log:
        "logs/apirec/generate.log",
    shell:
        "python -m pipeline.families.apirec.generate --usages {input.usages:q} --imports {input.imports:q}"
        " --inventory {input.inventory:q}"
        " --manifest {input.manifest:q} --domains {params.domains:q} --default-domain {params.default_domain:q}"
        " --eval-split {params.eval_split} --max-points {params.max_points} --candidates {params.candidates}"
        " --top-k {params.top_k} --seed {params.seed} --ide-max-points {params.ide_max_points}"
        " --ide-typed-chars {params.ide_typed_chars} --popular-libraries {params.popular:q} {params.cross_domain}"
        " --java-max-points {params.java_max_points} --stdlib-sources {params.stdlib:q}"
        " --per-repository-sources {params.per_repo:q} --points {output.points:q}"
        " --baselines {output.baselines:q} --metrics {output.metrics:q} 2> {log:q}"


rule apirec_queries:
    input:
        usages="data/extract/usages.parquet",
        inventory="data/extract/inventory.parquet",
        imports="data/extract/imports.parquet",
        manifest="data/manifest.parquet",
    output:
        queries="data/families/apirec/queries.parquet",
        api_docs="data/families/apirec/api_docs.parquet",
        baselines="data/families/apirec/query_baselines.parquet",
        metrics="data/families/apirec/queries.json",
    params:
        domains=APIREC_DOMAINS,
        default_domain=APIREC["default_domain"],
        eval_split=APIREC["eval_split"],
        max_queries=APIREC["queries"]["max_queries"],
        candidates=APIREC["queries"]["candidates"],
        api_doc=APIREC["queries"]["api_doc"],
        top_k=APIREC["top_k"],
        seed=config["seed"],
    conda:
        CONDA_ENV
    log:
        "logs/apirec/queries.log",
    shell:
        "python -m pipeline.families.apirec.queries --usages {input.usages:q} --inventory {input.inventory:q}"
        " --imports {input.imports:q}"
        " --manifest {input.manifest:q} --domains {params.domains:q} --default-domain {params.default_domain:q}"
        " --eval-split {params.eval_split} --max-queries {params.max_queries} --candidates {params.candidates}"
        " --api-doc {params.api_doc} --top-k {params.top_k} --seed {params.seed} --queries {output.queries:q}"
        " --api-docs {output.api_docs:q} --baselines {output.baselines:q} --metrics {output.metrics:q} 2> {log:q}"


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
