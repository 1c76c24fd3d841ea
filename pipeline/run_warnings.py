"""The warnings a user must see, as one summary at the end of every run (issue #47 item 6).

A job that finds something a user must know about (a source built unpinned, a cap that dropped members, an
evaluation set under its floor, a model loaded with tensors left random) records it in the file it writes:
its fetch record, its metrics, its model card, its table. Its log line alone reaches nobody, because
Snakemake shows a job's log only when the job fails. This module reads those records after the run and says
each thing once, in a fixed order (by kind, then by name), so two runs over the same outputs print the same
lines:

- `from_files(root, config)`: from the build's files under `root` (what exists: a failed run has fewer). The
  Snakefile's `onsuccess` and `onerror` print it (`console`).
- `from_warehouse(con, config)`: the same checks over the warehouse (the `sources` and `models` tables, and
  the families' own tables), for the report's corpus page (pipeline.report.build.section_corpus). The
  evaluation sets' sizes are not in the warehouse; the report prints each headline cell under `report.min_n`
  as "too few items" instead.

A family's own checks (idbench: a language with fewer new pairs than it asks for) live in its folder, in an
optional module `run_warnings` with `from_files(root, config)` and `from_warehouse(con, tables, config)`, found
through the registry (`registry.hook`); they come after the evaluation warnings, family by family (sorted).

`python -m pipeline.run_warnings` prints the summary of the build in the current folder.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

KINDS = ("source", "cap", "split", "evaluation", "family", "model")


def unpinned(name: str, pin: dict | None) -> list[str]:
    pin = pin or {}
    if not pin.get("unpinned"):
        return []
    return [f"source {name} is an unpinned local archive (`unpinned: true`; sha256 {pin.get('sha256')} when built): "
            "a rerun may read other bytes; pin it by that `sha256` in params.yaml"]


def capped(name: str, caps: list[dict] | None) -> list[str]:
    return [f"source {name}: the cap {cap.get('reason')} kept {cap.get('kept'):,} of {cap.get('seen'):,} members "
            f"seen ({cap.get('path')}); the rest were left out: raise corpus.limits to keep them"
            for cap in caps or []]


def missing_weights(name: str, card: dict | None) -> list[str]:
    allowed = sorted((card or {}).get("allowed_missing") or [])
    if not allowed:
        return []
    shown = ", ".join(allowed[:4]) + (", ..." if len(allowed) > 4 else "")
    return [f"model {name} was loaded with {len(allowed)} tensor(s) randomly initialised, allowed by its "
            f"`allow_missing` ({shown}): whatever reads them reads noise"]


def family_hooks() -> list:
    """The families' `run_warnings` modules (every family in pipeline/families/ that has one, by name)."""
    from pipeline import registry

    return [m for m in (registry.hook(registry.load(name), "run_warnings") for name in registry.available()) if m]


def ordered(lines: list[str]) -> list[str]:
    """Each line once, in the order found (callers go kind by kind, names sorted)."""
    return list(dict.fromkeys(lines))


def _json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def source_names(config: dict) -> list[str]:
    return sorted(s["name"] for s in (config.get("corpus") or {}).get("sources") or [] if isinstance(s, dict)
                  and "name" in s)


def from_files(root: Path, config: dict) -> list[str]:
    """The warnings recorded in the build under `root` (the files that exist)."""
    root = Path(root)
    records = {name: _json(root / f"data/sources/{name}.json") for name in source_names(config)}
    lines: list[str] = []
    for name, rec in records.items():
        lines += unpinned(name, rec.get("pin"))
    for name, rec in records.items():
        lines += capped(name, rec.get("caps"))
    manifest = _json(root / "reports/metrics/manifest.json")
    lines += [f"manifest: {w}" for w in manifest.get("warnings", [])]
    evaluation = _json(root / "reports/metrics/evaluation.json")  # accepted by allow_small / allow_unevaluated
    if evaluation.get("ok", True):  # a failed check's lines are its job's log, printed above (rule evaluation_sizes)
        lines += [f"evaluation: {w}" for w in evaluation.get("too_small", []) + evaluation.get("unevaluated_sources", [])]
    for hook in family_hooks():
        lines += hook.from_files(root, config)
    for card in sorted((root / "data/models").glob("*/card.json")):
        lines += missing_weights(card.parent.name, _json(card))
    return ordered(lines)


def from_warehouse(con, config: dict) -> list[str]:
    """The same warnings from the warehouse (the report's corpus page): sources, the families' own, models."""
    tables = {r[0] for r in con.sql("SELECT table_name FROM information_schema.tables").fetchall()}
    lines: list[str] = []
    rows = con.sql("SELECT name, pin, caps FROM sources ORDER BY name").fetchall()
    for name, pin, _ in rows:
        lines += unpinned(name, json.loads(pin or "null"))
    for name, _, caps in rows:
        lines += capped(name, json.loads(caps or "null"))
    for hook in family_hooks():
        lines += hook.from_warehouse(con, tables, config)
    for name, card in con.sql("SELECT name, card FROM models ORDER BY name").fetchall():
        lines += missing_weights(name, json.loads(card or "null"))
    return ordered(lines)


def console(lines: list[str], where: str = "reports/corpus.md") -> str:
    """The summary printed at the end of a run: a heading with the count, then one line per warning."""
    if not lines:
        return ""
    return (f"{len(lines)} warning(s) from this build (also on {where}):\n"
            + "".join(f"WARNING {line}\n" for line in lines))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.run_warnings", description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=Path.cwd(), help="the project folder (default: here)")
    ap.add_argument("--params", type=Path, default=None, help="its params file (default: ROOT/params.yaml)")
    args = ap.parse_args(argv)
    import yaml

    config = yaml.safe_load((args.params or args.root / "params.yaml").read_text()) or {}
    sys.stdout.write(console(from_files(args.root, config)) or "no warnings\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
