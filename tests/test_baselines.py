"""Offset and keyword baselines computed by hand on a tiny dataset."""

import numpy as np
import pytest

from pipeline.families.codesyntax.baselines import KEYWORDS, Edges, greedy_offsets, next_keyword_positions, score_relation


def make(heads, starts, ends, dev, tokens_per_edge, keywords):
    heads, starts, ends = (np.asarray(x) for x in (heads, starts, ends))
    kw = np.vstack([next_keyword_positions(t, np.asarray([h]), keywords) for t, h in zip(tokens_per_edge, heads)])
    return Edges(heads, starts, ends, np.asarray(dev), kw)


def test_offset_and_keyword_baselines_by_hand():
    keywords = ("if", "else")
    toks = ["def", "f", "if", "a", "x", "else", "y", "else"]
    # four edges: offsets (first token) 2, 2, 3 on dev... and 2, 3 on test
    e = make(heads=[1, 1, 2, 1, 2], starts=[3, 3, 5, 3, 5], ends=[4, 4, 6, 3, 6],
             dev=[True, True, True, False, False], tokens_per_edge=[toks] * 5, keywords=keywords)
    scores = {(s.baseline, s.metric, s.k): s for s in score_relation(e, keywords, [1, 3], "dev")}
    off = scores[("offset", "first", 1)]
    assert off.chosen == ["offset=2"] and (off.hits, off.total) == (1, 2)  # test: offsets 2 (hit), 3 (miss)
    assert scores[("offset", "first", 3)].chosen == ["offset=2", "offset=3", "offset=0"]
    assert (scores[("offset", "first", 3)].hits, scores[("offset", "first", 3)].total) == (2, 2)
    # last token: dev offsets 3, 3, 4 -> 3 chosen; test offsets 2, 4 -> 0 hits
    assert scores[("offset", "last", 1)].chosen == ["offset=3"] and scores[("offset", "last", 1)].hits == 0
    # keyword: next `else` after head 2 is token 5 = dependent start of the third and fifth edges
    kw = scores[("keyword", "first", 1)]
    assert kw.chosen == ["keyword=else"] and (kw.hits, kw.total) == (1, 2)
    # combined picks offset (2/3 on dev) over keyword (1/3 on dev)
    comb = scores[("combined", "first", 1)]
    assert comb.chosen == ["offset=2"] and comb.hits == 1
    # chosen on test: offset=2 and offset=3 tie on test (1 each); the smaller wins
    test_scores = {(s.baseline, s.metric, s.k): s for s in score_relation(e, keywords, [1], "test")}
    assert test_scores[("offset", "first", 1)].chosen == ["offset=2"]
    # any token: dev offset ranges [2,3],[2,3],[3,4] -> 3 covers all; test ranges [2,2],[3,4] -> one hit
    assert scores[("offset", "any", 1)].chosen == ["offset=3"] and scores[("offset", "any", 1)].hits == 1


def test_greedy_offsets_cover_new_edges():
    lo = np.array([1, 1, 1, 2, 5]); hi = lo.copy()
    assert greedy_offsets(lo, hi, 3) == [1, 2, 5]


def test_next_keyword_positions():
    toks = ["if", "a", "else", "b", "if", "else"]
    got = next_keyword_positions(toks, np.array([0, 2, 5]), ("if", "else"))
    assert got.tolist() == [[4, 2], [4, 5], [-1, -1]]


def _old_relation_edges(samples, relations, keywords):
    """The whole-table version stats.relation_edges replaced (a dict over every sample, the relations as
    Python lists): the reference the streamed merge join must equal."""
    from collections import defaultdict
    sample_rows = {sid: i for i, sid in enumerate(samples["sample_id"])}
    by_sample = defaultdict(list)
    for i, sid in enumerate(relations["sample_id"]):
        by_sample[sid].append(i)
    head, start, end = (np.asarray(relations[c], dtype=np.int64) for c in ("head", "dep_start", "dep_end"))
    kw_next = np.full((len(head), len(keywords)), -1, dtype=np.int64)
    is_dev = np.zeros(len(head), dtype=bool)
    for sid, rows in by_sample.items():
        r = sample_rows[sid]
        idx = np.asarray(rows)
        kw_next[idx] = next_keyword_positions(samples["tokens"][r], head[idx], keywords)
        is_dev[idx] = samples["eval_split"][r] == "dev"
    names = np.asarray(relations["relation"], dtype=object)
    return {n: Edges(head[names == n], start[names == n], end[names == n], is_dev[names == n], kw_next[names == n])
            for n in sorted(set(relations["relation"]))}


def test_streamed_relation_edges_equal_the_whole_table_version():
    """Issue 14 item 2: the baselines stage merges sample and relation batches (both sorted by
    sample id) instead of loading both tables: the same edges for any batch sizes, a duplicate sample
    id included (the last one's tokens, as the dict did), and the same baseline scores."""
    import pyarrow as pa

    from pipeline.families.codesyntax.stats import baselines, stream_relation_edges

    rng = np.random.default_rng(3)
    vocab = ["x", "(", ")", "if", "for", "in", "return", "not", "=", "y"]
    ids = sorted([f"s{i:03d}" for i in range(40)] + ["s007"])  # one duplicate id
    samples = {"sample_id": ids, "tokens": [list(rng.choice(vocab, rng.integers(5, 30))) for _ in ids],
               "eval_split": [("dev", "test")[rng.integers(0, 2)] for _ in ids]}
    rel = {"sample_id": [], "relation": [], "head": [], "dep_start": [], "dep_end": []}
    for sid, toks in zip(ids, samples["tokens"]):
        for _ in range(rng.integers(0, 6)):
            h = int(rng.integers(0, len(toks) - 1))
            s = int(rng.integers(h + 1, len(toks)))
            for c, v in (("sample_id", sid), ("relation", f"R{rng.integers(0, 4)}"), ("head", h), ("dep_start", s),
                         ("dep_end", int(rng.integers(s, len(toks))))):
                rel[c].append(v)
    keywords = KEYWORDS["python"]
    want = _old_relation_edges(samples, rel, keywords)
    s_table, r_table = pa.table(samples), pa.table(rel)
    for s_rows, r_rows in ((1, 1), (3, 7), (1000, 1000)):
        got = stream_relation_edges(s_table.to_batches(s_rows), r_table.to_batches(r_rows), "python")
        assert list(got) == list(want)
        for name in want:
            for field in ("head", "start", "end", "dev", "keyword_next"):
                assert np.array_equal(getattr(got[name], field), getattr(want[name], field)), (s_rows, name, field)
        assert baselines(got, "python", "plain", [1, 3]).equals(baselines(want, "python", "plain", [1, 3]))
    with pytest.raises(ValueError, match="lacks"):
        stream_relation_edges(s_table.slice(0, 5).to_batches(), r_table.to_batches(), "python")
