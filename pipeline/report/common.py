"""What every report section shares: the Section a family returns (headline for the first-read report,
details for its own page), Markdown tables, figures in one style written atomically, plot data."""

from __future__ import annotations

import csv
import io
import logging
import math
import re
from dataclasses import dataclass, replace
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from cycler import cycler  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from pipeline.io import atomic_path  # noqa: E402

# One style for every family's figures. Okabe & Ito's colour-blind-safe palette (8 colours); past 8 series the
# line style and marker change too, so no two series look alike. Constrained layout keeps titles, colour bars
# and labels from overlapping.
OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
STYLE = {
    "axes.prop_cycle": cycler(color=OKABE_ITO * 3, linestyle=["-"] * 8 + ["--"] * 8 + [":"] * 8),
    "figure.constrained_layout.use": True,
    "axes.titlesize": 10, "axes.labelsize": 9, "xtick.labelsize": 8, "ytick.labelsize": 8, "legend.fontsize": 7,
    "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False,
    "savefig.dpi": 110,
}
plt.rcParams.update(STYLE)
MAX_LEGEND_INSIDE = 8  # more entries than this: the legend goes beside the axes, never over the lines
MAX_SERIES = 8  # data series per panel (chance lines apart): more are split over facets (line_facets)
CHANCE = {"color": "#666666", "linestyle": (0, (2, 2)), "linewidth": 1.2, "marker": None}  # every chance line
REFERENCE_LABEL = "reference"  # a line every panel is read against (a paper's value), not a data series
CHANCE_LABEL = "chance"  # labels of chance lines start with this (tests and MAX_SERIES count the others)

log = logging.getLogger("pipeline.report")

__all__ = ["CHANCE_LABEL", "LANGUAGE_NAMES", "MAX_SERIES", "Section", "TWIN_ROWS", "bar_n", "chance_line",
           "language_name", "line_facets", "markdown_table", "no_negative_zero", "plt", "rounded", "save", "table_row",
           "write_plot"]

# what the first read says of the random twins' own rows it leaves to the family's page (Section.page_rows): a family
# marks a twin's row so only where its section also prints the model against that twin (paired), which reads it
TWIN_ROWS = "the random twins' own rows (each model is read against its twin here)"


