"""apirec (APIBench-C, Python): recommendation points from the shared libcst extraction, and the
n-gram baseline's rankings.

A point is a resolved call (kinds `call`/`method`, fqn known) inside a function of an
evaluation-split file. Its context is the file's module-level imports, a blank line, and the
function's code from its `def` line up to the callee, cut exactly before it. Answers: the FQN
(method level) and the FQN without its last part (class level: a class or a module).

Metadata as the paper defines it (Sec. 3 and 5.3): category (the extraction's), position
(front / middle / back from a/n and b/m, `other` where the paper defines none), function
length bucket (shortest 5% / longest 5% / moderate, by LOC, ranked over the evaluation split's
functions that hold points), domain (params mapping source -> domain), split (by project).

The n-gram baseline is a bigram over the resolved calls of each train-split function (most
frequent next API given the previous one, `<s>` at the start), backed off to unigram frequency.
Its full ranking over the train vocabulary gives the baseline's gold rank; its top
`candidates` are the pool the models re-rank (infer.py).

A call whose API does not exist on the pipeline's platform makes no point (its answer cannot be called
here; the check: `pipeline.extract.availability`): defined only for another platform (`windows`,
...: counted per label in `apis_platform_left_out`, distinct APIs, and `points_platform_left_out`), or a
stdlib name the pinned interpreter's stdlib does not bind (`os.path.mkdir`: `apis_not_in_stdlib_left_out`,
`points_not_in_stdlib_left_out`). The n-gram still trains on every call, as the code was written.
"""

from __future__ import annotations

import argparse
import ast
import json
import logging
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from pipeline import schemas as core_schemas
from pipeline.core import ids, logs
from pipeline.core import shards as sharding
from pipeline.extract.availability import NOT_IN_STDLIB, Availability, left_out_counts
from pipeline.families.apirec import schemas
from pipeline.families.apirec.points import (CALL_KINDS, START, NGram, allocate, api_class,  # noqa: F401
                                             count_bigrams, counts_table, length_buckets, library_group,
                                             position, ranking_row, read_counts, NGRAM_COUNTS)
from pipeline.contamination.firstseen import functions_of
from pipeline.io import read_parquet, write_json, write_parquet
from pipeline.manifest import read_text

log = logging.getLogger("pipeline.families.apirec.generate")

def function_spans(tree: ast.Module) -> dict[str, tuple[int, int]]:
    """qualname (`C.m`, `f.<locals>.g`, as the extraction names them) -> (def line, last line)."""
    return {name: (node.lineno, node.end_lineno or node.lineno) for name, node in functions_of(tree).items()}


def module_imports(tree: ast.Module, text: str) -> str:
    """The file's module-level import statements as written (inside top-level if/try too)."""
    found: list[str] = []

    def walk(body):
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.append(ast.get_source_segment(text, node) or "")
            elif isinstance(node, (ast.If, ast.Try)):
                for field in ("body", "orelse", "finalbody"):
                    walk(getattr(node, field, []))
                for handler in getattr(node, "handlers", []):
                    walk(handler.body)

    walk(tree.body)
    return "\n".join(s for s in found if s)


def render(fqn: str, bindings: list[tuple[str, str]], module: str) -> str:
    """How `fqn` is written in a file with these module-level (bound name, target) imports."""
    if fqn.startswith("builtins."):
        return fqn[len("builtins."):]
    best = None
    for bound, target in bindings:
        if (fqn == target or fqn.startswith(target + ".")) and (best is None or len(target) > len(best[1])):
            best = (bound, target)
    if best:
        return best[0] + fqn[len(best[1]):]
    if module and fqn.startswith(module + "."):
        return fqn[len(module) + 1:]
    return fqn


def call_sequences(usages: pa.Table) -> dict[tuple[str, str], list[dict]]:
    """Resolved calls inside functions, per (file_id, function), in source order."""
    mask = pc.and_(pc.and_(pc.is_in(usages.column("kind"), pa.array(CALL_KINDS)), pc.is_valid(usages.column("fqn"))),
                   pc.is_valid(usages.column("enclosing_function")))
    rows = usages.filter(mask).sort_by([("file_id", "ascending"), ("line", "ascending"), ("col", "ascending")])
    out: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows.to_pylist():
        out[(r["file_id"], r["enclosing_function"])].append(r)
    return out


