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


IDBENCH_DIR = "data/families/idbench"
IDBENCH_EMB = IDBENCH["embeddings"]
IDBENCH_EMB_DIR = f"{IDBENCH_DIR}/embeddings"
IDBENCH_TECHNIQUES = ["FT-cbow", "FT-SG", "w2v-SG", "w2v-cbow"]  # schemas.EMBEDDINGS


if IDBENCH_EMB["enabled"]:

    # word2vec / FastText on the corpus's identifier sequences: one single-threaded job per technique,
    # PYTHONHASHSEED fixed (gensim seeds vectors from hash()): byte-identical models for a seed.
    rule idbench_embedding:
        input:
            sequences="data/identifiers/sequences.parquet",
        output:
            model=f"{IDBENCH_EMB_DIR}/{{technique}}.kv",
            stats=f"{IDBENCH_EMB_DIR}/{{technique}}.json",
        wildcard_constraints:
            technique="|".join(re.escape(t) for t in IDBENCH_TECHNIQUES),
        params:
            embeddings=as_json(IDBENCH_EMB),
            seed=config["seed"],
        priority: PRIORITY["analysis"]  # no model's predictions feed it: early, not in the build's tail
        conda:
            CONDA_ENV
        log:
            "logs/idbench/embedding_{technique}.log",
        shell:
            "PYTHONHASHSEED=0 python -m pipeline.families.idbench.embeddings train --sequences {input.sequences:q}"
            " --technique {wildcards.technique:q} --params {params.embeddings:q} --seed {params.seed}"
            " --out {output.model:q} --stats {output.stats:q} 2> {log:q}"

    # Cosine of every IdBench pair under each embedding; vocabulary coverage per identifier.
    rule idbench_embedding_scores:
        input:
            models=expand(f"{IDBENCH_EMB_DIR}/{{technique}}.kv", technique=IDBENCH_TECHNIQUES),
            stats=expand(f"{IDBENCH_EMB_DIR}/{{technique}}.json", technique=IDBENCH_TECHNIQUES),
            identifiers=f"{IDBENCH_DIR}/identifiers.parquet",
            pairs=f"{IDBENCH_DIR}/pairs.parquet",
        output:
            scores=f"{IDBENCH_DIR}/embedding_scores.parquet",
            vocab=f"{IDBENCH_DIR}/embedding_vocab.parquet",
            summary=f"{IDBENCH_DIR}/embedding_models.parquet",
        priority: PRIORITY["analysis"]  # no model's predictions feed it: early, not in the build's tail
        conda:
            CONDA_ENV
        log:
            "logs/idbench/embedding_scores.log",
        shell:
            "python -m pipeline.families.idbench.embeddings score --models {input.models:q} --stats {input.stats:q}"
            " --identifiers {input.identifiers:q} --pairs {input.pairs:q} --scores {output.scores:q}"
            " --vocab {output.vocab:q} --summary {output.summary:q} 2> {log:q}"

    # New identifier pairs for a rating survey, ranked by one embedding's cosine (paper Section II-B c).
    rule idbench_new_pairs:
        input:
            sequences="data/identifiers/sequences.parquet",
            model=f"{IDBENCH_EMB_DIR}/{IDBENCH['new_pairs']['technique']}.kv",
            pairs=f"{IDBENCH_DIR}/pairs.parquet",
        output:
            f"{IDBENCH_DIR}/new_pairs.parquet",
        params:
            new_pairs=as_json(IDBENCH["new_pairs"]),
            embeddings=as_json(IDBENCH_EMB),
            seed=config["seed"],
            floor=(config.get("report") or {}).get("min_n", 100),  # a language with fewer pairs: a warning
        priority: PRIORITY["analysis"]  # no model's predictions feed it: early, not in the build's tail
        conda:
            CONDA_ENV
        log:
            "logs/idbench/new_pairs.log",
        shell:
            "python -m pipeline.families.idbench.newpairs --sequences {input.sequences:q} --model {input.model:q}"
            " --pairs {input.pairs:q} --params {params.new_pairs:q} --embeddings {params.embeddings:q}"
            " --seed {params.seed} --floor {params.floor} --out {output:q} 2> {log:q}"


# The paper's SVR ensemble, leave-one-out per size and gold score (scikit-learn, deterministic): over
# the release's seven scores (standardised as the release's code, and unscaled), and over ours (LV,
# NW, the corpus-trained embeddings when built).
rule idbench_ensemble:
    input:
        pairs=f"{IDBENCH_DIR}/pairs.parquet",
        scores=[f"{IDBENCH_DIR}/scores.parquet"]
        + ([f"{IDBENCH_DIR}/embedding_scores.parquet"] if IDBENCH_EMB["enabled"] else []),
    output:
        f"{IDBENCH_DIR}/ensemble.parquet",
    priority: PRIORITY["analysis"]
    conda:
        CONDA_ENV
    log:
        "logs/idbench/ensemble.log",
    shell:
        "python -m pipeline.families.idbench.ensemble --pairs {input.pairs:q} --scores {input.scores:q}"
        " --out {output:q} 2> {log:q}"


# The family's target (its DVC stage runs `snakemake idbench`): everything it builds.
rule idbench:
    input:
        rules.idbench_pairs.output,
        rules.idbench_ensemble.output,
        ([f"{IDBENCH_DIR}/embedding_scores.parquet", f"{IDBENCH_DIR}/new_pairs.parquet"]
         if IDBENCH_EMB["enabled"] else []),


localrules:
    idbench,  # a summary: cheaper to run than to submit to a cluster
