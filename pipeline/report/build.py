"""Write the report from the warehouse: reports/index.md, the first read (the corpus, the models, and per
family its headline: the paper's table with ours beside it), one page per family with everything else
(reports/<family>.md) and the corpus's details (reports/corpus.md), each also as a page for a browser
(.html); reports/figures/, reports/plots/*.csv and reports/metrics/scores.json. The corpus and model
sections are the report's own; every benchmark family adds its section (its `report` module returns a
pipeline.report.common.Section) and its headline scores (its `headline` SQL), in the order params.yaml
lists the families. Everything here is a query over data/warehouse.duckdb."""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import multiprocessing
import os
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

from pipeline import registry as families
from pipeline import run_warnings
from pipeline.core import logs
from pipeline.io import atomic_path, write_json
from pipeline.manifest.build import split_order, split_warnings
from pipeline.query import connect
from pipeline.report import contamination, headlines, html, verdicts
from pipeline.report.common import min_n as report_floor
from pipeline.report.common import (LANGUAGE_NAMES, Section, language_name, markdown_table,
                                     no_negative_zero)

log = logging.getLogger("pipeline.report.build")


CORPUS_PAGE = "corpus"  # reports/corpus.md: splits and rejects
MODELS_PAGE = "models"  # reports/models.md: the zoo's sizes and test perplexities


def detail_pages(fams: list[families.Family]) -> list[str]:
    """The pages beside reports/index.md (names without .md / .html): the corpus's, then one per family with a
    report section. The report rule declares each as an output."""
    return [CORPUS_PAGE, MODELS_PAGE, *(f.name for f in fams if f.report)]


def corpus_line(rows: list[tuple]) -> str:
    """The corpus table (language, files, unique, repositories, bytes, lines) as the first read's one line: every
    number of it, so the first read does not grow by a table (the table is on reports/corpus.md)."""
    if not rows:
        return "No code in the corpus."
    parts = []
    for language, files, unique, repositories, size, lines in rows:
        files, unique = int(files or 0), int(unique or 0)
        parts.append(f"{language}: {files:,} files, {'all unique' if unique == files else f'{unique:,} unique'}, "
                     f"from {int(repositories or 0):,} repositories, {int(lines or 0):,} lines, "
                     f"{int(size or 0):,} bytes")
    return "; ".join(parts) + "."


def per_source_evaluation(evaluation: dict) -> tuple[str, list[str]]:
    """(the per-source evaluation table of reports/metrics/evaluation.json `per_source`: library files, those in
    test, and items per family set; its `unevaluated_sources` lines, one per source)."""
    per_source = evaluation.get("per_source") or {}
    sets = sorted({k for sources in per_source.values() for cell in sources.values() for k in cell["items"]})
    rows = [(language, source, cell["library_files"], cell["test_library_files"],
             *(cell["items"].get(k, "-") for k in sets))
            for language, sources in sorted(per_source.items()) for source, cell in sorted(sources.items())]
    if not rows:
        return "", []
    return (markdown_table(["language", "source", "library files", "in test", *sets], rows),
            list(evaluation.get("unevaluated_sources") or []))


