"""Baselines and statistics for CodeSyntax: per (language, variant) the baseline table
(schemas.BASELINES) and counts; then one report like the paper's Tables 1-3."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from tqdm import tqdm

from pipeline.core import logs
from pipeline.families.codesyntax import schemas
from pipeline.families.codesyntax.paper import BASELINES as BASELINE_NAMES, TABLE3
from pipeline.io import atomic_path, write_json, write_parquet
from pipeline.families.codesyntax.baselines import (KEYWORDS, METRICS, Edges, Relation, Windows, edge_windows,
                                                    merge_windows, next_keyword_positions, score_windows)

log = logging.getLogger("pipeline.families.codesyntax.stats")
CHOSEN_ON = ("dev", "test")
# The paper's Table 3, top-k first-token scores of the baselines (k = 1, 3, 10, 20), chosen on test, as fractions
PAPER = {lang: {b: list(systems[b]) for b in BASELINE_NAMES} for lang, systems in TABLE3.items()}


def relation_edges(samples: pa.Table, relations: pa.Table, language: str) -> dict[str, Relation]:
    """Edges summarized by relation (tables in memory; `main` streams the files through
    `stream_relation_edges`, with the same result)."""
    return stream_relation_edges(samples.to_batches(), relations.to_batches(), language)


def stream_relation_edges(sample_batches: Iterable[pa.RecordBatch], relation_batches: Iterable[pa.RecordBatch],
                          language: str, compact_rows: int = 1 << 18) -> dict[str, Relation]:
    """`relation_edges` over record batches of both tables, both sorted by sample_id (as label.py
    writes them): a merge join that holds one batch of each and the edges' numeric columns, never the
    samples' code and tokens or the relations as Python objects. Each batch's edges are reduced to
    distinct windows with counts (`baselines.Windows`), merged whenever a relation's pending rows pass
    `compact_rows`: memory grows with the distinct windows, not the edges. Duplicate sample ids
    (practically none) use the last such sample's tokens, as a dict over the whole table did."""
    keywords = KEYWORDS[language]
    samples = ((sid, toks, split == "dev") for batch in sample_batches for sid, toks, split in zip(
        batch.column("sample_id").to_pylist(), batch.column("tokens").to_pylist(),
        batch.column("eval_split").to_pylist()))
    ahead = next(samples, None)
    current: tuple | None = None

    def sample(sid: str):
        nonlocal ahead, current
        if current is not None and current[0] == sid:
            return current
        while ahead is not None and ahead[0] <= sid:  # the last sample with this id wins
            if ahead[0] == sid:
                current = ahead
            ahead = next(samples, None)
        if current is None or current[0] != sid:
            raise ValueError(f"relations name sample {sid!r}, which the samples table (sorted by id) lacks")
        return current

    n_kw = len(keywords)
    pending: dict[str, dict[str, list[Windows]]] = defaultdict(lambda: {m: [] for m in METRICS})
    pending_rows: dict[str, int] = defaultdict(int)
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # relation -> [edges, sum of start - head]
    bar = tqdm(desc=f"keywords {language}", unit="edge", file=sys.stderr, disable=None)
    for batch in relation_batches:
        sids = batch.column("sample_id").to_pylist()
        head, start, end = (batch.column(c).to_numpy(zero_copy_only=False).astype(np.int32)
                            for c in ("head", "dep_start", "dep_end"))
        runs, i = [], 0
        while i < len(sids):  # runs of one sample id
            j = i + 1
            while j < len(sids) and sids[j] == sids[i]:
                j += 1
            runs.append((i, j, sample(sids[i])))
            i = j
        kw_next = np.full((len(head), n_kw), -1, dtype=np.int32)
        is_dev = np.zeros(len(head), dtype=bool)
        for i, j, (_, tokens, dev) in runs:
            kw_next[i:j] = next_keyword_positions(tokens, head[i:j], keywords)
            is_dev[i:j] = dev
        names = np.asarray(batch.column("relation").to_pylist(), dtype=object)
        for name in sorted(set(names)):
            m = names == name
            e = Edges(head[m], start[m], end[m], is_dev[m], kw_next[m])
            counts[name][0] += len(e.head)
            counts[name][1] += int((e.start.astype(np.int64) - e.head).sum())
            for metric in METRICS:
                pending[name][metric].append(merge_windows([edge_windows(e, metric)], n_kw))
            pending_rows[name] += len(pending[name][METRICS[-1]][-1].lo)
            if pending_rows[name] > compact_rows:  # fold the batches' distinct rows into one
                for metric in METRICS:
                    pending[name][metric] = [merge_windows(pending[name][metric], n_kw)]
                pending_rows[name] = len(pending[name][METRICS[-1]][0].lo)
        bar.update(len(sids))
    bar.close()
    return {name: Relation(counts[name][0], counts[name][1],
                           {m: merge_windows(pending[name][m], n_kw) for m in METRICS}) for name in sorted(pending)}


