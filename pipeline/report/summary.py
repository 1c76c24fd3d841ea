"""`python -m pipeline.report.summary --db data/warehouse.duckdb --out FILE`: a build's headline verdicts as one Markdown
file (the summary table, then every family's comparisons), the results files docs/results/verdicts_<build>.md. The
rows come from pipeline.report.headlines and read as pipeline.report.verdicts says; a module of its own so that the
verdicts import no report builder."""

from __future__ import annotations

from pipeline.report.verdicts import family_table, summary_lead, summary_table


def main(argv: list[str] | None = None) -> int:
    """Write the headline rows of a warehouse (the summary table, then every family's comparisons) as one
    Markdown file: the results file docs/results/verdicts_<build>.md is this command's output."""
    import argparse
    import sys
    from pathlib import Path

    from pipeline import registry as families
    from pipeline.io import atomic_path
    from pipeline.query import connect
    from pipeline.report import headlines
    from pipeline.report.build import run_params
    from pipeline.report.common import min_n, no_negative_zero

    ap = argparse.ArgumentParser(prog="python -m pipeline.report.summary", description=main.__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, default=Path("data/warehouse.duckdb"))
    ap.add_argument("--out", type=Path, required=True, help="the Markdown file to write")
    ap.add_argument("--title", default="Headline verdicts", help="its heading")
    ap.add_argument("--provenance", default="",
                    help="one line under the heading saying which build this is (commit, params files, date)")
    args = ap.parse_args(argv)
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
    return 0



if __name__ == "__main__":
    import sys

    sys.exit(main())
