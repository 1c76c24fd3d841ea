"""The warehouse's own tables, declared once: the core (spine and shared analyses) and the
provenance tables. Each family declares its tables in its FAMILY (pipeline/families/<name>/);
which files make up each table is the workflow's business (rules/aggregate.smk computes them)."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from pipeline import schemas
from pipeline.contamination import firstseen, labels
from pipeline.identifiers.schemas import SEQUENCES


@dataclass(frozen=True)
class WarehouseTable:
    name: str  # the view's name in DuckDB
    schema: pa.Schema
    description: str
    # extra columns derived from each row's file path (`filename`), for tables split over folders
    derived: str = ""


TABLES: dict[str, WarehouseTable] = {
    t.name: t
    for t in [
        WarehouseTable("manifest", schemas.MANIFEST, "one row per source file"),
        WarehouseTable("rejects", schemas.REJECTS, "every file or item left out, with stage and reason"),
        WarehouseTable("usages", schemas.USAGES, "every call/attribute chain of the Python files, resolved to an FQN"),
        WarehouseTable("imports", schemas.IMPORTS, "imports and aliases of the Python files"),
        WarehouseTable("inventory", schemas.INVENTORY, "what each library defines: modules, classes, functions, methods"),
        WarehouseTable("first_seen_functions", firstseen.FUNCTIONS,
                       "every function of a source with history, with the first pinned release holding it"),
        WarehouseTable("first_seen_apis", firstseen.APIS,
                       "every API a source with history defines, with the first pinned release defining it"),
        WarehouseTable("identifier_sequences", SEQUENCES,
                       "identifier tokens of every JavaScript/Python/Java file in source order (tree-sitter)"),
    ]
}

PROVENANCE: dict[str, WarehouseTable] = {
    t.name: t
    for t in [
        WarehouseTable("families", schemas.FAMILIES, "the benchmark families built: paper, version, subsets"),
        WarehouseTable("models", schemas.MODEL_CARDS,
                       "every zoo model's card; predictions join on model = models.name"),
        WarehouseTable("sources", schemas.SOURCE_PINS, "every corpus source with the pin it was verified against"),
        WarehouseTable("model_cutoffs", labels.MODEL_CUTOFFS,
                       "per zoo model: whose contamination labels it takes (a twin: its model's) and its training cutoff"),
        WarehouseTable("datasets", schemas.DATASET_PINS, "every pinned non-code dataset with its verified files"),
        WarehouseTable("run_params", schemas.RUN_PARAMS, "params.yaml of the run that built the warehouse, by leaf"),
        WarehouseTable("not_applicable", schemas.NOT_APPLICABLE,
                       "(family, model) pairs that got no inference job, with the reason"),
        WarehouseTable("subset_items", schemas.SUBSET_ITEMS,
                       "inference items per (family, subset): 0 means its jobs scored nothing"),
    ]
}
