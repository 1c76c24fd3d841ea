"""Issue 27 items 1 and 3: the first-read report (reports/index.md) is short and each family's part of it opens
with the paper's headline table and ours beside it, the rest on the family's own page; figures keep at most
8 data series per panel (facets otherwise), draw the chance level where there is one, and heat maps have one
integer tick per layer / head."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import duckdb
import pytest

from pipeline import families
from pipeline.report import common
from pipeline.report.build import build, detail_pages
from pipeline.report.common import MAX_SERIES, Section, data_series
from pipeline.warehouse.build import build as build_warehouse
from tests.conftest import REPO, default_params

PARAMS_ALL = {**default_params(), "families": sorted(
    p.name for p in (REPO / "pipeline" / "families").iterdir() if (p / "__init__.py").is_file())}
FAMILIES = families.enabled(PARAMS_ALL)
SPLIT = {"apirec", "idbench", "probing"}  # the families whose sections return a Section (the others may adopt it)
FIRST_READ_LINES = 150  # "a few screens": the .test build's index.md is well under it (test_end_to_end)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """The whole report built from an empty warehouse of every family (paper rows, no scores of ours)."""
    root = tmp_path_factory.mktemp("layout")
    spec = {"tables": {}, "params": PARAMS_ALL, "models": [], "sources": [],
            "not_applicable": families.not_applicable(FAMILIES, {"enc": "encoder-only"})}
    build_warehouse(root / "data/warehouse.duckdb", spec, root)
    out = root / "reports"
    build(root / "data/warehouse.duckdb", out / "index.md", out / "figures/report", plots=out / "plots")
    return out


def sections(text: str) -> dict[str, str]:
    return {s.split("\n", 1)[0]: s for s in re.split(r"\n(?=## )", text) if s.startswith("## ")}


def first_table(section: str) -> str:
    lines = section.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return "\n".join(lines[start:end])


def test_the_first_read_report_is_short_and_links_every_page(report):
    text = (report / "index.md").read_text()
    assert len(text.splitlines()) <= FIRST_READ_LINES
    for name in detail_pages(FAMILIES):
        assert (report / f"{name}.md").is_file() and (report / f"{name}.html").is_file()
    for family in FAMILIES:  # every family's page is linked from the index, and back
        assert f"]({family.name}.md)" in text
        assert "[Back to the report](index.md)" in (report / f"{family.name}.md").read_text()
    page = (report / "index.html").read_text()
    assert 'href="apirec.html"' in page and 'href="apirec.md"' not in page  # the HTML links its HTML twins
    # #49: the summary table comes first, every line fits 300 characters, and no family's rows failed
    from pipeline.report.build import MAX_LINE

    assert max(len(line) for line in text.splitlines()) <= MAX_LINE
    assert re.split(r"\n(?=## )", text)[1].startswith("## Summary")
    assert "No summary rows for" not in text


def test_each_split_family_section_opens_with_the_paper_beside_ours(report):
    split = set()
    for family in FAMILIES:
        module = importlib.import_module(family.report)
        if isinstance(module.section(duckdb.connect(str(report.parent / "data/warehouse.duckdb"), read_only=True),
                                     report / "figures/report", "figures/report", PARAMS_ALL, None), Section):
            split.add(family.name)
    assert SPLIT <= split
    index = sections((report / "index.md").read_text())
    for family in FAMILIES:
        if family.name not in split:
            continue
        (body,) = [s for title, s in index.items() if family.name.lower() in title.lower()]
        table = first_table(body)
        header = table.split("\n", 1)[0].lower()
        assert "paper" in header and ("ours" in header), (family.name, header)
        # the table comes first (notes about empty subsets apart), then the population line
        before = body.split(table, 1)[0]
        assert "|" not in before and "![" not in before
        assert "**How the populations differ:**" in body.split(table, 1)[1]


def test_section_split_and_a_plain_string_section():
    text = "## Fam (Table 1)\n\nLead.\n\n| paper | ours |\n|---|---|\n| 1 | 2 |\n\nMore.\n\n| a |\n|---|\n| 3 |\n"
    s = Section.split(text)
    assert s.title == "Fam (Table 1)" and s.headline.rstrip().endswith("| 1 | 2 |") and "More." in s.details
    legacy = Section.of(text)  # a family not yet split: its lead paragraph in the index, every table on its page
    assert legacy.headline == "Lead.\n" and "| paper | ours |" in legacy.details
    assert str(s).startswith("## Fam (Table 1)\n\nLead.")


def test_the_first_read_leaves_a_twins_own_rows_to_the_page():
    """Issue 37 item 10: a row the family marks (a random twin's, where the section reads its model against it,
    paired) is left out of reports/index.md, which says so in its link line; the page keeps the whole table."""
    from pipeline.report.build import first_read, one_blank_line, page_text
    from pipeline.report.common import TWIN_ROWS, markdown_table

    columns, rows = ["paper / ours", "model", "P@1"], [("paper", "Big", 0.5), ("ours", "m", 0.25),
                                                        ("ours", "m-random", 0.125), ("ours", "solo-random", 0.1)]
    headline = ("Lead.\n\n" + markdown_table(columns, rows) + "\n\n\n**Model vs its random twin:** m vs m-random.\n"
                "\n**How the populations differ:** ours.\n")
    section = Section("Fam (Table 1)", headline, "More.\n").leaving([(TWIN_ROWS, rows[2])])
    assert section.page_rows == ((TWIN_ROWS, "| ours | m-random | 0.12 |"),)  # as markdown_table renders it
    index = one_blank_line(first_read(section, "fam"))
    assert "| ours | m | 0.25 |" in index and "m-random | 0.12" not in index
    assert "| ours | solo-random | 0.10 |" in index  # no paired comparison reads it: it stays
    assert "| paper / ours | model | P@1 |\n|---|---|---|\n| paper | Big | 0.50 |\n| ours | m | 0.25 |" in index
    # one line says what was left, and where: the end of the headline's last paragraph (the populations line)
    assert index.rstrip().endswith("**How the populations differ:** ours. **Everything else** is on [the fam page]"
                                   f"(fam.md): every table and figure, our extensions; and, of the tables above, "
                                   f"{TWIN_ROWS}.")
    assert "\n\n\n" not in index
    assert "| ours | m-random | 0.12 |" in page_text(section)  # the page: the whole table
    # nothing marked: the first read is the headline as it was; a headline ending in a table: the link alone
    plain = first_read(Section("Fam (Table 1)", headline, "More."), "fam")
    assert "m-random | 0.12" in plain and plain.endswith("ours. **Everything else** is on [the fam page](fam.md): "
                                                         "every table and figure, our extensions.\n")
    assert first_read(Section("Fam", "| a |\n|---|\n| 1 |\n", "More."), "fam").endswith(
        "| 1 |\n\n**Everything else** is on [the fam page](fam.md): every table and figure, our extensions.\n")
    assert Section("Fam", headline).leaving([]) == Section("Fam", headline)


def test_families_mark_only_the_twins_their_headline_reads_against_a_model():
    """idbench: the twin's `(held-out layer)` row is the page's when a `model - twin` row reads it; apirec: the
    twin's rows in both tables when its model's `vs twin` cell reads it, and Table 7's chance and ceiling rows
    when the paired table has an LM. The models' rows, the difference rows and the baselines stay."""
    import duckdb

    from pipeline.families.apirec.report import CHANCE_ROWS
    from pipeline.families.apirec.report import headline as apirec_headline
    from pipeline.families.idbench.report import headline as idbench_headline
    from pipeline.families.idbench.stats import HeldOutLayerRho, HeldOutTwinDiff
    from pipeline.report.common import TWIN_ROWS, table_row
    from tests.test_report_power import _apirec

    con = duckdb.connect()
    con.execute("CREATE TABLE idbench_spearman AS SELECT * FROM (VALUES "
                "('LV', 'relatedness', 'large', 'comparable', 'string', 120, 0.48)) "
                "t(system, gold, size, pair_set, kind, n, rho)")
    con.execute("CREATE TABLE idbench_embedding_models AS SELECT 1 AS files WHERE false")
    held = {(m, "large", "relatedness"): HeldOutLayerRho(120, 0.5, 0.4, 0.6, (1,) * 5)
            for m in ("m", "m-random", "solo", "solo-random")}
    twins = {("m", "m-random", "large", "relatedness"): HeldOutTwinDiff(120, 0.5, 0.5, 0.0, -0.1, 0.1, 1.0,
                                                                          (1,) * 5, (1,) * 5)}
    marked: list = []
    text = idbench_headline(con, {}, held, 0, 0, twins, 100, marked)
    assert [(what, row[0]) for what, row in marked] == [(TWIN_ROWS, "ours: m-random (held-out layer)")]
    assert Section("idbench", text, "details").leaving(marked).first_read_headline()[0] == "\n".join(
        line for line in text.split("\n") if not line.startswith("| ours: m-random (held-out layer) |"))

    marked = []
    text = apirec_headline(_apirec(), {"seed": 5, "report": {"min_n": 4}}, marked)
    assert sorted(row[0] for what, row in marked if what == TWIN_ROWS) == ["m-random/rerank_ngram",
                                                                         "ours: m-random/rerank_ngram"]
    # the chance and ceiling rows too: the paired table reads each LM against the n-gram and its pool's recall
    reference = [line for line in text.splitlines() if line.startswith(("| chance", "| ceiling"))]
    assert len(reference) >= 2 and [table_row(row) for what, row in marked if what == CHANCE_ROWS] == reference


