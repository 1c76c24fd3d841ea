# apiquiz (INK): cloze quizzes on the fully qualified names the corpus calls.


rule apiquiz:
    input:
        usages="data/extract/usages.parquet",
        inventory="data/extract/inventory.parquet",
        imports="data/extract/imports.parquet",
    output:
        quizzes="data/families/apiquiz/quizzes.parquet",
        tokens="data/families/apiquiz/quiz_tokens.parquet",
        names="data/families/apiquiz/api_names.parquet",
        metrics="reports/metrics/apiquiz.json",
    params:
        tokenizers=config["apiquiz"]["tokenizers"],
        settings=config["apiquiz"]["settings"],
        max_candidates=config["apiquiz"]["max_candidates"],
        adversarial_aliases=config["apiquiz"]["adversarial_aliases"],
        seed=config["seed"],
        private="--include-private" if config["apiquiz"]["include_private"] else "",
        optional="--include-optional-dependencies" if config["apiquiz"].get("include_optional_dependencies") else "",
    conda:
        CONDA_ENV
    log:
        "logs/apiquiz/generate.log",
    shell:
        "python -m pipeline.families.apiquiz.generate --usages {input.usages:q} --inventory {input.inventory:q}"
        " --imports {input.imports:q} {params.private} {params.optional}"
        " --tokenizers {params.tokenizers:q} --settings {params.settings:q}"
        " --max-candidates {params.max_candidates} --adversarial-aliases {params.adversarial_aliases}"
        " --seed {params.seed} --quizzes {output.quizzes:q} --tokens {output.tokens:q} --names {output.names:q}"
        " --metrics {output.metrics:q} 2> {log:q}"
