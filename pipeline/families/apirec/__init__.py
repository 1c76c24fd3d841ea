"""apirec (APIBench, "Revisiting, Benchmarking and Exploring API Recommendation: How Far Are We?"):
code-based API recommendation points (APIBench-C, Python and Java) ranked by an n-gram baseline and
re-ranked by every zoo LM; query-based API recommendation (APIBench-Q, Python) ranked by BM25 and
by every encoder-only model's embedding similarity. See README.md here."""

from pathlib import Path

from pipeline.registry import EvaluationSet, Family, Inference, ItemDates, Plot, Reference, SubsetTask, Table
from pipeline.families.apirec import schemas

FOLDER = Path(__file__).parent
POINTS = "data/families/apirec/points.parquet"
BASELINES = "data/families/apirec/baselines.parquet"
QUERIES = "data/families/apirec/queries.parquet"
API_DOCS = "data/families/apirec/api_docs.parquet"
QUERY_BASELINES = "data/families/apirec/query_baselines.parquet"
LM_FAMILIES = ("masked-lm", "causal-lm", "encoder-decoder")


def generate_params(config) -> dict:
    """The params of apirec_points and its shard jobs (rules.smk): read while each rule is defined, so
    pipeline.dvctrace attributes the reads to it."""
    apirec = config["apirec"]
    return dict(
        domains=[f"{k}={v}" for k, v in sorted(apirec["domains"].items())],
        default_domain=apirec["default_domain"],
        eval_split=apirec["eval_split"],
        max_points=apirec["max_points"],
        candidates=apirec["candidates"],
        top_k=apirec["top_k"],
        ide_max_points=apirec["ide_max_points"],
        ide_typed_chars=apirec["ide_typed_chars"],
        popular=apirec["popular_libraries"],
        cross_domain="--cross-domain" if apirec["cross_domain"] else "",
        java_max_points=apirec["java_max_points"],
        # distributions (pipeline/extract/library.py): the standard libraries (Python's, the JDK), sources of many projects
        stdlib=[s["name"] for s in config["corpus"]["sources"] if s.get("builtin") in ("stdlib", "jdk")],
        per_repo=[s["name"] for s in config["corpus"]["sources"] if s["kind"] == "jsonl"],
        seed=config["seed"],
    )


def generate_shell(*tail: str) -> str:
    """The generator's command with `generate_params`'s arguments, then `tail` (a shard step's, the outputs)."""
    return " ".join((
        "python -m pipeline.families.apirec.generate --usages {input.usages:q} --imports {input.imports:q}"
        " --inventory {input.inventory:q}"
        " --manifest {input.manifest:q} --domains {params.domains:q} --default-domain {params.default_domain:q}"
        " --eval-split {params.eval_split} --max-points {params.max_points} --candidates {params.candidates}"
        " --top-k {params.top_k} --seed {params.seed} --ide-max-points {params.ide_max_points}"
        " --ide-typed-chars {params.ide_typed_chars} --popular-libraries {params.popular:q} {params.cross_domain}"
        " --java-max-points {params.java_max_points} --stdlib-sources {params.stdlib:q}"
        " --per-repository-sources {params.per_repo:q}", *tail))


def queries_params(config) -> dict:
    """The params of apirec_queries and its shard jobs (rules.smk), read while each rule is defined."""
    apirec = config["apirec"]
    return dict(
        domains=[f"{k}={v}" for k, v in sorted(apirec["domains"].items())],
        default_domain=apirec["default_domain"],
        eval_split=apirec["eval_split"],
        max_queries=apirec["queries"]["max_queries"],
        candidates=apirec["queries"]["candidates"],
        api_doc=apirec["queries"]["api_doc"],
        top_k=apirec["top_k"],
        seed=config["seed"],
    )