@dataclass(frozen=True)
class Section:
    """A family's part of the report. `headline` goes to the first-read report (reports/index.md): the paper's
    headline table with ours beside it (same rows and columns, n, 95% CI) and one line on how the populations
    differ; `details` (our extensions, every other table and figure) to the family's own page
    (reports/<family>.md), which the headline links to. Both are Markdown without the `## title` heading.
    The page prints the headline whole; the first read leaves out the rows a family marks as the page's
    (`page_rows`: e.g. a random twin's own row where the section also prints the model against it, paired)."""

    title: str
    headline: str
    details: str = ""
    # rows of the headline's tables that only the family's page prints, each (what they are, the row as table_row
    # renders it): the first read (first_read_headline) leaves them out and says what it left (Section.leaving)
    page_rows: tuple[tuple[str, str], ...] = ()

    def leaving(self, rows) -> "Section":
        """This section with these headline table rows on its page only: `rows` are (what, row tuple) pairs, each
        row as the family passed it to markdown_table, `what` a phrase the first read prints for them (TWIN_ROWS)."""
        rows = tuple((what, table_row(row)) for what, row in rows)
        return replace(self, page_rows=self.page_rows + rows) if rows else self

    def first_read_headline(self) -> tuple[str, list[str]]:
        """The headline as reports/index.md prints it: without its page_rows (a table keeps its header, even when
        every row went), and what was left out (each `what` once, in the order first marked)."""
        if not self.page_rows:
            return self.headline, []
        drop = {row for _, row in self.page_rows}
        lines = self.headline.split("\n")
        kept = [line for line in lines if line not in drop]
        left = {row for row in drop if row in lines}
        whats = list(dict.fromkeys(what for what, row in self.page_rows if row in left))
        return "\n".join(kept), whats

    def __str__(self) -> str:
        """The whole section as one Markdown string (`## title`, headline, details)."""
        return f"## {self.title}\n\n{self.headline.strip()}\n\n{self.details.strip()}\n"

    @classmethod
    def split(cls, markdown: str, tables: int = 1) -> "Section":
        """A section written as one Markdown string (`## title` first), cut after its first `tables` tables:
        what comes before the cut is the headline, the rest the details. A family whose section opens with
        the paper's table beside ours adopts the layout with `return Section.split(text)`."""
        heading, _, body = markdown.lstrip("\n").partition("\n")
        title = heading.lstrip("#").strip()
        lines = body.split("\n")
        seen, cut, in_table = 0, len(lines), False
        for i, line in enumerate(lines):
            is_row = line.startswith("|")
            if in_table and not is_row:
                seen += 1
                if seen == tables:
                    cut = i
                    break
            in_table = is_row
        return cls(title, "\n".join(lines[:cut]).strip("\n") + "\n", "\n".join(lines[cut:]).strip("\n") + "\n")

    @classmethod
    def cut(cls, markdown: str, at: str) -> "Section":
        """A section written as one Markdown string (`## title` first) cut at the first line starting with
        `at` (e.g. its "beyond the paper" heading): the headline is what comes before (the paper's table, ours
        beside it, the populations line), the details that line and the rest. Without such a line: split()."""
        heading, _, body = markdown.lstrip("\n").partition("\n")
        lines = body.split("\n")
        cut = next((i for i, line in enumerate(lines) if line.startswith(at)), None)
        if cut is None:
            return cls.split(markdown)
        return cls(heading.lstrip("#").strip(), "\n".join(lines[:cut]).strip("\n") + "\n",
                   "\n".join(lines[cut:]).strip("\n") + "\n")

    @classmethod
    def of(cls, section: "Section | str") -> "Section":
        """What the report build makes of a section: a Section as it is; a plain Markdown string (a family not
        yet split) as a headline of its heading and first paragraph, with every table on its own page."""
        if isinstance(section, Section):
            return section
        heading, _, body = section.lstrip("\n").partition("\n")
        paragraphs = [p for p in body.strip("\n").split("\n\n") if p.strip()]
        lead = next((p for p in paragraphs if not p.lstrip().startswith(("|", "!["))), "")
        return cls(heading.lstrip("#").strip(), lead.strip() + "\n", body.strip("\n") + "\n")

LANGUAGE_NAMES = {"python": "Python", "java": "Java", "javascript": "JavaScript"}  # manifest.languages, as written


def language_name(language: str) -> str:
    return LANGUAGE_NAMES.get(language, language)


PLOT_DIGITS = 6  # significant digits of a float in plot CSVs


def rounded(value: float, digits: int = 2) -> float:
    """`value` rounded to `digits` decimals, with no negative zero: what is rendered is decided here, before
    formatting, so the last bits of a float (which DuckDB's parallel sums may vary) never reach a report."""
    return round(value, digits) + 0.0


FRACTION_DIGITS = 3  # decimals of a fraction (a score in [0, 1]) in the report's tables


def fraction(v, digits: int = FRACTION_DIGITS) -> str:
    """A score as the report prints it: fixed decimals, never -0.000; empty when there is none."""
    return "" if v is None else f"{rounded(float(v), digits):.{digits}f}"


def interval(lo, hi) -> str:
    """`[0.401, 0.470]`: a 95% CI as the report prints it; empty when either end is missing."""
    return "" if lo is None or hi is None else f"[{fraction(lo)}, {fraction(hi)}]"


MIN_N = 100  # report.min_n when params.yaml has no `report:` block
TOO_FEW = "too few items"  # what a headline cell under the floor prints instead of its score


def min_n(config: dict) -> int:
    """params.yaml `report.min_n`: the fewest items a headline cell is printed as a score over."""
    return int((config.get("report") or {}).get("min_n", MIN_N))


