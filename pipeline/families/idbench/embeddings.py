"""word2vec and FastText (CBOW and skip-gram) trained on the corpus's identifier sequences, and
the cosine of every IdBench pair under each (paper Section II-D: "w2v-cbow", "w2v-sg", "FT-cbow",
"FT-sg", trained on the same code corpus; identifiers given as they are, no sub-tokenising).

Training data: `data/identifiers/sequences.parquet` (pipeline.identifiers.schemas.SEQUENCES), the
files of the chosen languages and splits that are not exact duplicates, one file = one sentence
(cut into sentences of at most 10,000 tokens: gensim ignores words past that in a sentence),
files in a seeded order, optionally capped at `max_tokens`.

Hyper-parameters are params (defaults: the release's best configurations, IdBench README:
window 5, 15 epochs, min count 3, dimensions FT-cbow 100, FT-sg 300, w2v-cbow 100, w2v-sg 50;
the release's train_w2v.py: alpha 0.03, min_alpha 0.0007, negative 20, sample 6e-5 for word2vec;
FastText: learning rate 0.1 (README), fastText's negative 5, sample 1e-4, n-grams 3..6). FastText's
`bucket` (hashed n-gram rows) is a param sized to the corpus: gensim's default, 2,000,000 rows,
allocates gigabytes at 300 dimensions.

Determinism: `workers=1`, `seed` = the pipeline seed, and a fixed PYTHONHASHSEED (gensim seeds each
word's initial vector from Python's `hash()` of the word, which is salted per process unless
PYTHONHASHSEED is set). `python -m` re-executes itself with PYTHONHASHSEED=`HASH_SEED` when it is
not set; `train()` refuses to run under another value. Gensim's lifecycle log (dates, platform) is
switched off, and models are saved as gensim KeyedVectors in one pickle (`separately=[]`), so two
runs write byte-identical model files and scores.

Scoring: cosine of the two identifiers' vectors. word2vec: NULL where an identifier is out of the
vocabulary (the pair is kept, counted as not covered); FastText: out-of-vocabulary identifiers get
their vector from their character n-grams (every pair is scored).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.core import logs
from pipeline.core.ids import stable_id
from pipeline.families.idbench import schemas
from pipeline.identifiers.schemas import SEQUENCES
from pipeline.io import atomic_path, read_parquet, write_json, write_parquet

log = logging.getLogger("pipeline.families.idbench.embeddings")

HASH_SEED = "0"  # PYTHONHASHSEED of every training process
MAX_SENTENCE = 10_000  # gensim's MAX_WORDS_IN_BATCH: longer sentences are cut
DECIMALS = 6  # cosine scores are rounded (stable bytes)


@dataclass(frozen=True)
class Corpus:
    sentences: list[list[str]]
    files: int
    tokens: int


@dataclass(frozen=True)
class TrainStats:
    technique: str
    fasttext: bool
    skip_gram: bool
    languages: list[str]
    files: int
    tokens: int
    vocabulary: int
    vector_size: int
    seconds: float  # wall time of vocabulary building and training (not deterministic)
    tokens_per_second: float  # tokens x epochs / seconds

    @property
    def deterministic(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k not in ("seconds", "tokens_per_second")}


def load_corpus(sequences: str | Path, languages: list[str], splits: list[str], max_tokens: int,
                seed: int) -> Corpus:
    """The training sentences: non-duplicate files of these languages and splits, in a seeded
    order, cut at MAX_SENTENCE tokens; whole files until `max_tokens` (0: all) is reached."""
    table = read_parquet(sequences, SEQUENCES)
    keep = pc.and_(pc.and_(pc.is_in(table["language"], pa.array(languages)),
                           pc.is_in(table["split"], pa.array(splits))), pc.invert(table["duplicate"]))
    table = table.filter(keep).select(["file_id", "identifiers"])
    ids = table["file_id"].to_pylist()
    order = sorted(range(len(ids)), key=lambda i: stable_id("idbench-embedding-files", seed, ids[i]))
    seqs = table["identifiers"]
    sentences: list[list[str]] = []
    files = tokens = 0
    for i in order:
        words = [w for w in seqs[i].as_py() if w]
        if not words:
            continue
        if max_tokens and tokens >= max_tokens:
            break
        files += 1
        tokens += len(words)
        sentences += [words[j:j + MAX_SENTENCE] for j in range(0, len(words), MAX_SENTENCE)]
    return Corpus(sentences, files, tokens)


def _quiet(obj) -> None:
    """Switch off gensim's lifecycle log (it stores dates and the platform in the saved file)."""
    obj.lifecycle_events = None


