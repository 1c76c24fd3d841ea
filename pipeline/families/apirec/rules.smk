# apirec (APIBench-C): recommendation points from the shared API extraction, and the n-gram baseline.


rule apirec:
    input:
        usages="data/extract/usages.parquet",
        imports="data/extract/imports.parquet",
        manifest="data/manifest.parquet",
    output:
        points="data/families/apirec/points.parquet",
        baselines="data/families/apirec/baselines.parquet",
        metrics="reports/metrics/apirec.json",
    params:
        domains=[f"{k}={v}" for k, v in sorted(config["apirec"]["domains"].items())],
        default_domain=config["apirec"]["default_domain"],
        eval_split=config["apirec"]["eval_split"],
        max_points=config["apirec"]["max_points"],
        candidates=config["apirec"]["candidates"],
        top_k=config["apirec"]["top_k"],
        ide_max_points=config["apirec"]["ide_max_points"],
        seed=config["seed"],
    conda:
        CONDA_ENV
    log:
        "logs/apirec/generate.log",
    shell:
        "python -m pipeline.families.apirec.generate --usages {input.usages:q} --imports {input.imports:q}"
        " --manifest {input.manifest:q} --domains {params.domains:q} --default-domain {params.default_domain:q}"
        " --eval-split {params.eval_split} --max-points {params.max_points} --candidates {params.candidates}"
        " --top-k {params.top_k} --seed {params.seed} --ide-max-points {params.ide_max_points} --points {output.points:q}"
        " --baselines {output.baselines:q} --metrics {output.metrics:q} 2> {log:q}"
