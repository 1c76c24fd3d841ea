# Stage 6: the model zoo. Trained code LMs, random twins and cards of packaged/hub/path models,
# each in data/models/<name>/ (card.json inside); test perplexities in reports/metrics/models.json.
from pipeline.models.entries import objective_params  # noqa: E402  (no torch: parsing stays fast)

# Models with a test perplexity: masked and causal LMs, encoder-decoders (span corruption).
EVALUATED = [n for n, e in ZOO.items() if e.model_family != "encoder-only"]


rule train_tokenizer:
    input:
        manifest="data/manifest.parquet",
    output:
        directory("data/tokenizer"),
    params:
        data=lambda wildcards: as_json(config["training"]["data"]),
        tokenizer=lambda wildcards: as_json(config["training"]["tokenizer"]),
        seed=config["seed"],
    priority: PRIORITY["training"]
    conda:
        CONDA_ENV
    log:
        "logs/models/tokenizer.log",
    shell:
        "python -m pipeline.models.tokenizer_train --manifest {input.manifest:q} --data {params.data:q}"
        " --tokenizer {params.tokenizer:q} --seed {params.seed} --out {output:q} 2> {log:q}"


rule train_model:
    input:
        manifest="data/manifest.parquet",
        tokenizer="data/tokenizer",
    output:
        model=directory("data/models/{model}"),
        figure="reports/figures/models/loss_{model}.png",
    wildcard_constraints:
        model=_names(TRAINED),
    params:
        entry=zoo_subset_for_models,
        data=lambda wildcards: as_json(config["training"]["data"]),
        model=lambda wildcards: as_json(
            objective_params(config["training"]["model"], config["training"].get("objectives"), ZOO[wildcards.model].value)
        ),
        device=lambda wildcards: config["models"]["device"],
        seed=config["seed"],
    threads: lambda wildcards: config["training"]["threads"]
    resources:
        gpu=GPUS,
        mem_mb=lambda wildcards: jobres.train_mem_mb(config, wildcards.model, LOCAL_RUN),
        runtime=lambda wildcards: jobres.train_runtime(config, wildcards.model, LOCAL_RUN),
    priority: PRIORITY["training"]
    conda:
        CONDA_ENV
    log:
        "logs/models/train_{model}.log",
    shell:
        "python -m pipeline.models.train train --zoo {params.entry:q} --name {wildcards.model:q}"
        " --manifest {input.manifest:q} --tokenizer {input.tokenizer:q} --data {params.data:q}"
        " --params {params.model:q} --seed {params.seed} --threads {threads} --device {params.device:q}"
        " --out {output.model:q} --figure {output.figure:q} 2> {log:q}"


rule random_model:
    input:
        twin_inputs,
    output:
        directory("data/models/{model}"),
    wildcard_constraints:
        model=_names(RANDOM),
    params:
        entry=zoo_subset_for_models,
        seed=config["seed"],
    resources:
        mem_mb=lambda wildcards: jobres.evaluate_mem_mb(config, wildcards.model, False),
    conda:
        CONDA_ENV
    log:
        "logs/models/random_{model}.log",
    shell:
        "python -m pipeline.models.train random --zoo {params.entry:q} --name {wildcards.model:q}"
        " --seed {params.seed} --out {output:q} 2> {log:q}"


# A `path:` model's folder is an input by content: replacing its weights (not touching them) reruns its card,
# and through the card its twin, evaluation, predictions and fits (pipeline/models/weights.py).
rule external_model:
    input:
        external_weights,
    output:
        directory("data/models/{model}"),
    wildcard_constraints:
        model=_names(EXTERNAL),
    params:
        entry=zoo_subset_for_models,
        weights=external_weights_digest,
    conda:
        CONDA_ENV
    log:
        "logs/models/external_{model}.log",
    shell:
        "python -m pipeline.models.cards describe --zoo {params.entry:q} --name {wildcards.model:q}"
        " --weights={params.weights:q} --out {output:q} 2> {log:q}"


rule convert_gguf:
    output:
        directory("data/models/{model}"),
    wildcard_constraints:
        model=_names(GGUF),
    params:
        entry=zoo_subset_for_models,
    priority: PRIORITY["convert"]
    conda:
        CONDA_ENV
    log:
        "logs/models/gguf_{model}.log",
    shell:
        "python -m pipeline.models.gguf --zoo {params.entry:q} --name {wildcards.model:q} --out {output:q} 2> {log:q}"


rule evaluate_model:
    input:
        manifest="data/manifest.parquet",
        model="data/models/{model}",
    output:
        "data/models-eval/{model}.json",
    wildcard_constraints:
        model=_names(EVALUATED),
    params:
        entry=zoo_subset_for_models,
        data=lambda wildcards: as_json(config["training"]["data"]),
        evaluation=lambda wildcards: as_json(config["training"]["evaluation"]),
        device=lambda wildcards: config["models"]["device"],
        seed=config["seed"],
    threads: lambda wildcards: config["training"]["threads"]
    resources:
        gpu=GPUS,
        mem_mb=lambda wildcards: jobres.evaluate_mem_mb(config, wildcards.model, LOCAL_RUN),
        runtime=lambda wildcards: jobres.evaluate_runtime(config, wildcards.model, LOCAL_RUN),
    conda:
        CONDA_ENV
    log:
        "logs/models/evaluate_{model}.log",
    shell:
        "python -m pipeline.models.evaluate --zoo {params.entry:q} --name {wildcards.model:q}"
        " --manifest {input.manifest:q} --data {params.data:q} --evaluation {params.evaluation:q}"
        " --seed {params.seed} --device {params.device:q} --threads {threads} --out {output:q} 2> {log:q}"


rule models:
    input:
        models=expand("data/models/{model}", model=ZOO),
        evals=expand("data/models-eval/{model}.json", model=EVALUATED),
    output:
        "reports/metrics/models.json",
    conda:
        CONDA_ENV
    log:
        "logs/models/report.log",
    shell:
        "python -m pipeline.models.cards report --models {input.models:q} --evals {input.evals:q}"
        " --out {output:q} 2> {log:q}"


# One target per zoo entry (its folder, and its test perplexity when it has one): DVC's `model-<name>` stages,
# so that editing one entry retrains, converts or describes that model only (pipeline.dvcgen).
for _model in ZOO:

    rule:
        name:
            f"model_{_model}"
        input:
            f"data/models/{_model}",
            [f"data/models-eval/{_model}.json"] if _model in EVALUATED else [],
