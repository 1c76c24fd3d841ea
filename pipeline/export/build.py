"""`python -m pipeline export <family> --out DIR`: one family's built benchmark as a Hugging Face dataset folder.

    DIR/README.md                                  the dataset card (the hub's YAML header: configs, splits, license)
    DIR/croissant.json                             Croissant 1.0 metadata (record sets, fields, files with sha256)
    DIR/<config>/<split>-00000-of-00001.parquet    the items, by config and split

Rows are read from the warehouse (data/warehouse.duckdb, read-only) with the family's own SQL
(`pipeline/families/<name>/export.py`), and each row gets its provenance: source, license, the source's release date,
the file it was cut from (path, sha256) and the contamination dates the warehouse gives the item. A row whose source's
license is not in `export.redistribute` keeps only that reference: its corpus text columns are null and
`reference_only` is true (the card says how many). The bytes are the same on every rebuild: fixed row order, no
timestamps, fixed Parquet writer settings.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute
import pyarrow.parquet as pq

from pipeline.export import ExportConfig

# the hub's split names: ours are train / valid / test (the manifest's)
HF_SPLITS = {"train": "train", "valid": "validation", "validation": "validation", "test": "test"}
SPLIT_ORDER = ("train", "validation", "test")
# licenses whose terms let the items' code travel with the dataset (SPDX ids; a source's license expression is
# redistributable when it starts with one of these). Everything else, `unknown` included, is exported as a reference.
DEFAULT_REDISTRIBUTE = ("MIT", "BSD", "Apache", "PSF", "Python", "ISC", "Unlicense", "CC0", "CC-BY", "MPL", "LGPL",
                        "GPL", "EPL", "Zlib", "0BSD", "BSL", "Artistic")
PROVENANCE = [("source", pa.string()), ("license", pa.string()), ("source_released", pa.date32()),
              ("path", pa.string()), ("file_sha256", pa.string()), ("reference_only", pa.bool_())]


def family_exports(family) -> object:
    """The family's export module (`pipeline/families/<name>/export.py`), or an error that says so."""
    module = f"{family.module}.export"
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        raise SystemExit(f"export: family {family.name!r} declares no export ({module} not found)") from None


def redistributable(license_: str | None, allowed: tuple[str, ...]) -> bool:
    if not license_ or license_.lower() in ("unknown", "none", "noassertion", "proprietary"):
        return False
    return any(license_.startswith(prefix) for prefix in allowed)


def table_columns(con, sql: str) -> list[str]:
    return [d[0] for d in con.execute(f"SELECT * FROM ({sql}) LIMIT 0").description]


def config_rows(con, cfg: ExportConfig, allowed: tuple[str, ...]) -> pa.Table:
    """The config's rows with provenance and contamination dates, ordered by the item key."""
    cols = table_columns(con, cfg.sql)
    if "split" not in cols:
        raise SystemExit(f"export: config {cfg.name!r}: its SQL gives no `split` column")
    has_file, has_source = "file_id" in cols, "source" in cols
    joins = ["LEFT JOIN manifest m ON m.file_id = i.file_id"] if has_file else []
    source = ("coalesce(i.source, m.source)" if has_source else "m.source") if has_file else (
        "i.source" if has_source else "NULL::VARCHAR")
    select = [f'i."{c}"' for c in cols if c not in ("source", "file_id", "license")]
    date_cols: list[str] = []
    if cfg.dates:
        view, key = cfg.dates
        dcols = [c for c in table_columns(con, f"SELECT * FROM {view}") if c != key and c not in cols]
        date_cols = [c if c.startswith("contamination_") else f"contamination_{c}" for c in dcols]
        joins.append(f"LEFT JOIN (SELECT DISTINCT ON ({key}) * FROM {view} ORDER BY ALL) d ON d.{key} = i.{cfg.key}")
        select += [f'd."{c}" AS "{n}"' for c, n in zip(dcols, date_cols)]
    license_ = "coalesce(i.license, s.license)" if "license" in cols else "s.license"
    select += [f"{source} AS source", f"{license_} AS license", "s.released::DATE AS source_released",
               "m.path AS path" if has_file else "NULL::VARCHAR AS path",
               "m.sha256 AS file_sha256" if has_file else "NULL::VARCHAR AS file_sha256"]
    sql = (f"SELECT {', '.join(select)} FROM ({cfg.sql}) i {' '.join(joins)} "
           f"LEFT JOIN sources s ON s.name = {source} ORDER BY i.\"{cfg.key}\"")
    table = con.sql(sql).fetch_arrow_table()
    if pa.compute.count_distinct(table.column(cfg.key)).as_py() != table.num_rows:
        raise SystemExit(f"export: config {cfg.name!r}: {cfg.key} is not unique")
    # a row is a reference only when it carries corpus text its source's license does not let travel
    ok = [redistributable(x, allowed) or not cfg.text_columns for x in table.column("license").to_pylist()]
    for c in cfg.text_columns:
        if c in table.column_names:
            col = table.column(c)
            table = table.set_column(table.column_names.index(c), c, pa.array(
                [v if keep else None for v, keep in zip(col.to_pylist(), ok)], col.type))
    return table.append_column("reference_only", pa.array([not x for x in ok], pa.bool_()))


