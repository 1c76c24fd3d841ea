# Stage 4: CodeSyntax samples, relation edges, baselines and the paper-style statistics.

CODESYNTAX = config["codesyntax"]


wildcard_constraints:
    cs_language="python|java",
    cs_variant="plain|with_newlines",


rule codesyntax_label:
    input:
        manifest="data/manifest.parquet",
    output:
        samples="data/codesyntax/{cs_variant}/{cs_language}/samples.parquet",
        relations="data/codesyntax/{cs_variant}/{cs_language}/relations.parquet",
        rejects="data/codesyntax/{cs_variant}/{cs_language}/rejects.parquet",
        summary="data/codesyntax/{cs_variant}/{cs_language}/summary.json",
    params:
        max_tokens=CODESYNTAX["max_tokens"],
        max_samples=CODESYNTAX["max_samples_per_language"],
        dev_fraction=CODESYNTAX["dev_fraction"],
        seed=config["seed"],
    threads: CODESYNTAX["workers"]
    conda:
        CONDA_ENV
    log:
        "logs/codesyntax/label_{cs_variant}_{cs_language}.log",
    shell:
        "python -m pipeline.syntax.label --manifest {input.manifest:q} --language {wildcards.cs_language}"
        " --variant {wildcards.cs_variant} --max-tokens {params.max_tokens} --max-samples {params.max_samples}"
        " --dev-fraction {params.dev_fraction} --seed {params.seed} --workers {threads}"
        " --samples {output.samples:q} --relations {output.relations:q} --rejects {output.rejects:q}"
        " --summary {output.summary:q} 2> {log:q}"


rule codesyntax_baselines:
    input:
        samples="data/codesyntax/{cs_variant}/{cs_language}/samples.parquet",
        relations="data/codesyntax/{cs_variant}/{cs_language}/relations.parquet",
    output:
        baselines="data/codesyntax/{cs_variant}/{cs_language}/baselines.parquet",
        stats="data/codesyntax/{cs_variant}/{cs_language}/stats.json",
    params:
        ks=as_json(CODESYNTAX["ks"]),
    conda:
        CONDA_ENV
    log:
        "logs/codesyntax/baselines_{cs_variant}_{cs_language}.log",
    shell:
        "python -m pipeline.syntax.report baselines --samples {input.samples:q} --relations {input.relations:q}"
        " --language {wildcards.cs_language} --variant {wildcards.cs_variant} --ks {params.ks:q}"
        " --out {output.baselines:q} --stats {output.stats:q} 2> {log:q}"


rule codesyntax:
    input:
        stats=expand("data/codesyntax/{cs_variant}/{cs_language}/stats.json",
                     cs_variant=CODESYNTAX["variants"], cs_language=CODESYNTAX["languages"]),
        summaries=expand("data/codesyntax/{cs_variant}/{cs_language}/summary.json",
                         cs_variant=CODESYNTAX["variants"], cs_language=CODESYNTAX["languages"]),
    output:
        metrics="reports/metrics/codesyntax.json",
        markdown="reports/codesyntax_stats.md",
    conda:
        CONDA_ENV
    log:
        "logs/codesyntax/report.log",
    shell:
        "python -m pipeline.syntax.report report --stats {input.stats:q} --summaries {input.summaries:q}"
        " --metrics {output.metrics:q} --markdown {output.markdown:q} 2> {log:q}"
