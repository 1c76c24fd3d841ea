"""idbench tables, declared once: the generator, the inference task, the warehouse and the tests use these."""

import pyarrow as pa


SIZES = ("small", "medium", "large")
GOLDS = ("relatedness", "similarity", "contextual_similarity")
# The release's own per-pair scores (CSV column -> our column), in the CSV's order.
RELEASE = {"FT-cbow": "ft_cbow", "FT-SG": "ft_sg", "w2v-SG": "w2v_sg", "w2v-cbow": "w2v_cbow",
           "Path-based": "path_based", "LV": "lv", "NW": "nw"}
# The five release embeddings whose joint coverage defines the paper-comparable pair set.
RELEASE_EMBEDDINGS = ("FT-cbow", "FT-SG", "w2v-SG", "w2v-cbow", "Path-based")
SUBSETS = ("Abbreviation", "Opposites", "Synonyms", "Added subtoken", "Tricky tokenization")

# One row per (size, pair) of the release's pair files. The same identifier pair appears in
# several sizes with different gold scores (each size is cleaned with its own thresholds).
PAIRS = pa.schema(
    [
        pa.field("size", pa.string(), nullable=False),  # small / medium / large
        pa.field("pair_id", pa.string(), nullable=False),  # stable_id("idbench-pair", id1, id2): same in every size
        pa.field("row", pa.int32(), nullable=False),  # 0-based row in the size's CSV
        pa.field("id1", pa.string(), nullable=False),
        pa.field("id2", pa.string(), nullable=False),
        pa.field("id1_id", pa.string(), nullable=False),  # identifier ids (IDENTIFIERS.identifier_id)
        pa.field("id2_id", pa.string(), nullable=False),
        # gold scores; NULL where the CSV says NAN (no rating survived cleaning)
        *[pa.field(g, pa.float64(), nullable=True) for g in GOLDS],
        # the release's own per-pair scores, NULL where NAN (a technique that could not score the pair)
        *[pa.field(c, pa.float64(), nullable=True) for c in RELEASE.values()],
        # all five release embeddings scored the pair: the release's (and the paper's) pair set
        pa.field("comparable", pa.bool_(), nullable=False),
    ]
)

# One row per distinct identifier of any size: what the models embed.
IDENTIFIERS = pa.schema(
    [
        pa.field("identifier_id", pa.string(), nullable=False),  # stable_id("idbench-identifier", text)
        pa.field("text", pa.string(), nullable=False),
        pa.field("length", pa.int32(), nullable=False),
        pa.field("pairs", pa.int32(), nullable=False),  # distinct pairs (any size) it appears in
        # the code's language: javascript for every identifier (IdBench selects them from 50,000 JavaScript files,
        # the paper's Sec. III.c); a model that marks languages reads its code (PLBART multi's __javascript__)
        pa.field("language", pa.string(), nullable=False),
    ]
)

# Technique scores computed here, one row per (pair, technique): size-independent (a pair's
# identifiers do not change with the size). NULL score: the technique could not score the pair.
SCORES = pa.schema(
    [
        pa.field("pair_id", pa.string(), nullable=False),
        pa.field("technique", pa.string(), nullable=False),  # LV / NW
        pa.field("kind", pa.string(), nullable=False),  # string
        pa.field("score", pa.float64(), nullable=True),
    ]
)

# interesting_subsets.csv: one row per (pair, subset it belongs to).
INTERESTING = pa.schema(
    [
        pa.field("pair_id", pa.string(), nullable=False),
        pa.field("id1", pa.string(), nullable=False),
        pa.field("id2", pa.string(), nullable=False),
        pa.field("subset", pa.string(), nullable=False),  # Abbreviation / Opposites / Synonyms / ...
    ]
)

# The SVR ensemble's leave-one-out predictions (ensemble.py), per (size, gold score, pair).
ENSEMBLE = pa.schema(
    [
        pa.field("size", pa.string(), nullable=False),
        pa.field("gold", pa.string(), nullable=False),
        pa.field("pair_id", pa.string(), nullable=False),
        pa.field("technique", pa.string(), nullable=False),  # ensemble:release / ensemble:release-unscaled / ensemble:ours / ensemble:ours-unscaled
        pa.field("score", pa.float64(), nullable=False),  # leave-one-out prediction
    ]
)

