# probing: task generators (per language from the corpus; algorithm from the algo-1671A dataset),
# the paper's baselines, and the family's metrics. Features and probes come from the shared
# predict and fit rules (pipeline/families/probing/__init__.py declares them).

PROBING = config["probing"]
PROBING_CORPUS_TASKS = [t for t in PROBING["tasks"] if t != "algorithm"]


rule probing_generate:
    input:
        manifest="data/manifest.parquet",
    output:
        samples=expand("data/families/probing/{{language}}/{task}/samples.parquet", task=PROBING_CORPUS_TASKS),
        labels=expand("data/families/probing/{{language}}/{task}/labels.parquet", task=PROBING_CORPUS_TASKS),
        control=["data/families/probing/{language}/path_type/control.parquet"] if "path_type" in PROBING_CORPUS_TASKS else [],
        summary="data/families/probing/{language}/summary.json",
    wildcard_constraints:
        language="java|python",
    params:
        tasks=" ".join(PROBING_CORPUS_TASKS),
        classes=PROBING["classes"],
        max_chars=PROBING["max_chars"],
        max_snippets=PROBING["max_snippets"],
        max_samples=PROBING["max_samples"],
        seed=config["seed"],
    conda:
        CONDA_ENV
    log:
        "logs/probing/generate_{language}.log",
    shell:
        "python -m pipeline.families.probing.generate corpus --manifest {input.manifest:q} --language {wildcards.language}"
        " --tasks {params.tasks} --classes {params.classes} --max-chars {params.max_chars}"
        " --max-snippets {params.max_snippets} --max-samples {params.max_samples} --seed {params.seed}"
        " --out data/families/probing/{wildcards.language} --summary {output.summary:q} 2> {log:q}"


rule probing_algorithm:
    input:
        record="data/datasets/algo-1671A.json",
    output:
        samples="data/families/probing/python/algorithm/samples.parquet",
        labels="data/families/probing/python/algorithm/labels.parquet",
        summary="data/families/probing/python/algorithm.json",
    params:
        max_chars=PROBING["max_chars"],
        max_samples=PROBING["max_samples"],
        seed=config["seed"],
    conda:
        CONDA_ENV
    log:
        "logs/probing/algorithm.log",
    shell:
        "python -m pipeline.families.probing.generate algorithm --dataset data/datasets/algo-1671A/all.json"
        " --max-chars {params.max_chars} --max-samples {params.max_samples} --seed {params.seed}"
        " --out data/families/probing/python --summary {output.summary:q} 2> {log:q}"


rule probing:
    input:
        labels=[f"data/families/probing/{s.replace('-', '/', 1)}/labels.parquet" for s in FAMILY_BY_NAME["probing"].subsets(config)],
    output:
        baselines="data/families/probing/baselines.parquet",
        metrics="reports/metrics/probing.json",
    params:
        folds=PROBING["fit"]["folds"],
        seed=config["seed"],
    conda:
        CONDA_ENV
    log:
        "logs/probing/baselines.log",
    shell:
        "python -m pipeline.families.probing.baselines --labels {input.labels:q} --folds {params.folds}"
        " --seed {params.seed} --out {output.baselines:q} --metrics {output.metrics:q} 2> {log:q}"
