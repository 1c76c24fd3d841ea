"""What every report section shares: Markdown tables, figures written atomically, plot data."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from pipeline.io import atomic_path  # noqa: E402

__all__ = ["LANGUAGE_NAMES", "language_name", "markdown_table", "plt", "save", "write_plot"]

LANGUAGE_NAMES = {"python": "Python", "java": "Java", "javascript": "JavaScript"}  # manifest.languages, as written


def language_name(language: str) -> str:
    return LANGUAGE_NAMES.get(language, language)


def markdown_table(columns: list[str], rows: list[tuple]) -> str:
    def fmt(v):
        return "" if v is None else f"{v:.2f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def save(fig, path: Path) -> None:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)


def write_plot(path: Path, columns: list[str], rows: list[tuple]) -> None:
    """A CSV that `dvc plots show/diff` draws (reports/plots/ is a plots output in dvc.yaml, drawn with
    x: x and y: y, so every family names its two plotted columns `x` and `y`)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
    with atomic_path(path) as tmp:
        tmp.write_text(buf.getvalue(), encoding="utf-8")