def ide_rows(points: list[dict], modules: dict[str, str], files: dict, root: Path, cap: int, typed: int, seed: int,
             top_k: int, stats: Counter, shard: int = 0, shards: int = 1) -> list[dict]:
    """The jedi IDE baseline (ide.py) on every point (`cap` 0) or a seeded subset: the file alone, cut at the
    point, with the callee's qualifier and its first `typed` characters typed. Points are visited file by file in
    source order under one path per file, so jedi's parser re-parses only what changed since the last cut.
    `shard` of `shards`: the subset is chosen over every point, then only this shard's files are ranked."""
    from pipeline.families.apirec import ide

    chosen = sorted(points, key=lambda p: ids.seeded_order_key(seed, "ide", p["point_id"]))[:cap] if cap else points
    if shards > 1:
        chosen = [p for p in chosen if sharding.in_shard(p["source"], p["path"], shard, shards)]
    with ide.project() as project:
        rows, texts, failures = [], {}, []
        for p in sorted(chosen, key=lambda p: (p["file_id"], p["line"], p["col"])):
            if p["file_id"] not in texts:
                for done in texts:  # the last file's points are done
                    ide.forget(project, done)
                texts = {p["file_id"]: read_text(files[p["file_id"]], root)}
            text = texts[p["file_id"]]
            lines = text.splitlines(keepends=True)
            offset = sum(len(x) for x in lines[: p["line"] - 1]) + p["col"]
            ranking = ide.complete(text[:offset], p["written"], project, typed=typed, key=p["file_id"],
                                   module=modules.get(p["point_id"], ""), failures=failures)
            rows.append(ranking_row(p, ranking, "jedi", "ide", top_k))
    if failures:
        log.warning("jedi raised on %d of %d IDE points (counted as ide_failures; they rank nothing): %s",
                    len(failures), len(rows), failures[0])
    stats["ide_points"] = len(rows)
    stats["ide_failures"] = len(failures)
    stats["ide_typed_chars"] = typed
    stats["ide_gold_in_list"] = sum(r["gold_in_candidates"] for r in rows)
    return rows


def train_counts(sequences: dict, domains: dict[str, str], default_domain: str) -> dict[str, Counter]:
    """The train split's bigram counts (points.count_bigrams) per domain: the all-domain n-gram is their sum,
    each per-domain n-gram one of them; shards' counts add up to one job's."""
    by_domain: dict[str, list[list[str]]] = defaultdict(list)
    for (_, _), seq in sorted(sequences.items()):
        if seq[0]["split"] == "train":
            by_domain[domains.get(seq[0]["source"], default_domain)].append([r["fqn"] for r in seq])
    return {domain: count_bigrams(seqs) for domain, seqs in by_domain.items()}


def cross_domain_rows(points: list[dict], counts: dict[str, Counter], top_k: int) -> list[dict]:
    """The paper's RQ6 (Table 9): one n-gram per domain, trained on that domain's train-split functions only
    (`counts`: train_counts), ranks every point (ranker `ngram_domain`, model `ngram@<domain>`); only when the
    train split holds two domains or more (with one, it is the n-gram itself)."""
    if len(counts) < 2:
        return []
    rows = []
    for domain, domain_counts in sorted(counts.items()):
        ngram, rankings = NGram.from_counts(domain_counts), {}
        for p in points:
            if p["previous_api"] not in rankings:
                rankings[p["previous_api"]] = ngram.rank(p["previous_api"])
            rows.append(ranking_row(p, rankings[p["previous_api"]], f"ngram@{domain}", "ngram_domain", top_k))
    return rows


RAW = pa.schema([(c, pa.string()) for c in ("file_id", "source", "repository", "path", "split", "module", "chain",
                                              "fqn", "category", "function", "body", "header", "previous")]
                + [(c, pa.int64()) for c in ("line", "col", "b", "m", "a", "n")])  # a shard's candidate points


