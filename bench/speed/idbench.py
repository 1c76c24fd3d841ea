"""idbench throughput, as ratios against baselines measured in the same run on the same inputs:

1. string scores (LV, NW exactly as the release): batched rapidfuzz `cpdist` with integer
   half-to-even rounding (what generate.py runs) against a plain Python loop of the scalar
   functions over the same pairs (every pair of IdBench's 482 identifiers: 115,921 pairs);
2. cosine scores: batched unit-vector rows (embeddings.pair_cosines) against a Python loop of
   gensim's `KeyedVectors.similarity` over the same pairs (random 100-d vectors);
3. embedding training time per million identifier tokens for each gensim technique (params.yaml
   `idbench.embeddings`, single worker, each in `python -m pipeline.families.idbench.embeddings`),
   as a ratio against word2vec CBOW;
4. the Spearman view: window-function ranks + corr() (sql/10_views.sql) against the metric
   library's O(n^2) list macros (`spearman_rho`) over the same synthetic judged table (systems x
   3 sizes x 3 golds x 2 pair sets x the IdBench pairs).

Training data: data/identifiers/sequences.parquet when built, else identifier sequences taken
here from the running interpreter's standard library (NAME tokens of `tokenize`, never executed).
    python -m bench.speed.idbench [--tokens 300000] [--systems 100]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import itertools
import json
import keyword
import subprocess
import sys
import sysconfig
import tempfile
import time
import tokenize
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import yaml

from pipeline import metrics
from pipeline.families.idbench import embeddings, schemas, strings
from pipeline.identifiers.schemas import SEQUENCES
from pipeline.io import write_parquet

DATASET = Path("../shared/data/idbench")


def identifiers() -> list[str]:
    import csv

    words = set()
    for size in schemas.SIZES:
        with (DATASET / f"{size}_pair_wise.csv").open(newline="") as f:
            for r in csv.DictReader(f):
                words |= {r["id1"], r["id2"]}
    return sorted(words)


def timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


def string_speed(words: list[str]) -> dict:
    a, b = map(list, zip(*itertools.combinations(words, 2)))
    out = {}
    for name, batched, scalar in (("LV", strings.lv_many, strings.lv), ("NW", strings.nw_many, strings.nw)):
        fast, t_fast = timed(batched, a, b)
        slow, t_slow = timed(lambda: [scalar(x, y) for x, y in zip(a, b)])
        assert fast.tolist() == slow, name
        out[name] = {"pairs": len(a), "batched_pairs_per_s": round(len(a) / t_fast),
                     "loop_pairs_per_s": round(len(a) / t_slow), "ratio": round(t_slow / t_fast, 1)}
        print(f"{name}: batched {len(a) / t_fast:,.0f} pairs/s, Python loop {len(a) / t_slow:,.0f} pairs/s, "
              f"ratio {t_slow / t_fast:.1f}x (same scores)")
    return out


def cosine_speed(words: list[str], dim: int = 100) -> dict:
    from gensim.models import KeyedVectors

    rng = np.random.default_rng(0)
    wv = KeyedVectors(dim)
    wv.add_vectors(words, rng.normal(size=(len(words), dim)).astype(np.float32))
    i, j = map(np.array, zip(*itertools.combinations(range(len(words)), 2)))

    def batched():
        unit, _ = embeddings.vectors(wv, words, False)
        return embeddings.pair_cosines(unit, i, j)

    fast, t_fast = timed(batched)
    slow, t_slow = timed(lambda: [float(wv.similarity(words[x], words[y])) for x, y in zip(i, j)])
    assert np.allclose(fast, slow, atol=1e-5)
    print(f"cosine: batched {len(i) / t_fast:,.0f} pairs/s, gensim similarity loop {len(i) / t_slow:,.0f} pairs/s, "
          f"ratio {t_slow / t_fast:.1f}x")
    return {"pairs": len(i), "batched_pairs_per_s": round(len(i) / t_fast), "loop_pairs_per_s": round(len(i) / t_slow),
            "ratio": round(t_slow / t_fast, 1)}


def stdlib_sequences(path: Path, tokens: int) -> None:
    """Identifier sequences of the standard library's Python files (deterministic order), ~`tokens`."""
    std = Path(sysconfig.get_paths()["stdlib"])
    rows, total = [], 0
    for p in sorted(std.rglob("*.py")):
        if "test" in p.parts or total >= tokens:
            continue
        try:
            text = p.read_text(encoding="utf-8")
            ids = [t.string for t in tokenize.generate_tokens(io.StringIO(text).readline)
                   if t.type == tokenize.NAME and not keyword.iskeyword(t.string)]
        except (SyntaxError, UnicodeDecodeError, tokenize.TokenError):
            continue
        rel = p.relative_to(std).as_posix()
        rows.append({"file_id": hashlib.sha256(rel.encode()).hexdigest()[:16], "sha256": hashlib.sha256(text.encode()).hexdigest(),
                     "language": "python", "source": "stdlib", "repository": rel.split("/")[0], "split": "train",
                     "duplicate": False, "identifiers": ids})
        total += len(ids)
    rows.sort(key=lambda r: r["file_id"])
    write_parquet(pa.Table.from_pylist(rows, SEQUENCES), path, SEQUENCES)


