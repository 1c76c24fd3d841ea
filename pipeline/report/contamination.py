"""The report's contamination part (on the corpus page, docs/contamination.md): every source with its license and
release date, each model's basis and cutoff, and per family the items on each side of each model's label, the
headline score split by it and the model against its random twin on each side (paired, n, 95% CI; a cell under
report.min_n prints "too few items")."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from pipeline.report.common import fraction, interval_cell, markdown_table, min_n, score_cell


def _tables(con) -> set[str]:
    return {r[0] for r in con.sql("SELECT table_name FROM information_schema.tables").fetchall()}


# What a cutoff label means, by the model's cutoff kind (zoo training_cutoff_kind): a release date is an upper
# bound on the data cutoff, so its labels say "the release", never "the cutoff".
LABEL_WORDS = {
    ("released_before_cutoff", "data"): "before the cutoff", ("released_after_cutoff", "data"): "after the cutoff",
    ("released_before_cutoff", "release"): "before the release", ("released_after_cutoff", "release"): "after the release",
}
# Which of an item's dates its label reads (the views' dated_by).
DATED_BY_WORDS = {"api": "the API's definition", "context": "its code's first release"}


def label_words(label: str, cutoff_kind: str | None) -> str:
    """A label as the report prints it: a cutoff label says whether the date was the data's cutoff or the release."""
    return LABEL_WORDS.get((label, cutoff_kind), label)


def _label_counts(rows: list[tuple]) -> list[tuple]:
    """(model, basis, cutoff_kind, dated_by, label, date_basis, n) rows -> one row per model: its basis, what its
    cutoff is, which date the labels read, the items of each label, and how many of those after the cutoff are
    dated only by a release (an upper bound: the code or API may be older)."""
    order = ("read", "not_read", "released_before_cutoff", "released_after_cutoff", "unknown")
    per: dict[tuple, dict[str, int]] = {}
    for model, basis, kind, dated_by, label, date_basis, n in rows:
        dated = "" if basis != "cutoff" else DATED_BY_WORDS.get(dated_by, dated_by or "")  # read/not_read: no date
        counts = per.setdefault((model, basis, kind or "", dated), {})
        counts[label] = counts.get(label, 0) + int(n)
        if label == "released_after_cutoff" and date_basis == "release":
            counts["after_by_release"] = counts.get("after_by_release", 0) + int(n)
    return [(*k, *(per[k].get(label, 0) for label in (*order, "after_by_release"))) for k in sorted(per)]


def _under(value, n, floor: int) -> str:
    """A second score of a row whose first already says "too few items": empty under the floor."""
    return "" if n is None or int(n) < floor else fraction(value)


COUNT_COLUMNS = ["model", "basis", "cutoff is", "dated by", "read", "not read",
                 "released before the cutoff (release)", "released after the cutoff (release)", "unknown",
                 "of those after: dated by a release only"]


@dataclass(frozen=True)
class Split:
    """How a family's score is split by label: views `<view>_scores` (model, keys..., label, n, score, lo, hi) and
    `<view>_vs_twin` (model, twin, keys..., label, n, score, twin score, diff, lo, hi), each filtered by `where`."""

    keys: tuple[tuple[str, str], ...]  # (column, header) between the model (and twin) and the label
    score: str  # the score column of <view>_scores and <view>_vs_twin
    twin_score: str  # the twin's score column of <view>_vs_twin
    header: str  # the score's name in the tables ("P@1")
    scores_title: str
    twins_title: str
    where: str = ""  # an extra filter of both views ("metric = 'SR@1'")