def section_corpus(con, evaluation: Path | None = None) -> Section:
    rows = con.sql("SELECT language, sum(files)::BIGINT, sum(unique_files)::BIGINT, sum(repositories)::BIGINT, "
                   "sum(bytes)::BIGINT, sum(lines)::BIGINT FROM corpus_summary GROUP BY 1 ORDER BY 1").fetchall()
    rejects = con.sql("SELECT stage, reason, sum(items)::BIGINT FROM rejects_summary GROUP BY 1, 2 ORDER BY 1, 2").fetchall()
    split_rows = con.sql("SELECT language, split, count(*) FILTER (WHERE NOT duplicate) AS files FROM manifest "
                         "GROUP BY ALL ORDER BY ALL").fetchall()
    by_language: dict[str, dict[str, int]] = {}
    for language, split, n in split_rows:
        by_language.setdefault(language, {})[split] = n
    params = run_params(con)
    fractions = params.get("manifest", {}).get("split") or {}
    warnings = split_warnings(by_language, fractions)
    # what the run's end summary printed too (pipeline.run_warnings): unpinned sources, caps that dropped members,
    # idbench languages short of new pairs, models loaded with tensors left random
    warnings += run_warnings.from_warehouse(con, params)
    order = split_order(fractions)
    splits = [(language, *(by_language[language].get(s, 0) for s in order)) for language in sorted(by_language)]
    composition, unevaluated = source_composition(con, params, order)
    warnings += unevaluated
    table, unevaluated = per_source_evaluation(json.loads(evaluation.read_text()) if evaluation and evaluation.exists()
                                               else {})
    warnings += [w.rstrip(".") for w in unevaluated]
    policy = (params.get("manifest", {}).get("split_policy") or {}).get("mode", "source")
    return Section(
        "Corpus",
        corpus_line(rows) + "\n" + "".join(f"\n**Warning:** {w}.\n" for w in warnings),
        "Files per language:\n\n"
        + markdown_table(["language", "files", "unique", "repositories", "bytes", "lines"], rows)
        + f"\n\nUnique files per split (manifest.split_policy.mode: {policy}; docs/splits.md):\n\n"
        + markdown_table(["language", *order], splits)
        + "\n\nThe splits per source: library files (scripts, which train, left out) and the evaluation split's share "
        f"of the source's library lines ({order[-1] if order else 'test'}):\n\n" + composition
        + ("\n\nWhat each source gives each evaluation set (reports/metrics/evaluation.json `per_source`: its library "
           "files, those in the test split, and its items per family and set; "
           + "".join(f"{note}, " for note in per_source_notes(params))
           + "`-`: the set is not counted per source):\n\n" + table if table else "")
        + "\n\nLeft out, by stage and reason:\n\n" + markdown_table(["stage", "reason", "items"], rejects) + "\n")


def per_source_notes(params: dict) -> list[str]:
    """How each enabled family counts its items per source, where its report module says (`PER_SOURCE`: a set counted
    through `source_of`, say), in the families' order."""
    notes = [getattr(importlib.import_module(f.report), "PER_SOURCE", "") if f.report else ""
             for f in families.enabled(params)]
    return [n for n in notes if n]


def source_composition(con, params: dict, order: list[str]) -> tuple[str, list[str]]:
    """(table of library files per language, source and split, with the last split's share of the source's library
    lines; one warning per source with library code but none in the last split)."""
    from pipeline.extract import library as libcode
    from pipeline.manifest.build import SCRIPTS

    scripts = list((params.get("manifest", {}).get("split_policy") or {}).get("scripts") or SCRIPTS)
    cells: dict[tuple[str, str], dict[str, list[int]]] = {}
    located = "location" in [c[0] for c in con.sql("DESCRIBE manifest").fetchall()]
    found = con.sql("SELECT language, source, path, split, lines" + (", location" if located else "")
                    + " FROM manifest WHERE NOT duplicate ORDER BY ALL").fetchall()
    rows = [{"language": r[0], "source": r[1], "path": r[2], "location": r[5] if located else None} for r in found]
    flags = libcode.library_files(rows, scripts, libcode.declarations(rows))  # as the split decided (docs/splits.md)
    for (language, source, path, split, lines, *_), is_library in zip(found, flags):
        if is_library:
            cell = cells.setdefault((language, source), {}).setdefault(split, [0, 0])
            cell[0] += 1
            cell[1] += int(lines or 0)
    last = order[-1] if order else "test"
    rows, warnings = [], []
    for (language, source), cell in sorted(cells.items()):
        total = sum(l for _, l in cell.values())
        held = cell.get(last, [0, 0])
        rows.append((language, source, *(cell.get(s, [0, 0])[0] for s in order),
                     f"{held[1] / total:.1%}" if total else "-"))
        if not held[0]:
            warnings.append(f"source {source} has {sum(f for f, _ in cell.values())} {language} library files but "
                            f"none in the {last} split: it is never evaluated (manifest.split_policy.mode: source "
                            "gives every source its share; docs/splits.md)")
    return markdown_table(["language", "source", *order, f"{last} share of lines"], rows), warnings


LOSS_FIGURES = "models"  # the training-loss plots, reports/figures/models/loss_<model>.png (rules/models.smk)


