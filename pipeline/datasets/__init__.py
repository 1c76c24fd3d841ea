"""Pinned non-code datasets (IdBench CSVs, the algorithm-probing JSON, ...): `python -m pipeline.datasets.fetch`."""