def test_probing_headline_puts_table_1_beside_the_model_chosen_on_fold_0_and_the_baseline():
    from pipeline.families.probing.report import headline
    from tests.test_probing_selectivity import model_views

    con = duckdb.connect()
    con.execute("CREATE TABLE probing_headline (task VARCHAR, model VARCHAR, probe VARCHAR, layer INTEGER, "
                "metric VARCHAR, mean DOUBLE, ci_low DOUBLE, ci_high DOUBLE, folds INTEGER, n_test BIGINT)")
    con.executemany("INSERT INTO probing_headline VALUES (?, ?, ?, ?, ?, ?, ?, ?, 3, ?)", [
        ("java-declared", "majority", "majority", None, "error", 0.043, 0.0, 0.09, 360),
        ("java-depth", "linreg", "linreg", None, "mae", 2.0, 1.0, 3.0, 30)])
    model_views(con, [
        ("java-declared", "m1", "ridge", 2, "error", 0.01, 0.0, 0.02, 360, 0.3),  # lowest test error, not on fold 0
        ("java-declared", "m2", "ridge", 1, "error", 0.05, 0.0, 1.0, 360, 0.1),
        ("java-declared_ours", "m2", "ridge", 1, "error", 0.01, 0.0, 0.02, 360, 0.1),  # our variant: no paper row
        ("java-declared-control", "m2", "ridge", 1, "error", 0.4, 0.3, 0.5, 360, 0.4),
        ("java-depth", "m1", "ridge", 3, "mae", 1.5, 0.0, 3.5, 30, 1.0)])
    text = headline(con)
    table = first_table(text)
    assert table.split("\n")[2:] == [  # depth: no model's fold 0 reaches report.min_n, so none is chosen (issue 49)
        "| depth (java) | 0.867 | 0.864 | no model chosen: fold 0 (the held-out fold the choice reads) holds under 100 "
        "samples for every trained model (largest: 10); each model's row, with its baseline, is on the probing page "
        "|  |  |  | linreg: too few items (n = 30) |  |  |",
        "| declared (java) | 0.014 | 0.061 | m2 (ridge, layer 1; fold 0 n = 120) | 360 | 0.05 [0.0, 1.0] |  | "
        "majority: 0.043 [0.0, 0.09] (n = 360) |  | 0.032 (n = 360) |",
        "| declared_ours (java) |  |  | m2 (ridge, layer 1; fold 0 n = 120) | 360 | 0.01 [0.0, 0.02] |  |  |  | "
        "0.015 (n = 360) |",
        "| readability |  |  | not run: its rated dataset is not in this workspace |  |  |  |  |  |  |"]
    assert "**How the populations differ:**" in text and "never the lowest of the test scores" in text
    assert "**This run fitted no `paper` probe**" in text  # every row is ridge's: the headline says so


