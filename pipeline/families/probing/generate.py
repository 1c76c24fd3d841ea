"""`python -m pipeline.families.probing.generate`: one language's probing tasks from the manifest
(`corpus`), or the algorithm task from the algo-1671A dataset (`algorithm`). Deterministic:
seeded subsets by hashed ids, never by file order."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.core.ids import unit_float
from pipeline.families.probing import tasks as T
from pipeline.families.probing.schemas import LABELS, SAMPLES
from pipeline.fit.probe import control_labels
from pipeline.io import write_json, write_parquet

log = logging.getLogger("probing.generate")


def capped(rows: list[dict], n: int, seed: int, key: str) -> list[dict]:
    """A seeded subset of `n` rows (0: all), in item_id order."""
    if n:
        rows = sorted(rows, key=lambda r: unit_float(seed, key, r["item_id"]))[:n]
    return sorted(rows, key=lambda r: r["item_id"])


def word_determines_label(words, labels) -> float:
    """Share of samples whose word type carries one real label only. Near 1, the real task is a
    function of the word type, so a control task (a random label per word type) is exactly as
    learnable and selectivity is 0 by construction (e.g. a corpus of near-identical snippets)."""
    by: dict[str, set] = {}
    for w, y in zip(words, labels):
        by.setdefault(str(w), set()).add(str(y))
    words = [str(w) for w in words]
    return float(np.mean([len(by[w]) == 1 for w in words])) if words else 0.0


def write_task(rows: list[dict], out: Path, task: str, seed: int, control: bool) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    samples = [{"item_id": r["item_id"], "group": r["group"], "text": r["text"], "kind": r["kind"],
                "starts": [a for a, _ in r["spans"]], "ends": [b for _, b in r["spans"]], "word": r["word"]}
               for r in rows]
    labels = [{"item_id": r["item_id"], "label": r.get("label"), "target": r.get("target"), "group": r["group"],
               "n_tokens": float(r["n_tokens"]), "word": r["word"]} for r in rows]
    write_parquet(pa.Table.from_pylist(samples, schema=SAMPLES), out / "samples.parquet", SAMPLES)
    write_parquet(pa.Table.from_pylist(labels, schema=LABELS), out / "labels.parquet", LABELS)
    summary = {"task": task, "samples": len(rows), "groups": len({r["group"] for r in rows})}
    if rows and rows[0].get("label") is not None:
        values, counts = np.unique([r["label"] for r in rows], return_counts=True)
        summary["classes"] = len(values)
        summary["majority_share"] = float(counts.max() / counts.sum())
    else:
        summary["target_mean"] = float(np.mean([r["target"] for r in rows])) if rows else None
    if control:
        summary["word_determines_label"] = word_determines_label([r["word"] for r in rows], [r["label"] for r in rows])
        ctrl = control_labels([r["word"] for r in rows], [r["label"] for r in rows], seed) if rows else []
        write_parquet(pa.Table.from_pylist([{**lab, "label": str(c)} for lab, c in zip(labels, ctrl)], schema=LABELS),
                      out / "control.parquet", LABELS)
    return summary


def corpus(args: argparse.Namespace) -> dict:
    manifest = pq.read_table(args.manifest).to_pylist()
    files = sorted((r for r in manifest if r["language"] == args.language and not r["duplicate"]),
                   key=lambda r: r["file_id"])
    prs = T.parser(args.language)
    snippets = []
    for r in files:
        text = Path(r["location"]).read_text(encoding=r["encoding"] or "utf-8", errors="replace")
        snippets.extend(s for s in T.snippets_of_file(text, args.language, r["file_id"], prs)
                        if len(s.text) <= args.max_chars and len(s.tokens) >= 3)
    total = len(snippets)
    if args.max_snippets:
        snippets = sorted(snippets, key=lambda s: unit_float(args.seed, "snippet", s.snippet_id))[:args.max_snippets]
    snippets.sort(key=lambda s: s.snippet_id)
    log.info("%s: %d files, %d snippets, %d kept", args.language, len(files), total, len(snippets))
    made = {"path_type": T.path_type(snippets, args.classes), "depth": T.ast_depth(snippets),
            "variable_name": T.variable_name(snippets, args.classes), "misuse": T.misuse(snippets, args.seed)}
    summaries = {"language": args.language, "files": len(files), "snippets_found": total, "snippets": len(snippets),
                 "tasks": {}}
    for task in args.tasks:
        rows = capped(made[task], args.max_samples, args.seed, task)
        summaries["tasks"][task] = write_task(rows, args.out / task, task, args.seed, control=task == "path_type")
    return summaries


def algorithm(args: argparse.Namespace) -> dict:
    subs = json.loads(Path(args.dataset).read_text())
    rows = capped(T.algorithm(subs, args.max_chars), args.max_samples, args.seed, "algorithm")
    return {"language": "python", "submissions": len(subs), "tasks": {"algorithm": write_task(
        rows, args.out / "algorithm", "algorithm", args.seed, control=False)}}


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    ap = argparse.ArgumentParser(description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("corpus")
    c.add_argument("--manifest", type=Path, required=True)
    c.add_argument("--language", choices=["java", "python"], required=True)
    c.add_argument("--tasks", nargs="+", choices=T.GENERATORS, required=True)
    c.add_argument("--max-snippets", type=int, default=0)
    c.add_argument("--classes", type=int, default=15)
    a = sub.add_parser("algorithm")
    a.add_argument("--dataset", type=Path, required=True)
    for p in (c, a):
        p.add_argument("--max-chars", type=int, default=1000)
        p.add_argument("--max-samples", type=int, default=0)
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--out", type=Path, required=True, help="folder: <out>/<task>/{samples,labels}.parquet")
        p.add_argument("--summary", type=Path, required=True)
    args = ap.parse_args(argv)
    summary = corpus(args) if args.cmd == "corpus" else algorithm(args)
    write_json(summary, args.summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
