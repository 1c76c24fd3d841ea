"""probing (Troshin & Chirkova, "Probing Pretrained Models of Source Codes", BlackboxNLP 2022;
seeds/004_*): linear probes on frozen per-layer pooled features. See README.md here."""

from pathlib import Path

from pipeline.families import Family, Fit, Inference, Table
from pipeline.families.probing import schemas
from pipeline.schemas import FEATURES, FIT_RESULTS

FOLDER = Path(__file__).parent
ROOT = "data/families/probing"
CORPUS_TASKS = ("path_type", "depth", "variable_name", "misuse")
REGRESSION = ("depth",)


def subsets(config) -> list[str]:
    """`<language>-<task>`: the corpus tasks per language, algorithm on Python only."""
    block = config["probing"]
    out = [f"{lang}-{task}" for lang in block["languages"] for task in block["tasks"] if task in CORPUS_TASKS]
    if "algorithm" in block["tasks"]:
        out.append("python-algorithm")
    return out


def split(subset: str) -> tuple[str, str]:
    lang, task = subset.split("-", 1)
    return lang, task


def fit_tasks(config) -> list[str]:
    tasks = subsets(config)
    if config["probing"]["control"]:
        tasks += [f"{s}-control" for s in tasks if s.endswith("-path_type")]
    return tasks


def task_file(subset: str, name: str) -> str:
    lang, task = split(subset)
    return f"{ROOT}/{lang}/{task}/{name}.parquet"


def labels_file(config, fit_task: str) -> str:
    if fit_task.endswith("-control"):
        return task_file(fit_task[: -len("-control")], "control")
    return task_file(fit_task, "labels")


def task_type(config, fit_task: str) -> str:
    return "regression" if split(fit_task.replace("-control", ""))[1] in REGRESSION else "classification"


def targets(config) -> list[str]:
    return ["reports/metrics/probing.json", f"{ROOT}/baselines.parquet",
            *[task_file(s, "samples") for s in subsets(config)], *[task_file(s, "labels") for s in subsets(config)]]


PATH_COLUMNS = ("regexp_extract(filename, '/probing/([^/]+)/', 1) AS language, "
                "regexp_extract(filename, '/probing/[^/]+/([^/]+)/', 1) AS task")

FAMILY = Family(
    name="probing",
    title="Probing pretrained models of source code (Table 1)",
    paper="Probing Pretrained Models of Source Codes (BlackboxNLP 2022; seeds/004_*, arXiv 2202.08975)",
    version="1",
    folder=FOLDER,
    subsets=subsets,
    targets=targets,
    tables=(
        Table("samples", schemas.SAMPLES, "probing samples: text, kind and character spans per task",
              lambda config: [task_file(s, "samples") for s in subsets(config)], PATH_COLUMNS),
        Table("labels", schemas.LABELS, "probing labels (PROBE_LABELS + token count and word type)",
              lambda config: [task_file(s, "labels") for s in subsets(config)], PATH_COLUMNS),
        Table("baselines", FIT_RESULTS, "the paper's baselines per task through the fit protocol's folds",
              lambda config: [f"{ROOT}/baselines.parquet"]),
    ),
    inference=Inference(
        task="pipeline.families.probing.infer",
        schema=FEATURES,
        description="probing: per-layer pooled features (word/span mean of subtokens, snippet mean), float16",
        inputs=lambda config, subset: {"samples": task_file(subset, "samples")},
        params=lambda config: {"inference": config["probing"]["inference"]},
        model_families=("masked-lm", "causal-lm", "encoder-decoder", "encoder-only"),
        not_applicable="every model gives hidden states",
    ),
    fit=Fit(tasks=fit_tasks, subset=lambda config, task: task.replace("-control", ""),
            labels=labels_file, task_type=task_type,
            params=lambda config: {**config["probing"]["fit"], "seed": config["seed"], "majority": True,
                                   "linreg_feature": "n_tokens"}),
    report="pipeline.families.probing.report",
    headline="SELECT model, task || '_' || metric AS metric, mean AS value FROM probing_headline",
    plots=("probing_layers.csv",),
)
