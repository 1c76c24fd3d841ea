"""`python -m pipeline.report.summary --db data/warehouse.duckdb --out FILE`: a build's headline verdicts as one Markdown
file (the summary table, then every family's comparisons), the results files docs/results/verdicts_<build>.md. The
rows come from pipeline.report.headlines and read as pipeline.report.verdicts says; a module of its own so that the
verdicts import no report builder."""

from __future__ import annotations

import re
from pathlib import Path

from pipeline.report import results_blocks
from pipeline.report.verdicts import family_table, summary_lead, summary_table

# A page quotes a verdicts results file in a `<!-- results:verdicts:FILE:SECTION[:MODEL,MODEL] -->` block
# (pipeline.report.results_blocks): FILE relative to the repository root, SECTION `summary` (the summary table) or a
# family (its "every comparison" table), MODELs the rows kept (the table's model column; all rows without; NAME>OTHER:
# NAME's rows against OTHER, a family table's `against` column).
# `--render PAGE ...` rewrites every such block from the file; tests/test_verdict_quotes.py checks each page's
# blocks are what its file holds, so every verdict quoted in README.md and docs/ is the results file's.
KIND = "verdicts"


def parse_args(args: str) -> tuple[str, str, list[str] | None]:
    """A verdicts block's FILE, SECTION and the models kept (None: every row)."""
    parts = args.split(":")
    if len(parts) not in (2, 3):
        raise ValueError(f"a verdicts block names FILE:SECTION[:MODEL,MODEL], not {args!r}")
    return parts[0], parts[1], parts[2].split(",") if len(parts) == 3 else None


def sections(text: str) -> dict[str, list[str]]:
    """A verdicts file's tables by section name: `summary` (the first table) and each family's comparisons."""
    out: dict[str, list[str]] = {}
    name = "summary"
    for line in text.splitlines():
        m = re.match(r"## (\w+): every comparison", line)
        if m:
            name = m.group(1)
        elif line.startswith("|"):
            out.setdefault(name, []).append(line)
    return out


def quote(text: str, section: str, models: list[str] | None = None) -> str:
    """One section's table from a verdicts file's text, only the rows of `models` if given: a name keeps the rows
    of that model (the table's model column); `NAME>OTHER` keeps NAME's rows against OTHER (a family table's
    `against` column: one model set against another, its twin or a baseline)."""
    table = sections(text).get(section)
    if table is None:
        raise ValueError(f"no section {section!r} in the verdicts file (summary or a family: {sorted(sections(text))})")
    head, rows = table[:2], table[2:]
    columns = [c.strip() for c in head[0].strip("|").split("|")]
    if models:
        wanted = [m.partition(">")[::2] for m in models]  # (model, against or "")
        if any(other for _, other in wanted) and "against" not in columns:
            raise ValueError(f"section {section!r} has no `against` column: NAME>OTHER needs a family's table")
        model_at = columns.index("model")
        against_at = columns.index("against") if "against" in columns else None

        def kept(row: str) -> bool:
            cells = [c.strip() for c in row.strip("|").split("|")]
            return any(cells[model_at] == name and (not other or cells[against_at] == other) for name, other in wanted)

        rows = [r for r in rows if kept(r)]
    return "\n".join(head + rows) + "\n"


def render_page(text: str, root: Path) -> str:
    """The page with every verdicts block rewritten from the file it names (relative to `root`)."""
    def one(args: str) -> str:
        file, section, models = parse_args(args)
        return quote((root / file).read_text(encoding="utf-8"), section, models)
    return results_blocks.rewrite(text, KIND, one)


def main(argv: list[str] | None = None) -> int:
    """Write the headline rows of a warehouse (the summary table, then every family's comparisons) as one
    Markdown file: the results file docs/results/verdicts_<build>.md is this command's output."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m pipeline.report.summary", description=main.__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, default=Path("data/warehouse.duckdb"))
    ap.add_argument("--out", type=Path, help="the Markdown file to write (omitted: only --render, from the files "
                    "as they are)")
    ap.add_argument("--render", nargs="*", type=Path, default=[],
                    help="pages whose `<!-- results:verdicts:FILE:SECTION -->` blocks are rewritten from FILE")
    ap.add_argument("--title", default="Headline verdicts", help="its heading")
    ap.add_argument("--provenance", default="",
                    help="one line under the heading saying which build this is (commit, params files, date)")
    args = ap.parse_args(argv)
    if args.out is not None:
        write_verdicts(args)
    root = Path(__file__).resolve().parents[2]
    for page in args.render:
        page.write_text(render_page(page.read_text(encoding="utf-8"), root), encoding="utf-8")
    return 0


def write_verdicts(args) -> None:
    """The verdicts results file `args.out` from the warehouse `args.db`."""
    from pipeline import registry as families
    from pipeline.io import atomic_path
    from pipeline.query import connect
    from pipeline.report import headlines
    from pipeline.report.build import run_params
    from pipeline.report.common import min_n, no_negative_zero

    con = connect(args.db)
    config = run_params(con)
    floor = min_n(config)
    names = [f.name for f in families.enabled(config)]
    rows = headlines.rows(con, config, names)
    parts = [f"# {args.title}\n", f"Written by `python -m pipeline.report.summary --db {args.db.name} --out "
             f"{args.out.name}` from a build's warehouse.\n",
             *([args.provenance.strip() + "\n"] if args.provenance.strip() else []),
             summary_lead(floor) + "\n", summary_table(rows, floor) + "\n"]
    for name in names:
        table = family_table([r for r in rows if r.family == name], floor)
        if table:
            parts += [f"## {name}: every comparison\n", table + "\n"]
    with atomic_path(args.out) as tmp:
        tmp.write_text(no_negative_zero("\n".join(parts)), encoding="utf-8")



if __name__ == "__main__":
    import sys

    sys.exit(main())
