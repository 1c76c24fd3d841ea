"""The IdBench paper's reference numbers, written once: the report and the README read them.

The paper gives its per-technique Spearman correlations only as bar charts (Figure 2); the text
states the ranges below. The release's own per-pair scores (columns FT-cbow ... NW of the pair
files) let the warehouse recompute every bar exactly (`release:*` rows of idbench_headline).
"""

# Table II: pairs per task and size, and inter-rater agreement (contextual: not given)
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

# The headline comparison the issue asks for (small benchmark): best embedding vs string distance.
HEADLINE = [
    ("relatedness", "best embedding (FastText)", 0.74),
    ("similarity", "best embedding (FT-cbow), small", 0.38),
    ("similarity", "string distance, small", 0.32),
]

# Ensemble (SVR, leave-one-out), large benchmark: gain over the best single technique
ENSEMBLE_GAIN_LARGE = {"relatedness": 0.06, "similarity": 0.19, "contextual_similarity": 0.05}

# Pairs the release's evaluation keeps (all five embeddings scored them), small / medium / large
COMPARABLE_PAIRS = {"relatedness": (154, 228, 266), "similarity": (154, 228, 266),
                    "contextual_similarity": (100, 130, 160)}
