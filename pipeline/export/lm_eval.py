"""lm-evaluation-harness tasks from an exported apiquiz or apirec folder:
`python -m pipeline.export.lm_eval DIR --tasks TASKS` writes TASKS/<task>.yaml and TASKS/utils.py, then

    lm_eval --model hf --model_args pretrained=MODEL --include_path TASKS --tasks factory_apiquiz

scores a model as our `rank` protocol does (docs/export.md):
- apiquiz: a `multiple_choice` task per setting. The context is the quiz's `prefix`, each choice a ranked candidate
  followed by the quiz's `suffix` (`target_delimiter: ""`): under our `scoring: lm-eval` convention the pipeline scores
  the same continuation after the same context (pipeline.runtime.encode.lm_eval_job). The gold's rank orders the
  choices by their log-likelihood rounded to 4 decimals, ties by name (pipeline.runtime.protocols.rank_of); `p_at_1`,
  `p_at_5`, `p_at_10` are means over the quizzes with more than k candidates, like apiquiz_by_setting.
- apirec: one `multiple_choice` task (`code`): the point's context, each candidate as written in the file followed by
  `(`; ties broken by FQN; `sr_at_1` ... `sr_at_10` with a gold the first stage missed a miss at every k.
The files point at the exported Parquet by absolute path (lm-eval loads them with `datasets`), so the tasks are made
where the export lies; the export itself carries no path.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

UTILS = '''"""Written by pipeline.export.lm_eval: our ranking rule (rounded scores, ties by name) over lm-eval's
log-likelihoods."""

DECIMALS = 4  # pipeline.runtime.protocols.SCORE_DECIMALS


def _rank(lls, names, gold):
    order = sorted(range(len(lls)), key=lambda i: (-round(lls[i], DECIMALS), names[i]))
    return order.index(gold) + 1


def apiquiz_choices(doc):
    return [c + doc["suffix"] for c in doc["ranked_candidates"]]


def apiquiz_target(doc):
    return int(doc["gold_index"])


def apiquiz_results(doc, results):
    lls = [r[0] for r in results]
    names = list(doc["ranked_candidates"])
    rank = _rank(lls, names, int(doc["gold_index"]))
    n = len(names)
    out = {"gold_rank": rank}
    for k in (1, 5, 10):
        # P@k over the quizzes with more than k ranked names (apiquiz_by_setting); None leaves a quiz out
        out[f"p_at_{k}"] = float(rank <= k) if n > k else None
    return out


def apirec_docs(dataset):
    """Points whose first stage gave no candidate have nothing to rank (our pipeline scores none of them either)."""
    return dataset.filter(lambda doc: len(doc["candidates"]) > 0)


def apirec_choices(doc):
    return [t + "(" for t in doc["candidate_texts"]]


def apirec_target(doc):
    return max(int(doc["gold_index"]), 0)


def apirec_results(doc, results):
    gold = int(doc["gold_index"])
    if gold < 0:  # the first stage missed the answer: a miss at every k
        rank = None
    else:
        rank = _rank([r[0] for r in results], list(doc["candidates"]), gold)
    out = {"gold_rank": rank if rank is not None else -1}
    for k in (1, 3, 5, 10):
        out[f"sr_at_{k}"] = float(rank is not None and rank <= k)
    return out


def mean_present(items):
    """The mean over the items that count (None: not counted), as apiquiz_by_setting's P@k."""
    kept = [x for x in items if x is not None]
    return sum(kept) / len(kept) if kept else float("nan")


def first(items):
    return items[0] if items else -1
'''

METRICS = {"apiquiz": ("p_at_1", "p_at_5", "p_at_10"), "apirec": ("sr_at_1", "sr_at_3", "sr_at_5", "sr_at_10")}


def task_yaml(family: str, config: str, files: dict[str, str], context: str) -> dict:
    split = "test" if "test" in files else sorted(files)[0]
    return {
        "task": f"factory_{family}_{config}",
        "tag": [f"factory_{family}"],
        "dataset_path": "parquet",
        "dataset_kwargs": {"data_files": files},
        "test_split": split,
        "output_type": "multiple_choice",
        "doc_to_text": context,
        "doc_to_choice": f"!function utils.{family}_choices",
        "doc_to_target": f"!function utils.{family}_target",
        "target_delimiter": "",
        "process_results": f"!function utils.{family}_results",
        "metric_list": [{"metric": m, "aggregation": "!function utils.mean_present", "higher_is_better": True}
                        for m in METRICS[family]],
        "metadata": {"version": 1.0},
        **({"process_docs": "!function utils.apirec_docs"} if family == "apirec" else {}),
    }


def dump(doc: dict) -> str:
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=1000)
    # lm-eval's loader reads `!function` tags: written bare, not as quoted strings
    return text.replace("'!function ", "!function ").replace(".mean_present'", ".mean_present").replace(
        "_choices'", "_choices").replace("_target'", "_target").replace("_results'", "_results").replace("_docs'", "_docs")


def write_tasks(export: Path, tasks: Path) -> list[str]:
    """The tasks of an exported folder (apiquiz: one per setting; apirec: `code`); returns their names."""
    export = export.resolve()
    summary = yaml.safe_load((export / "README.md").read_text().split("---", 2)[1])
    family = json.loads((export / "croissant.json").read_text())["name"]
    if family not in METRICS:
        raise SystemExit(f"lm_eval: {family!r} has no lm-evaluation-harness task (apiquiz and apirec have)")
    tasks.mkdir(parents=True, exist_ok=True)
    names = []
    for cfg in summary["configs"]:
        if family == "apirec" and cfg["config_name"] != "code":
            continue
        files = {f["split"]: str(export / f["path"]) for f in cfg["data_files"]}
        if family == "apirec":
            files = {k: v for k, v in files.items() if k == "test"} or files
        doc = task_yaml(family, cfg["config_name"], files, "prefix" if family == "apiquiz" else "context")
        (tasks / f"{doc['task']}.yaml").write_text(dump(doc))
        names.append(doc["task"])
    (tasks / "utils.py").write_text(UTILS)
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.export.lm_eval",
        description="Write lm-evaluation-harness tasks for an exported apiquiz or apirec folder "
                    "(`python -m pipeline export apiquiz --out DIR`). Run them with "
                    "`lm_eval --model hf --model_args pretrained=MODEL --include_path TASKS --tasks factory_apiquiz`.")
    parser.add_argument("export", type=Path, help="the exported folder")
    parser.add_argument("--tasks", type=Path, required=True, help="the folder to write the task YAMLs into")
    args = parser.parse_args(argv)
    for name in write_tasks(args.export, args.tasks):
        print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
