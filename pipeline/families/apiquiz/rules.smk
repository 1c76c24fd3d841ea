# apiquiz (INK): cloze quizzes on the fully qualified names the corpus calls.

APIQUIZ_SHARDS = config["apiquiz"].get("shards", 1)
APIQUIZ_SHARD_DIR = "data/families/apiquiz/shards"
from pipeline.families import apiquiz as apiquiz_family  # noqa: E402
APIQUIZ_INPUT = dict(
    usages="data/extract/usages.parquet",
    inventory="data/extract/inventory.parquet",
    imports="data/extract/imports.parquet",
)


# apiquiz.shards > 1: each shard job quizzes the APIs whose name hashes to it (every job reads the whole extraction
# for the APIs and the candidate pools), and apiquiz merges their parts into the same bytes.
rule apiquiz_shard:
    input:
        **APIQUIZ_INPUT,
    output:
        part=f"{APIQUIZ_SHARD_DIR}/{{shard}}.json",
        quizzes=f"{APIQUIZ_SHARD_DIR}/{{shard}}.quizzes.parquet",
        tokens=f"{APIQUIZ_SHARD_DIR}/{{shard}}.tokens.parquet",
        names=f"{APIQUIZ_SHARD_DIR}/{{shard}}.names.parquet",
    wildcard_constraints:
        shard=r"\d+",
    params:
        **apiquiz_family.generate_params(config),
        shards=APIQUIZ_SHARDS,
    conda:
        CONDA_ENV
    log:
        "logs/apiquiz/generate.shard_{shard}.log",
    shell:
        apiquiz_family.generate_shell(
            "--shard {wildcards.shard} --shards {params.shards} --part {output.part:q} 2> {log:q}"
        )


rule apiquiz:
    input:
        **APIQUIZ_INPUT,
        parts=expand(f"{APIQUIZ_SHARD_DIR}/{{shard}}.json", shard=range(APIQUIZ_SHARDS)) if APIQUIZ_SHARDS > 1 else [],
    output:
        quizzes="data/families/apiquiz/quizzes.parquet",
        tokens="data/families/apiquiz/quiz_tokens.parquet",
        names="data/families/apiquiz/api_names.parquet",
        metrics="reports/metrics/apiquiz.json",
    params:
        **apiquiz_family.generate_params(config),
    conda:
        CONDA_ENV
    log:
        "logs/apiquiz/generate.log",
    shell:
        apiquiz_family.generate_shell(
            *(["--merge {input.parts:q}"] if APIQUIZ_SHARDS > 1 else []),
            "--quizzes {output.quizzes:q} --tokens {output.tokens:q} --names {output.names:q}"
            " --metrics {output.metrics:q} 2> {log:q}",
        )
