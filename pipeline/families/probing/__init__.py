"""probing (Troshin & Chirkova, "Probing Pretrained Models of Source Codes", BlackboxNLP 2022;
seeds/004_*): linear probes on frozen per-layer pooled features. See README.md here."""

from pathlib import Path

from pipeline.registry import EvaluationSet, Family, Fit, Inference, Plot, Table, fit_baselines_file
from pipeline.families.probing import schemas
from pipeline.schemas import FEATURES, FIT_RESULTS

FOLDER = Path(__file__).parent
ROOT = "data/families/probing"
# the release's definitions (pipeline/families/probing/release.py; the paper-comparable table), then
# our earlier definitions, kept beside them as named variants (tasks.py; README "conformance")
RELEASE_TASKS = ("path_type", "depth", "declared", "dataflow", "variable_name", "misuse")
VARIANTS = ("path_type_ours", "depth_any_leaf", "declared_every", "dataflow_last_def", "variable_name_declared",
            "misuse_declared")
# the release's definitions labelled on the parser the release ran on (py-tree-sitter 0.19.0 + tree-sitter-java ac14b4b,
# runtime019.py / grammar.py):
# the labels the paper's Table 1 was trained on; Java only (the release's grammar for Java is the one pinned)
RELEASE_PARSER = "_release_parser"
RELEASE_PARSER_TASKS = RELEASE_TASKS
VARIANTS = VARIANTS + tuple(f"{t}{RELEASE_PARSER}" for t in RELEASE_PARSER_TASKS)
CORPUS_TASKS = RELEASE_TASKS + VARIANTS
REGRESSION = ("depth", "depth_any_leaf", "depth_release_parser")
# the release's insertion points are Java blocks (Python: declared_every); the release's pinned grammar is Java's
JAVA_ONLY = ("declared",) + tuple(f"{t}{RELEASE_PARSER}" for t in RELEASE_PARSER_TASKS)
CONTROL = ("path_type", "path_type_ours")  # tasks with a Hewitt & Liang control task (word type = the token)
# probing.fit.group_by -> the labels' column the fit's folds are grouped by (pipeline.fit --fold-group)
GROUP_COLUMNS = {"file": "file", "method": "group"}


def language_tasks(config, language: str) -> list[str]:
    """The tasks cut for one language: the corpus tasks, and algorithm on Python."""
    block = config["probing"]
    tasks = [t for t in block["tasks"] if t in CORPUS_TASKS and (language == "java" or t not in JAVA_ONLY)] \
        if language in block["languages"] else []
    if language == "python" and "algorithm" in block["tasks"]:
        tasks.append("algorithm")
    return tasks


def subsets(config) -> list[str]:
    """One predictions subset per language: every task's samples together (they share snippets)."""
    return [lang for lang in ("java", "python") if language_tasks(config, lang)]


def fit_tasks(config) -> list[str]:
    tasks = [f"{lang}-{task}" for lang in subsets(config) for task in language_tasks(config, lang)]
    if config["probing"]["control"]:
        tasks += [f"{t}-control" for t in list(tasks) if t.split("-", 1)[1] in CONTROL]
    return tasks


def split(fit_task: str) -> tuple[str, str]:
    lang, task = fit_task.replace("-control", "").split("-", 1)
    return lang, task


def paper_probe(config, fit_task: str) -> dict | None:
    """The release's probe on a fit task (paper.RELEASE_PROBES: its estimator and grid): on Table 1's tasks and their
    `_release_parser` twins; None on a control task and on our variants, where the release fits nothing (the `paper`
    probe skips them: selectivity and the variants are ridge's)."""
    from pipeline.families.probing.paper import RELEASE_PROBES

    if fit_task.endswith("-control"):
        return None
    return RELEASE_PROBES.get(split(fit_task)[1].removesuffix(RELEASE_PARSER))


def samples_file(language: str) -> str:
    return f"{ROOT}/{language}/samples.parquet"


def labels_file(config, fit_task: str) -> str:
    lang, task = split(fit_task)
    return f"{ROOT}/{lang}/{task}/{'control' if fit_task.endswith('-control') else 'labels'}.parquet"


def task_type(config, fit_task: str) -> str:
    return "regression" if split(fit_task)[1] in REGRESSION else "classification"


def label_files(config) -> list[str]:
    return [labels_file(config, t) for t in fit_tasks(config) if not t.endswith("-control")]


def generate_inputs(config, language: str) -> dict:
    """What `probing_generate_<language>` reads: the manifest, and the algorithm dataset on Python."""
    algorithm = "algorithm" in language_tasks(config, language)
    return {"manifest": "data/manifest.parquet", **({"algorithm": "data/datasets/algo-1671A.json"} if algorithm else {})}


def generate_params(config, language: str) -> dict:
    """The params of `probing_generate_<language>` and its shard jobs (rules.smk): read while each rule is
    defined, so pipeline.dvctrace attributes the reads to it."""
    probing = config["probing"]
    return dict(
        language=language,
        tasks=" ".join(language_tasks(config, language)),
        algorithm="--algorithm-dataset data/datasets/algo-1671A/all.json"
        if "algorithm" in language_tasks(config, language) else "",
        classes=probing["classes"],
        min_class_samples=probing["min_class_samples"],
        max_chars=probing["max_chars"],
        keep_comments="--keep-comments" if probing.get("keep_comments", False) else "",
        max_file_tokens=probing.get("max_file_tokens", 200000),
        max_snippets=probing["max_snippets"],
        max_samples=probing["max_samples"],
        per_task=",".join(f"{t}={n}" for t, n in sorted(probing.get("max_samples_per_task", {}).items())),
        seed=config["seed"],
    )