def section_models(models_metrics: Path | None, loss_link: str = "figures/models") -> Section:
    """The zoo: one line in reports/index.md (how many models, of which random twins), the table (sizes and test
    perplexities) on its own page, reports/models.md: a row per model would grow the first read with the zoo."""
    data = json.loads(models_metrics.read_text()) if models_metrics and models_metrics.exists() else {"models": {}}
    rows = [(name, *(m.get(k) for k in ("source", "family", "parameters", "test_tokens_scored", "test_perplexity",
                                        "perplexity_ratio_to_twin")))
            for name, m in sorted(data["models"].items())]
    twins = sum(1 for m in data["models"].values() if str(m.get("source", "")).startswith("random:"))
    headline = (f"{len(rows)} models, {twins} of them random-weights twins of another: "
                + ", ".join(f"`{name}`" for name, *_ in rows) + "." if rows else "No model card (reports/metrics/models.json).")
    return Section("Models", headline + "\n",
                   "Test-split perplexity (masked-token perplexity for masked LMs, span-corruption target "
                   "perplexity for encoder-decoders; none for encoders without an LM head); a random twin's last "
                   "column is its perplexity over its trained model's.\n\n"
                   + markdown_table(["model", "source", "model family", "parameters", "test tokens", "test perplexity",
                                     "twin / trained"], rows) + "\n" + loss_plots(rows, loss_link))


def loss_plots(rows: list[tuple], link: str) -> str:
    """Links to the training-loss plot of every model trained here (source `trained:*`; rules/models.smk draws
    reports/figures/models/loss_<model>.png)."""
    trained = [name for name, source, *_ in rows if str(source or "").startswith("trained:")]
    if not trained:
        return ""
    return ("\nTraining loss (train loss per step, valid-split loss every `eval_every` steps): "
            + ", ".join(f"[{name}]({link}/loss_{name}.png)" for name in trained) + ".\n")


def run_params(con) -> dict:
    """params.yaml as the warehouse recorded it (run_params, by leaf), nested again."""
    config: dict = {}
    for key, value in con.sql("SELECT key, value FROM run_params ORDER BY key").fetchall():
        node = config
        *parents, leaf = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = json.loads(value)
    return config


def empty_subsets(con, family: families.Family) -> list[str]:
    """One line per inference subset of `family` with no items (warehouse `subset_items`), saying why:
    a language without sources in the corpus, or sources that gave no item."""
    rows = con.sql("SELECT subset FROM subset_items WHERE family = ? AND items = 0 ORDER BY subset",
                   params=[family.name]).fetchall()
    lines = []
    for (subset,) in rows:
        if subset in LANGUAGE_NAMES:
            name = language_name(subset)
            files = con.sql("SELECT count(*) FROM manifest WHERE language = ?", params=[subset]).fetchall()[0][0]
            why = (f"no {name} sources in the corpus" if files == 0 else
                   f"the corpus has {files} {name} files, but none gave a {family.name} sample "
                   f"(see the rejects table and reports/metrics/{family.name}.json)")
            lines.append(f"**No {name} samples:** {why}; {family.name}/{subset} has no scores.")
        else:
            what = f"{family.name} items" if subset == "all" else f"{family.name} {subset} items"
            lines.append(f"**No {what}:** the {family.name} generator produced none from this corpus "
                         f"(see reports/metrics/{family.name}.json); {family.name}/{subset} has no scores.")
    return lines


def with_notes(section: Section, notes: list[str]) -> Section:
    """The section with these notes first in its headline (and so on its page too)."""
    if not notes:
        return section
    return replace(section, headline="\n\n".join(notes) + "\n\n" + section.headline)


BLOCK = re.compile(r"^(\||!\[|#|[-*+] |\d+[.)] |>|```|\s)")  # a Markdown line that is no paragraph text