# Inference: per-layer pooled features of each identifier (item_id = identifier_id), one row per
# (identifier, model, layer, pooling): pipeline.schemas.FEATURES with the vector as float32 (the
# runtime computes in float32 and rounds to float16; DuckDB reads float32 lists natively). The
# warehouse computes the cosine of each pair from them.
PREDICTIONS = pa.schema(
    [
        pa.field("item_id", pa.string(), nullable=False),  # identifier_id
        pa.field("model", pa.string(), nullable=False),
        pa.field("layer", pa.int16(), nullable=False),  # 0 = embedding output, 1..L = layers
        pa.field("pooling", pa.string(), nullable=False),  # mean / first
        pa.field("vector", pa.list_(pa.float32()), nullable=False),
    ]
)

# The four embeddings trained here on the corpus's identifier sequences (embeddings.py), named as
# the release's columns: (name, FastText?, skip-gram?).
EMBEDDINGS = {"FT-cbow": (True, False), "FT-SG": (True, True), "w2v-SG": (False, True), "w2v-cbow": (False, False)}

# Cosine scores of the corpus-trained embeddings: the SCORES schema (kind `embedding`, technique
# one of EMBEDDINGS), written to its own file by embeddings.py. word2vec leaves a NULL score where
# an identifier is out of its vocabulary; FastText scores every pair (subword n-grams).

# One row per (technique, IdBench identifier): is it in the embedding's vocabulary, and how often
# the training sequences hold it (NULL when out of vocabulary: below min_count, or absent).
EMBEDDING_VOCAB = pa.schema(
    [
        pa.field("technique", pa.string(), nullable=False),
        pa.field("identifier_id", pa.string(), nullable=False),
        pa.field("text", pa.string(), nullable=False),
        pa.field("in_vocabulary", pa.bool_(), nullable=False),
        pa.field("count", pa.int64(), nullable=True),
    ]
)

# One row per trained embedding: what it was trained on and what it covers (deterministic; the
# training time is in the model's stats JSON beside it, not here).
EMBEDDING_MODELS = pa.schema(
    [
        pa.field("technique", pa.string(), nullable=False),
        pa.field("fasttext", pa.bool_(), nullable=False),
        pa.field("skip_gram", pa.bool_(), nullable=False),
        pa.field("languages", pa.list_(pa.string()), nullable=False),
        pa.field("files", pa.int64(), nullable=False),  # sequence files (non-duplicate) trained on
        pa.field("tokens", pa.int64(), nullable=False),  # identifier tokens trained on (one epoch)
        pa.field("vocabulary", pa.int64(), nullable=False),  # words kept (count >= min_count)
        pa.field("vector_size", pa.int32(), nullable=False),
        pa.field("identifiers", pa.int32(), nullable=False),  # IdBench identifiers
        pa.field("identifiers_in_vocabulary", pa.int32(), nullable=False),
        pa.field("pairs", pa.int32(), nullable=False),  # distinct IdBench pairs
        pa.field("pairs_scored", pa.int32(), nullable=False),  # pairs with a score (FastText: all)
        pa.field("model_sha256", pa.string(), nullable=False),  # the saved model file
    ]
)

# New identifier pairs for a rating survey (newpairs.py): frequent corpus identifiers, pairs
# sampled across the ranges of one embedding's cosine ranking plus random pairs.
NEW_PAIRS = pa.schema(
    [
        pa.field("pair_id", pa.string(), nullable=False),  # stable_id("idbench-new-pair", id1, id2[, "mixed"])
        pa.field("language", pa.string(), nullable=False),  # the group ranked and sampled: a language, or "mixed"
        pa.field("id1", pa.string(), nullable=False),
        pa.field("id2", pa.string(), nullable=False),
        pa.field("stratum", pa.string(), nullable=False),  # range-<k> (k-th range of the ranking, 0 = most similar) / random
        pa.field("rank", pa.int64(), nullable=False),  # 0-based position in the cosine ranking of all pairs
        pa.field("cosine", pa.float64(), nullable=False),  # the ranking technique's cosine
        pa.field("technique", pa.string(), nullable=False),  # the embedding that ranked the pairs
        pa.field("id1_count", pa.int64(), nullable=False),  # corpus frequency
        pa.field("id2_count", pa.int64(), nullable=False),
        pa.field("id1_language", pa.string(), nullable=False),  # the language it occurs in most (ties: name order)
        pa.field("id2_language", pa.string(), nullable=False),
        pa.field("id1_source", pa.string(), nullable=False),  # the source and repository it occurs in most, in `language`
        pa.field("id1_repository", pa.string(), nullable=False),
        pa.field("id2_source", pa.string(), nullable=False),
        pa.field("id2_repository", pa.string(), nullable=False),
        pa.field("in_idbench", pa.bool_(), nullable=False),  # the pair is already in the release
    ]
)
