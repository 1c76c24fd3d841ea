"""The benchmark factory: every stage's logic, importable; Snakemake rules stay thin."""

__version__ = "0.1.0"
