"""A whole run at once (numpy): trec_eval's standard measures from TREC-style dicts or from graded lists.

    from pipeline import metrics
    got = metrics.evaluate_run(qrels, run, ks=(1, 5, 10))   # qrels[q][doc] = grade, run[q][doc] = score
    got.qids, got.values["ndcg@5"]                          # sorted query ids, one float64 per query

The measures are the macros' (macros.sql) and their twins' (ranking.py), computed over every query at
once: `GradedRuns` holds the grades of every query's returned documents in rank order in ONE flat array
(query i: `grades[offsets[i]:offsets[i + 1]]`, the layout of an Arrow list column) and the judged
grades the same way, so each measure is a few vector operations, not a loop over queries:

- success@k (trec_eval success_k), rr (recip_rank: 1 / the first relevant rank, 0 if none);
- ap@k (map_cut_k): the sum of precision@i over the relevant ranks i <= k, over every relevant judged
  document (0 when there is none); ap_apibench@k: the same sum over the relevant documents found in the
  top k (APIBench);
- ndcg@k (ndcg_cut_k): DCG@k (gain = grade, a negative grade 0, discount log2(rank + 1)) over the DCG@k of
  the judged grades sorted descending (0 when that is 0).

Relevant = grade >= min_grade. The sums run over ranks 1..k in order, one rank at a time, as trec_eval
and the SQL macros add them (adding 0.0 where a rank adds nothing), so the values equal trec_eval's and
the macros' exactly, not within a rounding (tests/test_metrics.py).

Reading a run (`read_run`) follows trec_eval: the queries of the run that have judgements (sorted ids;
a query with an empty run scores 0 everywhere, as pytrec_eval gives it), documents by score descending
and equal scores by document id descending (trec_eval's `comp_sim_docno`), unjudged documents grade 0.
A query whose documents are already in that order (a run written in rank order) is not re-sorted, and
documents of equal score are put in document-id order only where their grades differ (elsewhere any order
gives the same graded list).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import chain, compress, repeat
from operator import attrgetter, lt

import numpy as np

STANDARD = ("success", "rr", "ap", "ndcg")
_GET = attrgetter("get")
_ZEROS = repeat(0)  # endless: shared by every query's map
# Blocks of equal scores put in document-id order by one comparison per pair while their pairs are at most
# this many per id (short blocks, the common case); longer ones by one sort of their ids.
_PAIRS_PER_ID = 8
# Judged grades up to this are sorted by counting (GradedRuns.positive_descending), larger ones by a lexsort.
_COUNTING_MAX = 64


@dataclass(frozen=True)
class GradedRuns:
    """Every query's graded ranking, flat. qids[i]'s returned grades in rank order are
    grades[offsets[i]:offsets[i + 1]], its judged grades ideal[ideal_offsets[i]:ideal_offsets[i + 1]]."""

    qids: list
    offsets: np.ndarray
    grades: np.ndarray
    ideal_offsets: np.ndarray
    ideal: np.ndarray

    @classmethod
    def from_lists(cls, rels, ideal, qids=None) -> GradedRuns:
        """From per-query lists (a graded list in rank order, the judged grades; None = empty)."""
        rels, ideal = [r or () for r in rels], [i or () for i in ideal]
        if len(rels) != len(ideal):
            raise ValueError(f"{len(rels)} graded lists but {len(ideal)} judged lists: give one of each per query")
        off, flat = _flat(rels)
        ioff, iflat = _flat(ideal)
        return cls(list(range(len(rels))) if qids is None else list(qids), off, flat, ioff, iflat)

    def arrow(self):
        """A pyarrow Table (rels, ideal, gains: list<int32>; row i is qids[i]) over these arrays, the graded lists
        the macros take (macros.sql), built from buffers: no per-value Python, and not the pandas import (~0.5
        CPU-s) that pyarrow pays on the first `pa.array` of a list or a numpy array. `gains` is each query's
        positive judged grades sorted descending (`positive_descending`): what IDCG reads, and its length the
        number of judged documents with grade >= 1 (grades are integers), so a query needs no list lambda over
        every judged grade for either."""
        import pyarrow as pa

        def ints(values: np.ndarray):
            values = np.ascontiguousarray(values, np.int32)
            return pa.Array.from_buffers(pa.int32(), len(values), [None, pa.py_buffer(values)])

        def lists(offsets: np.ndarray, values: np.ndarray):
            return pa.ListArray.from_arrays(ints(offsets), ints(values))

        return pa.Table.from_arrays([lists(self.offsets, self.grades), lists(self.ideal_offsets, self.ideal),
                                     lists(*self.positive_descending())], names=["rels", "ideal", "gains"])

    def positive_descending(self) -> tuple[np.ndarray, np.ndarray]:
        """(offsets, values): each query's positive judged grades, sorted descending, flat. Grades up to
        `_COUNTING_MAX` by counting (one bincount of (query, grade) and one repeat; while the counts' table is
        at most 8 entries per grade kept), otherwise by a lexsort."""
        return _positive_descending(self.ideal_offsets, self.ideal)

    def rels(self) -> list[list[int]]:
        """The graded lists back as Python lists (one per query)."""
        return _lists(self.offsets, self.grades)

    def judged(self) -> list[list[int]]:
        """The judged grades back as Python lists (one per query)."""
        return _lists(self.ideal_offsets, self.ideal)


def _positive_descending(offsets: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    nq = len(offsets) - 1
    keep = values > 0
    counts = _counts(keep).astype(np.int64)
    lens = counts[offsets[1:]] - counts[offsets[:-1]]
    out_offsets = np.zeros(nq + 1, np.int64)
    np.cumsum(lens, out=out_offsets[1:])
    values = values[keep]
    if not len(values):
        return out_offsets, values
    rows = np.repeat(np.arange(nq), lens)
    top = int(values.max())
    if top <= _COUNTING_MAX and nq * top <= 8 * len(values) + 1024:
        # per query, how many of each grade, highest first: the sorted list itself
        per = np.bincount(rows * top + (top - values), minlength=nq * top)
        return out_offsets, np.repeat(np.tile(np.arange(top, 0, -1, dtype=values.dtype), nq), per)
    return out_offsets, values[np.lexsort((-values, rows))]


def _lists(offsets: np.ndarray, values: np.ndarray) -> list[list[int]]:
    v, o = values.tolist(), offsets.tolist()
    return [v[a:b] for a, b in zip(o, o[1:])]


def _flat(lists) -> tuple[np.ndarray, np.ndarray]:
    lens = np.fromiter(map(len, lists), np.int64, len(lists))
    offsets = np.zeros(len(lists) + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    return offsets, _ints(chain.from_iterable(lists), int(offsets[-1]), "grades")


def _ints(values, n: int, what: str) -> np.ndarray:
    """Integers (read as float64 first: a fractional grade is an error, not truncated)."""
    try:
        got = np.fromiter(values, np.float64, n)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{what} must be integers (trec_eval's relevance levels): {err}") from None
    whole = got.astype(np.int64)
    if (whole != got).any():
        raise ValueError(f"{what} must be integers (trec_eval's relevance levels), got {float(got[whole != got][0])!r}")
    return whole


def read_run(qrels: dict, run: dict) -> GradedRuns:
    """TREC-style dicts (qrels[q][doc] = integer grade, run[q][doc] = score) -> GradedRuns, ranked as
    trec_eval ranks (score descending, equal scores by document id descending)."""
    qids = sorted(filter(qrels.__contains__, run))
    runs = list(map(run.__getitem__, qids))
    judged = list(map(qrels.__getitem__, qids))
    lens = np.fromiter(map(len, runs), np.int64, len(qids))
    offsets = np.zeros(len(qids) + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    n = int(offsets[-1])
    try:
        scores = np.fromiter(chain.from_iterable(map(dict.values, runs)), np.float64, n)
    except (TypeError, ValueError) as err:
        raise ValueError(f"run scores must be numbers (run[query][doc] = score): {err}") from None
    if np.isnan(scores).any():
        q = qids[int(np.searchsorted(offsets, np.flatnonzero(np.isnan(scores))[0], side="right")) - 1]
        raise ValueError(f"query {q!r} has a NaN score: trec_eval cannot rank it; drop or replace it")
    ilens = np.fromiter(map(len, judged), np.int64, len(qids))
    ioff = np.zeros(len(qids) + 1, np.int64)
    np.cumsum(ilens, out=ioff[1:])
    iflat = _ints(chain.from_iterable(map(dict.values, judged)), int(ioff[-1]), "qrels grades")
    # every returned document's grade: map(judged[i].get, runs[i], 0s) per query, no Python frame per query
    # (each is 0 or a judged grade, all checked integers just above)
    grades = np.array(list(chain.from_iterable(map(map, map(_GET, judged), runs, repeat(_ZEROS)))), np.int64)
    order = _rank_order(scores, offsets, lens, runs, grades)
    if order is not None:
        grades = grades[order]
    return GradedRuns(qids, offsets, grades, ioff, iflat)


def _rank_order(scores, offsets, lens, runs, grades) -> np.ndarray | None:
    """The permutation putting each query's documents in trec_eval's order (None: already in it), as far as
    the grades can tell: a block of equal scores is put in trec_eval's order (document id descending) only
    where its documents' grades differ; in a block of one grade every order gives the same graded list."""
    n = len(scores)
    if n < 2:
        return None
    starts = np.zeros(n, bool)
    starts[offsets[:-1][lens > 0]] = True
    step = scores[1:] < scores[:-1]  # strictly descending within a query: nothing to do
    bad = ~(step | starts[1:])
    if not bad.any():
        return None
    qidx = np.repeat(np.arange(len(lens)), lens)
    order = np.arange(n)
    redo = np.zeros(len(lens), bool)  # the queries out of order or with ties
    redo[qidx[1:][bad]] = True
    sel = np.flatnonzero(redo[qidx])
    # any order within a block of equal scores will do: one grade, one graded list; two grades, sorted below
    # (stable only when a score is -inf, which would tie with the padding of the sort's rows)
    stable = bool(np.isneginf(scores[sel]).any())
    sub = sel[_by_query_descending(scores[sel], qidx[sel], stable)]
    s = scores[sub]
    tie = (s[1:] == s[:-1]) & (qidx[sub][1:] == qidx[sub][:-1])
    g = grades[sub]
    mixed = tie & (g[1:] != g[:-1])  # within a block of equal scores, two grades side by side
    if mixed.any():  # equal scores: document id descending (trec_eval's comp_sim_docno), per mixed block
        sub = _docs_descending_in_blocks(sub, tie, mixed, offsets, runs)
    order[sel] = sub
    return order


