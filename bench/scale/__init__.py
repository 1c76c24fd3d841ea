"""How the build's cost grows with the corpus and with shards: real Snakemake runs (bench/README.md)."""
