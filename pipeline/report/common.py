"""What every report section shares: Markdown tables, figures written atomically, plot data."""

from __future__ import annotations

import csv
import io
import re
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

__all__ = ["LANGUAGE_NAMES", "language_name", "markdown_table", "no_negative_zero", "plt", "rounded", "save",
           "write_plot"]

LANGUAGE_NAMES = {"python": "Python", "java": "Java", "javascript": "JavaScript"}  # manifest.languages, as written


def language_name(language: str) -> str:
    return LANGUAGE_NAMES.get(language, language)


PLOT_DIGITS = 6  # significant digits of a float in plot CSVs


def rounded(value: float, digits: int = 2) -> float:
    """`value` rounded to `digits` decimals, with no negative zero: what is rendered is decided here, before
    formatting, so the last bits of a float (which DuckDB's parallel sums may vary) never reach a report."""
    return round(value, digits) + 0.0


NEGATIVE_ZERO = re.compile(r"(?<![\w.-])-(0\.0+)(?![\d.])")


def no_negative_zero(text: str) -> str:
    """`-0.00` (or `-0.0`) rendered by any f-string in a section, as `0.00`: a report built twice from the
    same warehouse is byte-identical whatever side of zero a tiny difference fell."""
    return NEGATIVE_ZERO.sub(r"\1", text)


def markdown_table(columns: list[str], rows: list[tuple]) -> str:
    def fmt(v):
        return "" if v is None else f"{rounded(v):.2f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _integer_valued(values) -> bool:
    return len(values) > 0 and all(float(v).is_integer() for v in values)


def tidy(fig) -> None:
    """What every figure gets before it is saved: integer ticks where the data are integers (layers, heads, k;
    heat maps on both axes), and a legend with many entries moved beside the axes."""
    for ax in fig.axes:
        if ax.images:  # a heat map: rows and columns are layers and heads
            ax.grid(False)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
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


def save(fig, path: Path) -> None:
    tidy(fig)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)


def plot_value(v):
    """A plot CSV's cell: floats with PLOT_DIGITS significant digits and no negative zero (byte-identical
    CSVs from the same warehouse), everything else as it is."""
    if isinstance(v, float):
        return no_negative_zero(f"{float(f'{v:.{PLOT_DIGITS}g}') + 0.0:.{PLOT_DIGITS}g}")
    return v


def write_plot(path: Path, columns: list[str], rows: list[tuple]) -> None:
    """A CSV that `dvc plots show/diff` draws (each file is a plot in dvc.yaml, drawn with x: x and y: y, so
    every family names its two plotted columns `x` and `y`). The columns before `x` name the series (model,
    protocol, ...): a last column `series` joins them (`model / protocol`), and the template
    `.dvc/plots/series.json` draws one line per series (one colour each; revisions dashed)."""
    cut = columns.index("x") if "x" in columns else 0
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([*columns, "series"] if cut else columns)
    writer.writerows([(*(plot_value(v) for v in row), *([" / ".join(str(v) for v in row[:cut])] if cut else []))
                      for row in rows])
    with atomic_path(path) as tmp:
        tmp.write_text(buf.getvalue(), encoding="utf-8")
