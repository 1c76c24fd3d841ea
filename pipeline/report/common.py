"""What every report section shares: Markdown tables, figures written atomically, plot data."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from pipeline.io import atomic_path  # noqa: E402

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


def save(fig, path: Path) -> None:
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
    """A CSV that `dvc plots show/diff` draws (reports/plots/ is a plots output in dvc.yaml, drawn with
    x: x and y: y, so every family names its two plotted columns `x` and `y`)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([tuple(plot_value(v) for v in row) for row in rows])
    with atomic_path(path) as tmp:
        tmp.write_text(buf.getvalue(), encoding="utf-8")
