"""Trained-vs-twin headline views and the ranking-protocol views (issue 16 items 2 and 3) on hand-made
tables in a real DuckDB warehouse: `apiquiz_twin_diff` (every protocol, chance beside it, the paired
bootstrap CI equal to the Python twin's), `apiquiz_length_bias`, `codesyntax_twin_diff` (best heads
chosen on dev, relations resampled), and the report sections that show them."""

from __future__ import annotations

import copy
import json

import pyarrow as pa
import pytest

from pipeline.families.apiquiz import schemas as aq
from pipeline.families.codesyntax import schemas as cs
from pipeline.io import write_parquet
from pipeline.metrics.bootstrap import poisson_paired_bootstrap
from pipeline.query import connect, run
from pipeline.warehouse.build import build
from tests.conftest import default_params

CANDIDATES = ["a", "bb", "ccc", "dddd", "eeeee"]
ANSWERS = {"q1": "ccc", "q2": "dddd", "q3": "bb", "q4": "eeeee", "q5": "ccc", "q6": "dddd"}
# gold ranks per model and protocol (None: not scored)
RANKS = {
    "m": {"rank": [1, 2, 1, 3, 1, 1], "rank_mean": [1, 1, 1, 2, 1, 1], "rank_pmi": [1, 1, 2, 1, 1, 1],
          "fill_mask": [1, 5, 20, None, 3, 12]},
    "m-random": {"rank": [1, 1, 2, 1, 3, 1], "rank_mean": [2, 3, 1, 4, 5, 2], "rank_pmi": [5, 4, 3, 2, 1, 5],
                 "fill_mask": [40, 7, 300, None, 2, 900]},
}
VOCAB = 1000


def quiz(quiz_id: str, answer: str) -> dict:
    return {"quiz_id": quiz_id, "api": f"lib.{answer}", "library": "lib", "repository": None, "category": "stdlib",
            "private": False, "setting": "call", "level": 1, "n_levels": 2, "level_name": answer,
            "level_role": "callable", "level_kind": "function", "mask_position": "whole", "alias": None, "context": None,
            "text": "lib.<mask>(", "prefix": "lib.", "suffix": "(", "answer": answer, "candidates": CANDIDATES,
            "candidates_siblings": 5, "candidates_same_kind": 5, "candidates_same_kind_known": 5,
            "candidates_same_role": 5, "seen": True, "uses": 1, "context_leak": False}


def prediction(model: str, protocol: str, quiz_id: str, rank: int | None) -> dict:
    # the top-1: the gold when ranked first, else the shortest candidate (a length-biased ranker)
    top = [ANSWERS[quiz_id] if rank == 1 else "a"]
    n = VOCAB if protocol == "fill_mask" else len(CANDIDATES)
    return {"quiz_id": quiz_id, "model": model, "protocol": protocol, "status": "ok" if rank else "multi_token",
            "gold_rank": rank, "n_ranked": n if rank else None, "top": top if rank else [], "gold_logprob": None}


