"""Benches for a GPU machine: precision, a real pretrained model against lm-evaluation-harness, training recipes
(bench/README.md)."""
