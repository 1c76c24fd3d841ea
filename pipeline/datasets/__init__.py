"""Pinned non-code datasets a family evaluates on (rated-pair CSVs, task JSON, ...): `python -m pipeline.datasets.fetch`."""
