"""apiquiz (INK, "Pop Quiz! Do Pre-trained Code Models Possess Knowledge of Correct Usage of
APIs?"): cloze quizzes on the fully qualified names the corpus calls. See README.md here."""

from pathlib import Path

from pipeline.registry import EvaluationSet, Family, Inference, ItemDates, Plot, Table
from pipeline.families.apiquiz import schemas

FOLDER = Path(__file__).parent
QUIZZES = "data/families/apiquiz/quizzes.parquet"
QUIZ_TOKENS = "data/families/apiquiz/quiz_tokens.parquet"
API_NAMES = "data/families/apiquiz/api_names.parquet"

def generate_params(config) -> dict:
    """The params of apiquiz and its shard jobs (rules.smk): read while each rule is defined, so pipeline.dvctrace
    attributes the reads to it."""
    apiquiz = config["apiquiz"]
    return dict(
        tokenizers=apiquiz["tokenizers"],
        settings=apiquiz["settings"],
        max_candidates=apiquiz["max_candidates"],
        adversarial_aliases=apiquiz["adversarial_aliases"],
        seed=config["seed"],
        private="--include-private" if apiquiz["include_private"] else "",
        optional="--include-optional-dependencies" if apiquiz.get("include_optional_dependencies") else "",
    )


def generate_shell(*tail: str) -> str:
    """The generator's command with `generate_params`'s arguments, then `tail` (a shard's part, or the outputs)."""
    return " ".join((
        "python -m pipeline.families.apiquiz.generate --usages {input.usages:q} --inventory {input.inventory:q}"
        " --imports {input.imports:q} {params.private} {params.optional}"
        " --tokenizers {params.tokenizers:q} --settings {params.settings:q}"
        " --max-candidates {params.max_candidates} --adversarial-aliases {params.adversarial_aliases}"
        " --seed {params.seed}", *tail))


FAMILY = Family(
    name="apiquiz",
    title="apiquiz (INK, Table III)",
    paper="Pop Quiz! Do Pre-trained Code Models Possess Knowledge of Correct Usage of APIs? (arXiv 2309.07804; "
          "seeds/000_*)",
    version="1",
    folder=FOLDER,
    subsets=lambda config: ["all"],
    targets=lambda config: [QUIZZES, QUIZ_TOKENS, API_NAMES, "reports/metrics/apiquiz.json"],
    tables=(
        Table("quizzes", schemas.QUIZZES, "apiquiz cloze quizzes", lambda config: [QUIZZES]),
        Table("quiz_tokens", schemas.QUIZ_TOKENS, "per quiz and tokenizer: is the answer one token",
              lambda config: [QUIZ_TOKENS]),
        Table("api_names", schemas.API_NAMES, "which called names (per source, repository) are which quizzed API",
              lambda config: [API_NAMES]),
    ),
    inference=Inference(
        task="pipeline.families.apiquiz.infer",
        schema=schemas.PREDICTIONS,
        description="apiquiz: gold rank and top-k per quiz, model and protocol",
        inputs=lambda config, subset: {"quizzes": QUIZZES},
        params=lambda config: {"inference": config["apiquiz"]["inference"]},
        model_families=("masked-lm", "causal-lm", "encoder-decoder"),
        not_applicable="no LM head: neither fill-mask nor likelihood ranking can be scored",
        strata=lambda config: ("call", "import", "alias", "adversarial_alias", "nl"),  # a zoo entry's cap per value
        strata_name="setting",
        # each quiz's date (its API's definition; its context's beside it) before inference: a zoo cap may draw by label
        item_dates=ItemDates("15_contamination_dates.sql", "apiquiz_quiz_dates", "quiz_id",
                             ("manifest", "usages", "inventory", "imports", "first_seen_functions",
                              "first_seen_apis", "apiquiz_quizzes", "apiquiz_api_names"),
                             group="library"),  # a matched draw balances libraries across the two sides
    ),
    report="pipeline.families.apiquiz.report",
    headline="SELECT model, 'p_at_1_' || protocol || '_' || setting AS metric, p_at_1 AS value, scored AS n "
             "FROM apiquiz_by_setting WHERE scored > 0 AND p_at_1 IS NOT NULL",
    plots=(Plot("apiquiz_p_at_k.csv", "k", "P@k (fraction)", "apiquiz: P@k by model and protocol"),),
    # a library none of whose called APIs is quizzed: its reason is the generator's (metrics `why_none`)
    evaluation=lambda config: [EvaluationSet("quizzes", "python", QUIZZES, source_of="library",
                                             why_none="reports/metrics/apiquiz.json")],
)
