# Stage 8: the DuckDB warehouse over every Parquet table, with the metric views.


rule warehouse:
    input:
        manifest=rules.manifest.output.manifest,
        rejects=[rules.manifest.output.rejects, rules.extract.output.rejects]
        + expand(rules.codesyntax_label.output.rejects, cs_variant=CODESYNTAX["variants"],
                 cs_language=CODESYNTAX["languages"]),
        usages=rules.extract.output.usages,
        imports=rules.extract.output.imports,
        inventory=rules.extract.output.inventory,
        quizzes=rules.apiquiz.output.quizzes,
        quiz_tokens=rules.apiquiz.output.tokens,
        syntax_samples=expand(rules.codesyntax_label.output.samples, cs_variant=CODESYNTAX["variants"],
                              cs_language=CODESYNTAX["languages"]),
        syntax_relations=expand(rules.codesyntax_label.output.relations, cs_variant=CODESYNTAX["variants"],
                                cs_language=CODESYNTAX["languages"]),
        syntax_baselines=expand(rules.codesyntax_baselines.output.baselines, cs_variant=CODESYNTAX["variants"],
                                cs_language=CODESYNTAX["languages"]),
        apiquiz_predictions=rules.inference.input.apiquiz,
        syntax_attention=rules.inference.input.codesyntax,
        sql=sorted(glob.glob(os.path.join(workflow.basedir, "pipeline/warehouse/sql/*.sql"))),
    output:
        "data/warehouse.duckdb",
    conda:
        CONDA_ENV
    log:
        "logs/warehouse.log",
    shell:
        "python -m pipeline.warehouse.build --out {output:q}"
        " --table manifest {input.manifest:q} --table rejects {input.rejects:q}"
        " --table usages {input.usages:q} --table imports {input.imports:q} --table inventory {input.inventory:q}"
        " --table quizzes {input.quizzes:q} --table quiz_tokens {input.quiz_tokens:q}"
        " --table syntax_samples {input.syntax_samples:q} --table syntax_relations {input.syntax_relations:q}"
        " --table syntax_baselines {input.syntax_baselines:q}"
        " --table apiquiz_predictions {input.apiquiz_predictions:q} --table syntax_attention {input.syntax_attention:q}"
        " 2> {log:q}"


rule report:
    input:
        warehouse=rules.warehouse.output[0],
        models=rules.models.output[0],
    output:
        index="reports/index.md",
        figures=directory("reports/figures/report"),
    conda:
        CONDA_ENV
    log:
        "logs/report.log",
    shell:
        "python -m pipeline.report.build --db {input.warehouse:q} --models-metrics {input.models:q}"
        " --out {output.index:q} --figures {output.figures:q} 2> {log:q}"