def floored(n, floor: int) -> bool:
    """True when a cell over `n` items is under the power floor (n unknown counts as under)."""
    return n is None or int(n) < floor


def score_cell(value, n, floor: int, digits: int = FRACTION_DIGITS) -> str:
    """A headline score as printed: the score when n >= floor, else `too few items (n = 12)`."""
    if floored(n, floor):
        return f"{TOO_FEW} (n = {0 if n is None else int(n)})"
    return fraction(value, digits)


def interval_cell(lo, hi, n, floor: int) -> str:
    """A headline CI as printed: empty under the floor (the score cell says why)."""
    return "" if floored(n, floor) else interval(lo, hi)


def clip(value, lo: float = 0.0, hi: float = 1.0):
    """A CI end clipped to the metric's range (a normal-approximation CI can leave [0, 1])."""
    return None if value is None else min(hi, max(lo, float(value)))


def detectable_difference(p: float, n: int, z: float = 1.96) -> float | None:
    """The half-width of a 95% CI on a difference of two rates at `p` over `n` paired items, taken as
    independent (the paired CI is narrower when the two agree): the smallest difference the n can detect.
    None when n is 0."""
    if not n:
        return None
    p = min(1.0, max(0.0, float(p)))
    return z * (2 * p * (1 - p) / n) ** 0.5


def detectable(lo, hi) -> float | None:
    """The half-width of a paired 95% CI [lo, hi]: the smallest difference that comparison can detect (a true
    difference smaller than it leaves zero inside the interval about half the time or more). None when either
    end is missing."""
    if lo is None or hi is None or lo != lo or hi != hi:
        return None
    return (float(hi) - float(lo)) / 2


def bootstrap_seed(seed, cell: str) -> int:
    """The seed of a bootstrap the report runs for one cell: from the run seed (params.yaml `seed`) and the
    cell's name, so two builds from the same warehouse draw the same resamples and no two cells share a draw."""
    from pipeline.core.ids import stable_id

    return int(stable_id("report-bootstrap", int(seed or 0), cell), 16) % 2**31


def run_seed(config) -> int:
    """params.yaml `seed` as the warehouse recorded it (0 when absent)."""
    return int((config or {}).get("seed", 0) or 0) if isinstance(config, dict) else 0


def model_size(parameters) -> str:
    """A parameter count as `1.44M` / `135M` / `7B`; `?` when unknown."""
    if parameters is None:
        return "?"
    for unit, scale in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if parameters >= scale:
            return f"{parameters / scale:.3g}{unit}"
    return str(parameters)


def twinned(con, models: list[str]) -> str:
    """`2 of them beside a random-weights twin (a, b)`: which of `models` the zoo pairs with a control."""
    twins = sorted(m for (m,) in con.sql("SELECT DISTINCT model FROM model_twins").fetchall() if m in models)
    return (f"{len(twins)} of them beside a random-weights twin ({', '.join(twins)})" if twins
            else "none beside a random-weights twin")


NEGATIVE_ZERO = re.compile(r"(?<![\w.-])-(0\.0+)(?![\d.])")


def no_negative_zero(text: str) -> str:
    """`-0.00` (or `-0.0`) rendered by any f-string in a section, as `0.00`: a report built twice from the
    same warehouse is byte-identical whatever side of zero a tiny difference fell."""
    return NEGATIVE_ZERO.sub(r"\1", text)


def table_row(row: tuple) -> str:
    """One row as markdown_table renders it: floats with 2 decimals, None empty."""
    def fmt(v):
        return "" if v is None else f"{rounded(v):.2f}" if isinstance(v, float) else str(v)

    return "| " + " | ".join(fmt(v) for v in row) + " |"


