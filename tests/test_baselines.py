"""Offset and keyword baselines computed by hand on a tiny dataset."""

import numpy as np
import pytest

from pipeline.families.codesyntax.baselines import (KEYWORDS, MAX_OFFSET, METRICS, Edges, Score, edge_windows, greedy_offsets,
                                                    merge_windows, next_keyword_positions, offset_hits, score_relation, summarize, window)


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
    want_relations = {name: summarize(e, len(keywords)) for name, e in want.items()}
    for s_rows, r_rows, compact in ((1, 1, 1), (3, 7, 10), (1000, 1000, 1 << 18)):
        got = stream_relation_edges(s_table.to_batches(s_rows), r_table.to_batches(r_rows), "python", compact)
        assert list(got) == list(want)
        for name in want:
            assert (got[name].edges, got[name].offset_sum) == (want_relations[name].edges, want_relations[name].offset_sum)
            for metric in METRICS:
                for field in ("lo", "hi", "kw_hit", "dev", "count"):
                    assert np.array_equal(getattr(got[name].windows[metric], field),
                                          getattr(want_relations[name].windows[metric], field)), (s_rows, name, field)
        table = baselines(got, "python", "plain", [1, 3])
        assert table.equals(baselines(want_relations, "python", "plain", [1, 3]))
        assert sorted(zip(table.column("relation").to_pylist(), table.column("chosen_on").to_pylist(),
                          table.column("baseline").to_pylist(), table.column("metric").to_pylist(),
                          table.column("k").to_pylist(), table.column("hits").to_pylist())) == sorted(
            (name, chosen_on, s.baseline, s.metric, s.k, s.hits) for chosen_on in ("dev", "test")
            for name, e in want.items() for s in _ref_score_relation(e, keywords, [1, 3], chosen_on))
    with pytest.raises(ValueError, match="lacks"):
        stream_relation_edges(s_table.slice(0, 5).to_batches(), r_table.to_batches(), "python")


# The per-edge baselines as they were before issue 14 item 1 (every edge of a relation in memory):
# the reference the windowed, count-weighted version must equal.

def _ref_greedy_offsets(lo: np.ndarray, hi: np.ndarray, k: int) -> list[int]:
    """k offsets, each the one covering most edges not yet covered (ties: the smaller offset)."""
    chosen: list[int] = []
    covered = np.zeros(len(lo), dtype=bool)
    for _ in range(k):
        live = ~covered & (lo <= MAX_OFFSET)
        diff = np.zeros(MAX_OFFSET + 2, dtype=np.int64)
        np.add.at(diff, lo[live], 1)
        np.add.at(diff, np.minimum(hi[live], MAX_OFFSET) + 1, -1)
        gain = np.cumsum(diff)[: MAX_OFFSET + 1]
        gain[chosen] = -1
        best = int(np.argmax(gain))
        chosen.append(best)
        covered |= (lo <= best) & (best <= hi)
    return chosen


def _ref_greedy_keywords(hit: np.ndarray, k: int) -> list[int]:
    """k keyword columns of `hit` (edges x keywords), greedily by uncovered edges hit."""
    chosen: list[int] = []
    covered = np.zeros(hit.shape[0], dtype=bool)
    for _ in range(min(k, hit.shape[1])):
        gain = hit[~covered].sum(axis=0).astype(np.int64)
        gain[chosen] = -1
        best = int(np.argmax(gain))
        chosen.append(best)
        covered |= hit[:, best]
    return chosen


def _ref_score_relation(edges: Edges, keywords: tuple[str, ...], ks: list[int], chosen_on: str) -> list[Score]:
    """Every baseline, metric and k for one relation; values chosen on `chosen_on`, scored on test."""
    test = ~edges.dev
    pick = edges.dev if chosen_on == "dev" else test
    out: list[Score] = []
    for metric in METRICS:
        lo_abs, hi_abs = window(edges, metric)
        lo, hi = lo_abs - edges.head, hi_abs - edges.head
        kw_hit = (edges.keyword_next >= lo_abs[:, None]) & (edges.keyword_next <= hi_abs[:, None])
        top = max(ks)
        offsets = _ref_greedy_offsets(lo[pick], hi[pick], top) if pick.any() else []
        kws = _ref_greedy_keywords(kw_hit[pick], top) if pick.any() else []
        for k in ks:
            off_hit = offset_hits(lo, hi, offsets[:k])  # unchanged by the compression: shared
            kw_k = kw_hit[:, kws[:k]].any(axis=1) if kws else np.zeros(len(lo), dtype=bool)
            scores = {
                "offset": Score("offset", metric, k, [f"offset={o}" for o in offsets[:k]], int(off_hit[test].sum()),
                                int(test.sum()), int(off_hit[pick].sum()), int(pick.sum())),
                "keyword": Score("keyword", metric, k, [f"keyword={keywords[j]}" for j in kws[:k]],
                                 int(kw_k[test].sum()), int(test.sum()), int(kw_k[pick].sum()), int(pick.sum())),
            }
            better = max(scores.values(), key=lambda s: (s.choice_hits, s.baseline == "offset"))
            out.extend(scores.values())
            out.append(Score("combined", metric, k, better.chosen, better.hits, better.total,
                             better.choice_hits, better.choice_total))
    return out


def _ref_statistics(edges):
    return {name: {"edges": len(e.head), "mean_offset": round(float(np.mean(e.start - e.head)), 2)}
            for name, e in edges.items()}