def scan_points(sequences: dict, files: dict, root: Path, eval_split: str, available: Availability,
                shard: int = 0, shards: int = 1) -> tuple[list, dict, Counter, dict]:
    """The per-file part: every candidate point of the evaluation split's files (of one shard: by the
    hash of the file's source and path, pipeline.core.shards), each file read and parsed once. Returns
    the raw points (in (file_id, function, b) order), the functions' lengths, counters and verdicts."""
    stats = Counter()
    verdicts: dict[str, str | None] = {}
    raw, lengths = [], {}
    by_file: dict[str, list[tuple[str, list[dict]]]] = defaultdict(list)
    for (fid, function), seq in sorted(sequences.items()):
        if seq[0]["split"] == eval_split and sharding.in_shard(seq[0]["source"], seq[0]["path"], shard, shards):
            by_file[fid].append((function, seq))
    for fid in sorted(by_file):
        try:
            text = read_text(files[fid], root)
            tree = ast.parse(text)
        except (KeyError, OSError, SyntaxError, ValueError, RecursionError, UnicodeDecodeError):
            stats["unreadable_files"] += 1
            continue
        spans = function_spans(tree)
        header = module_imports(tree, text)
        starts = [0]
        for line in text.splitlines(keepends=True):
            starts.append(starts[-1] + len(line))
        for function, seq in by_file[fid]:
            if function not in spans:
                stats["function_not_found"] += len(seq)
                continue
            first, last = spans[function]
            n = last - first + 1
            lengths[(fid, function)] = n
            for b, r in enumerate(seq, 1):
                verdict = available.verdict(r["fqn"], r["category"])
                if verdict is not None:  # the API does not exist here: no point (it stays in the sequence)
                    verdicts[r["fqn"]] = verdict
                    stats["points_not_in_stdlib_left_out" if verdict == NOT_IN_STDLIB
                          else "points_platform_left_out"] += 1
                    continue
                offset = starts[r["line"] - 1] + r["col"]
                if r["chain"] is None or not text.startswith(r["chain"], offset):
                    stats["misaligned"] += 1
                    continue
                raw.append((r, function, offset, text[starts[first - 1]:offset], header, b, len(seq),
                            r["line"] - first + 1, n, seq[b - 2]["fqn"] if b > 1 else None))
    return raw, lengths, stats, verdicts


def cap_points(raw: list, max_points: int, seed: int, totals: dict[str, int] | None = None,
               per_source: int | None = None) -> list:
    """The seeded subset of `max_points` raw points (all when 0 or fewer), stratified by source: each source keeps
    its share of the cap by its points before the cap (`totals`; default: counted in `raw`), at least one, so a
    source with points in the evaluation split is never sampled out; within a source, the seeded order of the point
    ids. `per_source`: keep the first that many of each source instead (a shard's part: a superset of what the
    global cap keeps of it, whatever the shard count)."""
    if not max_points or len(raw) <= max_points:
        return raw
    by_source: dict[str, list[str]] = defaultdict(list)
    keyed = {}
    for x in raw:
        pid = ids.stable_id("apirec", x[0]["file_id"], x[0]["line"], x[0]["col"])
        keyed[pid] = x
        by_source[x[0]["source"]].append(pid)
    quota = ({s: per_source for s in by_source} if per_source is not None
             else allocate(totals or {s: len(v) for s, v in by_source.items()}, max_points))
    keep = set()
    for source, pids in by_source.items():
        keep.update(sorted(pids, key=lambda i: ids.seeded_order_key(seed, i))[:quota.get(source, 0)])
    return [x for pid, x in keyed.items() if pid in keep]


