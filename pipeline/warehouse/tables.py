"""The tables the warehouse exposes, declared once: name, schema, description.
Which files make up each table is the workflow's business (rules/aggregate.smk passes them)."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from pipeline import schemas


@dataclass(frozen=True)
class WarehouseTable:
    name: str  # the view's name in DuckDB
    schema: pa.Schema
    description: str
    # extra columns derived from each row's file path (`filename`), for tables split over folders
    derived: str = ""


VARIANT_FROM_PATH = "regexp_extract(filename, '/codesyntax/([^/]+)/', 1) AS variant"

TABLES: dict[str, WarehouseTable] = {
    t.name: t
    for t in [
        WarehouseTable("manifest", schemas.MANIFEST, "one row per source file"),
        WarehouseTable("rejects", schemas.REJECTS, "every file or item left out, with stage and reason"),
        WarehouseTable("usages", schemas.USAGES, "every call/attribute chain of the Python files, resolved to an FQN"),
        WarehouseTable("imports", schemas.IMPORTS, "imports and aliases of the Python files"),
        WarehouseTable("inventory", schemas.INVENTORY, "what each library defines: modules, classes, functions, methods"),
        WarehouseTable("quizzes", schemas.QUIZZES, "apiquiz cloze quizzes"),
        WarehouseTable("quiz_tokens", schemas.QUIZ_TOKENS, "per quiz and tokenizer: is the answer one token"),
        WarehouseTable("syntax_samples", schemas.SYNTAX_SAMPLES, "CodeSyntax samples: functions with their tokens",
                       VARIANT_FROM_PATH),
        WarehouseTable("syntax_relations", schemas.SYNTAX_RELATIONS, "CodeSyntax relation edges (token indices)",
                       VARIANT_FROM_PATH),
        WarehouseTable("syntax_baselines", schemas.SYNTAX_BASELINES,
                       "CodeSyntax offset/keyword/combined baseline hits per relation and k"),
        WarehouseTable("apiquiz_predictions", schemas.APIQUIZ_PREDICTIONS,
                       "apiquiz: gold rank and top-k per quiz, model and protocol"),
        WarehouseTable("syntax_attention", schemas.SYNTAX_ATTENTION_HITS,
                       "CodeSyntax: attention hit counts per model, relation, layer and head"),
    ]
}