def first_read(section: Section, page: str) -> str:
    """A section in reports/index.md: its heading, its headline less the rows it leaves to its page
    (Section.page_rows), and a link to its page when it has details, naming what the tables above left there.
    The link ends the headline's last paragraph (the populations line) when that is text, else stands alone."""
    headline, left = section.first_read_headline()
    headline = headline.strip()
    if not (section.details.strip() or left):
        return f"## {section.title}\n\n{headline}\n"
    also = f"; and, of the tables above, {'; '.join(left)}" if left else ""
    link = f"**Everything else** is on [the {page} page]({page}.md): every table and figure, our extensions{also}."
    last = headline.rsplit("\n", 1)[-1]
    return f"## {section.title}\n\n{headline}{' ' if last and not BLOCK.match(last) else chr(10) * 2}{link}\n"


MAX_LINE = 300  # characters of a line of reports/index.md (a paragraph is wrapped; a table row must fit)


def wrap_long_lines(markdown: str, width: int = MAX_LINE) -> str:
    """Paragraph and list lines longer than `width` wrapped at spaces (Markdown renders a paragraph's lines as
    one; a list item's continuation lines are indented under it). Table rows, headings and code stay as they are."""
    import textwrap

    out, fenced = [], False
    for line in markdown.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        if fenced or len(line) <= width or line.startswith(("|", "#", "    ", "\t")):
            out.append(line)
            continue
        item = re.match(r"^([-*+] |\d+[.)] )", line)
        indent = " " * len(item.group(1)) if item else ""
        out += textwrap.wrap(line, width=width, subsequent_indent=indent, break_long_words=False,
                             break_on_hyphens=False)
    return "\n".join(out)


def unwrapped(markdown: str) -> str:
    """wrap_long_lines undone: a paragraph's (or list item's) continuation lines joined to the line they continue
    (what the first read's line counts measure)."""
    out: list[str] = []
    for line in markdown.split("\n"):
        prev = out[-1] if out else ""
        if (line and prev and not line.startswith(("|", "#", "!", "```")) and not prev.startswith(("|", "#", "```"))
                and not re.match(r"^([-*+] |\d+[.)] )", line.lstrip() if not line.startswith("  ") else "x")):
            out[-1] = prev + " " + line.strip()
        else:
            out.append(line)
    return "\n".join(out)


def one_blank_line(markdown: str) -> str:
    """Runs of blank lines as one (the first read is measured in lines; Markdown renders both alike)."""
    return re.sub(r"\n(?:[ \t]*\n){2,}", "\n\n", markdown)


def page_text(section: Section, summary: str = "The paper beside ours") -> str:
    """A family's (or the corpus's, the zoo's) own page: its headline again, then its details."""
    return (f"# {section.title}\n\n[Back to the report](index.md)\n\n## {summary}\n\n"
            f"{section.headline.strip()}\n\n## Details\n\n{section.details.strip()}\n")


def write_page(text: str, md: Path, html_path: Path, title: str) -> None:
    text = no_negative_zero(text)
    with atomic_path(md) as tmp:
        tmp.write_text(text, encoding="utf-8")
    with atomic_path(html_path) as tmp:  # the same page, for a browser
        tmp.write_text(html.render(text, title), encoding="utf-8")


def headline_scores(con, fams: list[families.Family]) -> dict:
    """{family: {model: {metric: value, ..., "n": {metric: samples}}}}: what `dvc metrics diff` and
    `dvc exp show` compare, each score with the count of samples it is over.

    Not floored: a score over fewer than `report.min_n` items stays here, its n beside it,
    while the report prints "too few items (n = N)" for it. A metrics file is compared across runs and
    experiments key by key: a key that appeared and vanished as its n crossed the floor would read as a
    metric added or removed, and raising a model's cap (its n) must show as a change of the same key. Read
    a score only with its `n` (docs/report.md, "The power floor")."""
    scores: dict = {}
    for family in fams:
        if not family.headline:
            continue
        for model, metric, value, *n in con.sql(family.headline).fetchall():
            if value is not None:
                entry = scores.setdefault(family.name, {}).setdefault(model, {})
                entry[metric] = round(float(value), 4)
                if n and n[0] is not None:
                    entry.setdefault("n", {})[metric] = int(n[0])
    return scores


def _connection(db):
    """A part's connection: its own read-only one in a worker process (`db` a path), else the caller's (one process
    holds one connection to a database file: DuckDB locks its configuration)."""
    return connect(db) if isinstance(db, (str, Path)) else db