def queries_shell(*tail: str) -> str:
    """The query builder's command with `queries_params`'s arguments, then `tail` (a shard's part, the outputs)."""
    return " ".join((
        "python -m pipeline.families.apirec.queries --usages {input.usages:q} --inventory {input.inventory:q}"
        " --imports {input.imports:q}"
        " --manifest {input.manifest:q} --domains {params.domains:q} --default-domain {params.default_domain:q}"
        " --eval-split {params.eval_split} --max-queries {params.max_queries} --candidates {params.candidates}"
        " --api-doc {params.api_doc} --top-k {params.top_k} --seed {params.seed}", *tail))


def inputs(config, subset: str) -> dict[str, str]:
    return {"points": POINTS} if subset == "code" else {"queries": QUERIES, "api_docs": API_DOCS}


FAMILY = Family(
    name="apirec",
    title="apirec (APIBench-C and APIBench-Q, Table 5 metrics)",
    paper="Revisiting, Benchmarking and Exploring API Recommendation: How Far Are We? (arXiv 2112.12653; "
          "seeds/003_*)",
    version="2",
    folder=FOLDER,
    subsets=lambda config: ["code", "query"],
    targets=lambda config: [POINTS, BASELINES, QUERIES, API_DOCS, QUERY_BASELINES, "reports/metrics/apirec.json"],
    tables=(
        Table("points", schemas.POINTS, "APIBench-C recommendation points (context, answers, metadata)",
              lambda config: [POINTS]),
        Table("baselines", schemas.BASELINES, "baseline rankings per point (n-gram, jedi)", lambda config: [BASELINES]),
        Table("queries", schemas.QUERIES, "APIBench-Q queries (docstring first sentences, comments above calls)",
              lambda config: [QUERIES]),
        Table("api_docs", schemas.API_DOCS, "the query task's candidate API universe and its documents",
              lambda config: [API_DOCS]),
        Table("query_baselines", schemas.BASELINES, "BM25 rankings per query", lambda config: [QUERY_BASELINES]),
    ),
    inference=Inference(
        task="pipeline.families.apirec.infer",
        schema=schemas.PREDICTIONS,
        description="apirec: code points re-ranked by LM likelihood (subset code); queries ranked by encoder "
                    "embedding similarity (subset query)",
        inputs=inputs,
        params=lambda config: {"inference": config["apirec"]["inference"]},
        model_families=LM_FAMILIES,
        not_applicable="no LM head (code points) and no encoder-only model (queries)",
        strata=lambda config: ["python", "java"],  # a zoo entry's cap per value
        strata_name="language of the code points",
        # each code point's date (its function's first release, else its file's) before inference: a zoo cap on
        # the code points may draw by label
        item_dates=ItemDates("15_contamination_dates.sql", "apirec_point_dates", "item_id",
                             ("manifest", "first_seen_functions", "first_seen_apis", "inventory", "imports",
                              "apirec_points"),
                             subsets=("code",)),
        per_subset={"query": SubsetTask("pipeline.families.apirec.infer_query", ("encoder-only",))},
    ),
    report="pipeline.families.apirec.report",
    headline="SELECT model, metric, value, n FROM apirec_headline",
    plots=(Plot("apirec_sr_by_category.csv", "k", "SR@k (method)", "apirec: SR@k by system and API category"),
           Plot("apirec_sr_by_context.csv", "k", "SR@k (method)", "apirec: SR@k by system and context lines")),
    references=lambda config: [Reference(
        "apirec.domains", tuple(k for k, v in config["apirec"].get("domains", {}).items() if v is not None),
        tuple(s["name"] for s in config["corpus"]["sources"]), "corpus.sources names", null_drops=True)],
    evaluation=lambda config: [
        EvaluationSet("points", "python", POINTS, suffixes=(".py",), fix="or choose apirec.eval_split",
                      every_source=True, by=("source", "library_group", "domain")),
        EvaluationSet("points", "java", POINTS, suffixes=(".java",), fix="or choose apirec.eval_split",
                      every_source=True, by=("source", "library_group", "domain")),
        EvaluationSet("queries", "python", QUERIES, fix="or choose apirec.eval_split", by=("source", "category", "domain"),
                      checked_per_source=False),
    ],
)
