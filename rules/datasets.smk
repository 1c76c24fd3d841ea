# Pinned non-code datasets a family evaluates on (rated-pair CSVs, task JSON, ...): every file in
# params.yaml `datasets` is verified against its sha256 and copied to data/datasets/<name>/,
# with a record data/datasets/<name>.json. `python -m pipeline.datasets.fetch --help` explains.

DATASETS = {d["name"]: d for d in config.get("datasets", [])}
if len(DATASETS) != len(config.get("datasets", [])):
    raise ValueError("params.yaml: datasets has two entries with the same name; names must be unique")


rule fetch_dataset:
    output:
        tree=directory("data/datasets/{dataset}"),
        record="data/datasets/{dataset}.json",
    wildcard_constraints:
        dataset=_names(DATASETS),
    params:
        # the dataset's own entry as canonical JSON: a pin change reruns only its job
        spec=lambda wildcards: as_json(DATASETS[wildcards.dataset]),
        cache=config["corpus"]["cache_dir"],
        # a relative local path: the working directory first, then the repository's folder (relative to
        # the working directory: no absolute path in a param, so a moved project reruns nothing)
        repo=os.path.relpath(workflow.basedir),
    conda:
        CONDA_ENV
    log:
        "logs/datasets/{dataset}.log",
    shell:
        "python -m pipeline.datasets.fetch --spec {params.spec:q} --cache {params.cache:q}"
        " --base . --base {params.repo:q} --dest {output.tree:q} --record {output.record:q} 2> {log:q}"
        " || {{ rc=$?; tail -n 1 {log:q} >&2; exit $rc; }}"


rule datasets:
    input:
        expand("data/datasets/{dataset}.json", dataset=DATASETS),