def head_rows(model: str, scores: dict[tuple[str, str, int], tuple[int, int]]) -> list[dict]:
    """(eval split, relation, head) -> (hits, total), layer 0, metric first, k 1."""
    return [{"model": model, "language": "python", "variant": "plain", "eval_split": split, "relation": rel,
             "metric": "first", "k": 1, "layer": 0, "head": head, "hits": h, "total": t}
            for (split, rel, head), (h, t) in scores.items()]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    root = tmp_path_factory.mktemp("twins")
    params = copy.deepcopy(default_params())
    files = {}
    quizzes = root / "data/families/apiquiz/quizzes.parquet"
    write_parquet(pa.Table.from_pylist([quiz(q, a) for q, a in ANSWERS.items()], schema=aq.QUIZZES), quizzes, aq.QUIZZES)
    files["apiquiz_quizzes"] = [quizzes]
    files["apiquiz_predictions"] = []
    for model, protocols in RANKS.items():
        rows = [prediction(model, p, q, r) for p, ranks in protocols.items() for q, r in zip(ANSWERS, ranks)]
        path = root / f"data/predictions/apiquiz/{model}/0.parquet"
        write_parquet(pa.Table.from_pylist(rows, schema=aq.PREDICTIONS), path, aq.PREDICTIONS)
        files["apiquiz_predictions"].append(path)
    # codesyntax: relations R1..R3, heads 0 and 1; dev chooses the head, test scores it
    heads = {
        "m": {("dev", "R1", 0): (9, 10), ("dev", "R1", 1): (1, 10), ("test", "R1", 0): (8, 10), ("test", "R1", 1): (9, 10),
              ("dev", "R2", 0): (2, 10), ("dev", "R2", 1): (6, 10), ("test", "R2", 0): (5, 10), ("test", "R2", 1): (7, 10),
              ("dev", "R3", 0): (5, 10), ("dev", "R3", 1): (5, 10), ("test", "R3", 0): (6, 10), ("test", "R3", 1): (1, 10)},
        "m-random": {("dev", "R1", 0): (3, 10), ("dev", "R1", 1): (4, 10), ("test", "R1", 0): (4, 10),
                     ("test", "R1", 1): (2, 10), ("dev", "R2", 0): (1, 10), ("dev", "R2", 1): (1, 10),
                     ("test", "R2", 0): (3, 10), ("test", "R2", 1): (1, 10), ("dev", "R3", 0): (2, 10),
                     ("dev", "R3", 1): (3, 10), ("test", "R3", 0): (4, 10), ("test", "R3", 1): (3, 10)},
    }
    files["codesyntax_predictions"] = []
    for model, scores in heads.items():
        path = root / f"data/predictions/codesyntax/python/{model}/0.parquet"
        write_parquet(pa.Table.from_pylist(head_rows(model, scores), schema=cs.ATTENTION_HITS), path, cs.ATTENTION_HITS)
        files["codesyntax_predictions"].append(path)
    models = []
    for name, card in (("m", {"family": "masked-lm", "random": False}),
                       ("m-random", {"family": "masked-lm", "random": True, "twin_of": "m"})):
        folder = root / "data/models" / name
        folder.mkdir(parents=True)
        (folder / "card.json").write_text(json.dumps({"name": name, "source": "train:x", **card}))
        models.append(str(folder.relative_to(root)))
    spec = {"params": params, "models": models,
            "tables": {k: [str(p.relative_to(root)) for p in v] for k, v in files.items()}}
    build(root / "data/warehouse.duckdb", spec, root)
    return root, params, connect(root / "data/warehouse.duckdb")


def test_apiquiz_twin_diff_by_hand(warehouse):
    _, _, con = warehouse
    got = {(r[0], r[1], r[2], r[3]): r[4:] for r in run(
        con, "SELECT model, twin, protocol, metric, n, score, twin_score, chance, diff, lo, hi, p_value, beats_twin "
             "FROM apiquiz_twin_diff").fetchall()}
    expected_keys = {("m", "m-random", p, "P@1") for p in RANKS["m"]} | {("m", "m-random", "fill_mask", "P@10")}
    assert set(got) == expected_keys
    for (_, _, protocol, metric), (n, score, twin, chance, diff, lo, hi, p_value, beats) in got.items():
        k = int(metric[2:])
        pairs = [(q, a, b) for q, a, b in zip(ANSWERS, RANKS["m"][protocol], RANKS["m-random"][protocol]) if a and b]
        hits_a = [int(a <= k) for _, a, _ in pairs]
        hits_b = [int(b <= k) for _, _, b in pairs]
        ref = poisson_paired_bootstrap([q for q, _, _ in pairs], hits_a, hits_b)
        size = VOCAB if protocol == "fill_mask" else len(CANDIDATES)
        assert n == len(pairs) == (5 if protocol == "fill_mask" else 6)
        assert score == round(sum(hits_a) / n, 4) and twin == round(sum(hits_b) / n, 4)  # fractions
        assert chance == round(min(k, size) / size, 4)
        assert diff == round(ref.diff, 4) and lo == round(ref.lo, 4) and hi == round(ref.hi, 4)
        assert p_value == pytest.approx(ref.p_value) and beats == (ref.lo > 0)
    # by hand: summed rank 4/6 vs the twin's 4/6; PMI 5/6 vs 1/6; fill_mask P@10 3/5 vs 2/5
    assert got[("m", "m-random", "rank", "P@1")][1:3] == (0.6667, 0.6667)  # fractions
    assert got[("m", "m-random", "rank_pmi", "P@1")][1:3] == (0.8333, 0.1667)
    assert got[("m", "m-random", "fill_mask", "P@10")][1:4] == (0.6, 0.4, 0.01)