def markdown_table(columns: list[str], rows: list[tuple]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += [table_row(row) for row in rows]
    return "\n".join(lines)


def _integer_valued(values) -> bool:
    return len(values) > 0 and all(float(v).is_integer() for v in values)


def _cell_ticks(n: int) -> list[int]:
    """Tick positions for the n rows (or columns) of a heat map: every index, thinned to at most ~8."""
    step = max(1, math.ceil(n / 8))
    return list(range(0, n, step))


def data_series(ax) -> list:
    """The lines of `ax` that are data (not chance lines, not error bars)."""
    return [line for line in ax.get_lines() if len(line.get_xdata()) and not line.get_label().startswith(
        (CHANCE_LABEL, REFERENCE_LABEL, "_"))]


def tidy(fig, name: str = "") -> None:
    """What every figure gets before it is saved: integer ticks where the data are integers (layers, heads, k;
    heat maps on both axes, one tick per cell), and a legend with many entries moved beside the axes. A panel
    with more than MAX_SERIES data series is logged (use line_facets)."""
    for ax in fig.axes:
        if ax.images:  # a heat map: rows and columns are layers and heads, one tick per cell (an integer)
            ax.grid(False)
            rows, cols = ax.images[0].get_array().shape[:2]
            ax.set_xticks(_cell_ticks(cols))
            ax.set_yticks(_cell_ticks(rows))
        if len(data_series(ax)) > MAX_SERIES:
            log.warning("%s: a panel has %d series (more than %d): facet it with pipeline.report.common.line_facets",
                        name or "a figure", len(data_series(ax)), MAX_SERIES)
        lines = [line for line in ax.get_lines() if len(line.get_xdata())]
        if lines and all(_integer_valued(line.get_xdata()) for line in lines) and ax.get_xscale() == "linear":
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        legend = ax.get_legend()
        if legend is not None and len(legend.get_texts()) > MAX_LEGEND_INSIDE:
            handles, labels = ax.get_legend_handles_labels()
            title = legend.get_title().get_text()
            legend.remove()
            ax.legend(handles, labels, title=title or None, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                      fontsize=6, title_fontsize=7, frameon=False)


# several chance lines in one panel (one per candidate pool) are told apart: each its own grey and dash pattern,
# its label in the legend and written at its right end
CHANCE_STYLES = ({}, {"color": "#999999", "linestyle": (0, (6, 2))}, {"color": "#333333", "linestyle": (0, (1, 1.5))},
                 {"color": "#aaaaaa", "linestyle": (0, (4, 1, 1, 1))})


def chance_line(ax, xs, ys, label: str = CHANCE_LABEL, style: int | None = None) -> None:
    """The level a random order would reach (P@k, SR@k: k over the candidates ranked), in the chance style
    (grey, dashed, no marker); `ys` a number for a flat level. `style` (0, 1, ...) when a panel has several:
    each gets its own grey and dashes, and its label (less the `chance` prefix) at its right end."""
    xs = list(xs)
    ys = [ys] * len(xs) if isinstance(ys, (int, float)) else list(ys)
    if not xs:
        return
    look = {**CHANCE, **(CHANCE_STYLES[style % len(CHANCE_STYLES)] if style is not None else {})}
    ax.plot(xs, ys, label=label, zorder=1, **look)
    if style is not None:
        name = label[len(CHANCE_LABEL):].strip(" :()") or label
        ax.annotate(name, (xs[-1], ys[-1]), xytext=(2, 0), textcoords="offset points", fontsize=5.5,
                    color=look["color"], va="center", ha="left", annotation_clip=False)


def bar_n(ax, bars, ns, fontsize: float = 5.5) -> None:
    """Each bar's count of items (n) written on it, just above the bar (above its error bar's centre)."""
    for bar, n in zip(bars, ns):
        if n is None:
            continue
        ax.annotate(f"{n}", (bar.get_x() + bar.get_width() / 2, bar.get_height()), xytext=(0, 1.5),
                    textcoords="offset points", ha="center", va="bottom", fontsize=fontsize, rotation=90,
                    color="#333333")


def line_facets(series: dict[str, list[tuple]], *, title: str, xlabel: str, ylabel: str,
                chance: dict[str, list[tuple]] | None = None, max_series: int = MAX_SERIES,
                panel_width: float = 4.2, height: float = 3.4, sharey: bool = True):
    """Lines (label -> [(x, y), ...]) over as few panels as keep each at <= max_series lines, labels kept in
    sorted order; `chance` (label -> points) is drawn in every panel. Returns the figure (then `save` it)."""
    labels = sorted(series)
    panels = max(1, math.ceil(len(labels) / max_series))
    per = math.ceil(len(labels) / panels) if labels else 0
    fig, axes = plt.subplots(1, panels, figsize=(panel_width * panels + 1.5, height), sharey=sharey, squeeze=False)
    for i, ax in enumerate(axes[0]):
        for label in labels[i * per:(i + 1) * per]:
            pts = series[label]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3.5, label=label)
        for label, pts in sorted((chance or {}).items()):
            chance_line(ax, [p[0] for p in pts], [p[1] for p in pts], label=label)
        ax.set_xlabel(xlabel)
        if panels > 1:
            ax.set_title(f"{i + 1} of {panels}", fontsize=8)
        ax.legend(fontsize=6, loc="best")
    axes[0][0].set_ylabel(ylabel)
    fig.suptitle(title, fontsize=10)
    return fig


