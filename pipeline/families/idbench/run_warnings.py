"""idbench's end-of-run warnings (pipeline.run_warnings finds this module through the registry): a language whose
new pairs for a rating survey are fewer than `idbench.new_pairs` asks for."""

from __future__ import annotations

from pathlib import Path

NEW_PAIRS = "data/families/idbench/new_pairs.parquet"


def asked_new_pairs(config: dict) -> int:
    new = (config.get("idbench") or {}).get("new_pairs") or {}
    return int(new.get("ranges", 0)) * int(new.get("per_range", 0)) + int(new.get("random_pairs", 0))


def short_new_pairs(counts: dict[str, int], config: dict) -> list[str]:
    """An idbench language whose new pairs for a rating survey are fewer than idbench.new_pairs asks for."""
    asked = asked_new_pairs(config)
    return [f"idbench new pairs: {language} has {n} of the {asked} pairs idbench.new_pairs asks for (too few "
            "frequent identifiers: lower idbench.new_pairs.min_count, or add code in that language)"
            for language, n in sorted(counts.items()) if n < asked]


def from_files(root: Path, config: dict) -> list[str]:
    """The warnings from the build's files under `root` (none when the new pairs were not built)."""
    new_pairs = Path(root) / NEW_PAIRS
    if not new_pairs.is_file():
        return []
    import pyarrow.parquet as pq

    counts: dict[str, int] = {}
    for language in pq.read_table(new_pairs, columns=["language"]).column("language").to_pylist():
        counts[language] = counts.get(language, 0) + 1
    return short_new_pairs(counts, config)


def from_warehouse(con, tables: set[str], config: dict) -> list[str]:
    """The same warnings from the warehouse (its `idbench_new_pairs` view, when there)."""
    if "idbench_new_pairs" not in tables:
        return []
    return short_new_pairs(dict(con.sql("SELECT language, count(*) FROM idbench_new_pairs GROUP BY 1").fetchall()),
                           config)
