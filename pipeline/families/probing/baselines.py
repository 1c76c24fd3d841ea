"""`python -m pipeline.families.probing.baselines`: the paper's baselines per task, run by the fit
stage on the full labelled item set with the fit's folds (pipeline.fit assigns them on the same set:
the same grouped folds, layer-free), as FIT_RESULTS rows. Each model's fit scores the majority (and
linreg) baseline on that model's own items beside its probe.

- every classification task: the most frequent class of the train folds (`majority`);
- token path type: the most frequent class per token string (`per_token_majority`; the paper's
  "constant prediction w.r.t. a subtoken", here per token, as the probe's unit is the token);
- AST depth: linear regression on the snippet's token count (`linreg`);
- is variable declared, variable name, misuse (the release's token tasks): tf-idf bag of words of
  what the release's baseline reads, the sample's token (`word`: its subtokens; the release's
  `sample2hashable` is the token's BPE pieces) and a logistic regression (`tfidf`);
- algorithm (a sentence task) and our variants `declared_every`, `variable_name_declared`,
  `misuse_declared`: tf-idf over the whole sample text (`tfidf_text`; subtokens: words split at
  underscores and case changes). On a misuse pair the text cannot tell the two apart.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.fit.probe import (BOOTSTRAP_REPLICATES, FoldScore, RunInfo, assign_folds, cell_rng, fold_splits,
                                headline_columns, majority_baseline, regression_baseline, results_table, summarise)
from pipeline.io import write_json, write_parquet
from pipeline.schemas import FIT_RESULTS

log = logging.getLogger("probing.baselines")
WORD_BOW_TASKS = ("variable_name", "misuse", "declared")  # bag of words of the sample's token (the release's)
TEXT_BOW_TASKS = ("algorithm", "declared_every", "variable_name_declared", "misuse_declared")  # of its text
# the most frequent class per token string (pair: per token pair)
WORD_TASKS = ("path_type", "path_type_ours", "dataflow", "dataflow_last_def")


def per_token_majority(words, labels, folds) -> object:
    words = np.asarray(words, dtype=object).astype(str)
    labels = np.asarray(labels, dtype=object).astype(str)
    scores = []
    for f, (tr, te) in enumerate(fold_splits(folds)):
        values, counts = np.unique(labels[tr], return_counts=True)
        default = values[np.argmax(counts)]
        by: dict[str, dict[str, int]] = {}
        for w, y in zip(words[tr], labels[tr]):
            by.setdefault(w, {}).setdefault(y, 0)
            by[w][y] += 1
        best = {w: sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[0][0] for w, c in by.items()}
        pred = np.array([best.get(w, default) for w in words[te]], dtype=object)
        errors = (pred != labels[te]).astype(np.float64)
        scores.append(FoldScore(None, f, float(np.mean(errors)), len(tr), len(te), None, te, errors))
    return summarise(scores)


def subtokens(text: str) -> list[str]:
    out = []
    for word in re.findall(r"[A-Za-z0-9]+", text):
        out.extend(p.lower() for p in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", word))
    return out


def tfidf(texts, labels, folds, seed: int):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    texts = list(texts)
    labels = np.asarray(labels, dtype=object).astype(str)
    scores = []
    for f, (tr, te) in enumerate(fold_splits(folds)):
        vec = TfidfVectorizer(analyzer=subtokens)
        x_tr = vec.fit_transform([texts[i] for i in tr])
        if len(np.unique(labels[tr])) < 2:
            pred = np.full(len(te), labels[tr][0], dtype=object)
        else:
            clf = LogisticRegression(max_iter=1000, random_state=seed).fit(x_tr, labels[tr])
            pred = clf.predict(vec.transform([texts[i] for i in te]))
        errors = (np.asarray(pred, dtype=object) != labels[te]).astype(np.float64)
        scores.append(FoldScore(None, f, float(np.mean(errors)), len(tr), len(te), None, te, errors))
    return summarise(scores)


def run(tasks: list[dict], k: int, seed: int, replicates: int = BOOTSTRAP_REPLICATES,
        fold_group: str = "group") -> tuple[pa.Table, dict]:
    """Every task's baselines on all its labelled items, with the fit's folds (assigned on the same
    labelled set: the same groups, k and seed, pipeline.fit.probe.assign_folds; grouped by the labels' column
    `fold_group`, as the fit's --fold-group)."""
    tables, metrics = [], {}
    for spec in tasks:
        name, path = spec["task"], Path(spec["labels"])
        base = name.removesuffix("-control").split("-", 1)[1]
        t = pq.read_table(path)
        t = t.filter(pc.is_valid(t["target" if spec["task_type"] == "regression" else "label"]))
        t = t.sort_by("item_id")
        if t.num_rows < k or len(set(t[fold_group].to_pylist())) < k:
            log.warning("%s: %d samples, too few for %d folds: no baselines", name, t.num_rows, k)
            metrics[name] = {"samples": t.num_rows}
            continue
        groups = np.array(t[fold_group].to_pylist(), dtype=object).astype(str).astype(object)
        folds = assign_folds(groups, k, seed)
        task_type = spec["task_type"]
        results = []
        if task_type == "regression":
            results.append(("linreg", regression_baseline(t["n_tokens"].to_pylist(), t["target"].to_pylist(), folds)))
        else:
            y = t["label"].to_pylist()
            results.append(("majority", majority_baseline(y, folds)))
            if base in WORD_TASKS:
                results.append(("per_token_majority", per_token_majority(t["word"].to_pylist(), y, folds)))
            if base in WORD_BOW_TASKS:
                results.append(("tfidf", tfidf([str(w) for w in t["word"].to_pylist()], y, folds, seed)))
            if base in TEXT_BOW_TASKS:
                samples = pq.read_table(path.parent.parent / "samples.parquet", columns=["item_id", "text"])
                text = dict(zip(samples["item_id"].to_pylist(), samples["text"].to_pylist()))
                results.append(("tfidf_text", tfidf([text[i] for i in t["item_id"].to_pylist()], y, folds, seed)))
        metrics[name] = {"samples": t.num_rows, "groups": len(set(groups)), "task_type": task_type,
                         "n": int(np.sum(folds > 0)), "baselines": {}}
        for probe, result in results:
            cols = headline_columns(result, t.num_rows, cell_rng(seed, name, probe, "-", probe), replicates)
            tables.append(results_table(result, RunInfo(name, task_type, probe, "-", probe), None, cols))
            metrics[name]["baselines"][probe] = {**asdict(result.headline), **cols}
            log.info("%s %s: %.4f", name, probe, result.headline.mean)
    table = pa.concat_tables(tables) if tables else FIT_RESULTS.empty_table()
    return table, metrics


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tasks", required=True, help='JSON [{"task": "<lang>-<task>[-control]", "labels": file, '
                                                   '"task_type": ...}] (the Fit declaration\'s tasks)')
    ap.add_argument("--folds", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fold-group", default="group", metavar="COLUMN",
                    help="the labels' column the folds are grouped by (the fit's --fold-group: file or group)")
    ap.add_argument("--replicates", type=int, default=BOOTSTRAP_REPLICATES,
                    help="bootstrap replicates of each baseline's interval over its test samples")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--metrics", type=Path, required=True)
    args = ap.parse_args(argv)
    table, metrics = run(json.loads(args.tasks), args.folds, args.seed, args.replicates, args.fold_group)
    write_parquet(table, args.out, FIT_RESULTS)
    write_json({"tasks": metrics}, args.metrics)
    return 0


if __name__ == "__main__":
    sys.exit(main())