def test_histogram_views_equal_the_item_level_bootstrap(warehouse):
    """apiquiz_p_at_1_ci, apiquiz_vs_twin and apiquiz_twin_diff bootstrap counts kept at build
    (apiquiz_rank_counts, apiquiz_twin_rank_pairs) instead of the per-quiz views: the same CIs as the
    item-level macros over those per-quiz views."""
    _, _, con = warehouse
    assert run(con, "SELECT * FROM apiquiz_p_at_1_ci").fetchall() == run(
        con, "SELECT model, protocol, setting, n, round(mean, 4), round(lo, 4), round(hi, 4) "
             "FROM poisson_bootstrap_mean(apiquiz_hits_at_1) ORDER BY ALL").fetchall()
    vs = run(con, "SELECT * FROM apiquiz_vs_twin").fetchall()
    assert len(vs) == 4 and vs == run(
        con, "SELECT model, protocol, setting, n, round(mean_a, 4), round(mean_b, 4), round(diff, 4), "
             "round(lo, 4), round(hi, 4), p_value FROM poisson_paired_bootstrap(apiquiz_twin_pairs, replicates := 10000) "
             "ORDER BY ALL").fetchall()
    assert run(con, "SELECT model, twin, protocol, n, diff, lo, hi, p_value FROM apiquiz_twin_diff").fetchall() == run(
        con, "SELECT model, twin, protocol, n, round(diff, 4), round(lo, 4), round(hi, 4), p_value "
             "FROM poisson_paired_bootstrap(apiquiz_twin_hits) ORDER BY model, protocol, k").fetchall()
    # the counts: 6 quizzes x 3 candidate protocols + 5 fill_mask quizzes both scored
    assert run(con, "SELECT sum(n) FROM apiquiz_twin_rank_pairs").fetchall() == [(23,)]


def test_apiquiz_length_bias_by_hand(warehouse):
    _, _, con = warehouse
    rows = {(m, p): r for m, p, *r in run(con, "SELECT model, protocol, scored, top1_chars, gold_chars, pool_chars, "
                                               "p_at_1, chance FROM apiquiz_length_bias").fetchall()}
    assert ("m", "fill_mask") not in rows and len(rows) == 6
    gold = [len(a) for a in ANSWERS.values()]
    for (model, protocol), (scored, top1, gold_chars, pool, p_at_1, chance) in rows.items():
        ranks = RANKS[model][protocol]
        assert scored == 6 and chance == 0.2
        assert top1 == round(sum(g if r == 1 else 1 for g, r in zip(gold, ranks)) / 6, 2)
        assert gold_chars == round(sum(gold) / 6, 2) and pool == 3.0  # every candidate ranked: (1+…+5)/5
        assert p_at_1 == round(sum(r == 1 for r in ranks) / 6, 4)


def test_codesyntax_twin_diff_by_hand(warehouse):
    _, _, con = warehouse
    rows = run(con, "SELECT chosen_on, model, twin, relations, score, twin_score, diff, lo, hi, p_value, beats_twin "
                    "FROM codesyntax_twin_diff WHERE language = 'python' AND variant = 'plain'").fetchall()
    # chosen on dev: m takes heads 0, 1, 0 (ties: lower head) -> test 8, 7, 6 of 10; the twin 1, 0, 1 -> 2, 3, 3
    # chosen on test: m 9, 7, 6; the twin 4, 3, 4
    expect = {"dev": ([0.8, 0.7, 0.6], [0.2, 0.3, 0.3]), "test": ([0.9, 0.7, 0.6], [0.4, 0.3, 0.4])}
    assert [r[0] for r in rows] == ["dev", "test"]
    for chosen, model, twin, relations, score, twin_score, diff, lo, hi, p_value, beats in rows:
        a, b = expect[chosen]
        ref = poisson_paired_bootstrap(["R1", "R2", "R3"], a, b, replicates=10_000)  # the first read's (issue 49)
        assert (model, twin, relations) == ("m", "m-random", 3)
        assert score == round(sum(a) / 3, 4) and twin_score == round(sum(b) / 3, 4)  # fractions
        assert (diff, lo, hi) == (round(ref.diff, 4), round(ref.lo, 4), round(ref.hi, 4))
        assert p_value == pytest.approx(ref.p_value) and beats == (ref.lo > 0)
    # the same score as the headline table (codesyntax_scores, chosen on dev)
    assert run(con, "SELECT score FROM codesyntax_scores WHERE system = 'm' AND chosen_on = 'dev' AND metric = 'first' "
                    "AND k = 1 AND variant = 'plain'").fetchall()[0][0] == 0.7