def _random_edges(rng, n, keywords, spread):
    head = rng.integers(0, 40, n)
    start = head + rng.integers(-3, spread, n)  # negative offsets and offsets past MAX_OFFSET included
    end = start + rng.integers(0, spread // 2 + 1, n)
    kw = np.where(rng.random((n, len(keywords))) < 0.5, head[:, None] + rng.integers(1, spread, (n, len(keywords))), -1)
    return Edges(head, start, end, rng.random(n) < rng.random(), kw)


def test_windowed_baselines_equal_the_per_edge_ones_on_random_edges():
    """Issue 14 item 1: distinct windows weighted by their counts choose the same offsets and keywords
    and score the same hits as the per-edge greedy, whatever the mix (ties, empty dev side, offsets
    below 0 and past MAX_OFFSET, windows spanning many offsets), k past the number of keywords too."""
    rng = np.random.default_rng(14)
    checked = 0
    for trial in range(60):
        keywords = KEYWORDS["python" if trial % 2 else "java"][: int(rng.integers(1, 40))]
        spread = int(rng.choice([3, 12, 80, MAX_OFFSET + 40]))
        e = _random_edges(rng, int(rng.integers(1, 400)), keywords, spread)
        ks = sorted({int(k) for k in rng.integers(1, 25, 3)})
        for chosen_on in ("dev", "test"):
            want = _ref_score_relation(e, keywords, ks, chosen_on)
            assert score_relation(e, keywords, ks, chosen_on) == want
            checked += len(want)
        # a compressed relation is far smaller than its edges when windows repeat
        w = merge_windows([edge_windows(e, "first")], len(keywords))
        assert int(w.count.sum()) == len(e.head) and len(w.lo) <= len(e.head)
    assert checked > 1000


def test_merging_batches_equals_compressing_everything():
    rng = np.random.default_rng(5)
    keywords = KEYWORDS["python"]
    e = _random_edges(rng, 500, keywords, 10)
    parts = [Edges(*(getattr(e, f)[i:i + 37] for f in ("head", "start", "end", "dev", "keyword_next")))
             for i in range(0, 500, 37)]
    for metric in METRICS:
        whole = merge_windows([edge_windows(e, metric)], len(keywords))
        folded = merge_windows([merge_windows([edge_windows(p, metric)], len(keywords)) for p in parts], len(keywords))
        for f in ("lo", "hi", "kw_hit", "dev", "count"):
            assert np.array_equal(getattr(whole, f), getattr(folded, f)), (metric, f)
        assert len(whole.lo) < 500  # small offsets repeat: the point of the compression
    # hand-checked: three edges, two share (lo, hi, keyword hits, dev)
    tiny = Edges(np.array([0, 5, 2]), np.array([1, 6, 4]), np.array([1, 7, 4]), np.array([True, True, False]),
                 np.array([[1], [6], [-1]]))
    w = merge_windows([edge_windows(tiny, "first")], 1)
    assert (w.lo.tolist(), w.count.tolist(), w.dev.tolist(), w.kw_hit[:, 0].tolist()) == ([1, 2], [2, 1], [True, False],
                                                                                           [True, False])
    assert summarize(tiny, 1).offset_sum == 1 + 1 + 2


def test_windowed_baselines_equal_the_per_edge_ones_on_labelled_fixture_code():
    """The same on real relations: the .test corpus labelled as the stage labels it."""
    from pathlib import Path

    from pipeline.families.codesyntax.stats import baselines, statistics
    from pipeline.syntax import python
    from pipeline.syntax.common import Sample

    keywords = KEYWORDS["python"]
    rows: dict[str, list] = {}
    files = sorted(Path(__file__).resolve().parent.parent.glob(".test/corpus/**/*.py"))
    assert files
    for i, path in enumerate(files):
        for item in python.label_file(path.read_text(encoding="utf-8"), 512, False):
            if not isinstance(item, Sample):
                continue
            for edge in item.edges:
                kw = next_keyword_positions(item.tokens, np.array([edge.head]), keywords)[0]
                rows.setdefault(edge.relation, []).append((edge.head, edge.dep_start, edge.dep_end, i % 3 == 0, kw))
    edges = {name: Edges(*(np.array([r[f] for r in rs]) for f in range(4)), np.vstack([r[4] for r in rs]))
             for name, rs in sorted(rows.items())}
    assert sum(len(e.head) for e in edges.values()) > 200
    summaries = {name: summarize(e, len(keywords)) for name, e in edges.items()}
    for chosen_on in ("dev", "test"):
        for name, e in edges.items():
            assert score_relation(e, keywords, [1, 3, 10, 20], chosen_on) == _ref_score_relation(
                e, keywords, [1, 3, 10, 20], chosen_on), name
    counts = {"samples": 1, "samples_dev": 0, "tokens": 1}
    assert statistics(counts, summaries)["relations"] == _ref_statistics(edges)
    table = baselines(summaries, "python", "plain", [1, 3])
    assert table.num_rows > 0 and min(table.column("total").to_pylist()) > 0


def test_java_keyword_list_is_the_releases():
    from pipeline.families.codesyntax.baselines import JAVA_KEYWORDS_JLS
    java = KEYWORDS["java"]
    # dashends/CodeSyntax topk_scores_baselines_java.py: 52 words, the literals in, `enum` out, its order
    assert len(java) == 52 and {"true", "false", "null"} <= set(java) and "enum" not in java
    assert java[:3] == ("abstract", "assert", "boolean") and java.index("false") == java.index("extends") + 1
    assert set(java) ^ set(JAVA_KEYWORDS_JLS) == {"true", "false", "null", "enum"}
