"""Models trained on features (linear probes, regressors): `pipeline.fit.probe` (library),
`python -m pipeline.fit` (CLI over FEATURES and PROBE_LABELS Parquet tables)."""