def test_report_sections_show_protocols_and_twins(warehouse):
    root, params, con = warehouse
    from pipeline.families.apiquiz.report import section as apiquiz_section
    from pipeline.families.codesyntax.report import section as codesyntax_section

    text = str(apiquiz_section(con, root / "figures", "figures", params, root / "plots"))
    lines = text.splitlines()
    head = lines.index(next(line for line in lines if line.startswith("| model | twin | protocol | metric")))
    body = lines[head + 2:head + 7]
    assert [line.split(" | ")[2:4] for line in body] == [
        ["fill_mask", "P@1"], ["fill_mask", "P@10"], ["rank", "P@1"], ["rank_mean", "P@1"], ["rank_pmi", "P@1"]]
    lo, hi, p = run(con, "SELECT lo, hi, p_value FROM apiquiz_twin_diff WHERE protocol = 'rank_pmi'").fetchall()[0]
    # fractions, 3 decimals
    assert body[4] == (f"| m | m-random | rank_pmi | P@1 | 6 | 0.833 | 0.167 | 0.200 | 0.667 | [{lo:.3f}, {hi:.3f}] "
                       f"| {p:.3f} | yes |")
    assert body[2].startswith("| m | m-random | rank | P@1 | 6 | 0.667 | 0.667 | 0.200 | 0.000 |")
    assert body[2].endswith("| no |")
    assert any(line.startswith("| model | protocol | scored | P@1 | chance | top-1 chars") for line in lines)
    text = str(codesyntax_section(con, root / "figures", "figures", params, root / "plots"))
    row = next(line for line in text.splitlines() if line.startswith("| m | m-random | dev | python | 3 |"))
    assert "| 0.700 | 0.267 | 0.433 |" in row
    # issue 37 item 10: the twin's own headline rows (and only they) are the page's, since the headline reads the
    # model against it, paired; the first read leaves them out
    from pipeline.report.common import TWIN_ROWS

    for section in (apiquiz_section(con, root / "figures", "figures", params, root / "plots"),
                    codesyntax_section(con, root / "figures", "figures", params, root / "plots")):
        ours = [line for line in section.headline.splitlines() if line.startswith("| ours |")]
        twins = [line for line in ours if " m-random" in line]
        assert twins and sorted(section.page_rows) == sorted((TWIN_ROWS, line) for line in twins)
        first = section.first_read_headline()[0]
        assert not any(line in first for line in twins) and all(line in first for line in ours if line not in twins)


def test_sections_open_with_the_papers_table_beside_ours(warehouse):
    """Issue 27 item 1: each section's first table is the paper's headline table with ours beside it (same
    columns; ours with n and a 95% CI), then a line on how the populations differ, then the extensions."""
    root, params, con = warehouse
    from pipeline.families.apiquiz.report import section as apiquiz_section
    from pipeline.families.codesyntax.report import section as codesyntax_section

    params = {**params, "report": {"min_n": 1}}  # the fixture's 6 quizzes and 30 edges print as scores
    text = str(apiquiz_section(con, root / "figures", "figures", params, root / "plots"))
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("|"))
    assert lines[first] == ("| paper / ours | model | protocol | quizzes | call P@1 | call 95% CI | call chance "
                            "| call n | import P@1 | import 95% CI | import chance | import n |")
    assert ("| paper | CodeBERT-MLM-Python | fill_mask | paper set | 0.2935 |  |  | 289585 | 0.2967 |  |  | 289585 |"
            in lines)
    assert "| paper | GPT-3.5-turbo | prompted | paper set | 0.1600 |  |  | 1000 | 0.2030 |  |  | 1000 |" in lines
    fill = next(line for line in lines if line.startswith("| ours | m | fill_mask |"))
    ci = run(con, "SELECT protocol, lo, hi FROM apiquiz_headline WHERE model = 'm' AND setting = 'call' "
                  "AND protocol IN ('fill_mask', 'rank') ORDER BY protocol").fetchall()
    # fill_mask on the paper's set (q1, q2, q3, q5, q6: both fill_mask models scored them): 1 of 5 ranked first;
    # chance 1 / the vocabulary; the population: the paper set within the 6 quizzes the model drew
    assert fill.startswith(f"| ours | m | fill_mask | paper set of its 6 drawn | 0.200 | [{ci[0][1]:.3f}, "
                           f"{ci[0][2]:.3f}] | 0.001 | 5 |")
    rank = next(line for line in lines if line.startswith("| ours | m | rank |"))
    # every fixture quiz is a call quiz: the import columns stay empty; chance: 1 / 5 candidates
    assert rank == (f"| ours | m | rank | its 6 drawn | 0.667 | [{ci[1][1]:.3f}, {ci[1][2]:.3f}] | 0.200 | 6 "
                    "|  |  |  |  |")
    # the model against its twin, with the smallest difference its n detects, in the headline
    head = text[:text.index("### apiquiz: beyond the paper")]
    assert "m vs its twin, rank, call (n = 6): 0.667 vs 0.667, difference 0.000" in head
    assert "the smallest difference this n detects: ±" in head
    beyond = lines.index("### apiquiz: beyond the paper")
    assert first < beyond and any(line.startswith("**How the populations differ:** Paper: ") for line in lines[first:beyond])

    text = str(codesyntax_section(con, root / "figures", "figures", params, root / "plots"))
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("|"))
    assert lines[first] == ("| paper / ours | language | system | top-1 | top-3 | top-10 | top-20 | top-1, chosen on dev | "
                            "relations | edges |")
    assert "| paper | Python | offset | 0.436 | 0.637 | 0.873 | 0.949 |  | 43 | 1342050 |" in lines
    assert "| paper | Java | diff (best model - best baseline) | -0.207 | -0.174 | -0.100 | -0.059 |  |  |  |" in lines
    (lo, hi), (dlo, dhi) = [run(con, "SELECT lo, hi FROM codesyntax_score_ci WHERE system = 'm' AND chosen_on = "
                                     f"'{c}' AND k = 1 AND language = 'python'").fetchall()[0] for c in ("test", "dev")]
    # heads chosen on test: 0.9, 0.7, 0.6 (mean 0.733); on dev: 0.8, 0.7, 0.6; 3 relations, 30 test edges
    assert (f"| ours | Python | m | 0.733 [{lo:.3f}, {hi:.3f}] |  |  |  | 0.700 [{dlo:.3f}, {dhi:.3f}] | 3 | 30 |"
            in lines)
    assert "**Model vs its random twin** (top-1, heads chosen on dev" in text and "(detectable: ±" in text
    assert any(line.startswith("| ours | Python | m-random (random) | 0.367 [") for line in lines)
    beyond = lines.index("### CodeSyntax: beyond the paper")
    assert first < beyond and any(line.startswith("**How the populations differ:** Paper: ") for line in lines[first:beyond])
    assert "-0.000" not in text


