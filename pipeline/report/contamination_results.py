"""`python -m pipeline.report.contamination_results`: the contamination figures README.md and docs/contamination.md quote,
read from a built warehouse into a committed results file (`docs/results/contamination.json`: the command, the
configuration, the commit, the numbers), and the Markdown blocks those pages show rendered from that file alone.

    python -m pipeline.report.contamination_results --warehouse data/warehouse.duckdb --model smollm2 \
        --out docs/results/contamination.json --render README.md docs/contamination.md

A page's block sits between `<!-- results:contamination:NAME -->` and `<!-- /results -->`; `--render` rewrites every
such block from the file, and tests/test_contamination.py checks that each page's blocks are what the file renders
(so every number quoted there is the file's). Numbers: per family, the model's items per label, which date the
label reads (`dated_by`) and its basis; each model-vs-twin row (paired, n, 95% CI); and apiquiz's APIs whose label
differs between their definition date and the date of the code calling them (the quizzes the context's date
mislabelled)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from pipeline import registry
from pipeline.io import code_commit, write_json
from pipeline.report import results_blocks

KIND = "contamination"  # its pages' blocks: `<!-- results:contamination:NAME -->` (pipeline.report.results_blocks)


def _params_digest(con) -> str:
    """sha256 of the run's params as the warehouse records them (run_params: key, value), sorted by key."""
    import hashlib
    rows = con.sql("SELECT key, value FROM run_params ORDER BY key").fetchall()
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()


def _tables(con) -> set[str]:
    return {r[0] for r in con.sql("SELECT table_name FROM information_schema.tables").fetchall()}


def collect(con, model: str) -> dict:
    """The numbers: per family, the model's items per (label, dated_by, date_basis); its rows against its twin; the
    APIs apiquiz relabels (label by definition vs by the calling code's date)."""
    have = _tables(con)
    cutoff = con.sql("SELECT training_cutoff::VARCHAR, cutoff_kind, training_cutoff_source, basis FROM "
                     "contamination_models WHERE model = ?", params=[model]).fetchall()
    if not cutoff:
        raise SystemExit(f"model {model!r} is not in the warehouse's contamination_models; name a zoo model")
    out = {"model": model, "training_cutoff": cutoff[0][0], "cutoff_kind": cutoff[0][1],
           "training_cutoff_source": cutoff[0][2], "basis": cutoff[0][3], "counts": {}, "vs_twin": {}}
    # each family with contamination views says how they are counted in its `contamination` module (registry.hook)
    for family in map(registry.load, registry.available()):
        part = registry.hook(family, "contamination")
        view = family.view("contamination")
        if part is None or view not in have:
            continue
        by = "".join(f", {c}" for c in part.COUNT_BY)
        where = f" AND {part.COUNT_WHERE}" if part.COUNT_WHERE else ""
        rows = con.sql(f"SELECT label, dated_by{by}, date_basis, count(*) FROM {view} "
                       f"WHERE model = ?{where} GROUP BY ALL ORDER BY ALL", params=[model]).fetchall()
        cols = ["label", "dated_by", *part.COUNT_BY, "date_basis", "n"]
        out["counts"][family.name] = [dict(zip(cols, r)) for r in rows]
        keys = part.TWIN_KEYS
        twin = con.sql(f"SELECT {', '.join(keys)}, label, cutoff_kind, dated_by, n, * EXCLUDE (model, twin, "
                       f"{', '.join(keys)}, label, cutoff_kind, dated_by, n) FROM {family.view('contamination_vs_twin')} "
                       "WHERE model = ? ORDER BY ALL", params=[model])
        out["vs_twin"][family.name] = [dict(zip(twin.columns, r)) for r in twin.fetchall()]
        if hasattr(part, "extra"):
            out.update(part.extra(con, model, have))
    return out


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:+.3f}" if v < 0 else f"{v:.3f}"
    return str(v)


