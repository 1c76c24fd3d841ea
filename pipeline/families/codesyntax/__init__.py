"""codesyntax (CodeSyntax, "Benchmarking Language Models for Code Syntax Understanding"): do
attention heads find the AST relations of code? See README.md here."""

from pathlib import Path

from pipeline.registry import EvaluationSet, Family, Inference, Plot, Reference, Table
from pipeline.families.codesyntax import schemas

FOLDER = Path(__file__).parent
LABELS = "data/families/codesyntax/{variant}/{language}/{table}.parquet"
VARIANT_FROM_PATH = "regexp_extract(filename, '/codesyntax/([^/]+)/', 1) AS variant"


def labelled(table: str, config) -> list[str]:
    block = config["codesyntax"]
    return [LABELS.format(variant=v, language=lang, table=table) for v in block["variants"] for lang in block["languages"]]


def targets(config) -> list[str]:
    return ["reports/metrics/codesyntax.json", "data/families/codesyntax/stats.md",
            *labelled("samples", config), *labelled("relations", config), *labelled("baselines", config)]


FAMILY = Family(
    name="codesyntax",
    title="CodeSyntax (Table 3)",
    paper="Benchmarking Language Models for Code Syntax Understanding (EMNLP Findings 2022; seeds/001_*)",
    # 2: predictions carry the labelled variant they were evaluated on; 3: and test samples' own hits; 4: Java labels
    # as Eclipse JDT's tree has them (throws, finally and a switch case's colon: 99.92% of the release's JDT edges)
    version="4",
    folder=FOLDER,
    subsets=lambda config: list(config["codesyntax"]["languages"]),
    targets=targets,
    rejects=lambda config: labelled("rejects", config),
    tables=(
        Table("samples", schemas.SAMPLES, "CodeSyntax samples: functions with their tokens",
              lambda config: labelled("samples", config), VARIANT_FROM_PATH),
        Table("relations", schemas.RELATIONS, "CodeSyntax relation edges (token indices)",
              lambda config: labelled("relations", config), VARIANT_FROM_PATH),
        Table("baselines", schemas.BASELINES,
              "CodeSyntax offset/keyword/combined baseline hits per relation and k",
              lambda config: labelled("baselines", config)),
    ),
    inference=Inference(
        task="pipeline.families.codesyntax.infer",
        schema=schemas.ATTENTION_HITS,
        description="CodeSyntax: attention hit counts per model, variant, relation, layer and head",
        inputs=lambda config, subset: {
            "samples": LABELS.format(variant=config["codesyntax"]["inference"]["variant"], language=subset,
                                     table="samples"),
            "relations": LABELS.format(variant=config["codesyntax"]["inference"]["variant"], language=subset,
                                       table="relations")},
        params=lambda config: {"inference": config["codesyntax"]["inference"], "ks": config["codesyntax"]["ks"]},
        model_families=("masked-lm", "encoder-decoder", "encoder-only"),
        not_applicable="causal attention cannot look ahead from a head word to its dependent",
        attentions=True,
    ),
    report="pipeline.families.codesyntax.report",
    headline="SELECT system AS model, 'top1_first_' || language || '_chosen_on_' || chosen_on AS metric, score AS value, "
             "edges AS n FROM codesyntax_scores WHERE metric = 'first' AND k = 1",
    plots=(Plot("codesyntax_layers.csv", "layer", "top-1 (fraction) of the best head, mean over relations",
                "codesyntax: best head per layer, by model and language"),),
    # heads and baselines are chosen on the dev side; scores are on the test side (its files, codesyntax.dev_fraction)
    references=lambda config: [Reference(
        "codesyntax.inference.variant", (config["codesyntax"]["inference"]["variant"],),
        tuple(config["codesyntax"]["variants"]), "codesyntax.variants")],
    evaluation=lambda config: [
        EvaluationSet("test samples", lang, LABELS.format(variant=config["codesyntax"]["inference"]["variant"],
                                                          language=lang, table="samples"),
                      where=(("eval_split", "test"),), fix="or lower codesyntax.dev_fraction", by=("source",))
        for lang in config["codesyntax"]["languages"]],
)