def read_batches(path: Path, schema: pa.Schema, columns: list[str], rows: int) -> Iterator[pa.RecordBatch]:
    """A Parquet file's columns in batches, failing loudly if its schema drifted from the declared one."""
    f = pq.ParquetFile(path)
    if not f.schema_arrow.equals(schema, check_metadata=False):
        raise ValueError(f"{path}: schema differs from the declared one:\n{f.schema_arrow}\nexpected:\n{schema}")
    return f.iter_batches(batch_size=rows, columns=columns)


def baselines(edges: dict[str, Relation], language: str, variant: str, ks: list[int]) -> pa.Table:
    cols: dict[str, list] = {n: [] for n in schemas.BASELINES.names}
    for chosen_on in CHOSEN_ON:
        for relation, e in edges.items():
            if not (~e.windows[METRICS[0]].dev).any():
                continue  # no test edges: nothing to score
            for s in score_windows(e.windows, KEYWORDS[language], ks, chosen_on):
                for name, value in (("language", language), ("variant", variant), ("chosen_on", chosen_on),
                                    ("baseline", s.baseline), ("metric", s.metric), ("relation", relation),
                                    ("k", s.k), ("chosen", s.chosen), ("hits", s.hits), ("total", s.total)):
                    cols[name].append(value)
    table = pa.table(cols, schema=schemas.BASELINES)
    return table.sort_by([(c, "ascending") for c in ("chosen_on", "baseline", "metric", "relation", "k")])


def statistics(samples: pa.Table | dict, edges: dict[str, Relation]) -> dict:
    """The paper's Table 1/8 and Figure 3: edges and mean head-to-dependent offset per relation.
    `samples`: the table, or its counts {"samples", "samples_dev", "tokens"} (see `sample_counts`)."""
    counts = sample_counts(samples.to_batches()) if isinstance(samples, pa.Table) else samples
    return {
        "samples": counts["samples"],
        "samples_dev": counts["samples_dev"],
        "tokens_mean": counts["tokens"] / counts["samples"] if counts["samples"] else 0.0,
        "edges": int(sum(e.edges for e in edges.values())),
        "relation_types": len(edges),
        # the integer sum over the count: what np.mean over the offsets gives (its float64 sum is exact)
        "relations": {name: {"edges": e.edges, "mean_offset": round(e.offset_sum / e.edges, 2)}
                      for name, e in edges.items()},
    }


def sample_counts(batches: Iterable[pa.RecordBatch]) -> dict:
    """Samples, dev samples and tokens (exact integers: their mean equals numpy's over the column)."""
    out = {"samples": 0, "samples_dev": 0, "tokens": 0}
    for b in batches:
        out["samples"] += b.num_rows
        out["samples_dev"] += int(pc.sum(pc.equal(b.column("eval_split"), "dev")).as_py() or 0)
        out["tokens"] += int(pc.sum(b.column("n_tokens")).as_py() or 0)
    return out


def scores(table: pa.Table) -> dict:
    """Average over relations of hits/total, by chosen_on, baseline, metric and k (a fraction in [0, 1], 4 decimals)."""
    acc: dict[tuple, list[float]] = defaultdict(list)
    for r in table.to_pylist():
        acc[(r["chosen_on"], r["baseline"], r["metric"], r["k"])].append(r["hits"] / r["total"])
    out: dict = {}
    for (chosen_on, baseline, metric, k), v in sorted(acc.items()):
        out.setdefault(chosen_on, {}).setdefault(baseline, {}).setdefault(metric, {})[str(k)] = round(
            float(np.mean(v)), 4)
    return out