def generate(usages: pa.Table, imports: pa.Table, manifest: pa.Table, root: Path, domains: dict[str, str],
             default_domain: str, eval_split: str, max_points: int, candidates: int, top_k: int,
             seed: int, ide_max_points: int | None = None, ide_typed_chars: int = 1,
             popular_libraries: tuple[str, ...] = (), cross_domain: bool = False,
             inventory: pa.Table | None = None, scanned: tuple | None = None,
             modules_out: dict | None = None, counts: dict[str, Counter] | None = None) -> tuple[pa.Table, pa.Table, dict]:
    """Points, baseline rankings (n-gram; jedi unless `ide_max_points` is None, 0 = every point; the per-domain
    n-grams when `cross_domain`) and stats. `inventory`: the extraction's (platform labels of the corpus's
    names; without it only the stdlib checker judges). `scanned`: the shards' merged `scan_points`
    (raw, lengths, stats, verdicts, points before the cap) instead of scanning here; `modules_out`
    receives each point's module (the jedi shards read it). `counts`: the shards' summed `train_counts` (then
    `usages` is not read)."""
    files = {r["file_id"]: r for r in manifest.to_pylist()}
    if scanned is None or counts is None:
        sequences = call_sequences(usages)
        counts = train_counts(sequences, domains, default_domain)
    if scanned is None:
        raw, lengths, stats, verdicts = scan_points(sequences, files, root, eval_split, Availability(inventory, imports))
        total, totals = len(raw), dict(Counter(x[0]["source"] for x in raw))
    else:
        raw, lengths, stats, verdicts, total, totals = scanned
    ngram = NGram.from_counts(sum(counts.values(), Counter()))
    by_class = Counter(api_class(a) for a in ngram.vocab)

    bindings: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for fid, scope, bound, target in zip(*(imports.column(c).to_pylist() for c in ("file_id", "scope", "bound", "target"))):
        if not scope and bound and target:
            bindings[fid].append((bound, target))

    buckets = length_buckets(lengths)
    raw = cap_points(raw, max_points, seed, totals)
    rankings: dict[str | None, list[str]] = {}  # the n-gram's ranking depends on the previous API only
    points, baseline, modules = [], [], {}
    for r, function, offset, body, header, b, m, a, n, previous in raw:
        fqn = r["fqn"]
        point_id = ids.stable_id("apirec", r["file_id"], r["line"], r["col"])
        if previous not in rankings:
            rankings[previous] = ngram.rank(previous)
        ranking = rankings[previous]
        pool = ranking[:candidates]
        points.append({
            "point_id": point_id, "file_id": r["file_id"], "source": r["source"], "repository": r["repository"],
            "path": r["path"], "split": r["split"], "domain": domains.get(r["source"], default_domain),
            "function": function, "line": r["line"], "col": r["col"], "written": r["chain"], "api": fqn,
            "api_class": api_class(fqn), "category": r["category"],
            "library_group": library_group(r["category"], fqn, popular_libraries), "previous_api": previous,
            "api_index": b,
            "api_count": m, "line_in_function": a, "function_lines": n, "position": position(a, n, b, m),
            "length_bucket": buckets[(r["file_id"], function)], "imports": header,
            "context": (header + "\n\n" if header else "") + body,
            "class_siblings": by_class[api_class(fqn)] - (1 if fqn in ngram.unigram else 0),
            "seen": fqn in ngram.unigram, "candidates": pool,
            "candidate_texts": [render(c, bindings[r["file_id"]], r["module"]) for c in pool]})
        baseline.append((points[-1], ranking))
        modules[point_id] = r["module"] or ""
    if modules_out is not None:
        modules_out.update(modules)
    table = pa.Table.from_pylist(points, schemas.POINTS).sort_by("point_id")
    rows = [ranking_row(p, rk, "ngram", "ngram", top_k) for p, rk in baseline]
    if ide_max_points is not None:
        rows += ide_rows(points, modules, files, root, ide_max_points, ide_typed_chars, seed, top_k, stats)
    if cross_domain:
        rows += cross_domain_rows(points, counts, top_k)
    base = pa.Table.from_pylist(rows, schemas.BASELINES).sort_by([("point_id", "ascending"), ("model", "ascending")])
    stats.update({"points_all": total, "points": table.num_rows, "train_apis": len(ngram.vocab),
                  "functions": len(lengths)})
    stats["points_all_by_source"] = dict(sorted(totals.items()))
    for key, value in left_out_counts(verdicts).items():  # assigned: Counter.update would add to a dict
        stats[key] = value
    stats.setdefault("points_platform_left_out", 0)
    stats.setdefault("points_not_in_stdlib_left_out", 0)
    for col in ("category", "library_group", "position", "length_bucket", "domain", "source"):
        stats[f"points_by_{col}"] = dict(sorted(Counter(table.column(col).to_pylist()).items()))
    stats["ngram_gold_in_pool"] = sum(p["api"] in p["candidates"] for p in points)
    return table, base, dict(stats)


# -- shards (apirec.shards; pipeline.core.shards) -------------------------------------------------------
# N > 1: (1) N scan parts (`--scan-part`: each shard's files read and parsed, their candidate points under
# the shard's own seeded cap, which holds every point of the global one; the train split's bigram counts per
# domain of its files; its Java files indexed, java.index_part); (2) `--select`: the global step (the cap over
# all points, the n-grams from the summed counts, length buckets, the per-domain n-grams; the Java index parts
# merged: one job); (3) N jedi parts (`--ide-part`: the IDE baseline on the selected points of each shard's
# files; its Java files resolved against the merged index, java.resolve_part); (4) `--merge`: the jedi rows
# added, and the Java points from the Java parts (java.merge_parts, java.finish: the Java n-gram, the cap).
USAGE_KEYS = ("file_id", "source", "repository", "path", "split", "module", "chain", "fqn", "category", "line", "col")
MODULES = pa.schema([("point_id", pa.string()), ("module", pa.string())])


