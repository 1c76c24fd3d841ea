"""New identifier pairs for a rating survey, selected as the paper selected IdBench's (Section II-B c):
take the corpus's frequent identifiers (the paper: more than 50 occurrences), rank all their pairs
by one embedding's cosine, and sample pairs from each range of the ranking (here: `ranges` equal
ranges, `per_range` pairs each), plus uniformly random pairs, which are likely unrelated. The
paper's manual additions (synonym pairs) are left to the survey's authors.

Frequencies come from the same identifier sequences the embeddings train on (the languages and
splits of params `embeddings`, duplicates excluded, every file: `max_tokens` caps training only).
Each identifier's language is the one it occurs in most (ties: name order), and its source/repository the one it
occurs in most in the pair's language (`mixed`: its own), so the provenance always holds it in that language.

Pairs are drawn per language: each identifier belongs to the language it occurs in
most, and each language's identifiers are ranked and sampled on their own (`max_identifiers`,
`ranges`, `per_range` and `random_pairs` apply per language), so no pair mixes languages and every
language of `embeddings.languages` with frequent identifiers gets its own pairs. `mixed: true` adds
one more group, `mixed`, ranked over every language's identifiers together (the former behaviour).
Deterministic: seeded sampling (a stream per group), ties in the ranking broken by the identifiers' text.
"""

from __future__ import annotations

import argparse
import json
import logging
from collections import Counter, defaultdict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.core import logs
from pipeline.core.ids import stable_id
from pipeline.families.idbench import schemas
from pipeline.families.idbench.embeddings import load_vectors, vectors
from pipeline.identifiers.schemas import SEQUENCES
from pipeline.io import read_parquet, write_parquet

log = logging.getLogger("pipeline.families.idbench.newpairs")


def frequencies(sequences, languages: list[str], splits: list[str]) -> tuple[Counter, dict[str, Counter], dict[tuple[str, str], Counter]]:
    """(count per identifier, language counts per identifier, (source, repository) counts per (identifier,
    language)), counted by Arrow over the flattened sequences (no Python list per file)."""
    table = read_parquet(sequences, SEQUENCES)
    keep = pc.and_(pc.and_(pc.is_in(table["language"], pa.array(languages)),
                           pc.is_in(table["split"], pa.array(splits))), pc.invert(table["duplicate"]))
    table = table.filter(keep)
    lists = table["identifiers"].combine_chunks()
    parent = pc.list_parent_indices(lists)
    origin = pc.binary_join_element_wise(table["source"], table["repository"], "\t")
    flat = pa.table({"word": pc.list_flatten(lists), "language": pc.take(table["language"], parent),
                     "origin": pc.take(origin, parent)})
    flat = flat.filter(pc.not_equal(flat["word"], ""))
    total: Counter = Counter()
    by_language: dict[str, Counter] = defaultdict(Counter)
    by_origin: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for r in flat.group_by(["word", "language"]).aggregate([([], "count_all")]).to_pylist():
        total[r["word"]] += r["count_all"]
        by_language[r["word"]][r["language"]] = r["count_all"]
    # per language: a pair's provenance names a source holding the identifier in the pair's language (counted
    # over every language, `Integer` came "from tomlkit", a Python source, in a Java pair)
    for r in flat.group_by(["word", "language", "origin"]).aggregate([([], "count_all")]).to_pylist():
        by_origin[(r["word"], r["language"])][r["origin"]] = r["count_all"]
    return total, by_language, by_origin


def most(counter: Counter) -> str:
    return min(counter.items(), key=lambda kv: (-kv[1], kv[0]))[0]


def origin_of(by_origin: dict[tuple[str, str], Counter], word: str, language: str) -> list[str]:
    """[source, repository] where `word` occurs most in `language` (ties: name order)."""
    return most(by_origin[(word, language)]).split("\t")