def markdown(report: dict) -> str:
    lines = ["# CodeSyntax statistics and baselines", "",
             "Generated by `pipeline.families.codesyntax.stats` from the default corpus; compare with the paper's Tables 1-3.", ""]
    for variant, langs in sorted(report["variants"].items()):
        lines += [f"## Variant `{variant}`", "", "| language | samples | edges | relation types | mean tokens |",
                  "|---|---|---|---|---|"]
        for lang, r in sorted(langs.items()):
            s = r["statistics"]
            lines.append(f"| {lang} | {s['samples']} | {s['edges']} | {s['relation_types']} | {s['tokens_mean']:.1f} |")
        lines += ["", "Baselines, first-token top-k (fractions; paper's Table 3 in brackets, chosen on test):", "",
                  "| language | chosen on | baseline | k=1 | k=3 | k=10 | k=20 |", "|---|---|---|---|---|---|---|"]
        for lang, r in sorted(langs.items()):
            for chosen_on in CHOSEN_ON:
                for baseline in BASELINE_NAMES:
                    got = r["scores"].get(chosen_on, {}).get(baseline, {}).get("first", {})
                    cells = [f"{got.get(k, float('nan')):.3f} ({p:.3f})" for k, p in
                             zip(("1", "3", "10", "20"), PAPER[lang][baseline])]
                    lines.append(f"| {lang} | {chosen_on} | {baseline} | " + " | ".join(cells) + " |")
        lines += ["", "Per relation: edges and mean offset (dependent start - head):", "",
                  "| language | relation | edges | mean offset |", "|---|---|---|---|"]
        for lang, r in sorted(langs.items()):
            for name, v in r["statistics"]["relations"].items():
                lines.append(f"| {lang} | {name} | {v['edges']} | {v['mean_offset']} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.families.codesyntax.stats",
                                 description="CodeSyntax baselines and statistics (the paper's Tables 1-3).")
    sub = ap.add_subparsers(dest="command", required=True)
    b = sub.add_parser("baselines", help="offset/keyword/combined baselines and counts for one language and variant")
    b.add_argument("--samples", required=True, type=Path)
    b.add_argument("--relations", required=True, type=Path)
    b.add_argument("--language", required=True, choices=sorted(KEYWORDS))
    b.add_argument("--variant", required=True)
    b.add_argument("--ks", required=True, help="JSON list of k, e.g. [1,3,10,20]")
    b.add_argument("--out", required=True, type=Path, help="baseline table (Parquet)")
    b.add_argument("--stats", required=True, type=Path, help="statistics and scores (JSON)")
    r = sub.add_parser("report", help="merge the per-language statistics into the metrics JSON and Markdown")
    r.add_argument("--stats", nargs="+", required=True, type=Path)
    r.add_argument("--summaries", nargs="+", required=True, type=Path, help="label summaries (rejects, caps)")
    r.add_argument("--metrics", required=True, type=Path)
    r.add_argument("--markdown", required=True, type=Path)
    args = ap.parse_args(argv)
    logs.setup()
    if args.command == "baselines":
        # streamed: one batch of samples (their tokens) and of edges at a time; the edges' numbers stay
        edges = stream_relation_edges(
            read_batches(args.samples, schemas.SAMPLES, ["sample_id", "tokens", "eval_split"], 1024),
            read_batches(args.relations, schemas.RELATIONS, ["sample_id", "relation", "head", "dep_start", "dep_end"],
                         1 << 16), args.language)
        counts = sample_counts(read_batches(args.samples, schemas.SAMPLES, ["eval_split", "n_tokens"], 1 << 16))
        table = baselines(edges, args.language, args.variant, json.loads(args.ks))
        write_parquet(table, args.out, schemas.BASELINES)
        write_json({"language": args.language, "variant": args.variant,
                    "statistics": statistics(counts, edges), "scores": scores(table)}, args.stats)
        return 0
    report: dict = {"variants": {}}
    for path in args.stats:
        s = json.loads(path.read_text())
        report["variants"].setdefault(s["variant"], {})[s["language"]] = {"statistics": s["statistics"],
                                                                         "scores": s["scores"]}
    for path in args.summaries:
        s = json.loads(path.read_text())
        report["variants"].setdefault(s["variant"], {}).setdefault(s["language"], {})["labelling"] = s
    report["paper_table3_first_token"] = PAPER
    write_json(report, args.metrics)
    with atomic_path(args.markdown) as tmp:
        tmp.write_text(markdown(report), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
