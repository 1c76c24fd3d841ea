"""Pinned non-code datasets (a rated-pairs CSV, a task JSON, ...: the files a family evaluates on): `python -m pipeline.datasets.fetch`."""
