"""Every verdict README.md and docs/ quote is its results file's: a page's `<!-- results:verdicts:FILE:SECTION -->`
block equals what `python -m pipeline.report.summary --render PAGE` writes from FILE (pipeline/report/summary.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.report import results_blocks
from pipeline.report.summary import KIND, parse_args, quote, render_page, sections

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]

FILE = """# Headline verdicts

lead

| family | model | headline metric | score | n |
|---|---|---|---|---|
| apiquiz | a | P@1 | 0.5 | 100 |
| apiquiz | b | P@1 | 0.4 | 100 |

## apiquiz: every comparison

| model | metric | score | n | against |
|---|---|---|---|---|
| a | P@1 | 0.5 | 100 | its twin |
| b | P@1 | 0.4 | 100 | its twin |
| c | P@1 | 0.3 | 100 | its twin |
"""


def test_a_quote_is_one_section_and_the_rows_of_the_models_it_names():
    assert set(sections(FILE)) == {"summary", "apiquiz"}
    assert quote(FILE, "summary").count("\n") == 4
    kept = quote(FILE, "apiquiz", ["a", "c"])
    assert "| a |" in kept and "| c |" in kept and "| b |" not in kept and kept.startswith("| model |")
    with pytest.raises(ValueError, match="no section 'idbench'"):
        quote(FILE, "idbench")
    against = quote(FILE, "apiquiz", ["a>its twin", "c"])
    assert "| a | P@1 | 0.5 | 100 | its twin |" in against and "| c |" in against and "| b |" not in against
    assert "| a |" not in quote(FILE, "apiquiz", ["a>b"])
    with pytest.raises(ValueError, match="no `against` column"):
        quote(FILE, "summary", ["a>b"])
    assert parse_args("v.md:apiquiz:a,c") == ("v.md", "apiquiz", ["a", "c"])
    assert parse_args("v.md:summary") == ("v.md", "summary", None)
    with pytest.raises(ValueError, match="FILE:SECTION"):
        parse_args("v.md")


def test_render_rewrites_a_stale_block_and_keeps_the_rest(tmp_path):
    (tmp_path / "v.md").write_text(FILE)
    other = "<!-- results:contamination:counts -->\nnot this command's\n<!-- /results -->\n"
    page = "before\n<!-- results:verdicts:v.md:apiquiz:b -->\nstale\n<!-- /results -->\nafter\n" + other
    out = render_page(page, tmp_path)
    assert out.endswith(other), "another command's block is left as it is"
    out = out[:-len(other)]
    assert out.startswith("before\n<!-- results:verdicts:v.md:apiquiz:b -->\n| model |")
    assert "stale" not in out and "| b | P@1 |" in out and "| a |" not in out and out.endswith("<!-- /results -->\nafter\n")


@pytest.mark.parametrize("page", [p for p in PAGES if any(results_blocks.find(p.read_text(encoding="utf-8"), KIND))],
                         ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_quoted_verdict_is_the_results_files(page):
    text = page.read_text(encoding="utf-8")
    assert render_page(text, REPO) == text, (
        f"{page.relative_to(REPO)} quotes a verdicts file that has changed: run `python -m pipeline.report.summary "
        f"--render {page.relative_to(REPO)}`")
