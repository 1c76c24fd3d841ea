"""`python -m pipeline.families.probing.generate corpus`: one language's probing tasks from the
manifest (and, on Python, the algorithm task from the algo-1671A dataset): every sample in one
`samples.parquet` (the predict subset), labels per task; `summary`: the family's metrics. Deterministic:
seeded subsets by hashed ids, never by file order."""

from __future__ import annotations

import argparse
import functools
import json
import logging
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.core import budget
from pipeline.core import shards as sharding
from pipeline.core.ids import stable_id, unit_float
from pipeline.families.probing import CONTROL, RELEASE_PARSER, RELEASE_PARSER_TASKS, VARIANTS, runtime019
from pipeline.families.probing import release as R
from pipeline.families.probing import tasks as T
from pipeline.families.probing.schemas import ALGORITHM_SOURCE, LABELS, SAMPLES
from pipeline.fit.probe import control_labels
from pipeline.io import write_json, write_parquet

log = logging.getLogger("probing.generate")
# file_ids over probing.max_file_tokens, left unparsed by this process (one job: one language): the summary counts
# them as files_too_complex (only when there are some, so other summaries keep their bytes)
TOO_COMPLEX: set[str] = set()
RELEASE_CLASS_LISTS = ("path_type", "variable_name", "path_type_release_parser", "variable_name_release_parser")  # classes by the release's make_dict (release.apply_classes)


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
    """The task's labels (and control labels) under out/<task>/; the samples go to the language's
    samples table (`write_samples`)."""
    (out / task).mkdir(parents=True, exist_ok=True)
    labels = [{"item_id": r["item_id"], "label": r.get("label"), "target": r.get("target"), "group": r["group"],
               "n_tokens": float(r["n_tokens"]), "word": r["word"], "file": r.get("file") or r["group"]}
              for r in rows]
    write_parquet(pa.Table.from_pylist(labels, schema=LABELS), out / task / "labels.parquet", LABELS)
    summary = {"task": task, "samples": len(rows), "groups": len({r["group"] for r in rows}),
               "texts": len({r["text"] for r in rows})}
    if rows and rows[0].get("label") is not None:
        values, counts = np.unique([r["label"] for r in rows], return_counts=True)
        summary["classes"] = len(values)
        summary["majority_share"] = float(counts.max() / counts.sum())
        summary["label_counts"] = {str(v): int(c) for v, c in zip(values, counts)}
    else:
        summary["target_mean"] = float(np.mean([r["target"] for r in rows])) if rows else None
    if control:
        summary["word_determines_label"] = word_determines_label([r["word"] for r in rows], [r["label"] for r in rows])
        ctrl = control_labels([r["word"] for r in rows], [r["label"] for r in rows], seed) if rows else []
        write_parquet(pa.Table.from_pylist([{**lab, "label": str(c)} for lab, c in zip(labels, ctrl)], schema=LABELS),
                      out / task / "control.parquet", LABELS)
    return summary


def write_samples(rows: list[dict], path: Path) -> int:
    """Every task's samples of one language in one table (the predict subset), by item_id."""
    samples = sorted(({"item_id": r["item_id"], "task": r["task"], "group": r["group"], "text": r["text"],
                       "kind": r["kind"], "starts": [a for a, _ in r["spans"]], "ends": [b for _, b in r["spans"]],
                       "word": r["word"], "source": r["source"]} for r in rows), key=lambda r: r["item_id"])
    if len({r["item_id"] for r in samples}) != len(samples):
        raise ValueError("two samples share an item_id")
    write_parquet(pa.Table.from_pylist(samples, schema=SAMPLES), path, SAMPLES)
    return len({r["text"] for r in samples})


def language_files(args: argparse.Namespace) -> list[dict]:
    """The language's non-duplicate files, by file_id (of one shard with --shards > 1: by the hash of each
    file's source and path, pipeline.core.shards)."""
    manifest = pq.read_table(args.manifest).to_pylist()
    return sorted((r for r in manifest if r["language"] == args.language and not r["duplicate"]
                   and sharding.in_shard(r["source"], r["path"], args.shard, args.shards)), key=lambda r: r["file_id"])