def training_speed(tokens: int, params: dict, seed: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        seq = Path("data/identifiers/sequences.parquet")
        if not seq.is_file():
            seq = d / "sequences.parquet"
            stdlib_sequences(seq, tokens)
        p = {**params, "max_tokens": tokens}
        out = {}
        for t in schemas.EMBEDDINGS:
            subprocess.run([sys.executable, "-m", "pipeline.families.idbench.embeddings", "train", "--sequences", str(seq),
                            "--technique", t, "--params", json.dumps(p), "--seed", str(seed), "--out", str(d / f"{t}.kv"),
                            "--stats", str(d / f"{t}.json")], check=True, capture_output=True)
            s = json.loads((d / f"{t}.json").read_text())
            out[t] = {"tokens": s["tokens"], "epochs": p["epochs"], "vector_size": s["vector_size"],
                      "seconds": s["seconds"], "seconds_per_million_tokens": round(s["seconds"] * 1e6 / s["tokens"], 1),
                      "token_epochs_per_s": round(s["tokens_per_second"])}
    base = out["w2v-cbow"]["seconds_per_million_tokens"]
    for t, r in out.items():
        r["ratio_to_w2v_cbow"] = round(r["seconds_per_million_tokens"] / base, 2)
        print(f"train {t}: {r['seconds_per_million_tokens']:.1f} s per million tokens ({r['epochs']} epochs, "
              f"dim {r['vector_size']}; {r['token_epochs_per_s']:,} token-epochs/s), {r['ratio_to_w2v_cbow']:.2f}x w2v-cbow")
    return out


def spearman_speed(systems: int) -> dict:
    con = duckdb.connect()
    metrics.install(con)
    # the judged table's shape: systems x (size, gold) x ~250 rated pairs x 2 pair sets
    con.execute(f"""CREATE TABLE idbench_judged AS
        SELECT 's' || s AS system, 'model' AS kind, NULL::SMALLINT AS layer, NULL::VARCHAR AS pooling, size, gold,
               'p' || p AS pair_id, true AS comparable, round(hash(p, gold, size) % 97 / 20.0, 2)::DOUBLE AS value,
               CASE WHEN hash(s, p) % 50 = 0 THEN NULL ELSE (hash(s, p, size) % 1000)::DOUBLE END AS score, pair_set
        FROM range({systems}) a(s), range(250) b(p), (VALUES ('small'), ('medium'), ('large')) c(size),
             (VALUES ('relatedness'), ('similarity'), ('contextual_similarity')) d(gold),
             (VALUES ('comparable'), ('all_rated')) e(pair_set)""")
    rows = con.execute("SELECT count(*) FROM idbench_judged").fetchone()[0]
    sql = (Path(__file__).resolve().parents[2] / "pipeline/families/idbench/sql/10_views.sql").read_text()
    con.execute(sql[sql.index("CREATE VIEW idbench_ranked"): sql.index("-- Each model's best layer")])
    macro = ("SELECT system, kind, layer, pooling, size, gold, pair_set, spearman_rho(list(score ORDER BY pair_id), "
             "list(value ORDER BY pair_id)) AS rho FROM idbench_judged GROUP BY ALL")
    window = "SELECT system, kind, layer, pooling, size, gold, pair_set, rho FROM idbench_spearman"
    fast, t_fast = timed(lambda: con.execute(f"SELECT * FROM ({window}) ORDER BY ALL").fetchall())
    slow, t_slow = timed(lambda: con.execute(f"SELECT * FROM ({macro}) ORDER BY ALL").fetchall())
    assert len(fast) == len(slow) and all(a[:7] == b[:7] and abs(a[7] - b[7]) < 1e-9 for a, b in zip(fast, slow))
    print(f"spearman view over {rows:,} judged rows ({len(fast):,} groups): window ranks {t_fast:.2f} s, "
          f"list macros {t_slow:.2f} s, ratio {t_slow / t_fast:.1f}x (same rho)")
    return {"rows": rows, "groups": len(fast), "window_s": round(t_fast, 3), "macro_s": round(t_slow, 3),
            "ratio": round(t_slow / t_fast, 1)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=300_000, help="identifier tokens each technique trains on")
    ap.add_argument("--systems", type=int, default=100, help="techniques x layers in the synthetic Spearman table")
    ap.add_argument("--skip-training", action="store_true")
    args = ap.parse_args(argv)
    params = yaml.safe_load(Path("params.yaml").read_text())
    words = identifiers()
    results = {"strings": string_speed(words), "cosine": cosine_speed(words),
               "spearman": spearman_speed(args.systems)}
    if not args.skip_training:
        results["training"] = training_speed(args.tokens, params["idbench"]["embeddings"], params["seed"])
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
