"""Stage 7: inference in shards. Each (benchmark, model, shard) is one Snakemake job writing
one compact Parquet file: ranks, top-k lists, hit counts; never attention tensors."""
