# The DuckDB warehouse over every Parquet table (core, each family's, predictions, provenance)
# with the metric views; then the report. Everything family-specific comes from the registry.


WAREHOUSE_TABLES = warehouse_tables()


rule warehouse_spec:
    input:
        sources=expand("data/sources/{source}.json", source=SOURCES),
        models=expand("data/models/{model}", model=ZOO),
        datasets=rules.datasets.input,
    output:
        "data/warehouse.spec.json",
    params:
        tables=WAREHOUSE_TABLES,
        not_applicable=registry.not_applicable(FAMILIES, INFERENCE_MODELS, SKIPPED),
        params={k: config[k] for k in config if k not in ("query", "export")},  # read by their commands, not by rules
    log:
        "logs/warehouse_spec.log",
    run:
        from pipeline.io import write_json

        write_json({"tables": params.tables, "params": params.params, "not_applicable": params.not_applicable,
                    "models": list(input.models), "sources": list(input.sources),
                    "datasets": list(input.datasets)}, output[0])


rule warehouse:
    input:
        spec=rules.warehouse_spec.output[0],
        tables=[path for paths in WAREHOUSE_TABLES.values() for path in paths],
        # relative to the working directory: a moved or copied project plans the same inputs
        sql=[os.path.relpath(p) for p in sorted(glob.glob(os.path.join(workflow.basedir, "pipeline/warehouse/sql/*.sql")))]
        + [os.path.relpath(p) for f in FAMILIES for p in f.sql],
    output:
        "data/warehouse.duckdb",
    conda:
        CONDA_ENV
    log:
        "logs/warehouse.log",
    shell:
        "python -m pipeline.warehouse.build --out {output:q} --spec {input.spec:q} 2> {log:q}"


rule report:
    input:
        warehouse=rules.warehouse.output[0],
        models=rules.models.output[0],
        evaluation=rules.evaluation_metrics.output.metrics,  # the corpus page's per-source evaluation table
        evaluation_passed=rules.evaluation_sizes.output.passed,  # and only after the check passed
    output:
        index="reports/index.md",
        html="reports/index.html",
        # the first read links one page per family with a report (and the corpus's and the zoo's), as
        # pipeline.report.build.detail_pages names them
        pages=[f"reports/{name}.{ext}" for name in ["corpus", "models", *(f.name for f in FAMILIES if f.report)]
               for ext in ("md", "html")],
        figures=directory("reports/figures/report"),
        scores="reports/metrics/scores.json",
        # each plot CSV by name, never directory("reports/plots"): Snakemake leaves a .snakemake_timestamp in a
        # directory() output, which `dvc plots` would try to read
        plots=[f"reports/plots/{p.file}" for f in FAMILIES for p in f.plots],
    params:
        families=[f.name for f in FAMILIES],
        # the folder of the plot CSVs, from the outputs (snakemake --lint: no hard-coded output prefix)
        plots=lambda wildcards, output: os.path.dirname(output.plots[0]) if output.plots else "reports/plots",
        # the power floor: headline cells over fewer items print "too few items" (pipeline.report.common)
        min_n=(config.get("report") or {}).get("min_n", 100),
    # the report's parts (each family's section, the headline rows, the corpus) run side by side: the report is the
    # build's last job, alone on the machine (137 s on one core of the default's 2 before)
    threads: 2
    conda:
        CONDA_ENV
    log:
        "logs/report.log",
    shell:
        "python -m pipeline.report.build --db {input.warehouse:q} --models-metrics {input.models:q}"
        " --out {output.index:q} --figures {output.figures:q} --scores {output.scores:q}"
        " --plots {params.plots:q} --html {output.html:q} --min-n {params.min_n}"
        " --evaluation {input.evaluation:q} --workers {threads} 2> {log:q}"


# `snakemake data/export/<family>` (not in the default target): the family's built benchmark as a Hugging Face dataset
# folder with its card and Croissant metadata (python -m pipeline export --help; docs/export.md)
rule export:
    input:
        warehouse=rules.warehouse.output[0],
    output:
        directory("data/export/{family}"),
    wildcard_constraints:
        family="|".join(re.escape(f.name) for f in FAMILIES),
    params:
        config=lambda wildcards: json.dumps(config, sort_keys=True, default=str),
    conda:
        CONDA_ENV
    log:
        "logs/export/{family}.log",
    shell:
        "python -m pipeline export {wildcards.family} --out {output:q} --warehouse {input.warehouse:q}"
        " --params-json {params.config:q} > {log:q} 2>&1"
