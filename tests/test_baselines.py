"""Offset and keyword baselines computed by hand on a tiny dataset."""

import numpy as np

from pipeline.families.codesyntax.baselines import Edges, greedy_offsets, next_keyword_positions, score_relation


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
