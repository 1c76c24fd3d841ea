"""The dataset card: README.md with the Hugging Face hub's YAML header (configs with their data files, splits, license,
task categories), then what the benchmark measures, the paper with its citation, how the population differs from
the paper's, per-source licenses and what built it."""

from __future__ import annotations

import importlib

import yaml


def citation(family) -> str:
    try:
        paper = importlib.import_module(f"{family.module}.paper")
    except ModuleNotFoundError:
        return ""
    return getattr(paper, "CITATION", "") or ""


def render(summary: dict, family) -> str:
    licenses = sorted({lic for cfg in summary["configs"] for _, lic in cfg["licenses"]})
    header = {
        "pretty_name": summary["title"],
        "license": "other",
        "license_name": "per-source",
        "license_details": "Each row carries its source's license (column `license`); see Licenses below.",
        "task_categories": ["text-generation"],
        "tags": ["code", "code-models", "benchmark", summary["family"]],
        "configs": [{"config_name": cfg["name"],
                     "data_files": [{"split": s["split"], "path": s["file"]} for s in cfg["splits"]]}
                    for cfg in summary["configs"]],
        "dataset_info": [{"config_name": cfg["name"],
                          "splits": [{"name": s["split"], "num_examples": s["rows"], "num_bytes": s["bytes"]}
                                     for s in cfg["splits"]]} for cfg in summary["configs"]],
    }
    cite = summary["citation"]
    build = summary["build"]
    lines = ["---", yaml.safe_dump(header, sort_keys=False, allow_unicode=True).rstrip(), "---", "",
             f"# {summary['title']}", "",
             f"Rebuilt from raw, pinned source code by the benchmark factory. Paper: {summary['paper']}.", "",
             "## What it measures", "", describe(summary), "",
             "## Configs and splits", "", "| config | split | rows | of them references only |", "|---|---|---|---|"]
    for cfg in summary["configs"]:
        for s in cfg["splits"]:
            lines.append(f"| `{cfg['name']}` | {s['split']} | {s['rows']:,} | {s['reference_only']:,} |")
    if summary.get("empty"):
        lines += ["", f"Configs with no items in this build, left out: {', '.join(summary['empty'])}."]
    lines += ["", "Load one config: `datasets.load_dataset(\"<this folder>\", \"<config>\")`, or its files: "
              "`datasets.load_dataset(\"parquet\", data_dir=\"<this folder>/<config>\")`.", "",
              "Each row carries its provenance: `source`, `license`, `source_released` (the pinned release's date), "
              "`path` and `file_sha256` (the file it was cut from, where it was cut from one), and the warehouse's "
              "contamination dates (`contamination_*`: each date with its basis).", "",
              "## How the population differs from the paper's", "",
              (summary["population"] or "(not stated)").replace("**How the populations differ:** ", ""), "",
              "## Licenses", "",
              f"A row's corpus text travels with the dataset only when its source's license is redistributable "
              f"(its SPDX id starts with one of: {', '.join(summary['redistribute'])}); other rows keep only the "
              "reference (`path`, `file_sha256`), their text columns are null and `reference_only` is true.", "",
              "| source | license | released |", "|---|---|---|"]
    used = {s for cfg in summary["configs"] for s, _ in cfg["licenses"]}
    for src in summary["sources"]:
        if src["source"] in used:
            lines.append(f"| {src['source']} | {src['license'] or 'unknown'} | {src['released'] or 'unknown'} |")
    if "" in used:
        lines.append("| (no corpus source: e.g. an API outside the corpus, a pinned dataset) | see the rows | |")
    lines += ["", f"Licenses present: {', '.join(licenses) or 'none'}.", "",
              "## How it was built", "", f"- command: `{build['command']}`", f"- commit: `{build['commit']}`",
              f"- params sha256: `{build['params_sha256']}`", ""]
    if cite:
        lines += ["## Citation", "", "```bibtex", cite.strip(), "```", ""]
    return "\n".join(lines)


def describe(summary: dict) -> str:
    return "\n".join(f"- `{cfg['name']}`: {cfg['description']}" for cfg in summary["configs"])