def file_snippets(r: dict, args: argparse.Namespace, prs) -> list[T.Snippet]:
    """A file's snippets within the length limits (the per-file part)."""
    text = Path(r["location"]).read_text(encoding=r["encoding"] or "utf-8", errors="replace")
    if budget.over_budget(text, args.language, args.max_file_tokens, "probing.max_file_tokens"):
        # not parsed: a 10^6-token method took the scan to 0.7 GB and 145 CPU-s (measured); counted
        TOO_COMPLEX.add(r["file_id"])
        return []
    return [s for s in T.snippets_of_file(text, args.language, r["file_id"], prs)
            if len(s.text) <= args.max_chars and len(s.tokens) >= 3]


def cap_snippets(snippet_ids: list[str], args: argparse.Namespace) -> set[str]:
    """The seeded subset of `max_snippets` (all with 0): each id's place depends on the seed and the id only,
    so a shard's own subset holds every snippet of the global one."""
    if args.max_snippets:
        snippet_ids = sorted(snippet_ids, key=lambda i: unit_float(args.seed, "snippet", i))[:args.max_snippets]
    return set(snippet_ids)


def corpus_snippets(args: argparse.Namespace) -> tuple[list[T.Snippet], dict, dict[str, str], dict[str, str]]:
    """The language's snippets (capped, comments stripped unless kept), counts, each snippet's file id (the
    fit's folds group by it: every method of one file on one side) and each file id's source."""
    prs = T.parser(args.language)
    if args.merge:  # the shards' candidates, capped again; only the kept snippets' files are parsed again
        parts = [json.loads(p.read_text()) for p in args.merge]
        n_files, total = sum(p["files"] for p in parts), sum(p["snippets_found"] for p in parts)
        candidates = {sid: fid for p in parts for sid, fid in p["candidates"]}
        keep = cap_snippets(list(candidates), args)
        wanted = {candidates[sid] for sid in keep}
        files = language_files(args)
        snippets = [s for r in files if r["file_id"] in wanted
                    for s in file_snippets(r, args, prs) if s.snippet_id in keep]
        file_of = {sid: candidates[sid] for sid in keep}
    else:
        files = language_files(args)
        found = [(s, r["file_id"]) for r in files for s in file_snippets(r, args, prs)]
        snippets = [s for s, _ in found]
        file_of = {s.snippet_id: fid for s, fid in found}
        n_files, total = len(files), len(snippets)
        if args.max_snippets:
            snippets = sorted(snippets, key=lambda s: unit_float(args.seed, "snippet", s.snippet_id))[:args.max_snippets]
    snippets.sort(key=lambda s: s.snippet_id)
    log.info("%s: %d files, %d snippets, %d kept", args.language, n_files, total, len(snippets))
    counts = {"files": n_files, "snippets_found": total, "snippets": len(snippets)}
    if not args.keep_comments:  # the release's data has no comments: every task reads the text without them
        stripped = [T.without_comments(s, prs) for s in snippets]
        counts["snippets_with_comments"] = sum(a is not b for a, b in zip(stripped, snippets))
        failed = [s.snippet_id for s, w in zip(snippets, stripped) if w is None]
        if failed:
            log.warning("%s: %d snippets no longer parse without their comments: left out (counted)", args.language,
                        len(failed))
            counts["comment_strip_failed"] = len(failed)
        snippets = [w for w in stripped if w is not None]
        counts["snippets"] = len(snippets)
    too_complex = sum(p.get("files_too_complex", 0) for p in parts) if args.merge else len(TOO_COMPLEX)
    if too_complex:
        log.warning("%s: %d files over probing.max_file_tokens were not parsed", args.language, too_complex)
        counts["files_too_complex"] = too_complex
    return snippets, counts, file_of, {r["file_id"]: r["source"] for r in files}