def generate_shell(*tail: str) -> str:
    """The generator's command with `generate_params`'s arguments, then `tail` (a shard step's, the outputs)."""
    return " ".join((
        "python -m pipeline.families.probing.generate corpus --manifest {input.manifest:q} --language {params.language}"
        " --tasks {params.tasks} {params.algorithm} --classes {params.classes}"
        " --min-class-samples {params.min_class_samples} --max-chars {params.max_chars} {params.keep_comments}"
        " --max-file-tokens {params.max_file_tokens}"
        " --max-snippets {params.max_snippets} --max-samples {params.max_samples}"
        " --max-samples-per-task '{params.per_task}' --seed {params.seed}", *tail))


def generate_outputs(config, language: str) -> dict:
    """What `probing_generate_<language>` writes."""
    tasks = language_tasks(config, language)
    return {"samples": samples_file(language),
            "labels": [f"{ROOT}/{language}/{t}/labels.parquet" for t in tasks],
            "control": [f"{ROOT}/{language}/{t}/control.parquet" for t in tasks if t in CONTROL],
            "summary": f"{ROOT}/{language}/summary.json"}


def targets(config) -> list[str]:
    return ["reports/metrics/probing.json", *[samples_file(s) for s in subsets(config)], *label_files(config)]


PATH_COLUMNS = ("regexp_extract(filename, '/probing/([^/]+)/', 1) AS language, "
                "regexp_extract(filename, '/probing/[^/]+/([^/]+)/', 1) AS task")

FAMILY = Family(
    name="probing",
    title="Probing pretrained models of source code (Table 1)",
    paper="Probing Pretrained Models of Source Codes (BlackboxNLP 2022; seeds/004_*, arXiv 2202.08975)",
    version="2",
    folder=FOLDER,
    subsets=subsets,
    targets=targets,
    tables=(
        Table("samples", schemas.SAMPLES, "probing samples of every task: text, kind and character spans",
              lambda config: [samples_file(s) for s in subsets(config)],
              "regexp_extract(filename, '/probing/([^/]+)/', 1) AS language"),
        Table("labels", schemas.LABELS, "probing labels (PROBE_LABELS + token count and word type)",
              label_files, PATH_COLUMNS),
        Table("baselines", FIT_RESULTS, "the paper's baselines per task on all labelled items, with the fit's folds",
              lambda config: [fit_baselines_file(FAMILY)]),
    ),
    inference=Inference(
        task="pipeline.families.probing.infer",
        schema=FEATURES,
        description="probing: per-layer pooled features (word/span mean of subtokens, snippet mean), float16",
        inputs=lambda config, subset: {"samples": samples_file(subset)},
        params=lambda config: {"inference": config["probing"]["inference"]},
        model_families=("masked-lm", "causal-lm", "encoder-decoder", "encoder-only"),
        not_applicable="every model gives hidden states",
        strata=lambda config: CORPUS_TASKS + ("algorithm",),  # a zoo entry's cap per value
        strata_name="task",
    ),
    # cross-validated over snippets (folds never split one): the snippets are the evaluation set, counted per source
    # (the per-source table) but not checked per source: they are a seeded sample of the language's methods
    # (probing.max_snippets), never drawn from a split, so which sources they come from is the sample's
    evaluation=lambda config: [EvaluationSet("snippets", lang, samples_file(lang), distinct="group", by=("source",),
                                             checked_per_source=False, fix="or raise probing.max_snippets")
                               for lang in subsets(config)],
    fit=Fit(tasks=fit_tasks, subset=lambda config, task: split(task)[0],
            labels=labels_file, task_type=task_type,
            # every probe beside the baseline on its own items (majority; linreg on the token count for depth), paired
            # on the same test samples (probing_models: vs_baseline)
            # folds grouped by the source file (`group_by: file`, the default) or by the method (`method`: the
            # labels' `group`, the earlier protocol, kept as a named variant)
            params=lambda config: {**config["probing"]["fit"], "seed": config["seed"], "majority": True,
                                   "linreg_feature": "n_tokens",
                                   "fold_group": GROUP_COLUMNS[config["probing"]["fit"].get("group_by", "file")]},
            paper=paper_probe,
            baselines="pipeline.families.probing.baselines"),
    report="pipeline.families.probing.report",
    # probes and the family's baselines (on all items); a baseline on one model's items stays in the views
    # the release's probe beside another (fit.also_probes): its scores named `<task>_<metric>_paper`
    headline="SELECT model, task || '_' || metric || CASE WHEN probe = 'paper' THEN '_paper' ELSE '' END AS metric, "
             "mean AS value, n_test AS n FROM probing_headline WHERE layer IS NOT NULL OR model = probe",
    plots=(Plot("probing_layers.csv", "layer", "probe error", "probing: error per layer, by task and model"),),
)
