# probing: task generators per language (corpus tasks from the manifest; on Python also the
# algorithm task from the algo-1671A dataset) and the family's summary. Features, the common item
# set, the probes and the family's baselines come from the shared predict and fit stages
# (pipeline/families/probing/__init__.py declares them): one predict subset per language.

PROBING = config["probing"]
PROBING_FAMILY = FAMILY_BY_NAME["probing"]
from pipeline.families.probing import language_tasks as probing_language_tasks  # noqa: E402


def probing_inputs(language):
    tasks = probing_language_tasks(config, language)
    return {"manifest": "data/manifest.parquet",
            **({"algorithm": "data/datasets/algo-1671A.json"} if "algorithm" in tasks else {})}


def probing_outputs(language):
    tasks = probing_language_tasks(config, language)
    return {"samples": f"data/families/probing/{language}/samples.parquet",
            "labels": [f"data/families/probing/{language}/{t}/labels.parquet" for t in tasks],
            "control": [f"data/families/probing/{language}/{t}/control.parquet" for t in tasks if t == "path_type"],
            "summary": f"data/families/probing/{language}/summary.json"}


for _language in PROBING_FAMILY.subsets(config):

    rule:
        name:
            f"probing_generate_{_language}"
        input:
            **probing_inputs(_language),
        output:
            **probing_outputs(_language),
        params:
            language=_language,
            tasks=" ".join(probing_language_tasks(config, _language)),
            algorithm="--algorithm-dataset data/datasets/algo-1671A/all.json"
            if "algorithm" in probing_language_tasks(config, _language) else "",
            classes=PROBING["classes"],
            max_chars=PROBING["max_chars"],
            max_snippets=PROBING["max_snippets"],
            max_samples=PROBING["max_samples"],
            seed=config["seed"],
        conda:
            CONDA_ENV
        log:
            f"logs/probing/generate_{_language}.log",
        shell:
            "python -m pipeline.families.probing.generate corpus --manifest {input.manifest:q} --language {params.language}"
            " --tasks {params.tasks} {params.algorithm} --classes {params.classes} --max-chars {params.max_chars}"
            " --max-snippets {params.max_snippets} --max-samples {params.max_samples} --seed {params.seed}"
            " --out data/families/probing/{params.language} --summary {output.summary:q} 2> {log:q}"


rule probing:
    input:
        summaries=[f"data/families/probing/{s}/summary.json" for s in PROBING_FAMILY.subsets(config)],
    output:
        metrics="reports/metrics/probing.json",
    conda:
        CONDA_ENV
    log:
        "logs/probing/summary.log",
    shell:
        "python -m pipeline.families.probing.generate summary --summaries {input.summaries:q}"
        " --out {output.metrics:q} 2> {log:q}"