def label_part(con, floor: int, view: str, intro: str, split: Split | None = None, counts_where: str = "") -> list[str]:
    """A family's part of the contamination section (its report module's `contamination(con, floor)` returns it):
    its items on each side of each model's label (view `view`: model, basis, label, date_basis per item, filtered by
    `counts_where`), then, with `split`, the score by label and each model against its random twin on each side,
    every score with n and its 95% CI ("too few items" under the floor)."""
    cut = f" WHERE {counts_where}" if counts_where else ""
    counts = con.sql(f"SELECT model, basis, cutoff_kind, dated_by, label, date_basis, count(*) FROM {view}{cut} "
                     "GROUP BY ALL").fetchall()
    out = [intro, markdown_table(COUNT_COLUMNS, _label_counts(counts))]
    if split is None:
        return out
    keys, headers = [k for k, _ in split.keys], [h for _, h in split.keys]
    where = " AND ".join(["label <> 'unknown'", *([split.where] if split.where else [])])
    scores = con.sql(f"SELECT model, {', '.join(keys)}, label, cutoff_kind, n, {split.score}, lo, hi "
                     f"FROM {view}_scores WHERE {where} ORDER BY ALL").fetchall()
    if scores:
        rows = [(*r[:-6], label_words(r[-6], r[-5]), r[-4], score_cell(r[-3], r[-4], floor),
                 interval_cell(r[-2], r[-1], r[-4], floor)) for r in scores]
        out += [split.scores_title, markdown_table(["model", *headers, "label", "n", split.header, "95% CI"], rows)]
    twins = con.sql(f"SELECT model, twin, {', '.join(keys)}, label, cutoff_kind, n, {split.score}, "
                    f"{split.twin_score}, diff, lo, hi FROM {view}_vs_twin WHERE {where} ORDER BY ALL").fetchall()
    if twins:
        rows = [(*r[:-8], label_words(r[-8], r[-7]), r[-6], score_cell(r[-5], r[-6], floor),
                 _under(r[-4], r[-6], floor), _under(r[-3], r[-6], floor), interval_cell(r[-2], r[-1], r[-6], floor))
                for r in twins]
        out += [split.twins_title, markdown_table(["model", "twin", *headers, "label", "n", split.header, "twin",
                                                   "difference", "95% CI"], rows)]
    return out


def labelled_by(fams: list, kind: str) -> str:
    """"a and b label by it": the families whose report module declares `DATED_BY = kind` (`api`: an item is dated by
    its API's date; `context`: by its own code's), in their order."""
    names = [f.name for f in fams
             if f.report and getattr(importlib.import_module(f.report), "DATED_BY", "") == kind]
    if not names:
        return "no enabled family labels by it"
    who = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    return f"{who} label{'s' if len(names) == 1 else ''} by it"


def section(con, config: dict, fams: list) -> str:
    floor = min_n(config)
    have = _tables(con)
    out = ["### Provenance and known contamination\n",
           "Each source's license (SPDX, read from its own metadata) and release date (pinned in params.yaml; the "
           "JDK's from its build), whether the license filter (`corpus.licenses.allow`) kept it, and how many of its "
           "functions are dated by their first pinned release (`history`). See docs/contamination.md.\n"]
    rows = con.sql("SELECT source, kind, license, coalesce(released::VARCHAR, 'unknown'), files, license_rejects, "
                   "functions_dated FROM corpus_provenance ORDER BY source").fetchall()
    out.append(markdown_table(["source", "kind", "license", "released", "files kept", "license rejects",
                               "functions dated by history"], rows))
    models = con.sql("SELECT model, labelled_by, basis, coalesce(training_cutoff::VARCHAR, ''), "
                     "coalesce(cutoff_kind, ''), coalesce(training_cutoff_source, '') FROM contamination_models "
                     "ORDER BY model").fetchall()
    out += ["\nEach model's label basis: `exact` (a pipeline-trained model: its card records the text it read; "
            "`read` / `not_read`), `cutoff` (a pretrained model with a stated training cutoff: an item released after "
            "it cannot have been read), `unknown`; a random twin takes its model's labels.\n",
            markdown_table(["model", "labelled as", "basis", "training cutoff", "cutoff is", "cutoff from"], models),
            "\nA cutoff of kind `release` is the weights' release date, an upper bound on the data cutoff: its labels "
            "read \"before / after the release\". Each item has two dates: its API's (the first pinned release of the "
            f"API's defining source that defines it; {labelled_by(fams, 'api')}: does the model know the API?) and "
            "its code's (the first pinned release holding the item's own code; "
            f"{labelled_by(fams, 'context')}: could the model have read this code?). Each is the first pinned release "
            "holding it (a source's `history`), else a "
            "release date, which only bounds the age from above: an item after the cutoff dated by a release only "
            "(the counts' last column) may be old (the JDK's sources are dated by the installed build, the stdlib's "
            "APIs by the pinned CPython release). Give such a source `history` to tell new from old.\n"]
    for family in fams:  # each family's part: its report module's contamination(con, floor), over its own views
        part = getattr(importlib.import_module(family.report), "contamination", None) if family.report else None
        if part is not None and f"{family.name}_contamination" in have:
            out += part(con, floor)
    out.append(f"\nScores over fewer than {floor} items (report.min_n) print \"too few items\". "
               f"Differences are fractions ({fraction(0.05)} = 5 points).\n")
    return "\n".join(out)
