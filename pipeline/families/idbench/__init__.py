"""idbench (IdBench, "IdBench: Evaluating Semantic Representations of Identifier Names in Source
Code"): string distances, the release's embeddings and every zoo model's per-layer embedding of
identifiers, against developers' relatedness / similarity ratings. See README.md here."""

from pathlib import Path

from pipeline.registry import Family, Inference, Plot, Reference, Table
from pipeline.families.idbench import schemas

FOLDER = Path(__file__).parent
OUT = "data/families/idbench"
PAIRS = f"{OUT}/pairs.parquet"
IDENTIFIERS = f"{OUT}/identifiers.parquet"
SCORES = f"{OUT}/scores.parquet"
INTERESTING = f"{OUT}/interesting.parquet"
ENSEMBLE = f"{OUT}/ensemble.parquet"
EMBEDDING_SCORES = f"{OUT}/embedding_scores.parquet"
EMBEDDING_VOCAB = f"{OUT}/embedding_vocab.parquet"
EMBEDDING_MODELS = f"{OUT}/embedding_models.parquet"
NEW_PAIRS = f"{OUT}/new_pairs.parquet"


def _embedded(config, *paths: str) -> list[str]:
    """Files that exist only when the corpus-trained embeddings are enabled (params embeddings.enabled)."""
    return list(paths) if config["idbench"]["embeddings"]["enabled"] else []


FAMILY = Family(
    name="idbench",
    title="idbench (IdBench, Figure 2)",
    paper="IdBench: Evaluating Semantic Representations of Identifier Names in Source Code (ICSE 2021, "
          "arXiv 1910.05177; seeds/002_*)",
    version="1",
    folder=FOLDER,
    subsets=lambda config: ["all"],
    targets=lambda config: [PAIRS, IDENTIFIERS, SCORES, INTERESTING, ENSEMBLE, "reports/metrics/idbench.json",
                            *_embedded(config, EMBEDDING_SCORES, EMBEDDING_VOCAB, EMBEDDING_MODELS, NEW_PAIRS)],
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
        Table("embedding_scores", schemas.SCORES, "IdBench: cosine per pair of the corpus-trained word2vec / FastText",
              lambda config: _embedded(config, EMBEDDING_SCORES)),
        Table("embedding_vocab", schemas.EMBEDDING_VOCAB,
              "IdBench: each identifier in or out of each corpus-trained embedding's vocabulary",
              lambda config: _embedded(config, EMBEDDING_VOCAB)),
        Table("embedding_models", schemas.EMBEDDING_MODELS,
              "IdBench: the corpus-trained embeddings (training data, vocabulary, coverage)",
              lambda config: _embedded(config, EMBEDDING_MODELS)),
        Table("new_pairs", schemas.NEW_PAIRS, "IdBench-style new identifier pairs for a rating survey",
              lambda config: _embedded(config, NEW_PAIRS)),
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
    # models: the layer chosen on held-out pairs (idbench_held_out_layer), never the oracle best layer
    headline="SELECT system AS model, 'spearman_' || gold || '_' || size AS metric, rho AS value, n "
             "FROM idbench_headline WHERE kind <> 'model' UNION ALL "
             "SELECT model, 'spearman_' || gold || '_' || size, round(rho, 4), n FROM idbench_held_out_layer",
    plots=(Plot("idbench_layers.csv", "layer", "Spearman rho", "idbench: rho per layer, by model, gold and size"),),
    references=lambda config: [Reference("idbench.dataset", (config["idbench"]["dataset"],),
                                         tuple(d["name"] for d in config.get("datasets", [])), "datasets names")],
)
