"""idbench (IdBench, "IdBench: Evaluating Semantic Representations of Identifier Names in Source
Code"): string distances, the release's embeddings and every zoo model's per-layer embedding of
identifiers, against developers' relatedness / similarity ratings. See README.md here."""

from pathlib import Path

from pipeline.families import Family, Inference, Table
from pipeline.families.idbench import schemas

FOLDER = Path(__file__).parent
OUT = "data/families/idbench"
PAIRS = f"{OUT}/pairs.parquet"
IDENTIFIERS = f"{OUT}/identifiers.parquet"
SCORES = f"{OUT}/scores.parquet"
INTERESTING = f"{OUT}/interesting.parquet"
ENSEMBLE = f"{OUT}/ensemble.parquet"

FAMILY = Family(
    name="idbench",
    title="idbench (IdBench, Figure 2)",
    paper="IdBench: Evaluating Semantic Representations of Identifier Names in Source Code (ICSE 2021, "
          "arXiv 1910.05177; seeds/002_*)",
    version="1",
    folder=FOLDER,
    subsets=lambda config: ["all"],
    targets=lambda config: [PAIRS, IDENTIFIERS, SCORES, INTERESTING, ENSEMBLE, "reports/metrics/idbench.json"],
    tables=(
        Table("pairs", schemas.PAIRS, "IdBench pairs per size: gold scores and the release's own per-pair scores",
              lambda config: [PAIRS]),
        Table("identifiers", schemas.IDENTIFIERS, "IdBench distinct identifiers (what models embed)",
              lambda config: [IDENTIFIERS]),
        Table("scores", schemas.SCORES, "IdBench technique scores computed here (LV, NW) per pair",
              lambda config: [SCORES]),
        Table("interesting", schemas.INTERESTING, "IdBench interesting subsets (abbreviations, synonyms, ...)",
              lambda config: [INTERESTING]),
        Table("ensemble", schemas.ENSEMBLE, "IdBench SVR ensemble: leave-one-out prediction per size, gold and pair",
              lambda config: [ENSEMBLE]),
    ),
    inference=Inference(
        task="pipeline.families.idbench.infer",
        schema=schemas.PREDICTIONS,
        description="idbench: per-layer pooled embedding of each identifier",
        inputs=lambda config, subset: {"identifiers": IDENTIFIERS},
        params=lambda config: {"inference": config["idbench"]["inference"]},
        model_families=("masked-lm", "causal-lm", "encoder-decoder", "encoder-only"),
        not_applicable="every model family embeds identifiers",
        hidden_states=True,
    ),
    report="pipeline.families.idbench.report",
    headline="SELECT system AS model, 'spearman_' || gold || '_' || size AS metric, rho AS value "
             "FROM idbench_headline",
    plots=("idbench_layers.csv",),
)
