"""lm-evaluation-harness tasks from an exported folder: `python -m pipeline.export.lm_eval DIR --tasks TASKS` writes
TASKS/factory_<family>_<config>.yaml and TASKS/utils_<family>.py, then

    lm_eval --model hf --model_args pretrained=MODEL --include_path TASKS --tasks factory_<family>

scores a model as our ranking protocol does (docs/export.md). A family that has such tasks declares them in its own
export module (`LM_EVAL` in pipeline/families/<name>/export.py): which column is the context, which configs and
splits become tasks, the metrics, and the `choices` / `target` / `results` (and optionally `docs`) functions of its
utils module. Every task is `multiple_choice` with `target_delimiter: ""` (the choice follows the context as written:
under `scoring: lm-eval` our pipeline scores the same continuation after the same context,
pipeline.runtime.encode.lm_eval_job); a family's `results` ranks with `_rank` below, our rank_of rule (log-likelihoods
rounded to 4 decimals, ties by name), and the metrics aggregate with `mean_present` (a None leaves an item out).
The files point at the exported Parquet by absolute path (lm-eval loads them with `datasets`), so the tasks are made
where the export lies; the export itself carries no path.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

import yaml

SHARED = '''"""Written by pipeline.export.lm_eval: our ranking rule (rounded scores, ties by name) over lm-eval's
log-likelihoods, and the family's task functions (its export module's LM_EVAL)."""

DECIMALS = 4  # pipeline.runtime.protocols.SCORE_DECIMALS


def _rank(lls, names, gold):
    order = sorted(range(len(lls)), key=lambda i: (-round(lls[i], DECIMALS), names[i]))
    return order.index(gold) + 1


def mean_present(items):
    """The mean over the items that count (None: not counted)."""
    kept = [x for x in items if x is not None]
    return sum(kept) / len(kept) if kept else float("nan")
'''


def declaration(family: str) -> dict:
    """The family's LM_EVAL (its export module), or an error naming what has one."""
    from pipeline import registry

    module = importlib.import_module(f"{registry.load(family).module}.export")
    spec = getattr(module, "LM_EVAL", None)
    if not spec:
        raise SystemExit(f"lm_eval: family {family!r} declares no lm-evaluation-harness task (LM_EVAL in its export.py)")
    return spec


def task_yaml(family: str, config: str, files: dict[str, str], spec: dict) -> dict:
    utils = f"utils_{family}"
    split = "test" if "test" in files else sorted(files)[0]
    doc = {
        "task": f"factory_{family}_{config}",
        "tag": [f"factory_{family}"],
        "dataset_path": "parquet",
        "dataset_kwargs": {"data_files": files},
        "test_split": split,
        "output_type": "multiple_choice",
        "doc_to_text": spec["context"],
        "doc_to_choice": f"!function {utils}.choices",
        "doc_to_target": f"!function {utils}.target",
        "target_delimiter": "",
        "process_results": f"!function {utils}.results",
        "metric_list": [{"metric": m, "aggregation": f"!function {utils}.mean_present", "higher_is_better": True}
                        for m in spec["metrics"]],
        "metadata": {"version": 1.0},
    }
    if "def docs(" in spec["utils"]:
        doc["process_docs"] = f"!function {utils}.docs"
    return doc


def dump(doc: dict) -> str:
    """YAML with lm-eval's `!function` tags written bare (its loader reads them), not as quoted strings."""
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=1000)
    return "\n".join(line.replace("'!function ", "!function ").rstrip("'") if "'!function " in line else line
                     for line in text.splitlines()) + "\n"


def write_tasks(export: Path, tasks: Path) -> list[str]:
    """The tasks of an exported folder, written into `tasks`; returns their names."""
    export = export.resolve()
    header = yaml.safe_load((export / "README.md").read_text().split("---", 2)[1])
    family = json.loads((export / "croissant.json").read_text())["name"]
    spec = declaration(family)
    tasks.mkdir(parents=True, exist_ok=True)
    names = []
    for cfg in header["configs"]:
        if spec.get("configs") and cfg["config_name"] not in spec["configs"]:
            continue
        files = {f["split"]: str(export / f["path"]) for f in cfg["data_files"]}
        if spec.get("splits"):
            files = {k: v for k, v in files.items() if k in spec["splits"]} or files
        doc = task_yaml(family, cfg["config_name"], files, spec)
        (tasks / f"{doc['task']}.yaml").write_text(dump(doc))
        names.append(doc["task"])
    (tasks / f"utils_{family}.py").write_text(SHARED + "\n\n" + spec["utils"].lstrip("\n"))
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.export.lm_eval",
        description="Write lm-evaluation-harness tasks for an exported family folder (`python -m pipeline export "
                    "FAMILY --out DIR`; families whose export declares LM_EVAL). Run them with "
                    "`lm_eval --model hf --model_args pretrained=MODEL --include_path TASKS --tasks factory_FAMILY`.")
    parser.add_argument("export", type=Path, help="the exported folder")
    parser.add_argument("--tasks", type=Path, required=True, help="the folder to write the task YAMLs into")
    args = parser.parse_args(argv)
    for name in write_tasks(args.export, args.tasks):
        print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
