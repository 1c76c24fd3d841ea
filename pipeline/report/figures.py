"""Figures the report adds to a family's page beside the family's own section (pipeline.report.build):
probing's error per layer per task, each real model beside its random twin and the task's baseline."""

from __future__ import annotations

import math
from pathlib import Path

from pipeline.report.common import CHANCE, MAX_SERIES, plt, save


def probing_layers(con, figures: Path, link: str) -> str:
    """reports/figures/report/probing_layers_by_task.png: one panel per task, the test error (MAE for a regression
    task) per layer of each real model's probe (the probe and pooling with its lowest fold-0 error), its random
    twin's with the same probe and pooling (dashed, same colour), and the paper's baseline on the task's items
    (majority class, or linreg on length; grey dotted). Markdown linking it, or "" without curves."""
    chosen = con.sql(
        "SELECT task, model, arg_min(probe, {'e': round(fold0_error, 9), 'p': probe}) AS probe, "
        "arg_min(pooling, {'e': round(fold0_error, 9), 'p': probe}) AS pooling FROM probing_models "
        "WHERE NOT control GROUP BY task, model ORDER BY task, model").fetchall()
    if not chosen:
        return ""
    twins = dict(con.sql("SELECT model, twin FROM model_twins").fetchall())
    curves: dict[tuple, list] = {}
    for task, model, probe, pooling, layer, error in con.sql(
            "SELECT task, model, probe, pooling, layer, error FROM probing_layers ORDER BY ALL").fetchall():
        curves.setdefault((task, model, probe, pooling), []).append((layer, error))
    baselines = {task: (probe, mean) for task, probe, mean in con.sql(
        "SELECT task, probe, mean FROM probing_headline WHERE layer IS NULL AND model = probe "
        "AND probe IN ('majority', 'linreg') ORDER BY task, probe").fetchall()}
    metrics = dict(con.sql("SELECT task, any_value(metric) FROM probing_headline GROUP BY task").fetchall())
    tasks = sorted({c[0] for c in chosen})
    cols = min(4, len(tasks))
    rows = math.ceil(len(tasks) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols + 1.5, 2.7 * rows), squeeze=False)
    for ax, task in zip(axes.flat, tasks):
        models = [(m, p, pool) for t, m, p, pool in chosen if t == task][:MAX_SERIES // 2]
        for i, (model, probe, pooling) in enumerate(models):
            colour = f"C{i % 10}"
            for name, style, label in ((model, "-", model), (twins.get(model), "--", f"{model} twin")):
                pts = curves.get((task, name, probe, pooling)) if name else None
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=2.5, color=colour,
                            linestyle=style, label=label)
        if task in baselines:
            probe, mean = baselines[task]
            ax.axhline(mean, zorder=1, label=f"baseline: {'majority class' if probe == 'majority' else 'linreg on length'}",
                       **{**CHANCE, "linestyle": ":", "color": "#444444"})
        ax.set_title(task, fontsize=8)
        ax.set_xlabel("layer")
        ax.set_ylabel("MAE" if metrics.get(task) == "mae" else "error")
        ax.legend(fontsize=5, loc="best")
    for ax in list(axes.flat)[len(tasks):]:
        ax.set_visible(False)
    fig.suptitle("probing: test error per layer per task (each real model's probe; its random twin dashed; the "
                 "task's baseline dotted)", fontsize=10)
    save(fig, figures / "probing_layers_by_task.png")
    return ("\n### Error by layer\n\nPer task, the test error (MAE for depth) at every layer of each real model's "
            "probe, its random twin's (dashed) and the paper's baseline (dotted):\n\n"
            f"![probing: error per layer per task]({link}/probing_layers_by_task.png)\n")
