"""Stage 8: the DuckDB warehouse. Views over every Parquet table, metrics as SQL views."""