def train(corpus: Corpus, technique: str, params: dict, seed: int):
    """Train one technique; returns (gensim model, TrainStats)."""
    if os.environ.get("PYTHONHASHSEED") != HASH_SEED:
        raise RuntimeError(f"train embeddings under PYTHONHASHSEED={HASH_SEED} (gensim seeds vectors from hash()); "
                           "`python -m pipeline.families.idbench.embeddings` sets it")
    from gensim.models import FastText, Word2Vec

    fasttext, skip_gram = schemas.EMBEDDINGS[technique]
    t = params["techniques"][technique]
    kw = dict(vector_size=t["vector_size"], alpha=t["alpha"], min_alpha=t["min_alpha"], negative=t["negative"],
              sample=t["sample"], window=params["window"], min_count=params["min_count"], epochs=params["epochs"],
              sg=int(skip_gram), seed=seed, workers=1)
    if fasttext:
        kw.update(min_n=params["min_n"], max_n=params["max_n"], bucket=params["bucket"])
    model = (FastText if fasttext else Word2Vec)(**kw)
    _quiet(model)
    _quiet(model.wv)
    start = time.perf_counter()
    model.build_vocab(corpus_iterable=corpus.sentences)
    if len(model.wv) == 0:
        raise ValueError(f"{technique}: empty vocabulary ({corpus.tokens} tokens, min_count {params['min_count']})")
    model.train(corpus_iterable=corpus.sentences, total_examples=model.corpus_count, epochs=model.epochs)
    seconds = time.perf_counter() - start
    _quiet(model.wv)
    stats = TrainStats(technique, fasttext, skip_gram, list(params["languages"]), corpus.files, corpus.tokens,
                       len(model.wv), t["vector_size"], round(seconds, 3),
                       round(corpus.tokens * params["epochs"] / seconds, 1) if seconds > 0 else 0.0)
    return model, stats


def save_vectors(wv, path: str | Path) -> None:
    """gensim's native KeyedVectors format, one pickle (no side .npy files), written atomically."""
    _quiet(wv)
    with atomic_path(path) as tmp:
        wv.save(str(tmp), separately=[], pickle_protocol=4)


def load_vectors(path: str | Path):
    from gensim.models import KeyedVectors

    return KeyedVectors.load(str(path))


def vectors(wv, words: list[str], fasttext: bool) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors [n, d] (float64) of `words` and whether each is in the vocabulary; a word
    that cannot be embedded (word2vec out of vocabulary, or a zero vector) is a NaN row."""
    known = np.array([w in wv.key_to_index for w in words], dtype=bool)
    out = np.full((len(words), wv.vector_size), np.nan)
    for i, w in enumerate(words):
        if known[i] or fasttext:
            v = np.asarray(wv.get_vector(w), dtype=np.float64)
            norm = np.linalg.norm(v)
            if norm > 0 and np.isfinite(norm):
                out[i] = v / norm
    return out, known


def pair_cosines(unit: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Batched cosine of rows `left[k]` and `right[k]` of unit vectors (NaN where one is missing):
    through the Gram matrix when the identifiers are few against the pairs, else row by row."""
    if len(unit) ** 2 <= 4 * len(left):
        return (unit @ unit.T)[left, right]
    return np.einsum("ij,ij->i", unit[left], unit[right])


def score(models: dict[str, Path], identifiers: str | Path, pairs: str | Path) -> tuple[pa.Table, pa.Table, pa.Table]:
    """(SCORES rows of every technique and distinct pair, EMBEDDING_VOCAB, per-model coverage rows
    (without the training fields))."""
    ids = read_parquet(identifiers, schemas.IDENTIFIERS).to_pylist()
    distinct = sorted({p["pair_id"]: (p["id1"], p["id2"]) for p in read_parquet(pairs, schemas.PAIRS).to_pylist()}.items())
    words = [r["text"] for r in ids]
    index = {w: i for i, w in enumerate(words)}
    left = np.array([index[a] for _, (a, _) in distinct], dtype=np.int64)
    right = np.array([index[b] for _, (_, b) in distinct], dtype=np.int64)
    score_rows, vocab_rows, cover = [], [], {}
    for technique in schemas.EMBEDDINGS:
        if technique not in models:
            continue
        fasttext, _ = schemas.EMBEDDINGS[technique]
        wv = load_vectors(models[technique])
        if len(wv) == 0:  # trained on no identifier tokens (see _train_main): embeds nothing, scores no pair
            fasttext = False
        unit, known = vectors(wv, words, fasttext)
        cos = pair_cosines(unit, left, right)
        for (pid, _), c in zip(distinct, cos):
            score_rows.append({"pair_id": pid, "technique": technique, "kind": "embedding",
                               "score": None if not np.isfinite(c) else round(float(c), DECIMALS)})
        for r, k in zip(ids, known):
            vocab_rows.append({"technique": technique, "identifier_id": r["identifier_id"], "text": r["text"],
                               "in_vocabulary": bool(k), "count": int(wv.get_vecattr(r["text"], "count")) if k else None})
        cover[technique] = {"identifiers": len(words), "identifiers_in_vocabulary": int(known.sum()),
                            "pairs": len(distinct), "pairs_scored": int(np.isfinite(cos).sum())}
    score_rows.sort(key=lambda r: (r["pair_id"], r["technique"]))
    vocab_rows.sort(key=lambda r: (r["technique"], r["identifier_id"]))
    return (pa.Table.from_pylist(score_rows, schemas.SCORES), pa.Table.from_pylist(vocab_rows, schemas.EMBEDDING_VOCAB),
            cover)


def sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _train_main(args) -> int:
    if not len(args.technique) == len(args.out) == len(args.stats):
        raise SystemExit("give one --out and one --stats per --technique")
    params = json.loads(args.params)
    corpus = load_corpus(args.sequences, params["languages"], params["splits"], params["max_tokens"], args.seed)
    log.info("%d files, %d tokens, %d sentences", corpus.files, corpus.tokens, len(corpus.sentences))
    if not corpus.tokens:
        # a corpus without identifiers of these languages: empty embeddings (no pair scored, coverage 0), not a crash
        from gensim.models import KeyedVectors

        log.warning("idbench embeddings: no identifier tokens in %s for languages %s and splits %s: empty models",
                    args.sequences, params["languages"], params["splits"])
        for technique, out, stats_path in zip(args.technique, args.out, args.stats):
            fasttext, skip_gram = schemas.EMBEDDINGS[technique]
            size = params["techniques"][technique]["vector_size"]
            save_vectors(KeyedVectors(size), out)
            write_json(asdict(TrainStats(technique, fasttext, skip_gram, list(params["languages"]), 0, 0, 0, size,
                                         0.0, 0.0)), stats_path)
        return 0
    for technique, out, stats_path in zip(args.technique, args.out, args.stats):
        model, stats = train(corpus, technique, params, args.seed)
        save_vectors(model.wv, out)
        write_json(asdict(stats), stats_path)
        log.info("%s: vocabulary %d, %.1f s, %.0f tokens/s", technique, stats.vocabulary, stats.seconds,
                 stats.tokens_per_second)
    return 0


def _score_main(args) -> int:
    models = {}
    stats = {}
    for model, stat in zip(args.models, args.stats):
        s = json.loads(Path(stat).read_text())
        models[s["technique"]] = Path(model)
        stats[s["technique"]] = s
    scores, vocab, cover = score(models, args.identifiers, args.pairs)
    rows = []
    for technique in schemas.EMBEDDINGS:
        if technique in models:
            s = stats[technique]
            rows.append({**{k: s[k] for k in ("technique", "fasttext", "skip_gram", "languages", "files", "tokens",
                                                "vocabulary", "vector_size")},
                         **cover[technique], "model_sha256": sha256(models[technique])})
            log.info("%s: %d/%d identifiers in vocabulary, %d/%d pairs scored", technique,
                     cover[technique]["identifiers_in_vocabulary"], cover[technique]["identifiers"],
                     cover[technique]["pairs_scored"], cover[technique]["pairs"])
    write_parquet(scores, args.scores, schemas.SCORES)
    write_parquet(vocab, args.vocab, schemas.EMBEDDING_VOCAB)
    write_parquet(pa.Table.from_pylist(rows, schemas.EMBEDDING_MODELS), args.summary, schemas.EMBEDDING_MODELS)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.families.idbench.embeddings", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="train one technique on the identifier sequences")
    t.add_argument("--sequences", required=True)
    t.add_argument("--technique", required=True, nargs="+", choices=list(schemas.EMBEDDINGS))
    t.add_argument("--params", required=True, help="JSON: the params.yaml idbench.embeddings block")
    t.add_argument("--seed", required=True, type=int)
    t.add_argument("--out", required=True, nargs="+", help="the model file (gensim KeyedVectors), per technique")
    t.add_argument("--stats", required=True, nargs="+", help="JSON: corpus size, vocabulary, training time, per technique")
    s = sub.add_parser("score", help="cosine of every IdBench pair under each trained model")
    s.add_argument("--models", nargs="+", required=True)
    s.add_argument("--stats", nargs="+", required=True, help="the training stats JSON of each model, same order")
    s.add_argument("--identifiers", required=True)
    s.add_argument("--pairs", required=True)
    s.add_argument("--scores", required=True)
    s.add_argument("--vocab", required=True)
    s.add_argument("--summary", required=True)
    args = ap.parse_args(argv)
    logs.setup()
    return _train_main(args) if args.command == "train" else _score_main(args)


if __name__ == "__main__":
    if os.environ.get("PYTHONHASHSEED") != HASH_SEED:  # gensim's vector seeding needs a fixed hash seed
        os.execve(sys.executable, [sys.executable, "-m", "pipeline.families.idbench.embeddings", *sys.argv[1:]],
                  {**os.environ, "PYTHONHASHSEED": HASH_SEED})
    raise SystemExit(main())
