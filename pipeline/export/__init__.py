"""Built benchmarks as files others load: `python -m pipeline export <family> --out DIR`.

A family's export is a folder of Parquet files by config and split (`<config>/<split>-00000-of-00001.parquet`) that
`datasets.load_dataset(DIR, <config>)` and the Hugging Face hub read as they are, a dataset card (README.md with the
hub's YAML header) and Croissant metadata (croissant.json). `python -m pipeline.export.lm_eval DIR --tasks TASKS`
turns an exported apiquiz or apirec folder into lm-evaluation-harness tasks. docs/export.md says more.

What a family exports is declared in its own folder (`pipeline/families/<name>/export.py`: `configs(config)`), so
nothing here names a family.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ExportConfig:
    """One config of a family's dataset: the SQL over the warehouse that gives its rows (a `split` column says each
    row's split; `source` and, for items cut from a corpus file, `file_id` give its provenance)."""

    name: str
    description: str
    sql: str  # over the warehouse's views; must ORDER BY a unique key (the bytes are the same on every rebuild)
    key: str  # the item's id column
    # columns that hold corpus text (code, context): left out of rows whose source's license is not redistributable
    text_columns: tuple[str, ...] = ()
    # the family's item-dates view and its key column, joined for the contamination dates (None: none)
    dates: tuple[str, str] | None = None
    # lm-evaluation-harness: the kind of task this config becomes (None: none), see pipeline.export.lm_eval
    lm_eval: str | None = None
    extra: dict = field(default_factory=dict)  # family-specific facts the card states (e.g. ranked candidates cap)