def corpus_part(args: argparse.Namespace) -> dict:
    """One shard's part: its files' snippet ids (under the shard's own seeded cap) and counts."""
    prs = T.parser(args.language)
    files = language_files(args)
    found = [(s.snippet_id, r["file_id"]) for r in files for s in file_snippets(r, args, prs)]
    keep = cap_snippets([sid for sid, _ in found], args)
    return {"files": len(files), "snippets_found": len(found), **({"files_too_complex": len(TOO_COMPLEX)} if TOO_COMPLEX else {}),
            "candidates": sorted([sid, fid] for sid, fid in found if sid in keep)}


def release_parser_task(task: str, snippets: list[T.Snippet], seed: int) -> list[dict]:
    """A release task's samples, labelled on the trees the release's own parser made: py-tree-sitter 0.19.0's runtime
    with tree-sitter-java ac14b4b (runtime019.py, its pinned environment `make fidelity-env`): release.py's
    definitions on those trees."""
    old = runtime019.java_parser()
    return {"path_type": lambda: R.path_type(snippets, old, one_line_text=True), "depth": lambda: R.ast_depth(snippets, old),
            "declared": lambda: R.declared(snippets, seed, old), "dataflow": lambda: R.dataflow(snippets, seed, old, split_strings=True),
            "variable_name": lambda: R.variable_name(snippets, seed, old),
            "misuse": lambda: R.misuse(snippets, seed, old)}[task]()


def corpus(args: argparse.Namespace) -> dict:
    summary: dict = {"language": args.language, "tasks": {}}
    made: dict[str, list[dict]] = {}
    class_rule: dict[str, dict] = {}
    corpus_tasks = [t for t in args.tasks if t != "algorithm"]
    if corpus_tasks:
        snippets, counts, file_of, source_of = corpus_snippets(args)
        summary.update(counts)
        prs = T.parser(args.language)
        generators = {"path_type": lambda: R.path_type(snippets, prs),
                      "depth": lambda: R.ast_depth(snippets, prs),
                      "declared": lambda: R.declared(snippets, args.seed, prs),
                      "dataflow": lambda: R.dataflow(snippets, args.seed, prs, split_strings=True),
                      "variable_name": lambda: R.variable_name(snippets, args.seed, prs),
                      "misuse": lambda: R.misuse(snippets, args.seed, prs),
                      # the release's definitions on the grammar the release ran on (tree-sitter-java ac14b4b)
                      **{f"{t}{RELEASE_PARSER}": functools.partial(release_parser_task, t, snippets, args.seed)
                         for t in RELEASE_PARSER_TASKS},
                      # our definitions, named variants beside the release's
                      "depth_any_leaf": lambda: T.ast_depth(snippets),
                      "declared_every": lambda: T.declared(snippets, args.seed),
                      "dataflow_last_def": lambda: T.dataflow(snippets, args.seed),
                      "variable_name_declared": lambda: T.variable_name(snippets, args.classes),
                      "path_type_ours": lambda: T.path_type(snippets, args.classes),
                      "misuse_declared": lambda: T.misuse(snippets, args.seed)}
        for task in corpus_tasks:
            made[task] = [{**r, "file": file_of[r["group"]], "source": source_of[file_of[r["group"]]]}
                          for r in generators[task]()]
            if task in RELEASE_CLASS_LISTS:  # the release's make_dict over every sample, before the caps
                made[task], class_rule[task] = R.apply_classes(made[task], args.classes, args.min_class_samples)
    if "algorithm" in args.tasks:
        subs = json.loads(Path(args.algorithm_dataset).read_text())
        made["algorithm"] = [{**r, "source": ALGORITHM_SOURCE} for r in T.algorithm(subs, args.max_chars)]
        summary["submissions"] = len(subs)
    rows = []
    for task in args.tasks:
        cap = args.max_samples_per_task.get(task, args.max_samples)
        kept = [{**r, "task": task} for r in capped(made[task], cap, args.seed, task)]
        pieces = sum(bool(r.pop("_string_piece", False)) for r in kept)  # data flow: a string literal split as the release did
        if task in VARIANTS:  # a variant's ids may equal its release task's (same snippet, same token): own ids
            kept = [{**r, "item_id": stable_id(task, r["item_id"])} for r in kept]
        summary["tasks"][task] = write_task(kept, args.out, task, args.seed, control=task in CONTROL)
        if task in ("dataflow", "dataflow_release_parser"):
            summary["tasks"][task]["string_piece_samples"] = pieces
        if task in class_rule:
            summary["tasks"][task]["class_rule"] = class_rule[task]
            if not kept:
                log.warning("%s: no class has %d samples (the release's min_samples_per_class): the task is empty; "
                            "raise probing.max_snippets or lower probing.min_class_samples", task,
                            args.min_class_samples)
        rows.extend(kept)
    summary["samples"] = len(rows)
    summary["texts"] = write_samples(rows, args.out / "samples.parquet")
    return summary