def _docs_descending_in_blocks(sub, tie, mixed, offsets, runs) -> np.ndarray:
    """`sub` (run positions, grouped by query, score descending) with every block of equal scores that holds
    two grades put in document-id order, descending (trec_eval's `comp_sim_docno`), without a Python-level
    sort: the ids of those blocks' documents are read from the queries that hold such a block (one pass over
    their documents, only those ids kept), then each document's place in its block is the number of the
    block's ids above its own, from one comparison per pair in a block (Python's string order, the code
    points, is strcmp's byte order of their UTF-8). Blocks too long for pairs (their pairs over
    `_PAIRS_PER_ID` per id) rank every id by one sort instead."""
    edge = np.flatnonzero(np.diff(np.concatenate(([0], tie.astype(np.int8), [0]))))
    first, last = edge[::2], edge[1::2] + 1  # block k: sub[first[k]:last[k]]
    seen = _counts(mixed)
    keep = seen[last - 1] > seen[first]
    first, size = first[keep], last[keep] - first[keep]
    lead = np.cumsum(size) - size  # each block's first place in `at` / `elems`
    at = np.repeat(first - lead, size) + np.arange(int(size.sum()))  # the blocks' places in sub
    elems = sub[at]
    m = len(elems)
    # their document ids, read in run order from the queries that hold them: ids[r[k]] is elems[k]'s id
    wanted = np.zeros(int(offsets[-1]), bool)
    wanted[elems] = True
    qs = np.unique(np.searchsorted(offsets, elems, side="right") - 1)
    qlens = offsets[qs + 1] - offsets[qs]
    span = np.repeat(offsets[qs] - np.cumsum(qlens) + qlens, qlens) + np.arange(int(qlens.sum()))
    ids = list(compress(chain.from_iterable(map(runs.__getitem__, qs.tolist())), wanted[span].tolist()))
    rank = np.empty(int(offsets[-1]), np.int64)  # by run position: its id's index in `ids`
    rank[np.flatnonzero(wanted)] = np.arange(m)
    r = rank[elems]
    out = sub.copy()
    pairs = int((size * (size - 1) // 2).sum())
    if pairs > _PAIRS_PER_ID * m:  # long blocks: one sort of every id, then one lexsort per block
        order = np.empty(m, np.int64)
        order[sorted(range(m), key=ids.__getitem__)] = np.arange(m)
        out[at] = elems[np.lexsort((-order[r], np.repeat(np.arange(len(size)), size)))]
        return out
    # every pair (i, j), i < j, of one block: i repeated once per later member of its block
    later = np.repeat(lead + size, size) - np.arange(m) - 1
    i = np.repeat(np.arange(m), later)
    j = i + 1 + np.arange(pairs) - np.repeat(np.cumsum(later) - later, later)
    below = np.fromiter(map(lt, map(ids.__getitem__, r[i].tolist()), map(ids.__getitem__, r[j].tolist())),
                        bool, pairs)
    # descending: a member's place is the number of its block's ids above its own (ids are distinct in a query)
    place = np.bincount(np.where(below, i, j), minlength=m)
    out[at[np.repeat(lead, size) + place]] = elems
    return out


def _by_query_descending(scores: np.ndarray, qidx: np.ndarray, stable: bool = True) -> np.ndarray:
    """The permutation sorting by qidx (grouped, ascending), then score descending; equal scores in input
    order when `stable`, else in any order. Many short queries: one row per query padded to the longest and
    sorted along the rows (short sorts, 2-3x faster than a lexsort of the whole run; unstable: numpy's
    vectorised quicksort, 3x faster again); a few long ones: lexsort."""
    n = len(scores)
    starts = np.flatnonzero(np.concatenate(([True], qidx[1:] != qidx[:-1])))
    lens = np.diff(np.append(starts, n))
    width = int(lens.max())
    if len(lens) * width > 4 * n:
        return np.lexsort((-scores, qidx))
    pos = np.arange(n) - np.repeat(starts, lens)
    row = np.repeat(np.arange(len(lens)), lens)
    pad = np.full((len(lens), width), np.inf)
    pad[row, pos] = -scores  # padding (+inf) sorts after every score of its row; stable: after an -inf score too
    cols = np.argsort(pad, axis=1, kind="stable" if stable else "quicksort")
    keep = np.arange(width) < lens[:, None]
    return (cols + starts[:, None])[keep]


@dataclass(frozen=True)
class RunScores:
    """Per query (qids, sorted as read), one float64 array per measure name ("success@5", "rr", ...)."""

    qids: list
    values: dict

    def rows(self, names=None) -> dict:
        """{qid: [value of each measure in `names` (default: every one, in order)]}."""
        names = list(self.values) if names is None else names
        table = np.column_stack([self.values[m] for m in names]).tolist() if self.qids else []
        return dict(zip(self.qids, table))


def evaluate_run(qrels: dict, run: dict, ks=(1, 5, 10), min_grade: int = 1, measures=STANDARD) -> RunScores:
    """trec_eval's measures of a run from TREC-style dicts: read_run, then measure (see the module doc)."""
    return measure(read_run(qrels, run), ks, min_grade, measures)


def measure(runs: GradedRuns, ks=(1, 5, 10), min_grade: int = 1, measures=STANDARD) -> RunScores:
    """Every query's measures from GradedRuns: success@k, rr, ap@k, ap_apibench@k, ndcg@k (names in
    `measures`: "success", "rr", "ap", "ap_apibench", "ndcg"), k in `ks`."""
    unknown = set(measures) - {"success", "rr", "ap", "ap_apibench", "ndcg"}
    if unknown:
        raise ValueError(f"unknown measure(s) {sorted(unknown)}: choose among success, rr, ap, ap_apibench, ndcg")
    ks = [int(k) for k in ks]
    if any(k < 1 for k in ks):
        raise ValueError(f"cutoffs must be >= 1, got {ks}")
    nq = len(runs.offsets) - 1
    starts, ends = runs.offsets[:-1], runs.offsets[1:]
    g = runs.grades
    out: dict[str, np.ndarray] = {}
    first = np.zeros(nq, np.int64)  # the first relevant rank over the whole list (0: none)
    at = np.flatnonzero(g >= min_grade)
    if len(at):
        j = np.searchsorted(at, starts)  # each query's first relevant position at or after its start
        cand = at[np.minimum(j, len(at) - 1)]
        ok = (j < len(at)) & (cand < ends)
        first[ok] = cand[ok] - starts[ok] + 1
    if "success" in measures:
        for k in ks:
            out[f"success@{k}"] = ((first > 0) & (first <= k)).astype(np.float64)
    if "rr" in measures:
        rr = np.zeros(nq)
        found = first > 0
        rr[found] = 1.0 / first[found]
        out["rr"] = rr
    top = max(ks) if ks else 0
    if {"ap", "ap_apibench", "ndcg"} & set(measures) and top:
        # the top `top` ranks of every query as a [queries, top] matrix (past a list's end: not relevant, gain 0)
        cols = np.arange(top)
        valid = cols < (ends - starts)[:, None]
        G = g[np.minimum(starts[:, None] + cols, len(g) - 1)] if len(g) else np.zeros((nq, top), np.int64)
        if "ap" in measures or "ap_apibench" in measures:
            R = valid & (G >= min_grade)
            hits = np.cumsum(R, axis=1)  # relevant so far
            prec = np.where(R, hits / (cols + 1.0), 0.0)
            sums = _running_sums(prec, ks)
            judged_rel = _counts(runs.ideal >= min_grade)
            n_rel = judged_rel[runs.ideal_offsets[1:]] - judged_rel[runs.ideal_offsets[:-1]]
            for k in ks:
                if "ap" in measures:
                    out[f"ap@{k}"] = _ratio(sums[k], n_rel)
                if "ap_apibench" in measures:
                    out[f"ap_apibench@{k}"] = _ratio(sums[k], hits[:, k - 1])
        if "ndcg" in measures:
            disc = np.array([math.log2(i + 2) for i in range(top)])
            gain = np.where(valid, np.maximum(G, 0), 0)  # a negative grade gains 0 (trec_eval)
            dcg = _running_sums(gain / disc, ks)
            idcg = _running_sums(_top_positive(runs.ideal_offsets, runs.ideal, top) / disc, ks)
            for k in ks:
                out[f"ndcg@{k}"] = _ratio(dcg[k], idcg[k])
    order = [f"success@{k}" for k in ks] + ["rr"] + [f"ap@{k}" for k in ks] + [f"ap_apibench@{k}" for k in ks] \
        + [f"ndcg@{k}" for k in ks]
    return RunScores(runs.qids, {m: out[m] for m in order if m in out})


def _running_sums(terms: np.ndarray, ks) -> dict[int, np.ndarray]:
    """Per row, the sum of columns 0..k-1 added left to right (rank order, as trec_eval adds), per k."""
    acc = np.zeros(len(terms), terms.dtype)
    out = {}
    for j in range(terms.shape[1]):
        acc = acc + terms[:, j]
        if j + 1 in ks:
            out[j + 1] = acc
    return out


def _counts(mask: np.ndarray) -> np.ndarray:
    """[0, then the running count of True] (counts in a slice: c[b] - c[a]); summed in int32 where it fits
    (numpy's int32 running sum is ~20x its bool-to-int64 one)."""
    out = np.zeros(len(mask) + 1, np.int32 if len(mask) < 2**31 else np.int64)
    np.cumsum(mask, dtype=out.dtype, out=out[1:])
    return out


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den where den > 0, else 0 (the macros' CASE)."""
    ok = den > 0
    out = np.zeros(len(num))
    out[ok] = num[ok] / den[ok]
    return out


def _top_positive(offsets: np.ndarray, values: np.ndarray, top: int) -> np.ndarray:
    """[queries, top]: each query's positive values sorted descending, its first `top` (0 beyond them)."""
    nq = len(offsets) - 1
    keep = values > 0
    counts = _counts(keep).astype(np.int64)
    lens = counts[offsets[1:]] - counts[offsets[:-1]]
    values = values[keep]
    out = np.zeros((nq, top), values.dtype)
    if not len(values):
        return out
    width = int(lens.max())
    rows = np.repeat(np.arange(nq), lens)
    rank = np.arange(len(values)) - np.repeat(counts[offsets[:-1]], lens)
    if nq * width <= 4 * len(values):  # short rows: sort a padded matrix (0 pads: they gain nothing)
        pad = np.zeros((nq, width), values.dtype)
        pad[rows, rank] = values
        pad.sort(axis=1)
        got = pad[:, ::-1][:, :top]
        out[:, :got.shape[1]] = got
        return out
    order = np.lexsort((-values, rows))
    cut = rank < top
    out[rows[cut], rank[cut]] = values[order][cut]
    return out
