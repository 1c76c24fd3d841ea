"""The workflow through its SLURM profile on a one-node local cluster (bench/README.md)."""