def beside(part: Path, table: str, suffix: str = ".parquet") -> Path:
    """A part's table beside its JSON: X.json -> X.<table>.parquet (or X.<table><suffix>)."""
    return part.with_name(f"{part.name.removesuffix('.json')}.{table}{suffix}")


def write_scan_part(scanned: tuple, counts: dict[str, Counter], max_points: int, seed: int, part: Path) -> None:
    write_parquet(counts_table(counts), beside(part, "ngram"), NGRAM_COUNTS)
    raw, lengths, stats, verdicts = scanned
    kept = cap_points(raw, max_points, seed, per_source=max_points)
    rows = [{**{k: r[k] for k in USAGE_KEYS}, "function": function, "body": body, "header": header, "b": b, "m": m,
             "a": a, "n": n, "previous": previous} for r, function, _, body, header, b, m, a, n, previous in kept]
    write_parquet(pa.Table.from_pylist(rows, RAW), beside(part, "raw"), RAW)
    write_json({"stats": dict(stats), "verdicts": verdicts, "points_all": len(raw),
                "points_by_source": dict(sorted(Counter(x[0]["source"] for x in raw).items())),
                "lengths": [[fid, function, n] for (fid, function), n in sorted(lengths.items())]}, part)


def read_scan_parts(parts: list[Path]) -> tuple:
    """The shards' scan parts as one job's `scan_points` (raw points in its (file_id, function, b) order),
    the count before the caps and the counts per source before the caps; and the shards' bigram counts
    summed (one job's `train_counts`)."""
    import json

    raw, lengths, stats, verdicts, total, totals = [], {}, Counter(), {}, 0, Counter()
    for part in parts:
        meta = json.loads(part.read_text())
        stats.update(meta["stats"])
        verdicts.update(meta["verdicts"])
        total += meta["points_all"]
        totals.update(meta["points_by_source"])
        lengths.update({(fid, function): n for fid, function, n in meta["lengths"]})
        for x in read_parquet(beside(part, "raw"), RAW).to_pylist():
            raw.append(({k: x[k] for k in USAGE_KEYS}, x["function"], None, x["body"], x["header"], x["b"], x["m"],
                        x["a"], x["n"], x["previous"]))
    raw.sort(key=lambda x: (x[0]["file_id"], x[1], x[5]))
    counts = read_counts([read_parquet(beside(part, "ngram"), NGRAM_COUNTS) for part in parts])
    return (raw, lengths, stats, verdicts, total, dict(totals)), counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--usages", required=True, type=Path)
    ap.add_argument("--imports", required=True, type=Path)
    ap.add_argument("--manifest", required=True, type=Path)
    ap.add_argument("--inventory", type=Path, default=None,
                    help="the extraction's inventory: platform-specific names of the corpus make no point")
    ap.add_argument("--domains", nargs="*", default=[], help="source=domain pairs")
    ap.add_argument("--default-domain", required=True)
    ap.add_argument("--eval-split", required=True)
    ap.add_argument("--max-points", type=int, required=True)
    ap.add_argument("--candidates", type=int, required=True)
    ap.add_argument("--top-k", type=int, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--ide-max-points", type=int, default=None,
                    help="a seeded subset of the points the jedi IDE baseline ranks (0: every point; omitted: no jedi)")
    ap.add_argument("--ide-typed-chars", type=int, default=1,
                    help="characters of the callee's name typed before jedi completes (after its qualifier)")
    ap.add_argument("--popular-libraries", nargs="*", default=[],
                    help="top-level packages of the popular third-party libraries (library_group)")
    ap.add_argument("--cross-domain", action="store_true",
                    help="also rank every point with one n-gram per training domain (the paper's RQ6, Table 9)")
    ap.add_argument("--java-max-points", type=int, default=0, help="a seeded subset of the Java points (0: all)")
    ap.add_argument("--stdlib-sources", nargs="*", default=[],
                    help="sources that are a standard library (`builtin: stdlib` / `jdk`): Java category `stdlib`")
    ap.add_argument("--per-repository-sources", nargs="*", default=[],
                    help="sources holding many projects (jsonl dumps): one distribution per repository")
    ap.add_argument("--points", type=Path)
    ap.add_argument("--baselines", type=Path)
    ap.add_argument("--metrics", type=Path)
    sharding.add_arguments(ap, "the last shard step: the jedi parts (their JSON, X.json, beside X.ide.parquet) and "
                               "--selected merged with the Java points into --points/--baselines/--metrics")
    ap.add_argument("--scan-part", type=Path, metavar="PART",
                    help="shard step 1: this shard's candidate points (PART, a JSON beside PART's .raw.parquet)")
    ap.add_argument("--select", nargs="+", type=Path, metavar="PART",
                    help="shard step 2: the scan parts' global step (cap, n-gram, buckets) into --selected")
    ap.add_argument("--selected", type=Path, metavar="JSON",
                    help="the selected points of step 2 (JSON beside its .points/.baselines/.modules.parquet)")
    ap.add_argument("--ide-part", type=Path, metavar="PART",
                    help="shard step 3: the jedi baseline on --selected's points of this shard's files")
    args = ap.parse_args(argv)
    sharding.check_arguments(ap, args)
    sharded = args.scan_part or args.ide_part
    if bool(sharded) != (args.shards > 1) and not (args.ide_part and args.shards == 1):
        ap.error("--scan-part/--ide-part take one shard of --shards N > 1; without them give no --shard/--shards")
    if (args.ide_part or args.merge) and not args.selected:
        ap.error("--ide-part and --merge read the points of --select: give --selected")
    if not (args.scan_part or args.select or args.ide_part) and not (args.points and args.baselines and args.metrics):
        ap.error("give --points, --baselines and --metrics (or one shard step: --scan-part, --select, --ide-part)")
    logs.setup()
    domains = dict(d.split("=", 1) for d in args.domains)
    manifest = read_parquet(args.manifest, core_schemas.MANIFEST)
    from pipeline.families.apirec import java

    java_rows = java.java_files(manifest.to_pylist()) if (args.scan_part or args.ide_part or args.merge) else []
    if args.scan_part:
        usages, imports = read_parquet(args.usages, core_schemas.USAGES), read_parquet(args.imports, core_schemas.IMPORTS)
        inventory = read_parquet(args.inventory, core_schemas.INVENTORY) if args.inventory else None
        sequences = call_sequences(sharding.rows_of_shard(usages, args.shard, args.shards))
        del usages
        scanned = scan_points(sequences, {r["file_id"]: r for r in manifest.to_pylist()}, Path("."),
                              args.eval_split, Availability(inventory, imports), args.shard, args.shards)
        write_scan_part(scanned, train_counts(sequences, domains, args.default_domain), args.max_points, args.seed,
                        args.scan_part)
        index, unreadable = java.index_files(java_rows, Path("."), java.distributions(
            frozenset(args.stdlib_sources), frozenset(args.per_repository_sources)), args.shard, args.shards)
        write_json(java.index_part(index, unreadable), beside(args.scan_part, "java", ".json"))
        log.info("apirec shard %d of %d: %d candidate points, %d Java files indexed", args.shard, args.shards,
                 len(scanned[0]), len(index.scopes))
        return 0
    if args.ide_part:
        points = read_parquet(beside(args.selected, "points"), schemas.POINTS).to_pylist()
        modules = {r["point_id"]: r["module"] for r in read_parquet(beside(args.selected, "modules"), MODULES).to_pylist()}
        stats = Counter()
        rows = [] if args.ide_max_points is None else ide_rows(  # no --ide-max-points: no jedi, as in one job
            points, modules, {r["file_id"]: r for r in manifest.to_pylist()}, Path("."), args.ide_max_points,
            args.ide_typed_chars, args.seed, args.top_k, stats, args.shard, args.shards)
        write_parquet(pa.Table.from_pylist(rows, schemas.BASELINES), beside(args.ide_part, "ide"), schemas.BASELINES)
        index, _ = java.merge_index([json.loads(beside(args.selected, "java", ".json").read_text())])
        raw, counts, meta = java.resolve_part(index, java_rows, Path("."), args.eval_split, args.java_max_points,
                                              args.seed, args.shard, args.shards)
        write_parquet(raw, beside(args.ide_part, "java"), java.RAW)
        write_parquet(counts_table({"": counts}), beside(args.ide_part, "javangram"), NGRAM_COUNTS)
        write_json(meta, beside(args.ide_part, "java", ".json"))
        write_json(dict(stats), args.ide_part)
        return 0
    if args.merge:
        points = read_parquet(beside(args.selected, "points"), schemas.POINTS)
        stats = json.loads(args.selected.read_text())
        tables = [read_parquet(beside(args.selected, "baselines"), schemas.BASELINES)]
        if args.ide_max_points is not None:
            ide = Counter()
            for part in args.merge:
                ide.update({k: v for k, v in json.loads(part.read_text()).items() if k != "ide_typed_chars"})
                tables.append(read_parquet(beside(part, "ide"), schemas.BASELINES))
            stats.update({"ide_points": ide["ide_points"], "ide_failures": ide["ide_failures"],
                          "ide_gold_in_list": ide["ide_gold_in_list"], "ide_typed_chars": args.ide_typed_chars})
        base = pa.concat_tables(tables).sort_by([("point_id", "ascending"), ("model", "ascending")])
        index, unreadable = java.merge_index([json.loads(beside(args.selected, "java", ".json").read_text())])
        raw, lengths, eval_stats, totals = java.merge_parts(
            java_rows, [read_parquet(beside(part, "java"), java.RAW) for part in args.merge],
            [json.loads(beside(part, "java", ".json").read_text()) for part in args.merge])
        jcounts = read_counts([read_parquet(beside(part, "javangram"), NGRAM_COUNTS) for part in args.merge])
        jp, jb, jstats = java.finish(index, len(java_rows), unreadable, jcounts.get("", Counter()), raw, lengths,
                                     eval_stats, totals, domains, args.default_domain, args.java_max_points,
                                     args.candidates, args.top_k, args.seed, tuple(args.popular_libraries))
        points, base, stats = java.add_rows(points, base, stats, jp, jb, jstats)
    else:
        # the select step reads the scan parts (points, counts), never the usages
        usages = None if args.select else read_parquet(args.usages, core_schemas.USAGES)
        imports = read_parquet(args.imports, core_schemas.IMPORTS)
        inventory = read_parquet(args.inventory, core_schemas.INVENTORY) if args.inventory else None
        scanned, counts = read_scan_parts(args.select) if args.select else (None, None)
        modules: dict[str, str] = {}
        points, base, stats = generate(usages, imports, manifest, Path("."), domains, args.default_domain,
                                       args.eval_split, args.max_points, args.candidates, args.top_k, args.seed,
                                       None if args.select else args.ide_max_points, args.ide_typed_chars,
                                       tuple(args.popular_libraries), args.cross_domain, inventory, scanned, modules,
                                       counts)
        if args.select:
            index, unreadable = java.merge_index([json.loads(beside(part, "java", ".json").read_text())
                                                  for part in args.select])
            write_json(java.index_part(index, unreadable), beside(args.selected, "java", ".json"))
            write_parquet(points, beside(args.selected, "points"), schemas.POINTS)
            write_parquet(base, beside(args.selected, "baselines"), schemas.BASELINES)
            write_parquet(pa.Table.from_pylist([{"point_id": k, "module": v} for k, v in sorted(modules.items())],
                                               MODULES), beside(args.selected, "modules"), MODULES)
            write_json(stats, args.selected)
            return 0
        points, base, stats = java.add_java_points(points, base, stats, manifest,
                                                   Path("."), domains, args.default_domain, args.eval_split,
                                                   args.java_max_points, args.candidates, args.top_k, args.seed,
                                                   tuple(args.popular_libraries), frozenset(args.stdlib_sources),
                                                   frozenset(args.per_repository_sources))
    write_parquet(points, args.points, schemas.POINTS)
    write_parquet(base, args.baselines, schemas.BASELINES)
    write_json(stats, args.metrics)
    log.info("apirec: %d points (%d before the cap) %s", stats["points"], stats["points_all"],
             stats["points_by_category"])
    log.info("apirec java: %d points (%d before the cap), %s of %s calls resolved", stats["java"]["points"],
             stats["java"]["points_all"], stats["java"]["resolved"], stats["java"]["calls"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
