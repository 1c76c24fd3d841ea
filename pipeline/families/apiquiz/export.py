"""apiquiz as a dataset (pipeline.export): one config per setting (call, import, alias, adversarial_alias, nl), every
quiz in the `test` split (quizzes are asked of every API the corpus calls; `seen` says whether a train-split file
calls it). A quiz's text is made from the API's name (a template, not corpus code), so no quiz is a reference only;
its `source` is the one defining the API (the inventory's, by name, else by library). `ranked_candidates` are the names the `rank` protocol ranks (the gold and the first
`apiquiz.inference.max_candidates` - 1 others, sorted: infer.ranked_candidates) and `gold_index` the gold's place in
them, so an lm-evaluation-harness `multiple_choice` task scores exactly what our `rank` protocol scores."""

from pipeline.export import ExportConfig

SETTINGS = ("call", "import", "alias", "adversarial_alias", "nl")


def ranked(cap: int) -> str:
    """SQL of infer.ranked_candidates: the gold plus the first cap - 1 other candidates, sorted."""
    others = "list_filter(candidates, lambda c: c <> answer)"
    if cap:
        others = f"{others}[1:{cap - 1}]"
    return f"list_sort(list_prepend(answer, {others}))"


def configs(config: dict) -> list[ExportConfig]:
    cap = int(config["apiquiz"]["inference"]["max_candidates"])
    out = []
    for setting in [s for s in SETTINGS if s in config["apiquiz"]["settings"]]:
        sql = (f"SELECT quiz_id, api, library, repository AS api_repository, category, private, setting, level, "
               f"n_levels, level_name, level_kind, mask_position, alias, context, text, prefix, suffix, answer, "
               f"candidates, {ranked(cap)} AS ranked_candidates, "
               f"list_position({ranked(cap)}, answer) - 1 AS gold_index, seen, uses, context_leak, "
               f"coalesce((SELECT min(i.source) FROM inventory i WHERE i.fqn = q.api), "
               f"(SELECT min(i.source) FROM inventory i WHERE i.library = q.library)) AS source, "
               f"'test' AS split FROM apiquiz_quizzes q WHERE setting = '{setting}'")
        out.append(ExportConfig(
            name=setting, key="quiz_id", sql=sql, dates=("apiquiz_quiz_dates", "quiz_id"), lm_eval="apiquiz",
            description=f"cloze quizzes on API names, {setting} setting: `text` with `<mask>` where `answer` goes; "
                        f"`ranked_candidates` the names ranked (gold at `gold_index`); context-leaking nl quizzes "
                        f"(`context_leak`) are left out of our headline",
            extra={"max_candidates": cap}))
    return out


# lm-evaluation-harness (pipeline.export.lm_eval): one multiple_choice task per setting. The context is the quiz's
# prefix, each choice a ranked candidate followed by the quiz's suffix (the continuation our `rank` protocol scores
# under `scoring: lm-eval`); the rank orders the choices by rounded log-likelihood, ties by name (rank_of).
LM_EVAL = {
    "context": "prefix",
    "configs": None,  # every exported config
    "metrics": ("p_at_1", "p_at_5", "p_at_10"),
    "utils": '''
def choices(doc):
    return [c + doc["suffix"] for c in doc["ranked_candidates"]]


def target(doc):
    return int(doc["gold_index"])


def results(doc, results):
    names = list(doc["ranked_candidates"])
    rank = _rank([r[0] for r in results], names, int(doc["gold_index"]))
    out = {"gold_rank": rank}
    for k in (1, 5, 10):
        # P@k over the quizzes with more than k ranked names (apiquiz_by_setting); None leaves a quiz out
        out[f"p_at_{k}"] = float(rank <= k) if len(names) > k else None
    return out
''',
}