def _family_part(db, name: str, figures: Path, link: str, config: dict, plots: Path | None) -> Section:
    """One family's section (its report module, the notes on its empty subsets, its extra figures), on its own
    read-only connection: the unit `build` runs side by side (`workers`)."""
    con = _connection(db)
    family = families.load(name)
    module = importlib.import_module(family.report)
    section = with_notes(Section.of(module.section(con, figures, link, config, plots)), empty_subsets(con, family))
    extra = getattr(module, "extra_figures", None)  # figures after the notes (the family's report module)
    if extra is not None:
        section = replace(section, details=section.details.rstrip("\n") + "\n" + extra(con, figures, link))
    return section


def _headline_part(db, config: dict, name: str) -> tuple[list, dict[str, str]]:
    """One family's headline rows for the verdicts (and why there are none, when they failed)."""
    rows = headlines.rows(_connection(db), config, [name])
    return rows, dict(headlines.FAILED)


def _corpus_part(db, config: dict, names: list[str], evaluation: Path | None) -> Section:
    con = _connection(db)
    corpus = section_corpus(con, evaluation)
    return Section(corpus.title, corpus.headline,
                   corpus.details + "\n" + contamination.section(con, config, [families.load(n) for n in names]))


def _worker_setup() -> None:
    logs.setup()  # a worker's warnings go where the job's do (its log)


def _timed(fn, *args):
    """fn(*args), and the CPU seconds it took in its process (the log names each part's cost)."""
    start = time.process_time()
    out = fn(*args)
    return out, time.process_time() - start


def _run_parts(tasks: list[tuple], workers: int) -> list:
    """Each (function, *args) of `tasks`, in `workers` processes side by side (1: here, one after the other); the
    results in the tasks' order, so the report's bytes do not depend on `workers`. Workers are spawned, never
    forked (this process holds a DuckDB connection), and each opens its own read-only connection. Each part's CPU
    seconds go to the log."""
    if workers <= 1 or len(tasks) <= 1:
        done = [_timed(*task) for task in tasks]
    else:
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=ctx,
                                 initializer=_worker_setup) as pool:
            futures = [pool.submit(_timed, *task) for task in tasks]
            done = [f.result() for f in futures]
    for (fn, *args), (_, cpu) in zip(tasks, done):
        name = args[1] if fn is _family_part else args[2] if fn is _headline_part else "corpus"
        log.info("report part %s %s: %.1f CPU-s", fn.__name__.strip("_"), name, cpu)
    return [out for out, _ in done]


def section_weight(family: families.Family) -> float:
    """A family's report section's cost as its report module states it (`SECTION_CPU_S`: CPU-s measured on the
    default build); the parts run longest first, so the last to start is a short one."""
    return float(getattr(importlib.import_module(family.report), "SECTION_CPU_S", 0) or 0) if family.report else 0.0


