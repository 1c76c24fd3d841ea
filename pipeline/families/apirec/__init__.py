"""apirec (APIBench, "Revisiting, Benchmarking and Exploring API Recommendation: How Far Are We?"):
code-based API recommendation points (APIBench-C, Python) ranked by an n-gram baseline and
re-ranked by every zoo LM. See README.md here."""

from pathlib import Path

from pipeline.families import Family, Inference, Table
from pipeline.families.apirec import schemas

FOLDER = Path(__file__).parent
POINTS = "data/families/apirec/points.parquet"
BASELINES = "data/families/apirec/baselines.parquet"

FAMILY = Family(
    name="apirec",
    title="apirec (APIBench-C, Table 5 metrics)",
    paper="Revisiting, Benchmarking and Exploring API Recommendation: How Far Are We? (arXiv 2112.12653; "
          "seeds/003_*)",
    version="1",
    folder=FOLDER,
    subsets=lambda config: ["code"],
    targets=lambda config: [POINTS, BASELINES, "reports/metrics/apirec.json"],
    tables=(
        Table("points", schemas.POINTS, "APIBench-C recommendation points (context, answers, metadata)",
              lambda config: [POINTS]),
        Table("baselines", schemas.BASELINES, "baseline rankings per point (n-gram)", lambda config: [BASELINES]),
    ),
    inference=Inference(
        task="pipeline.families.apirec.infer",
        schema=schemas.PREDICTIONS,
        description="apirec: the n-gram's top candidates re-ranked by likelihood of the completed context",
        inputs=lambda config, subset: {"points": POINTS},
        params=lambda config: {"inference": config["apirec"]["inference"]},
        model_families=("masked-lm", "causal-lm", "encoder-decoder"),
        not_applicable="no LM head: candidates are ranked by the likelihood of the completed context",
    ),
    report="pipeline.families.apirec.report",
    headline="SELECT model, metric, value FROM apirec_headline",
    plots=("apirec_sr_by_category.csv",),
)
