# Inference in shards: one job per (family, subset, model, shard), all through one rule and one
# runner (pipeline.runtime.predict), each writing one Parquet file atomically; a rerun after an
# interruption computes only the missing shards. A model a family does not apply to gets no job
# (the warehouse lists it once in `not_applicable`).

wildcard_constraints:
    family=_names(FAMILY_BY_NAME),
    shard=r"\d+",


rule predict:
    input:
        predict_inputs,
    output:
        "data/predictions/{family}/{subset}/{model}/{shard}.parquet",
    params:
        zoo=zoo_subset,
        inputs=predict_task_inputs,
        block=lambda wildcards: as_json(FAMILY_BY_NAME[wildcards.family].inference.params(config)),
        shards=SHARDS,
        seed=config["seed"],
        token_budget=config["inference"]["token_budget"],
        device=config["models"]["device"],
    threads: config["inference"]["threads"]
    resources:
        gpu=1,
    conda:
        CONDA_ENV
    log:
        "logs/predict/{family}/{subset}/{model}/{shard}.log",
    shell:
        "python -m pipeline.runtime.predict --family {wildcards.family} --subset {wildcards.subset:q}"
        " --inputs {params.inputs:q} --params {params.block:q} --model {wildcards.model:q} --zoo {params.zoo:q}"
        " --shard {wildcards.shard} --shards {params.shards} --seed {params.seed}"
        " --token-budget {params.token_budget} --device {params.device:q} --threads {threads}"
        " --out {output:q} 2> {log:q}"


rule inference:
    input:
        [path for f in PREDICTED for path in prediction_paths(f)],


# The fit stage: probes and regressors over the pooled features a family's predict jobs wrote.
rule fit:
    input:
        unpack(fit_inputs),
    output:
        results="data/fits/{family}/{task}/{model}.parquet",
        metrics="data/fits/{family}/{task}/{model}.json",
    params:
        fit=lambda wildcards: fit_params(wildcards),
        alphas=lambda wildcards: as_json(fit_params(wildcards)["alphas"]),
        baselines=lambda wildcards: " ".join(
            (["--majority"] if fit_params(wildcards).get("majority") else [])
            + ([f"--linreg-feature {fit_params(wildcards)['linreg_feature']}"]
               if fit_params(wildcards).get("linreg_feature") and fit_params(wildcards)["task_type"] == "regression" else [])),
    threads: config["inference"]["threads"]
    conda:
        CONDA_ENV
    log:
        "logs/fit/{family}/{task}/{model}.log",
    shell:
        "python -m pipeline.fit --features {input.features:q} --labels {input.labels:q} --task {wildcards.task:q}"
        " --task-type {params.fit[task_type]} --probe {params.fit[probe]} --folds {params.fit[folds]}"
        " --alphas {params.alphas:q} --seed {params.fit[seed]} {params.baselines} --out {output.results:q}"
        " --metrics {output.metrics:q} 2> {log:q}"


rule fits:
    input:
        [path.replace(".parquet", ".json") for f in FAMILIES for path in registry.fit_files(f, config, INFERENCE_MODELS)],
    output:
        "data/fits/index.json",
    conda:
        CONDA_ENV
    log:
        "logs/fit/index.log",
    shell:
        "python -m pipeline.fit.index {output:q} {input:q} 2> {log:q}"