def render(results: dict, name: str) -> str:
    """A page's block, from the results file alone."""
    n = results["numbers"]
    words = {"data": "cutoff", "release": "release"}.get(n["cutoff_kind"], "cutoff")
    head = (f"From `{results['file']}` (`{results['command']}`; commit {results['commit'][:7]}, "
            f"{results['configuration']['build']}): model `{n['model']}`, {words} {n['training_cutoff']} "
            f"(`training_cutoff_kind: {n['cutoff_kind']}`).\n")
    if name == "counts":
        lines = [head, "| family | label | dated by | basis | items |", "|---|---|---|---|---|"]
        for family, rows in n["counts"].items():
            agg: dict[tuple, int] = {}
            for r in rows:
                key = (r["label"], r["dated_by"], r["date_basis"])
                agg[key] = agg.get(key, 0) + r["n"]
            lines += [f"| {family} | {k[0]} | {k[1]} | {k[2]} | {v:,} |" for k, v in sorted(agg.items())]
        return "\n".join(lines) + "\n"
    if name == "vs_twin":
        lines = [head, "| family | keys | label | n | model | twin | difference [95% CI] |", "|---|---|---|---|---|---|---|"]
        for family, rows in n["vs_twin"].items():
            keys = registry.hook(registry.load(family), "contamination").TWIN_KEYS
            for r in rows:
                score = r.get("p_at_1", r.get("score"))
                twin = r.get("twin_p_at_1", r.get("twin_score"))
                lines.append(f"| {family} | {' '.join(str(r[k]) for k in keys)} | {r['label']} | {r['n']} | "
                             f"{_fmt(score)} | {_fmt(twin)} | {r['diff']:+.3f} [{r['lo']:+.3f}, {r['hi']:+.3f}] |")
        if len(lines) == 3:
            lines.append("| (none: the model has no random twin scored on a labelled item) | | | | | | |")
        return "\n".join(lines) + "\n"
    if name == "relabelled":
        rows = n.get("relabelled_apis", [])
        lines = [head, f"{sum(r['quizzes'] for r in rows):,} quizzes on {len(rows)} APIs change label when dated by "
                       "the API's definition instead of the code calling it:", "",
                 "| API | quizzes | by definition (basis, date) | by calling code (basis, date) |", "|---|---|---|---|"]
        lines += [f"| `{r['api']}` | {r['quizzes']} | {r['label_by_api']} ({r['api_date_basis']}, {r['api_released']}) | "
                  f"{r['label_by_context']} ({r['context_date_basis']}, {r['context_released']}) |" for r in rows]
        return "\n".join(lines) + "\n"
    if name == "same_library":
        rows = n.get("same_library", [])
        lines = [head, "| protocol | libraries | after: n, gain [95% CI] | before: n, gain [95% CI] | "
                       "difference [95% CI] |", "|---|---|---|---|---|"]
        lines += [f"| {r['protocol']} | {r['libraries']} | {r['n_after']}, {r['gain_after']:+.3f} [{r['gain_after_lo']:+.3f}, "
                  f"{r['gain_after_hi']:+.3f}] | {r['n_before']}, {r['gain_before']:+.3f} [{r['gain_before_lo']:+.3f}, "
                  f"{r['gain_before_hi']:+.3f}] | {r['gain_difference']:+.3f} [{r['lo']:+.3f}, {r['hi']:+.3f}] |"
                  for r in rows]
        if not rows:
            lines.append("| (none: no library has first-seen-dated quizzes scored by the model and its twin on both "
                         "sides) | | | | |")
        return "\n".join(lines) + "\n"
    raise ValueError(f"no results block {name!r} (counts, vs_twin, relabelled, same_library)")


def render_block(args: str, results: dict, root: Path = Path(".")) -> str:
    """A block's body from its args: `NAME` renders `results` (the --out file), `FILE:NAME` another committed
    results file of this command (a path from the project root: a refreshed build's, beside the default's)."""
    if ":" not in args:
        return render(results, args)
    file, name = args.rsplit(":", 1)
    return render(json.loads((root / file).read_text()), name)


def render_page(text: str, results: dict, root: Path = Path(".")) -> str:
    return results_blocks.rewrite(text, KIND, lambda args: render_block(args, results, root))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.report.contamination_results", description=__doc__.split("\n\n")[0])
    ap.add_argument("--warehouse", type=Path, help="a built warehouse (data/warehouse.duckdb); without it, --render "
                    "reads --out as it is")
    ap.add_argument("--model", default="smollm2", help="the zoo model whose labels are reported (one with a cutoff)")
    ap.add_argument("--out", type=Path, default=Path("docs/results/contamination.json"))
    ap.add_argument("--build", default="the default params.yaml", help="which params built the warehouse, in words "
                    "(recorded in the file's configuration beside the run's params digest)")
    ap.add_argument("--render", nargs="*", type=Path, default=[], help="pages whose results blocks are rewritten")
    args = ap.parse_args(argv)
    if args.warehouse is not None:
        import duckdb  # not pipeline.query.connect: contamination sits below the query command (tests/house.py)

        # the warehouse's views read their Parquet relative to the project root: run from there, as the docs say
        con = duckdb.connect(str(args.warehouse), read_only=True)
        results = {"file": args.out.as_posix(),
                   "command": f"python -m pipeline.report.contamination_results --warehouse {args.warehouse.as_posix()} "
                              f"--model {args.model} --out {args.out.as_posix()}",
                   "configuration": {"warehouse": args.warehouse.as_posix(), "model": args.model, "build": args.build,
                                     "run_params_sha256": _params_digest(con)},
                   "commit": code_commit(), "numbers": collect(con, args.model)}
        write_json(results, args.out)
    results = json.loads(args.out.read_text())
    for page in args.render:
        page.write_text(render_page(page.read_text(), results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