def test_probing_table_1_takes_the_releases_probe_with_ridge_beside_it():
    """Where the fit ran the release's probe (`paper`), Table 1's row is its score, even where ridge's fold-0 error is
    lower; ours (ridge on the same model and items, its own layer) sits in its own column."""
    from pipeline.families.probing.report import headline
    from tests.test_probing_selectivity import model_views

    con = duckdb.connect()
    con.execute("CREATE TABLE probing_headline (task VARCHAR, model VARCHAR, probe VARCHAR, layer INTEGER, "
                "metric VARCHAR, mean DOUBLE, ci_low DOUBLE, ci_high DOUBLE, folds INTEGER, n_test BIGINT)")
    model_views(con, [
        ("java-misuse", "m2", "ridge", 1, "error", 0.05, 0.0, 0.1, 360, 0.1),
        ("java-misuse", "m2", "paper", 2, "error", 0.07, 0.02, 0.12, 360, 0.2),
        ("java-misuse", "m1", "ridge", 0, "error", 0.3, 0.2, 0.4, 360, 0.05)])
    text = headline(con)
    assert "This run fitted no `paper` probe" not in text
    row = first_table(text).split("\n")[2]
    cells = row.split(" | ")
    assert cells[3:7] == ["m2 (paper, layer 2; fold 0 n = 120)", "360", "0.07 [0.02, 0.12]", "0.05 [0.0, 0.1] (layer 1)"]


