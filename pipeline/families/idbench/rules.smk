# idbench (IdBench): pairs, identifiers and string scores from the pinned IdBench release.

IDBENCH = config["idbench"]


rule idbench_pairs:
    input:
        record=f"data/datasets/{IDBENCH['dataset']}.json",
        tree=f"data/datasets/{IDBENCH['dataset']}",
    output:
        pairs="data/families/idbench/pairs.parquet",
        identifiers="data/families/idbench/identifiers.parquet",
        scores="data/families/idbench/scores.parquet",
        interesting="data/families/idbench/interesting.parquet",
        metrics="reports/metrics/idbench.json",
    conda:
        CONDA_ENV
    log:
        "logs/idbench/generate.log",
    shell:
        "python -m pipeline.families.idbench.generate --dataset {input.tree:q} --pairs {output.pairs:q}"
        " --identifiers {output.identifiers:q} --scores {output.scores:q} --interesting {output.interesting:q}"
        " --metrics {output.metrics:q} 2> {log:q}"


# The paper's SVR ensemble over the release's seven technique scores and identifier features,
# leave-one-out per size and gold score (scikit-learn, deterministic).
rule idbench_ensemble:
    input:
        pairs="data/families/idbench/pairs.parquet",
    output:
        "data/families/idbench/ensemble.parquet",
    conda:
        CONDA_ENV
    log:
        "logs/idbench/ensemble.log",
    shell:
        "python -m pipeline.families.idbench.ensemble --pairs {input.pairs:q} --out {output:q} 2> {log:q}"


# The family's target (its DVC stage runs `snakemake idbench`): everything it builds.
rule idbench:
    input:
        rules.idbench_pairs.output,
        rules.idbench_ensemble.output,