def rank_pairs(unit: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair i < j of the rows of unit vectors, most similar first (ties: by i, then j):
    (i, j, cosine) in ranking order."""
    n = len(unit)
    i, j = np.triu_indices(n, k=1)
    cos = (unit @ unit.T)[i, j]
    order = np.lexsort((j, i, -np.round(cos, 12)))
    return i[order], j[order], cos[order]


def sample(n_pairs: int, ranges: int, per_range: int, random_pairs: int, rng: np.random.Generator) -> list[tuple[str, int]]:
    """(stratum, position in the ranking) of the sampled pairs: `per_range` from each of `ranges`
    equal ranges of the ranking, then `random_pairs` uniformly among the rest."""
    chosen: list[tuple[str, int]] = []
    bounds = np.linspace(0, n_pairs, ranges + 1).round().astype(int)
    for k in range(ranges):
        lo, hi = int(bounds[k]), int(bounds[k + 1])
        take = min(per_range, hi - lo)
        chosen += [(f"range-{k}", int(p)) for p in sorted(rng.choice(np.arange(lo, hi), size=take, replace=False))]
    taken = {p for _, p in chosen}
    extra: list[int] = []
    while len(extra) < min(random_pairs, n_pairs - len(taken)):  # uniform among the pairs not taken yet
        p = int(rng.integers(0, n_pairs))
        if p not in taken:
            taken.add(p)
            extra.append(p)
    return chosen + [("random", p) for p in sorted(extra)]


def new_pairs(sequences, model, idbench_pairs, params: dict, embeddings: dict, seed: int, floor: int = 0) -> pa.Table:
    """Sampled pairs of every language group (then `mixed`, when asked), in group order. A group with fewer than
    `floor` pairs (`report.min_n`) is warned about, naming the count and the floor (the report prints it "too
    few")."""
    technique = params["technique"]
    fasttext, _ = schemas.EMBEDDINGS[technique]
    total, by_language, by_origin = frequencies(sequences, embeddings["languages"], embeddings["splits"])
    wv = load_vectors(model)
    frequent = sorted((w for w, c in total.items() if c >= params["min_count"]), key=lambda w: (-total[w], w))
    unit, known = vectors(wv, frequent, fasttext)
    frequent = [w for w, ok in zip(frequent, np.isfinite(unit).all(axis=1)) if ok]  # word2vec: in vocabulary only
    groups: dict[str, list[str]] = defaultdict(list)
    for w in frequent:  # most frequent first
        groups[most(by_language[w])].append(w)
    order = sorted(groups)
    if params.get("mixed", False):
        groups["mixed"] = frequent
        order.append("mixed")
    released = {frozenset((p["id1"], p["id2"])) for p in read_parquet(idbench_pairs, schemas.PAIRS).to_pylist()}
    rows: list[dict] = []
    for group in order:
        mine = _group_pairs(group, groups[group], wv, fasttext, params, seed, total, by_language, by_origin, released)
        if len(mine) < floor:
            log.warning("idbench new pairs: %s has %d pairs (%d identifiers reach new_pairs.min_count %d), under the "
                        "floor report.min_n %d: its cells in the report print 'too few items'; add %s code to the "
                        "corpus or lower idbench.new_pairs.min_count", group, len(mine), len(groups[group]),
                        params["min_count"], floor, group)
        rows += mine
    return pa.Table.from_pylist(rows, schemas.NEW_PAIRS)


def _group_pairs(group: str, words: list[str], wv, fasttext: bool, params: dict, seed: int, total: Counter,
                 by_language: dict[str, Counter], by_origin: dict[str, Counter], released: set) -> list[dict]:
    technique = params["technique"]
    if params["max_identifiers"]:
        words = words[: params["max_identifiers"]]
    words = sorted(words)
    unit, _ = vectors(wv, words, fasttext)
    log.info("%s: %d identifiers with >= %d occurrences (embedded by %s)", group, len(words), params["min_count"],
             technique)
    i, j, cos = rank_pairs(unit)
    rng = np.random.default_rng(int(stable_id("idbench-new-pairs", seed, technique, group), 16))
    rows = []
    for stratum, pos in sample(len(cos), params["ranges"], params["per_range"], params["random_pairs"], rng):
        a, b = words[i[pos]], words[j[pos]]
        # each identifier's source and repository in the pair's language (`mixed`: in the identifier's own)
        la = group if group != "mixed" else most(by_language[a])
        lb = group if group != "mixed" else most(by_language[b])
        oa, ob = origin_of(by_origin, a, la), origin_of(by_origin, b, lb)
        # a pair of one language has one id; the same pair drawn again in `mixed` is another row
        pair_id = stable_id("idbench-new-pair", a, b, *(("mixed",) if group == "mixed" else ()))
        rows.append({"pair_id": pair_id, "language": group, "id1": a, "id2": b, "stratum": stratum,
                     "rank": pos, "cosine": round(float(cos[pos]), 6), "technique": technique,
                     "id1_count": total[a], "id2_count": total[b],
                     "id1_language": la, "id2_language": lb,
                     "id1_source": oa[0], "id1_repository": oa[1], "id2_source": ob[0], "id2_repository": ob[1],
                     "in_idbench": frozenset((a, b)) in released})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.families.idbench.newpairs", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sequences", required=True)
    ap.add_argument("--model", required=True, help="the ranking technique's model (embeddings.py)")
    ap.add_argument("--pairs", required=True, help="IdBench pairs (marks pairs already in the release)")
    ap.add_argument("--params", required=True, help="JSON: params.yaml idbench.new_pairs")
    ap.add_argument("--embeddings", required=True, help="JSON: params.yaml idbench.embeddings (languages, splits)")
    ap.add_argument("--seed", required=True, type=int)
    ap.add_argument("--floor", type=int, default=0,
                    help="report.min_n: a language with fewer pairs gets a warning naming the count and the floor")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    logs.setup()
    table = new_pairs(args.sequences, args.model, args.pairs, json.loads(args.params), json.loads(args.embeddings),
                      args.seed, args.floor)
    write_parquet(table, args.out, schemas.NEW_PAIRS)
    log.info("%d new pairs", table.num_rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
