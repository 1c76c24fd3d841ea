"""Performance benchmarks. Each prints throughput and ratios against a baseline measured
in the same run on the same inputs (machines here are noisy: compare ratios, not seconds)."""
