"""Build data/warehouse.duckdb from a spec the workflow computes from the family registry.

- Core tables (manifest, rejects, usages, imports, inventory; pipeline/warehouse/tables.py).
- Each family's tables, as views `<family>_<table>`, and its predictions, `<family>_predictions`.
- Provenance: `families` (name, paper, version), `models` (every zoo model's card), `sources`
  (every corpus source's verified pin), `datasets` (every pinned dataset file), `run_params` (params.yaml by leaf), `not_applicable`
  (one line per family and model that got no job, with the reason). Every prediction row joins
  its model card (`model` = `models.name`) and its family's version.
- The metric library's macros (pipeline.metrics, when present), the core views in sql/*.sql,
  then each family's sql/*.sql.

Views read exactly the Parquet files the workflow names (nothing is copied; a stale shard left
from an earlier shard count is never picked up), by paths RELATIVE to the project root,
joined at query time to the DuckDB variable `warehouse_root`, which `pipeline.query.connect` sets to
the root the warehouse sits in: the warehouse still opens after the project folder is moved, and a
query run from another project's folder never reads that project's files. `warehouse_files` lists every file a view
reads: a query connection allows exactly those and nothing else (see `pipeline.query.connect`). Tables whose files do not exist yet
become empty tables of the declared schema, so every metric view always resolves.
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import os
import sys
from pathlib import Path

import duckdb
import pyarrow as pa

from pipeline import registry as families, schemas
from pipeline.contamination import labels
from pipeline.core import logs
from pipeline.io import atomic_path
from pipeline.warehouse.comments import column_comments
from pipeline.warehouse.tables import PROVENANCE, TABLES, WarehouseTable

log = logging.getLogger("pipeline.warehouse.build")

SQL_DIR = Path(__file__).parent / "sql"
DB_IN_ROOT = "data/warehouse.duckdb"  # where the warehouse sits in the project (the root is found from it)


def quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def relative(path: str | Path, root: Path) -> str:
    """A path as the views store it: relative to the project root when inside it."""
    p = Path(path)
    absolute = p if p.is_absolute() else (root / p)
    try:
        return absolute.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(absolute.resolve())


ROOT_VARIABLE = "warehouse_root"
STORAGE_VERSION = "v1.4.0"


def path_expr(f: str) -> str:
    """A view's file: relative paths are joined to the project root held in a DuckDB variable, which
    `build` and `pipeline.query.connect` set to the root the warehouse sits in (so neither the
    current directory nor a moved project changes what a view reads). A plain DuckDB client that sets no
    variable reads them relative to its current folder, or to `SET file_search_path = '<project>'`:
    `duckdb data/warehouse.duckdb` run in the project folder needs no set-up line at all."""
    if Path(f).is_absolute():
        return quote(f)
    return f"coalesce(getvariable('{ROOT_VARIABLE}') || '/', '') || {quote(f)}"


def create_table_view(con: duckdb.DuckDBPyConnection, table: WarehouseTable, files: list[str]) -> None:
    """A view over exactly these files, or an empty typed table if there are none."""
    if files:
        paths = ", ".join(path_expr(f) for f in files)
        if table.derived:
            select = f"SELECT * EXCLUDE (filename), {table.derived} FROM read_parquet([{paths}], filename = true)"
        else:
            select = f"SELECT * FROM read_parquet([{paths}], union_by_name = true)"
        con.execute(f"CREATE VIEW {table.name} AS {select}")
    else:
        empty = without_float16(table.schema).empty_table()  # noqa: F841 (read by DuckDB's replacement scan)
        derived = f", {table.derived.replace('filename', 'NULL::VARCHAR')}" if table.derived else ""
        con.execute(f"CREATE TABLE {table.name} AS SELECT *{derived} FROM empty")
    con.execute(f"COMMENT ON {'VIEW' if files else 'TABLE'} {table.name} IS {quote(table.description)}")
    for column, comment in column_comments(table.schema).items():
        con.execute(f"COMMENT ON COLUMN {table.name}.{column} IS {quote(comment)}")


def without_float16(schema: pa.Schema) -> pa.Schema:
    """The schema with float16 (pooled features on disk) as float32: DuckDB reads float16 Parquet as
    FLOAT, but cannot take an empty Arrow float16 column, so empty tables get the type it reads."""
    def widen(t: pa.DataType) -> pa.DataType:
        if pa.types.is_float16(t):
            return pa.float32()
        if pa.types.is_list(t):
            return pa.list_(widen(t.value_type))
        return t

    return pa.schema([f.with_type(widen(f.type)) for f in schema], metadata=schema.metadata)


def family_tables(family: families.Family) -> list[WarehouseTable]:
    tables = [WarehouseTable(family.view(t.name), t.schema, t.description, t.derived) for t in family.tables]
    if family.inference is not None:
        tables.append(WarehouseTable(family.view("predictions"), family.inference.schema, family.inference.description))
    if family.fit is not None:
        tables.append(WarehouseTable(family.view("fits"), schemas.FIT_RESULTS,
                                     "probe and regressor results per task, model, layer and fold (pipeline.fit)"))
        tables.append(WarehouseTable(family.view("fit_items"), schemas.FIT_ITEMS,
                                     "per model, the items its fit uses (kept) and why it lacks the others"))
    return tables


def create_provenance(con: duckdb.DuckDBPyConnection, name: str, rows: list[dict]) -> None:
    table = PROVENANCE[name]
    data = pa.Table.from_pylist(rows, schema=table.schema)  # noqa: F841 (read by DuckDB's replacement scan)
    con.execute(f"CREATE TABLE {name} AS SELECT * FROM data")
    con.execute(f"COMMENT ON TABLE {name} IS {quote(table.description)}")
    for column, comment in column_comments(table.schema).items():
        con.execute(f"COMMENT ON COLUMN {name}.{column} IS {quote(comment)}")


def flatten(value, prefix: str = "") -> list[dict]:
    """params.yaml by leaf: one row per scalar or list, keyed by its dotted path."""
    if isinstance(value, dict):
        return [row for k in sorted(value) for row in flatten(value[k], f"{prefix}.{k}" if prefix else k)]
    return [{"key": prefix, "value": json.dumps(value, sort_keys=True)}]


def _date(value: str | None) -> datetime.date | None:
    return datetime.date.fromisoformat(value) if value else None


def derived_batch(card: dict, params: dict) -> dict:
    """`batch_size` and `batch_size_from` of a model whose zoo entry (a twin: its model's) leaves batch_size out
    (pipeline.models.entries.fill_sizes: inference.token_budget // max_length); {} where the entry gives it."""
    zoo = {e.get("name"): e for e in ((params or {}).get("models") or {}).get("zoo") or []}
    entry = zoo.get(card.get("name")) or {}
    if str(entry.get("source", "")).startswith("random:"):
        entry = zoo.get(entry["source"].split(":", 1)[1]) or {}
    budget = ((params or {}).get("inference") or {}).get("token_budget")
    if not entry or "batch_size" in entry or not card.get("max_length") or not budget:
        return {}
    return {"batch_size": max(1, budget // card["max_length"]),
            "batch_size_from": f"inference.token_budget {budget} // max_length {card['max_length']}"}


def provenance_rows(spec: dict, root: Path) -> dict[str, list[dict]]:
    cards = []
    for folder in spec.get("models", []):
        card_path = root / folder / "card.json"
        card = json.loads(card_path.read_text()) if card_path.exists() else {}
        card = {**card, **derived_batch(card, spec.get("params") or {})}
        cards.append({"name": Path(folder).name, "source": card.get("source"), "model_family": card.get("family"),
                      "parameters": card.get("parameters"), "random": card.get("random"),
                      "card": json.dumps(card, sort_keys=True)})
    sources = []
    for record in spec.get("sources", []):
        data = json.loads((root / record).read_text())
        sources.append({"name": data.get("name", Path(record).stem), "kind": data.get("kind"),
                        "status": data.get("status"), "files": data.get("files"), "bytes": data.get("bytes"),
                        "pin": json.dumps(data.get("pin"), sort_keys=True), "license": data.get("license"),
                        "released": _date(data.get("released")),
                        "caps": json.dumps(data.get("caps") or [], sort_keys=True)})
    datasets = []
    for record in spec.get("datasets", []):
        data = json.loads((root / record).read_text())
        datasets.append({"name": data.get("name", Path(record).stem), "kind": data.get("kind"),
                         "files": data.get("file_count"), "bytes": data.get("bytes"),
                         "pin": json.dumps(data.get("files"), sort_keys=True)})
    fams = [{"name": f.name, "title": f.title, "paper": f.paper, "version": f.version,
             "subsets": f.subsets(spec["params"]), "model_families": list(f.inference.all_model_families) if f.inference
             else []} for f in families.enabled(spec["params"])]
    cutoffs = labels.cutoff_rows(spec["params"].get("models", {}).get("zoo", []))
    return {"families": fams, "models": cards, "sources": sources, "datasets": datasets, "model_cutoffs": cutoffs,
            "run_params": flatten(spec["params"]),
            "not_applicable": spec.get("not_applicable", []),
            "subset_items": subset_items(families.enabled(spec["params"]), spec["params"], root)}


def subset_items(fams: list[families.Family], config: dict, root: Path) -> list[dict]:
    """Per (family, subset): rows of the subset's smallest inference input (Parquet metadata only)."""
    import pyarrow.parquet as pq

    rows = []
    for family in fams:
        if family.inference is None:
            continue
        for subset in family.subsets(config):
            paths = [root / p for p in family.inference.inputs(config, subset).values()]
            items = (min(pq.ParquetFile(p).metadata.num_rows for p in paths)
                     if paths and all(p.is_file() for p in paths) else None)
            rows.append({"family": family.name, "subset": subset, "items": items})
    return rows


def create_prediction_provenance(con: duckdb.DuckDBPyConnection, predicted: list[families.Family]) -> None:
    """`prediction_counts`: prediction rows per (family, model) with the family's version and the model's card;
    `predictions_with_provenance('<family>')`: that family's predictions themselves, every row with the family
    version and its model's card, so any score can be traced to what produced it."""
    parts = [f"SELECT {quote(f.name)} AS family, model, count(*) AS rows FROM {f.view('predictions')} GROUP BY model"
             for f in predicted] or ["SELECT NULL::VARCHAR AS family, NULL::VARCHAR AS model, 0::BIGINT AS rows WHERE false"]
    con.execute(f"""
        CREATE VIEW prediction_counts AS
        SELECT p.family, p.model, p.rows, f.version AS family_version, m.model_family, m.source AS model_source,
               m.random AS random_twin, m.card AS model_card
        FROM ({' UNION ALL '.join(parts)}) p
        LEFT JOIN families f ON f.name = p.family
        LEFT JOIN models m ON m.name = p.model""")
    con.execute("COMMENT ON VIEW prediction_counts IS 'prediction rows per family and model, with the family version "
                "and the model card'")
    con.execute("""
        CREATE MACRO predictions_with_provenance(family_name) AS TABLE
        SELECT p.*, family_name AS family, f.version AS family_version, m.model_family, m.source AS model_source,
               m.random AS random_twin, m.card AS model_card
        FROM query_table(family_name || '_predictions') p
        LEFT JOIN models m ON m.name = p.model
        LEFT JOIN families f ON f.name = family_name""")


GLOSSARY = Path(__file__).parent / "glossary.yaml"


def comment_every_column(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """Describe every column still without a comment (view columns, mostly) from the glossary: one name, one
    concept across families (pipeline/warehouse/glossary.yaml). Returns the (table, column) pairs the glossary
    does not cover (tests/test_end_to_end.py requires none)."""
    import yaml

    glossary = yaml.safe_load(GLOSSARY.read_text()) or {}
    where = "database_name = current_database() AND schema_name = 'main'"
    # a column a view passes through keeps the description its table's schema gives it (the most common one)
    inherited = dict(con.sql(f"SELECT column_name, mode(comment) FROM duckdb_columns() WHERE {where} "
                             "AND comment IS NOT NULL GROUP BY 1").fetchall())
    missing = []
    rows = con.sql(f"SELECT table_name, column_name FROM duckdb_columns() WHERE {where} AND comment IS NULL "
                   "ORDER BY table_name, column_index").fetchall()
    for table, column in rows:
        # a family view's own key (`<family>_x.col`), then the same view of every family (`x.col`), then the column
        general = f"{table.split('_', 1)[1]}.{column}" if "_" in table else None
        text = glossary.get(f"{table}.{column}", glossary.get(general, glossary.get(column, inherited.get(column))))
        if text is None:
            missing.append((table, column))
        else:
            con.execute(f'COMMENT ON COLUMN {table}."{column}" IS {quote(str(text).strip())}')
    return missing


def install_macros(con: duckdb.DuckDBPyConnection) -> None:
    try:
        from pipeline import metrics
    except ImportError:
        return
    install = getattr(metrics, "install", None)
    if install is not None:
        install(con)


def build(out: Path, spec: dict, root: Path = Path(".")) -> None:
    """`spec`: {"tables": {core table: [files]}, "params": params.yaml, "models": [model folders],
    "sources": [source records], "datasets": [dataset records], "not_applicable": [rows]}; family
    tables come from the registry."""
    fams = families.enabled(spec["params"])
    tables = dict(TABLES)
    for family in fams:
        for t in family_tables(family):
            tables[t.name] = t
    files = spec.get("tables", {})
    unknown = set(files) - set(tables)
    if unknown:
        raise ValueError(f"no such warehouse table(s): {sorted(unknown)}; declare them in pipeline/warehouse/tables.py "
                         "or in a family's FAMILY.tables")
    with atomic_path(out) as tmp:
        tmp.unlink()  # DuckDB creates the file itself
        # Written in the storage format of DuckDB 1.4 (LTS), which every DuckDB client from 1.4 on opens
        # (the 1.x CLI included); the pinned Python package reads and writes it alike.
        con = duckdb.connect(str(tmp), config={"storage_compatibility_version": STORAGE_VERSION})
        con.execute(f"SET VARIABLE {ROOT_VARIABLE} = ?", [str(root.resolve())])  # view paths resolve while building
        con.execute("CREATE TABLE warehouse_info AS SELECT ? AS db_path", [DB_IN_ROOT])
        # The only files a query connection may read (pipeline.query.connect turns external access off
        # and allows exactly these, relative to the project root).
        con.execute("CREATE TABLE warehouse_files (table_name VARCHAR NOT NULL, path VARCHAR NOT NULL)")
        for name in sorted(tables):
            for f in files.get(name, []):
                con.execute("INSERT INTO warehouse_files VALUES (?, ?)", [name, relative(f, root)])
        for name, rows in provenance_rows(spec, root).items():
            create_provenance(con, name, rows)
        for table in tables.values():
            create_table_view(con, table, [relative(f, root) for f in files.get(table.name, [])])
        install_macros(con)
        create_prediction_provenance(con, [f for f in fams if f.inference is not None])
        for sql in [*sorted(SQL_DIR.glob("*.sql")), *(p for f in fams for p in f.sql)]:
            log.info("views: %s", sql)
            con.execute(sql.read_text())
        missing = comment_every_column(con)
        if missing:
            log.warning("%d column(s) have no description (add them to %s): %s", len(missing), GLOSSARY.name,
                        ", ".join(f"{t}.{c}" for t, c in missing[:20]))
        con.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m pipeline.warehouse.build",
        description="Build the DuckDB warehouse: views over every Parquet table (core and each family's), "
        "provenance tables, and the SQL metric views. The spec is JSON the workflow computes from the registry.",
    )
    ap.add_argument("--out", type=Path, default=Path(DB_IN_ROOT))
    ap.add_argument("--spec", required=True, type=Path, help="JSON: tables, params, models, sources, not_applicable")
    args = ap.parse_args(argv)
    logs.setup()
    spec = json.loads(args.spec.read_text())
    build(args.out, spec, Path(os.getcwd()))
    for name, paths in spec.get("tables", {}).items():
        log.info("%-28s %d file(s)", name, len(paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
