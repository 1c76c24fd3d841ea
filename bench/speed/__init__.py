"""One stage's throughput or memory against a straightforward baseline measured in the same run (bench/README.md)."""
