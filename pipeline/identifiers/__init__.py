"""Shared analysis: identifier sequences per file (JavaScript, Python, Java), in source order.

Built by `rules/identifiers.smk` into `data/identifiers/sequences.parquet` (schema `SEQUENCES` in
`schemas.py`); families read it (to train identifier embeddings on the corpus, e.g. word2vec / FastText).
"""
