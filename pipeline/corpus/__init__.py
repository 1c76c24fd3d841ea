"""Stage 1: corpus acquisition. Every source is pinned, verified, cached, and treated as data."""