# -- figures ------------------------------------------------------------------------------------------------------

@pytest.fixture
def captured(monkeypatch):
    """Figures the report would save, kept open for inspection."""
    figs = []
    monkeypatch.setattr(common, "save", lambda fig, path: (common.tidy(fig, path.name), figs.append(fig)))
    return figs


def apirec_warehouse(systems: int) -> duckdb.DuckDBPyConnection:
    """The two views apirec's SR@k-by-category figure reads, for `systems` LMs re-ranking the n-gram."""
    con = duckdb.connect()
    con.execute("CREATE TABLE apirec_sr_by_category (benchmark VARCHAR, model VARCHAR, ranker VARCHAR, "
                "category VARCHAR, k INTEGER, points BIGINT, sr_method DOUBLE, sr_class DOUBLE)")
    con.execute("CREATE TABLE apirec_rankings (benchmark VARCHAR, model VARCHAR, ranker VARCHAR, category VARCHAR, "
                "language VARCHAR, point_id VARCHAR, gold_in_candidates BOOLEAN, n_candidates INTEGER)")
    rows = []
    for m in range(systems):
        for cat in ("stdlib", "third_party", "user_defined"):
            for k in (1, 3, 5, 10):
                rows.append(("code", f"lm{m:02d}", "rerank_ngram", cat, k, 20, min(1.0, 0.05 * k + 0.01 * m), 0.0))
    rows += [("code", "ngram", "ngram", cat, k, 20, 0.1 * k / 2, 0.0) for cat in ("stdlib", "third_party",
                                                                                   "user_defined") for k in (1, 3, 5, 10)]
    con.executemany("INSERT INTO apirec_sr_by_category VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    con.executemany("INSERT INTO apirec_rankings VALUES ('code', ?, ?, ?, 'python', ?, true, 20)",
                    [(m, r, cat, f"p{i}") for i in range(20) for cat in ("stdlib", "third_party", "user_defined")
                     for m, r in (("lm00", "rerank_ngram"), ("ngram", "ngram"))])
    return con