def save(fig, path: Path) -> None:
    tidy(fig, path.name)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)


def plot_value(v):
    """A plot CSV's cell: floats with PLOT_DIGITS significant digits and no negative zero (byte-identical
    CSVs from the same warehouse), everything else as it is."""
    if isinstance(v, float):
        return no_negative_zero(f"{float(f'{v:.{PLOT_DIGITS}g}') + 0.0:.{PLOT_DIGITS}g}")
    return v


def plot_panels(keys: list[tuple], max_series: int = MAX_SERIES) -> dict[tuple, str]:
    """Each series (its tuple of naming columns) -> the panel it is drawn in, at most `max_series` per panel:
    the series grouped by their first naming column (then the first two, ...) when that keeps every group
    small enough, else each group of all but the last column cut in runs of `max_series` in sorted order
    (`<group> (1 of 3)`). One panel (`all`) when every series fits."""
    keys = sorted(set(keys), key=lambda k: tuple(str(v) for v in k))
    if len(keys) <= max_series:
        return {k: "all" for k in keys}
    width = len(keys[0]) if keys else 0
    for depth in range(1, width):
        groups: dict[tuple, list] = {}
        for k in keys:
            groups.setdefault(k[:depth], []).append(k)
        if all(len(g) <= max_series for g in groups.values()):
            return {k: " / ".join(str(v) for v in k[:depth]) for k in keys}
    depth = max(width - 1, 0)
    groups = {}
    for k in keys:
        groups.setdefault(k[:depth], []).append(k)
    out = {}
    for prefix, members in groups.items():
        runs = math.ceil(len(members) / max_series)
        per = math.ceil(len(members) / runs)
        name = " / ".join(str(v) for v in prefix) or "series"
        for i, k in enumerate(members):
            out[k] = name if runs == 1 else f"{name} ({i // per + 1} of {runs})"
    return out


def write_plot(path: Path, columns: list[str], rows: list[tuple]) -> None:
    """A CSV that `dvc plots show/diff` draws (each file is a plot in dvc.yaml, drawn with x: x and y: y, so
    every family names its two plotted columns `x` and `y`). The columns before `x` name the series (model,
    protocol, ...): a column `series` joins them (`model / protocol`), and the template
    `.dvc/plots/series.json` draws one line per series (one colour each; revisions dashed), at most MAX_SERIES
    per panel: a last column `panel` names the facet each series is drawn in (plot_panels)."""
    cut = columns.index("x") if "x" in columns else 0
    panels = plot_panels([tuple(row[:cut]) for row in rows]) if cut else {}
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([*columns, "series", "panel"] if cut else columns)
    writer.writerows([(*(plot_value(v) for v in row),
                       *([" / ".join(str(v) for v in row[:cut]), panels[tuple(row[:cut])]] if cut else []))
                      for row in rows])
    with atomic_path(path) as tmp:
        tmp.write_text(buf.getvalue(), encoding="utf-8")
