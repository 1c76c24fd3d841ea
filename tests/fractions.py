"""One unit everywhere (issue 27 item 4): scores are fractions in the warehouse, never percent. Shared by the
tests that scan a warehouse's columns (tests/test_warehouse.py on an empty one, tests/test_twin_views.py and
tests/test_end_to_end.py on real rows)."""

from __future__ import annotations

import re

PERCENT_NAME = re.compile(r"pct|percent", re.I)
# a view that multiplies by 100 turns a fraction into percent (`100 * avg(...)`, `... * 100`)
TIMES_100 = re.compile(r"(?<![\w.])100(\.0*)?\s*\*|\*\s*100(\.0*)?(?![\w.])")
# columns that hold a fraction in [0, 1] (a rate, a share, a precision, a chance level) ...
FRACTION = re.compile(r"^(twin_)?p_at_\d+$|^chance(_at_\d+)?$|^(twin_)?score$|^sr\d*_(method|class)$|"
                      r"^baseline_sr_method$|^mrr_(method|class)$|^map_|^ndcg|^coverage$|^pool_recall$|_fraction$")
# ... or a difference of two fractions and its CI ends, in [-1, 1]
SIGNED = re.compile(r"^(diff|lo|hi)$")
# where a name above means something else: idbench's score is a cosine in [-1, 1], or the ensemble's SVR
# prediction of a rating (unbounded: 1.057 on the .test build)
NOT_FRACTIONS = {("idbench", "score")}
NUMERIC = ("DOUBLE", "FLOAT", "DECIMAL", "INTEGER", "BIGINT", "HUGEINT", "SMALLINT", "TINYINT", "REAL")


def percent_columns(con, prefixes: tuple[str, ...] = ("",)) -> list[tuple[str, str]]:
    """Columns of the tables and views starting with one of `prefixes` whose name says percent."""
    return [(t, c) for t, c in con.sql(
        "SELECT table_name, column_name FROM duckdb_columns() WHERE schema_name = 'main' ORDER BY ALL").fetchall()
        if t.startswith(prefixes) and PERCENT_NAME.search(c)]


def views_times_100(con, prefixes: tuple[str, ...] = ("",)) -> list[str]:
    """Views (and macros) starting with one of `prefixes` whose SQL multiplies by 100."""
    views = con.sql("SELECT view_name, sql FROM duckdb_views() WHERE NOT internal ORDER BY ALL").fetchall()
    macros = con.sql("SELECT function_name, macro_definition FROM duckdb_functions() "
                         "WHERE function_type IN ('macro', 'table_macro') AND NOT internal ORDER BY ALL").fetchall()
    return sorted({name for name, sql in views + macros
                   if name.startswith(prefixes) and sql and TIMES_100.search(sql)})


def fractions_out_of_range(con, prefixes: tuple[str, ...] = ("",)) -> list[tuple]:
    """(table, column, min, max) of every fraction column (by name, FRACTION / SIGNED) of the tables and views
    starting with one of `prefixes` that holds a value outside [0, 1] (or [-1, 1] for a difference)."""
    bad = []
    for table, column, dtype in con.sql(
            "SELECT table_name, column_name, data_type FROM duckdb_columns() WHERE schema_name = 'main' "
            "ORDER BY ALL").fetchall():
        family = table.split("_")[0]
        signed = bool(SIGNED.match(column))
        if (not table.startswith(prefixes) or not dtype.startswith(NUMERIC) or (family, column) in NOT_FRACTIONS
                or not (FRACTION.search(column) or SIGNED.match(column))):
            continue
        lo, hi = con.sql(f'SELECT min("{column}"), max("{column}") FROM "{table}"').fetchall()[0]
        if lo is not None and (lo < (-1 if signed else 0) or hi > 1):
            bad.append((table, column, lo, hi))
    return bad
