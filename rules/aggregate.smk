# Stage 8: the DuckDB warehouse over every Parquet table, with the metric views.


rule warehouse:
    input:
        manifest=rules.manifest.output.manifest,
        rejects=rules.manifest.output.rejects,
        sql=sorted(glob.glob(os.path.join(workflow.basedir, "pipeline/warehouse/sql/*.sql"))),
    output:
        "data/warehouse.duckdb",
    conda:
        CONDA_ENV
    log:
        "logs/warehouse.log",
    shell:
        "python -m pipeline.warehouse.build --out {output:q}"
        " --table manifest {input.manifest:q} --table rejects {input.rejects:q} 2> {log:q}"
