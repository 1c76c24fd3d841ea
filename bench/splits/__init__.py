"""What the split policy does to a built corpus (bench/README.md)."""