def test_scores_are_fractions(warehouse):
    """Issue 27 item 4 on real rows: apiquiz and codesyntax columns named as fractions hold values in [0, 1]
    (differences and their CIs in [-1, 1]); none is named in percent."""
    from tests.fractions import fractions_out_of_range, percent_columns

    _, _, con = warehouse
    assert percent_columns(con, ("apiquiz", "codesyntax")) == []
    assert fractions_out_of_range(con, ("apiquiz", "codesyntax")) == []
    # the scan reads these (a vacuous scan would pass too)
    assert run(con, "SELECT max(p_at_1), max(score) FROM apiquiz_by_setting, codesyntax_scores").fetchall()[0][0] > 0.5


def test_headline_cells_under_the_power_floor_print_their_n_not_a_score(warehouse):
    """Issue 34 item 1: with report.min_n above a cell's n, the headline prints "too few items (n = N)" and no CI
    (apiquiz: 6 quizzes; codesyntax: 30 test edges); the paper's rows are untouched."""
    root, params, con = warehouse
    from pipeline.families.apiquiz.report import section as apiquiz_section
    from pipeline.families.codesyntax.report import section as codesyntax_section

    params = {**params, "report": {"min_n": 7}}
    head = apiquiz_section(con, root / "figures", "figures", params, root / "plots").headline
    rank = next(line for line in head.splitlines() if line.startswith("| ours | m | rank |"))
    assert rank == "| ours | m | rank | its 6 drawn | too few items (n = 6) |  | 0.200 | 6 |  |  |  |  |"
    fill = next(line for line in head.splitlines() if line.startswith("| ours | m | fill_mask |"))
    assert "| too few items (n = 5) |  |" in fill and "0.200" not in fill
    assert "| paper | CodeBERT-MLM-Python | fill_mask | paper set | 0.2935 |" in head
    assert "m vs its twin, rank, call: too few items (n = 6, under report.min_n" in head and "no difference is read here" in head and "0.667" not in head
    head = codesyntax_section(con, root / "figures", "figures", {**params, "report": {"min_n": 31}},
                              root / "plots").headline
    row = next(line for line in head.splitlines() if line.startswith("| ours | Python | m |"))
    assert row == "| ours | Python | m | too few items (n = 30) |  |  |  | too few items (n = 30) | 3 | 30 |"
    assert "0.733" not in head and "0.700" not in head  # no floored score anywhere in the headline
