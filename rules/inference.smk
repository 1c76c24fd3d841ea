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
        dtype=config["inference"].get("dtype", "float32"),
    threads: config["inference"]["threads"]
    priority: predict_priority
    resources:
        gpu=GPUS,
        mem_mb=lambda wildcards: jobres.predict_mem_mb(config, wildcards.model, LOCAL_RUN),
        runtime=lambda wildcards, input: jobres.predict_runtime(
            config, wildcards.model, input, FAMILY_BY_NAME[wildcards.family].inference.params(config).get("max_items", 0),
            LOCAL_RUN),
    conda:
        CONDA_ENV
    log:
        "logs/predict/{family}/{subset}/{model}/{shard}.log",
    shell:
        "python -m pipeline.runtime.predict --family {wildcards.family} --subset {wildcards.subset:q}"
        " --inputs {params.inputs:q} --params {params.block:q} --model {wildcards.model:q} --zoo {params.zoo:q}"
        " --shard {wildcards.shard} --shards {params.shards} --seed {params.seed}"
        " --token-budget {params.token_budget} --device {params.device:q} --dtype {params.dtype}"
        " --threads {threads}"
        " --out {output:q} 2> {log:q}"


rule inference:
    input:
        [path for f in PREDICTED for path in prediction_paths(f)],


# One target per family's predictions and per family's fits, and per (family, model) of each: DVC's stages run
# them (dvc.yaml is generated: `python -m pipeline.dvcgen`).
for _family in PREDICTED:

    rule:
        name:
            f"predict_{_family.name}"
        input:
            prediction_paths(_family),

    # and one per (family, model): DVC's `predict-<family>-<model>` stages, so that editing one zoo entry
    # reruns that model's predictions only
    for _model in family_models(_family):

        rule:
            name:
                f"predict_{_family.name}_{_model}"
            input:
                [p.path for p in registry.prediction_files(_family, config, {_model: INFERENCE_MODELS[_model]})],


# The fit stage: probes and regressors over the pooled features a family's predict jobs wrote.
# Per family: the record of each model's items (one job), one fit per model over all tasks on that model's own
# items (it reads no other model's features), the family's baselines on the full labelled item set.
FITTED = [f for f in FAMILIES if f.fit is not None]


rule fit_items:
    input:
        unpack(fit_items_inputs),
    output:
        common="data/fits/{family}/_items.parquet",
        summary="data/fits/{family}/_items.json",
    wildcard_constraints:
        family=_names([f.name for f in FITTED]),
    params:
        spec=fit_items_spec,
    conda:
        CONDA_ENV
    log:
        "logs/fit/{family}/_items.log",
    shell:
        "python -m pipeline.fit.items --spec {params.spec:q} --out {output.common:q} --summary {output.summary:q}"
        " 2> {log:q}"


rule fit:
    input:
        unpack(fit_inputs),
    output:
        results="data/fits/{family}/{model}.parquet",
        metrics="data/fits/{family}/{model}.json",
    wildcard_constraints:
        family=_names([f.name for f in FITTED]),
        model=_names(INFERENCE_MODELS),
    params:
        fit=fit_params,
        tasks=fit_tasks_json,
        alphas=lambda wildcards: as_json(fit_params(wildcards)["alphas"]),
        also=lambda wildcards: " ".join(f"--also-probe {p}" for p in fit_params(wildcards).get("also_probes", [])),
        paper_layers=lambda wildcards: fit_params(wildcards).get("paper_layers", "all"),
        fold_group=lambda wildcards: fit_params(wildcards).get("fold_group", "group"),
        baselines=lambda wildcards: " ".join(
            (["--majority"] if fit_params(wildcards).get("majority") else [])
            + ([f"--linreg-feature {fit_params(wildcards)['linreg_feature']}"]
               if fit_params(wildcards).get("linreg_feature") else [])),
    threads: config["inference"]["threads"]
    resources:
        mem_mb=lambda wildcards, input: jobres.stage_mem_mb() + 4 * int(input.size_mb),
    conda:
        CONDA_ENV
    log:
        "logs/fit/{family}/{model}.log",
    shell:
        "python -m pipeline.fit --features {input.features:q} --tasks {params.tasks:q}"
        " --probe {params.fit[probe]} {params.also} --paper-layers {params.paper_layers} --folds {params.fit[folds]}"
        " --fold-group {params.fold_group} --alphas {params.alphas:q}"
        " --seed {params.fit[seed]}"
        " {params.baselines} --threads {threads} --out {output.results:q} --metrics {output.metrics:q} 2> {log:q}"


rule fit_baselines:
    input:
        unpack(fit_baselines_inputs),
    output:
        results="data/fits/{family}/_baselines.parquet",
        metrics="data/fits/{family}/_baselines.json",
    wildcard_constraints:
        family=_names([f.name for f in FITTED if f.fit.baselines]),
    params:
        module=lambda wildcards: FAMILY_BY_NAME[wildcards.family].fit.baselines,
        tasks=fit_tasks_json,
        folds=lambda wildcards: fit_params(wildcards)["folds"],
        seed=lambda wildcards: fit_params(wildcards)["seed"],
        fold_group=lambda wildcards: fit_params(wildcards).get("fold_group", "group"),
    conda:
        CONDA_ENV
    log:
        "logs/fit/{family}/_baselines.log",
    shell:
        "python -m {params.module} --tasks {params.tasks:q} --folds {params.folds}"
        " --seed {params.seed} --fold-group {params.fold_group} --out {output.results:q} --metrics {output.metrics:q} 2> {log:q}"


for _family in FITTED:

    rule:
        name:
            f"fits_{_family.name}"
        input:
            fit_outputs(_family),

    # and one per (family, model): DVC's `fit-<family>-<model>` stages, so that editing one zoo entry refits
    # that model only (a model is fitted on its own items)
    for _model in family_models(_family):

        rule:
            name:
                f"fit_{_family.name}_{_model}"
            input:
                [p.replace(".parquet", ".json") for p in registry.fit_files(_family, config, {_model: INFERENCE_MODELS[_model]})],


rule fits:
    input:
        [path for f in FAMILIES for path in fit_outputs(f)],
    output:
        "data/fits/index.json",
    conda:
        CONDA_ENV
    log:
        "logs/fit/index.log",
    shell:
        "python -m pipeline.fit.index {output:q} {input:q} 2> {log:q}"