def task_caps(text: str) -> dict[str, int]:
    """`path_type=2000,depth=0` -> {"path_type": 2000, "depth": 0}; empty text -> {}."""
    caps = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        task, sep, n = part.partition("=")
        if not sep or not n.strip().isdigit():
            raise argparse.ArgumentTypeError(f"{part!r}: expected TASK=N with N >= 0")
        caps[task.strip()] = int(n)
    return caps


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    ap = argparse.ArgumentParser(description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("corpus", help="one language's tasks: <out>/samples.parquet, <out>/<task>/labels.parquet")
    c.add_argument("--manifest", type=Path, required=True)
    c.add_argument("--language", choices=["java", "python"], required=True)
    c.add_argument("--tasks", nargs="+", choices=(*T.GENERATORS, "algorithm"), required=True)
    c.add_argument("--algorithm-dataset", type=Path, help="algo-1671A all.json (the algorithm task)")
    c.add_argument("--max-snippets", type=int, default=0)
    c.add_argument("--classes", type=int, default=15)
    c.add_argument("--min-class-samples", type=int, default=R.MIN_CLASS_SAMPLES,
                   help="the release's min_samples_per_class for path_type / variable_name (30)")
    c.add_argument("--max-chars", type=int, default=1000)
    c.add_argument("--keep-comments", action="store_true",
                   help="label and feed the methods with their comments (default: without, as the release's data has "
                   "them; a method that no longer parses without them is left out, counted comment_strip_failed)")
    c.add_argument("--max-file-tokens", type=int, default=budget.DEFAULT,
                   help=f"files with more tokens are not parsed (counted: files_too_complex); 0: no budget "
                   f"(default {budget.DEFAULT})")
    c.add_argument("--max-samples", type=int, default=0, help="seeded subset of samples per task (0: all)")
    c.add_argument("--max-samples-per-task", type=task_caps, default={}, metavar="TASK=N,...",
                   help="per-task overrides of --max-samples, e.g. path_type=2000 (0: all)")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--out", type=Path, help="the language's folder")
    c.add_argument("--summary", type=Path, required=True, help="the language's summary (a shard's part with --shards > 1)")
    sharding.add_arguments(c, "instead of scanning every file: merge these shards' parts (their --summary JSON)")
    m = sub.add_parser("summary", help="the family's metrics: every language's summary")
    m.add_argument("--summaries", type=Path, nargs="+", required=True)
    m.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    if args.cmd == "summary":
        languages = {}
        for path in args.summaries:
            got = json.loads(path.read_text())
            languages[got["language"]] = got
        write_json({"languages": languages}, args.out)
        return 0
    if "algorithm" in args.tasks and args.algorithm_dataset is None:
        ap.error("the algorithm task needs --algorithm-dataset")
    sharding.check_arguments(c, args)
    if args.shards > 1:  # a shard's candidate snippets; the tasks are built once, by the merge
        write_json(corpus_part(args), args.summary)
        return 0
    if args.out is None:
        ap.error("corpus needs --out (the language's folder)")
    write_json(corpus(args), args.summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
