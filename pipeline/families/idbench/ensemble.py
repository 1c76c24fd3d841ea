"""The paper's ensemble (Section III-D): an SVR with scikit-learn's default hyper-parameters over
the seven techniques' scores of a pair plus identifier features (both lengths, subtoken counts by
camelCase / snake_case splitting, dictionary and non-dictionary subtoken counts), evaluated by
leave-one-out: each pair's score is predicted by a model trained on every other pair of the same
size and gold score. The seven scores are the release's own (FT-cbow, FT-SG, w2v-SG, w2v-cbow,
Path-based, LV, NW), so it runs on the paper-comparable pairs (all five embeddings scored).
The dictionary is pyspellchecker's English word list (the release used a system dictionary).
"""

from __future__ import annotations

import argparse
import logging
import re

import numpy as np
import pyarrow as pa
from sklearn.svm import SVR

from pipeline.core import logs
from pipeline.families.idbench import schemas
from pipeline.io import read_parquet, write_parquet

log = logging.getLogger("pipeline.families.idbench.ensemble")

_SUBTOKEN = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def subtokens(identifier: str) -> list[str]:
    """camelCase and snake_case subtokens: `getHTTPResponse_code2` -> get, HTTP, Response, code, 2."""
    return [t for part in identifier.split("_") for t in _SUBTOKEN.findall(part)]


class Dictionary:
    def __init__(self) -> None:
        from spellchecker import SpellChecker

        self._known = SpellChecker(distance=1).known

    def counts(self, identifier: str) -> tuple[int, int]:
        words = [t.lower() for t in subtokens(identifier) if t.isalpha()]
        known = self._known(words)
        in_dict = sum(w in known for w in words)
        return in_dict, len(words) - in_dict


def features(pair: dict, dictionary: Dictionary) -> list[float]:
    scores = [pair[c] for c in schemas.RELEASE.values()]
    per_id = []
    for x in (pair["id1"], pair["id2"]):
        per_id += [len(x), len(subtokens(x)), *dictionary.counts(x)]
    return [*scores, *per_id]


def leave_one_out(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = np.empty(len(y))
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        out[i] = SVR().fit(x[keep], y[keep]).predict(x[i : i + 1])[0]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.families.idbench.ensemble", description=__doc__)
    ap.add_argument("--pairs", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    logs.setup()
    pairs = read_parquet(args.pairs, schemas.PAIRS).to_pylist()
    dictionary = Dictionary()
    rows = []
    for size in schemas.SIZES:
        for gold in schemas.GOLDS:
            mine = sorted((p for p in pairs if p["size"] == size and p["comparable"] and p[gold] is not None
                           and all(p[c] is not None for c in schemas.RELEASE.values())), key=lambda p: p["pair_id"])
            x = np.array([features(p, dictionary) for p in mine], dtype=float)
            y = np.array([p[gold] for p in mine], dtype=float)
            pred = leave_one_out(x, y)
            rows += [{"size": size, "gold": gold, "pair_id": p["pair_id"], "technique": "ensemble",
                      "score": round(float(v), 6)} for p, v in zip(mine, pred)]
            log.info("ensemble %s %s: %d pairs", size, gold, len(mine))
    write_parquet(pa.Table.from_pylist(rows, schemas.ENSEMBLE), args.out, schemas.ENSEMBLE)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