def build(db: Path, out: Path, figures: Path, models_metrics: Path | None = None, scores: Path | None = None,
          plots: Path | None = None, html_out: Path | None = None, min_n: int | None = None,
          evaluation: Path | None = None, workers: int = 1) -> None:
    con = connect(db)
    config = run_params(con)
    if min_n is not None:  # the rule passes params.yaml's report.min_n (the warehouse may predate the key)
        config.setdefault("report", {})["min_n"] = int(min_n)
    fams = families.enabled(config)
    names = [f.name for f in fams]
    figures.mkdir(parents=True, exist_ok=True)
    if plots is not None:
        plots.mkdir(parents=True, exist_ok=True)  # a family without plots still leaves the (DVC plots) folder
    link = os.path.relpath(figures, out.parent)  # image links relative to the Markdown files (all in out's folder)
    # every part is a query over the warehouse: the families' sections (the longest first: section_weight), their
    # headline rows and the corpus section run side by side in `workers` processes
    reported = [f.name for f in sorted((f for f in fams if f.report), key=lambda f: -section_weight(f))]
    source = db if workers > 1 else con  # in one process, the parts share this connection
    tasks = ([(_family_part, source, name, figures, link, config, plots) for name in reported]
             + [(_headline_part, source, config, name) for name in names]
             + [(_corpus_part, source, config, names, evaluation)])
    results = _run_parts(tasks, workers)
    family_sections = dict(zip(reported, results[:len(reported)]))
    rows, failed = [], {}
    for part_rows, part_failed in results[len(reported):len(reported) + len(names)]:
        rows += part_rows
        failed.update(part_failed)
    corpus = results[-1]
    models = section_models(models_metrics, os.path.relpath(figures.parent / LOSS_FIGURES, out.parent))
    sections = [first_read(corpus, CORPUS_PAGE), first_read(models, MODELS_PAGE)]
    pages = {CORPUS_PAGE: corpus, MODELS_PAGE: models}
    floor = report_floor(config)
    for family in fams:
        if family.report:
            section = family_sections[family.name]
            own = verdicts.family_table([r for r in rows if r.family == family.name], floor)
            if own:
                section = replace(section, details=section.details.rstrip("\n") + "\n\n### Verdicts\n\n"
                                  "Every headline comparison of this family (paired on the same items; the first "
                                  "read's summary table prints each model's twin and strongest baseline):\n\n"
                                  + own + "\n")
            pages[family.name] = section
            sections.append(first_read(section, family.name))
            missing = [p.file for p in family.plots if plots is not None and not (plots / p.file).is_file()]
            if missing:
                raise RuntimeError(f"{family.name}: its report section wrote no {', '.join(missing)} under {plots}, "
                                   f"which the family declares (`plots=` in pipeline/families/{family.name}); "
                                   "write it, or remove it from `plots`")
    text = one_blank_line("\n".join([
        "# Benchmark report\n",
        "Regenerated from `data/warehouse.duckdb` by `snakemake report`; every number is a view you can query "
        "with `python -m pipeline query`. Each family opens with the paper's headline table and ours beside it "
        "(n, 95% CI, how the populations differ); its page has the rest.\n",
        "## Summary\n", verdicts.summary_lead(floor) + "\n", verdicts.summary_table(rows, floor) + "\n",
        *(f"**No summary rows for {name}:** {why}.\n" for name, why in sorted(failed.items())),
        *sections]))
    text = wrap_long_lines(text)
    write_page(text, out, html_out or out.with_suffix(".html"), "Benchmark report")
    for name, section in pages.items():
        summary = "In the first read" if name in (CORPUS_PAGE, MODELS_PAGE) else "The paper beside ours"
        write_page(page_text(section, summary), out.parent / f"{name}.md", out.parent / f"{name}.html", section.title)
    if scores is not None:
        write_json(headline_scores(con, fams), scores)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.report.build",
                                 description="Regenerate reports/index.md, its figures, the DVC plot data and the "
                                 "headline scores (reports/metrics/scores.json) from the warehouse.")
    ap.add_argument("--db", type=Path, default=Path("data/warehouse.duckdb"))
    ap.add_argument("--models-metrics", type=Path, default=None, help="reports/metrics/models.json")
    ap.add_argument("--out", type=Path, default=Path("reports/index.md"))
    ap.add_argument("--figures", type=Path, default=Path("reports/figures/report"))
    ap.add_argument("--scores", type=Path, default=None, help="reports/metrics/scores.json (a DVC metric)")
    ap.add_argument("--evaluation", type=Path, default=None,
                    help="reports/metrics/evaluation.json: the corpus page's per-source evaluation table")
    ap.add_argument("--plots", type=Path, default=None, help="folder for the DVC plot CSVs (reports/plots)")
    ap.add_argument("--html", type=Path, default=None,
                    help="the report as one HTML page for a browser (default: --out with .html)")
    ap.add_argument("--workers", type=int, default=1,
                    help="processes the report's parts (each family's section, headline rows, the corpus section) run "
                         "in side by side; the bytes written do not depend on it (the rule passes its threads)")
    ap.add_argument("--min-n", type=int, default=None,
                    help="the power floor (params.yaml report.min_n): a headline cell over fewer items prints its n "
                         "and 'too few items' instead of a score (default: the warehouse's params, else 100)")
    args = ap.parse_args(argv)
    logs.setup()
    build(args.db, args.out, args.figures, args.models_metrics, args.scores, args.plots, args.html, args.min_n,
          evaluation=args.evaluation, workers=args.workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
