# Stage 7: inference in shards. One job per (benchmark, model, shard), each writing one
# Parquet file atomically; a rerun after an interruption computes only the missing shards.

INFERENCE = config["inference"]
SHARDS = list(range(INFERENCE["shards"]))
QUIZ_MODELS = [n for n in INFERENCE["models"] or ZOO]
SYNTAX_MODELS = [n for n in QUIZ_MODELS if ZOO[n].family != "causal-lm"]


wildcard_constraints:
    shard=r"\d+",


rule apiquiz_predict:
    input:
        quizzes=rules.apiquiz.output.quizzes,
        model="data/models/{model}",
    output:
        "data/predictions/apiquiz/{model}/{shard}.parquet",
    params:
        zoo=zoo_subset,
        shards=INFERENCE["shards"],
        max_items=INFERENCE["apiquiz_max_quizzes"],
        seed=config["seed"],
        token_budget=INFERENCE["token_budget"],
        fill_top_k=INFERENCE["fill_top_k"],
        rank_top_k=INFERENCE["rank_top_k"],
        device=config["models"]["device"],
    threads: INFERENCE["threads"]
    resources:
        gpu=1,
    conda:
        CONDA_ENV
    log:
        "logs/inference/apiquiz_{model}_{shard}.log",
    shell:
        "python -m pipeline.infer.apiquiz --quizzes {input.quizzes:q} --model {wildcards.model:q}"
        " --zoo {params.zoo:q} --shard {wildcards.shard} --shards {params.shards}"
        " --max-items {params.max_items} --seed {params.seed} --token-budget {params.token_budget}"
        " --fill-top-k {params.fill_top_k} --rank-top-k {params.rank_top_k} --device {params.device:q}"
        " --threads {threads} --out {output:q} 2> {log:q}"


rule codesyntax_predict:
    input:
        samples=f"data/codesyntax/{INFERENCE['codesyntax_variant']}/{{cs_language}}/samples.parquet",
        relations=f"data/codesyntax/{INFERENCE['codesyntax_variant']}/{{cs_language}}/relations.parquet",
        model="data/models/{model}",
    output:
        "data/predictions/codesyntax/{model}/{cs_language}/{shard}.parquet",
    params:
        zoo=zoo_subset,
        shards=INFERENCE["shards"],
        max_items=INFERENCE["codesyntax_max_samples"],
        seed=config["seed"],
        token_budget=INFERENCE["token_budget"],
        device=config["models"]["device"],
    threads: INFERENCE["threads"]
    resources:
        gpu=1,
    conda:
        CONDA_ENV
    log:
        "logs/inference/codesyntax_{model}_{cs_language}_{shard}.log",
    shell:
        "python -m pipeline.infer.codesyntax --samples {input.samples:q} --relations {input.relations:q}"
        " --model {wildcards.model:q} --zoo {params.zoo:q} --shard {wildcards.shard} --shards {params.shards}"
        " --max-items {params.max_items} --seed {params.seed} --token-budget {params.token_budget}"
        " --device {params.device:q} --threads {threads} --out {output:q} 2> {log:q}"


rule inference:
    input:
        apiquiz=expand(rules.apiquiz_predict.output, model=QUIZ_MODELS, shard=SHARDS),
        codesyntax=expand(rules.codesyntax_predict.output, model=SYNTAX_MODELS, cs_language=CODESYNTAX["languages"],
                          shard=SHARDS),