def test_apirec_category_curves_are_faceted_with_chance_lines(captured, monkeypatch, tmp_path):
    from pipeline.families.apirec import report as apirec

    monkeypatch.setattr(apirec, "save", common.save)
    apirec._curves(apirec_warehouse(11), tmp_path, "figures", None, "apirec_sr_by_category", "category",
                   "apirec: SR@k by API category", "category")
    (fig,) = captured
    panels = [ax for ax in fig.axes if ax.get_lines()]
    assert len(panels) == 3 * 2  # three categories, 12 systems over two rows of <= 8
    assert all(len(data_series(ax)) <= MAX_SERIES for ax in panels)
    assert sum(len(data_series(ax)) for ax in panels) == 12 * 3
    assert all(any(line.get_label().startswith("chance") for line in ax.get_lines()) for ax in panels)
    assert all("(n=20)" in ax.get_title() for ax in panels)


def test_line_facets_and_heat_map_ticks(captured, tmp_path):
    series = {f"s{i:02d}": [(1, 0.1 * i), (5, 0.1 * i + 0.05)] for i in range(17)}  # apirec had 17 series
    fig = common.line_facets(series, title="t", xlabel="k", ylabel="P@k", chance={"chance": [(1, 0.02), (5, 0.1)]})
    common.save(fig, tmp_path / "lines.png")
    assert [len(data_series(ax)) for ax in fig.axes] == [6, 6, 5]
    assert all(ax.get_lines()[-1].get_label() == "chance" for ax in fig.axes)
    fig, ax = common.plt.subplots()
    ax.imshow([[0.1, 0.2]])  # one layer, two heads: the ticks were -0.5 .. 0.5 by 0.1
    common.save(fig, tmp_path / "heat.png")
    assert list(ax.get_yticks()) == [0] and list(ax.get_xticks()) == [0, 1]


def test_report_ties_are_broken_by_a_stated_key_whatever_the_row_order(tmp_path):
    """Two warehouses holding the same probe results in opposite row orders give byte-identical reports: the
    headline's model (two models at an equal fold-0 error, one summed in another order: its last bits differ),
    each model's most selective layer (two layers equally selective) and every table's row order are chosen by
    a stated key, never by the order DuckDB meets the rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline import schemas

    rows = []
    for model, fold0 in (("a", 0.1 + 0.2), ("b", 0.3)):  # equal to 9 decimals, not in their last bits
        for task in ("java-path_type", "java-path_type-control"):
            for layer in (0, 1):
                for fold in range(4):
                    error = fold0 if fold == 0 else (0.25 if task.endswith("control") else 0.125)
                    rows.append({"task": task, "task_type": "classification", "model": model, "pooling": "mean",
                                 "probe": "ridge", "layer": layer, "fold": fold, "metric": "error", "error": error,
                                 "n_train": 300, "n_test": 150, "alpha": 1.0, "selected": layer == 0,
                                 "n_dropped": 0, "test_items": None, "test_errors": None})
    reports = []
    for name, order in (("forward", rows), ("backward", rows[::-1])):
        root = tmp_path / name
        (root / "data").mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(order, schema=schemas.FIT_RESULTS), root / "data/fits.parquet")
        spec = {"tables": {"probing_fits": ["data/fits.parquet"]}, "params": PARAMS_ALL, "models": [], "sources": [],
                "not_applicable": []}
        build_warehouse(root / "data/warehouse.duckdb", spec, root)
        out = root / "reports"
        build(root / "data/warehouse.duckdb", out / "index.md", out / "figures/report", plots=out / "plots",
              scores=out / "metrics/scores.json")
        reports.append({p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()})
    assert reports[0].keys() == reports[1].keys()
    assert [k for k in reports[0] if reports[0][k] != reports[1][k]] == []
    page = reports[0]["probing.md"].decode()
    # the tie goes to the model's name (b has the smaller float); fold 0's 150 samples reach report.min_n, so the
    # headline chooses a model (the line names its fold-0 n since the report rework)
    assert "a (ridge, layer 0; fold 0 n = 150)" in page and "b (ridge, layer 0; fold 0" not in page
