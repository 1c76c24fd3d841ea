"""The IdBench paper's reference numbers, written once: the report and the README read them.

The paper gives its per-technique Spearman correlations only as bar charts (Figure 2); the text
states the ranges below. The release's own per-pair scores (columns FT-cbow ... NW of the pair
files) are recomputed by the warehouse (`release:*` rows of idbench_headline); they agree with the
text except one bar (w2v-cbow, relatedness, large: .374, below the text's "between 41% and 74%").
"""

# Table II as printed: pairs per task and size, and inter-rater agreement (contextual: not given). The
# released CSVs hold 1-2 fewer rated pairs (166/246/289; contextual 113/143/174): the report shows both.
TABLE_II = [
    # size, relatedness pairs, IRA, similarity pairs, IRA, contextual pairs
    ("small", 167, 0.67, 167, 0.62, 115),
    ("medium", 247, 0.61, 247, 0.57, 145),
    ("large", 291, 0.56, 291, 0.51, 176),
]

# Section III (text), Spearman's rho: (gold score, what, low, high)
RANGES = [
    ("relatedness", "learned embeddings, all sizes", 0.41, 0.74),
    ("relatedness", "string distances (LV, NW), all sizes", 0.46, 0.49),
    ("similarity", "FT-cbow (the best technique), all sizes", 0.35, 0.38),
]

# The paper text's headline numbers (Section III and the discussion): maxima over the three sizes, never
# one size's value. The release's own scores put them at medium/large for relatedness (small: .72).
# (gold score, kind, rho)
TEXT_MAXIMA = [
    ("relatedness", "embedding", 0.74),
    ("relatedness", "string", 0.49),
    ("similarity", "embedding", 0.38),
    ("similarity", "string", 0.32),
    ("contextual_similarity", "embedding", 0.36),
    ("contextual_similarity", "string", 0.29),
]

# Ensemble (SVR, leave-one-out), large benchmark: gain over the best single technique
ENSEMBLE_GAIN_LARGE = {"relatedness": 0.06, "similarity": 0.19, "contextual_similarity": 0.05}

# Pairs the release's evaluation keeps (all five embeddings scored them), small / medium / large
COMPARABLE_PAIRS = {"relatedness": (154, 228, 266), "similarity": (154, 228, 266),
                    "contextual_similarity": (100, 130, 160)}

# the paper, as a dataset card cites it (pipeline.export)
CITATION = """\
@inproceedings{wainakh2021idbench,
  title     = {IdBench: Evaluating Semantic Representations of Identifier Names in Source Code},
  author    = {Wainakh, Yaza and Rauf, Moiz and Pradel, Michael},
  booktitle = {Proceedings of the 43rd International Conference on Software Engineering (ICSE)},
  year      = {2021},
  note      = {arXiv:1910.05177}
}
"""