def write_parquet(table: pa.Table, path: Path) -> None:
    """Fixed writer settings (no created_by drift within the pinned pyarrow), written atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp, compression="zstd", compression_level=9, row_group_size=50_000,
                   use_dictionary=True, write_statistics=True, store_schema=False)
    os.replace(tmp, path)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def export(family_name: str, out: Path, db: Path, params: dict, command: str) -> dict:
    """Write the family's dataset folder at `out` (replaced whole, atomically); returns its summary."""
    from pipeline import registry
    from pipeline.export import card, croissant
    from pipeline.query import connect

    family = registry.load(family_name)
    module = family_exports(family)
    allowed = tuple((params.get("export") or {}).get("redistribute") or DEFAULT_REDISTRIBUTE)
    con = connect(db)
    configs: list[ExportConfig] = module.configs(params)
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))  # beside it: the rename is atomic
    summary = {"family": family.name, "title": family.title, "paper": family.paper, "configs": [], "empty": []}
    try:
        for cfg in configs:
            table = config_rows(con, cfg, allowed)
            splits = []
            raw = table.column("split").to_pylist() if "split" in table.column_names else ["test"] * table.num_rows
            names = [HF_SPLITS.get(s, s) for s in raw]
            if "split" in table.column_names:
                table = table.set_column(table.column_names.index("split"), "split", pa.array(names, pa.string()))
            for split in [s for s in SPLIT_ORDER if s in names] + sorted(set(names) - set(SPLIT_ORDER)):
                part = table.filter(pa.array([n == split for n in names]))
                rel = f"{cfg.name}/{split}-00000-of-00001.parquet"
                write_parquet(part, stage / rel)
                splits.append({"split": split, "rows": part.num_rows, "file": rel, "sha256": sha256(stage / rel),
                               "bytes": (stage / rel).stat().st_size,
                               "reference_only": sum(part.column("reference_only").to_pylist())})
            if not splits:  # a config with no items (a setting this corpus gives none of) is left out, and said
                summary["empty"].append(cfg.name)
                continue
            summary["configs"].append({
                "name": cfg.name, "description": cfg.description, "key": cfg.key, "splits": splits,
                "fields": [(f.name, str(f.type)) for f in table.schema], "lm_eval": cfg.lm_eval, "extra": cfg.extra,
                "licenses": sorted({(s or "", l or "unknown") for s, l in zip(table.column("source").to_pylist(),
                                                                               table.column("license").to_pylist())})})
        summary["sources"] = [dict(zip(("source", "license", "released"), r)) for r in con.execute(
            "SELECT name, license, strftime(released, '%Y-%m-%d') FROM sources ORDER BY name").fetchall()]
        summary["build"] = build_facts(con, command)
        summary["population"] = population(family, con)
        summary["redistribute"] = list(allowed)
        if not summary["configs"]:
            raise SystemExit(f"export: {family.name} has no items in this build (configs: "
                             f"{', '.join(c.name for c in configs) or 'none'}); nothing to export")
        summary["citation"] = card.citation(family)  # the card's BibTeX and Croissant's citeAs
        (stage / "README.md").write_text(card.render(summary, family))
        (stage / "croissant.json").write_text(croissant.render(summary, stage))
        if out.exists():
            shutil.rmtree(out)
        os.replace(stage, out)
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)
        con.close()
    return summary


def build_facts(con, command: str) -> dict:
    """What built it: the command; the params hash (sha256 of the warehouse's run_params, every param leaf the build
    ran with, sorted); the commit of the checkout the export ran in (`unknown` outside a git checkout, `+dirty` when
    its tracked files differ from that commit)."""
    import subprocess

    rows = con.execute("SELECT key, value FROM run_params ORDER BY key").fetchall()
    params = hashlib.sha256(json.dumps(rows, separators=(",", ":")).encode()).hexdigest()
    commit = "unknown"
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, check=True).stdout.strip()
        commit = head + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        pass
    return {"command": command, "commit": commit, "params_sha256": params}


def population(family, con) -> str:
    """How the built population differs from the paper's, as the report says it (the family's report module)."""
    parts = []
    try:
        paper = importlib.import_module(f"{family.module}.paper")
        if getattr(paper, "POPULATION", None):
            parts.append(f"Paper: {paper.POPULATION}.")
    except ModuleNotFoundError:
        pass
    try:
        report = importlib.import_module(family.report) if family.report else None
        if report is not None and hasattr(report, "population"):
            parts = [report.population(con)]
    except Exception:  # noqa: BLE001 - the card still states the paper's population
        pass
    return " ".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline export",
        description="Write one family's built benchmark as a Hugging Face dataset folder: Parquet files by config "
                    "and split, a dataset card (README.md) and Croissant metadata (croissant.json). Reads the "
                    "warehouse read-only; the bytes are the same on every rebuild. Build first (`make run`).")
    parser.add_argument("family", help="a built family (one of params.yaml `families`)")
    parser.add_argument("--out", required=True, type=Path, help="the folder to write (replaced whole)")
    parser.add_argument("--warehouse", type=Path, default=Path("data/warehouse.duckdb"))
    parser.add_argument("--params", type=Path, default=Path("params.yaml"),
                        help="the params the build used (export.redistribute, the families' caps)")
    parser.add_argument("--params-json", help="the same params as JSON (the Snakemake rule passes its config)")
    args = parser.parse_args(argv)
    import yaml

    if not args.warehouse.exists():
        print(f"error: no warehouse at {args.warehouse}: build it first (`make run` or `snakemake --cores 2`)",
              file=sys.stderr)
        return 2
    params = json.loads(args.params_json) if args.params_json else yaml.safe_load(args.params.read_text())
    command = f"python -m pipeline export {args.family} --out {args.out.name}"
    summary = export(args.family, args.out, args.warehouse, params, command)
    for cfg in summary["configs"]:
        rows = ", ".join(f"{s['split']} {s['rows']:,}" for s in cfg["splits"])
        print(f"{summary['family']}/{cfg['name']}: {rows}")
    print(f"wrote {args.out} (README.md, croissant.json)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
