"""SmolLM2-135M and its random twin on apiquiz and apirec: the GPU profile's scoring against
lm-evaluation-harness's HF backend on the same items, on one GPU (issue 34 item 5).

For each model and precision, on the same device, in one process:

- `predict`: the pipeline's predict job as the GPU profile runs it (`pipeline.runtime.predict.run_shard`:
  the family's task with the job's params, every ranking protocol, the no-context pass of `rank_pmi`
  included), timed from the input Parquet to the predictions table;
- `ours`: the same items planned and scored by the runtime for the summed log-likelihood alone
  (`plan_candidates` + `score_plans(no_context=False)`: the like-for-like with lm-eval, which computes
  only that), every candidate's score kept;
- `lm-eval`: lm-evaluation-harness's `HFLM(backend="causal", batch_size=B)` `loglikelihood` over every
  (context, continuation) request at once, the context being the pipeline's start token followed by
  the item's prefix (apirec: the context cut to fit, as the pipeline cuts it), the continuation the
  candidate followed by the item's suffix (bench/peers/causal.py's `pipeline` convention).

Items: apiquiz's quizzes (the subset `all`, Python) and apirec's code points (the subset `code`; Python
and Java points, told apart by their file's extension), every one by default, else the pipeline's own
seeded draw (`--max-quizzes`, `--max-points`: the predict job's `max_items`). Writes under `--out`:
`results.json` (per run: seconds per side, items, candidates, tokens, FLOPs, equality), `items.parquet`
(per item: gold rank per side, max |ours - lm-eval| over its candidates) and `log.txt`.

    python bench/gpu/smollm2.py --device cuda --models-dir data/models --quizzes Q.parquet --points P.parquet \
        --zoo "$ZOO" --out $OUT [--dtypes float32,bfloat16] [--peer-dtypes float32,bfloat16]
    python bench/gpu/smollm2.py --report RESULTS_DIR   # the Markdown table (CIs: Poisson bootstrap)

Needs torch, transformers, pyarrow, the repository, and lm_eval 0.4.13 (+ accelerate) for the peer side.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if (REPO / "pipeline").is_dir() and str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# datasheet dense peaks (NVIDIA H100 SXM / H200: the same SM count and clocks), TFLOP/s
PEAK_TFLOPS = {"bfloat16": 989.4, "float16": 989.4, "float32": 66.9}
START = time.perf_counter()
LOG: list[str] = []


def say(msg: str) -> None:
    line = f"[{time.perf_counter() - START:7.1f}s] {msg}"
    LOG.append(line)
    print(line, flush=True)


def sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


# ---------------------------------------------------------------- items, as the predict jobs select them

def apiquiz_items(path: Path, max_items: int, seed: int, max_candidates: int, min_per_stratum: int) -> list[dict]:
    import pyarrow as pa

    from pipeline.families.apiquiz import schemas
    from pipeline.families.apiquiz.infer import ranked_candidates
    from pipeline.io import read_parquet
    from pipeline.runtime.batching import select_shard

    t = read_parquet(path, schemas.QUIZZES)
    ids = t.column("quiz_id").to_pylist()
    strata = list(zip(t.column("setting").to_pylist(), t.column("mask_position").to_pylist()))
    mine = t.filter(pa.array(select_shard(ids, 0, 1, max_items, seed, strata, min_per_stratum), pa.bool_()))
    return [{"id": r["quiz_id"], "prefix": r["prefix"], "suffix": r["suffix"], "gold": r["answer"],
             "fills": list(ranked_candidates(r["answer"], r["candidates"], max_candidates)), "language": "python",
             "subset": "all"}
            for r in mine.select(["quiz_id", "prefix", "answer", "suffix", "candidates"]).to_pylist()]


def apirec_items(path: Path, max_items: int, seed: int, candidates: int) -> list[dict]:
    import pyarrow as pa

    from pipeline.families.apirec import schemas
    from pipeline.families.apirec.infer import SUFFIX, language_of_path
    from pipeline.io import read_parquet
    from pipeline.runtime.batching import select_shard

    t = read_parquet(path, schemas.POINTS)
    mine = t.filter(pa.array(select_shard(t.column("point_id").to_pylist(), 0, 1, max_items, seed), pa.bool_()))
    out = []
    for r in mine.select(["point_id", "context", "api", "candidates", "candidate_texts", "path"]).to_pylist():
        if not r["candidates"]:
            continue
        names, texts = list(r["candidates"][:candidates]), list(r["candidate_texts"][:candidates])
        out.append({"id": r["point_id"], "context": r["context"], "suffix": SUFFIX, "names": names, "fills": texts,
                    "gold": r["api"], "language": language_of_path(r["path"]), "subset": "code"})
    return out


def plan_items(scorer, family: str, items: list[dict]) -> list[tuple[dict, object]]:
    """Each item's plan as the family's task makes it (apirec: the context cut to fit first); too long: left out."""
    from pipeline.families.apirec.infer import fit_context
    from pipeline.runtime.encode import lm_eval_job
    from pipeline.runtime.plan import plan_candidates

    out = []
    for it in items:
        if family == "apirec":
            it["prefix"] = fit_context(scorer.tok, it["context"], tuple(it["fills"]), scorer.max_length)
        p = plan_candidates(scorer, "causal-lm", it["prefix"], it["fills"], it["suffix"],
                            it["language"] if family == "apirec" else "python")
        if p is None:
            continue
        # lm-eval asserts when a continuation keeps no token of its own (the tokenizer merged it into the
        # context's last token): such items are left out of every side, and counted (bench/peers/causal.py)
        lead = "".join(scorer.start.tokens)
        if any(len(ids) <= start for ids, start in (lm_eval_job(scorer.tok, lead + it["prefix"], f + it["suffix"])
                                                     for f in it["fills"])):
            it["left_out"] = "empty continuation"
            continue
        out.append((it, p))
    return out


def gold_index(family: str, it: dict) -> int | None:
    if family == "apiquiz":
        return it["fills"].index(it["gold"])
    return it["names"].index(it["gold"]) if it["gold"] in it["names"] else None


def rank(scores: list[float], family: str, it: dict) -> int | None:
    """The gold's rank as the family ranks (scoring.rank_of: rounded score, then the name); None: not in the pool."""
    from pipeline.runtime.protocols import rank_of

    g = gold_index(family, it)
    if g is None:
        return None
    names = it["fills"] if family == "apiquiz" else it["names"]
    return rank_of(scores, names, g)[0]


# ---------------------------------------------------------------- FLOPs

def model_shape(model) -> dict:
    cfg = model.config
    emb = model.get_input_embeddings().weight
    total = sum(p.numel() for p in model.parameters())
    return {"params": total, "non_embedding": total - emb.numel(), "hidden": cfg.hidden_size,
            "layers": cfg.num_hidden_layers, "vocab": emb.shape[0]}


def forward_flops(shape: dict, lengths: list[int]) -> float:
    """The FLOPs of a plain forward pass over each whole sequence (what a model computes for the task,
    the same count for both sides): 2 x (non-embedding parameters + the LM head's d x V) per token, plus
    the attention scores and weighted sum, 2 x 2 x d per (query, key) pair of the causal mask per layer."""
    per_token = 2 * (shape["non_embedding"] + shape["hidden"] * shape["vocab"])
    attn = 2 * shape["hidden"] * shape["layers"]  # x T(T+1) for QK^T and AV over T(T+1)/2 pairs
    return float(sum(per_token * t + attn * t * (t + 1) for t in lengths))


# ---------------------------------------------------------------- the sides

def run_predict(family_name: str, subset: str, inputs: dict, params: dict, loaded, seed: int, budget: int):
    from pipeline import families
    from pipeline.runtime.predict import run_shard

    return run_shard(families.load(family_name), subset, inputs, params, loaded, 0, 1, seed, budget)


def run_ours(loaded, budget: int, family: str, items: list[dict]):
    from pipeline.runtime.scorer import Scorer, score_plans

    scorer = Scorer(loaded, budget)
    planned = plan_items(scorer, family, items)
    scored = score_plans(scorer, "causal-lm", [p for _, p in planned], no_context=False)
    return planned, [list(s.logprob) for s in scored]


def peer_requests(lead: str, planned: list[tuple[dict, object]]):
    from lm_eval.api.instance import Instance

    return [Instance(request_type="loglikelihood", doc={}, arguments=(lead + it["prefix"], f + it["suffix"]), idx=k)
            for it, _ in planned for k, f in enumerate(it["fills"])]


def run_peer(lm, requests, planned) -> list[list[float]]:
    got = lm.loglikelihood(requests, disable_tqdm=True)
    out, at = [], 0
    for it, _ in planned:
        out.append([float(ll) for ll, _ in got[at: at + len(it["fills"])]])
        at += len(it["fills"])
    return out


def timed(dev: str, fn, *a, **k):
    import torch

    sync(dev)
    if dev.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    res = fn(*a, **k)
    sync(dev)
    peak = torch.cuda.max_memory_allocated() / 2**30 if dev.startswith("cuda") else None
    return res, time.perf_counter() - t0, peak


# ---------------------------------------------------------------- the run

def environment(device: str) -> dict:
    import torch
    import transformers

    env = {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__,
           "platform": platform.platform()}
    try:
        import lm_eval

        env["lm_eval"] = getattr(lm_eval, "__version__", "?")
    except ImportError:
        env["lm_eval"] = None
    for dist in ("accelerate", "tokenizers", "pyarrow", "gguf", "numpy"):
        try:
            from importlib.metadata import version

            env[dist] = version(dist)
        except Exception:  # noqa: BLE001
            env[dist] = None
    if device.startswith("cuda"):
        p = torch.cuda.get_device_properties(0)
        env.update(gpu=torch.cuda.get_device_name(0), gpu_memory_gib=round(p.total_memory / 2**30, 1),
                   sms=p.multi_processor_count, cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version(),
                   allow_tf32_matmul=torch.backends.cuda.matmul.allow_tf32)
    return env


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--report", type=Path, help="print the Markdown table of a results folder and exit")
    ap.add_argument("--tokenizer", type=Path, help="with --report: a SmolLM2 folder, to find the items lm-eval's logits "
                    "cache scores wrongly (cache_collisions) and report the comparison without them too")
    ap.add_argument("--prepare", type=Path, help="write the seeded subsets (--max-quizzes, --max-points) of --quizzes "
                    "and --points to this folder as quizzes.parquet / points.parquet (every column) and exit: the "
                    "device then scores every row of them (the same items)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--models", default="smollm2,smollm2-random")
    ap.add_argument("--models-dir", type=Path, default=Path("data/models"))
    ap.add_argument("--zoo", help="models.zoo JSON of the predict job (the GPU profile's entries)")
    ap.add_argument("--quizzes", type=Path, default=Path("data/families/apiquiz/quizzes.parquet"))
    ap.add_argument("--points", type=Path, default=Path("data/families/apirec/points.parquet"))
    ap.add_argument("--families", default="apiquiz,apirec")
    ap.add_argument("--max-quizzes", type=int, default=0, help="the predict job's max_items (0: every quiz)")
    ap.add_argument("--max-points", type=int, default=0, help="the predict job's max_items (0: every point)")
    ap.add_argument("--seed", type=int, default=20261122)
    ap.add_argument("--token-budget", type=int, default=65536)
    ap.add_argument("--max-candidates", type=int, default=50, help="apiquiz.inference.max_candidates")
    ap.add_argument("--candidates", type=int, default=20, help="apirec.inference.candidates")
    ap.add_argument("--dtypes", default="float32,bfloat16", help="precisions our sides run at")
    ap.add_argument("--peer-dtypes", default="float32,bfloat16", help="precisions lm-eval runs at")
    ap.add_argument("--predict-dtypes", default="bfloat16", help="precisions the predict job is timed at (the GPU "
                    "profile's inference.dtype: bfloat16)")
    ap.add_argument("--deadline-s", type=float, default=0, help="skip the steps that start after this many seconds")
    ap.add_argument("--out", type=Path, required=False)
    args = ap.parse_args(argv)
    if args.report:
        print(report(args.report, args.tokenizer, args.quizzes, args.points, args))
        return 0
    if args.prepare:
        prepare(args)
        return 0
    import pyarrow as pa
    import pyarrow.parquet as pq
    import torch

    from pipeline.models.entries import parse_zoo
    from pipeline.models.zoo import load_model
    from pipeline.models.start import start_policy

    args.out.mkdir(parents=True, exist_ok=True)
    env = environment(args.device)
    say(f"environment: {json.dumps(env)}")
    zoo = parse_zoo(json.loads(args.zoo))
    fams = args.families.split(",")
    items = {}
    if "apiquiz" in fams:
        items["apiquiz"] = apiquiz_items(args.quizzes, args.max_quizzes, args.seed, args.max_candidates, 0)
    if "apirec" in fams:
        items["apirec"] = apirec_items(args.points, args.max_points, args.seed, args.candidates)
    params = {"apiquiz": {"inference": {"fill_top_k": 50, "max_candidates": args.max_candidates,
                                        "max_items": args.max_quizzes, "min_per_stratum": 0, "rank_top_k": 20}},
              "apirec": {"inference": {"candidates": args.candidates, "max_items": args.max_points,
                                       "query_max_items": 0, "query_pool": "bm25", "query_tokens": 64}}}
    inputs = {"apiquiz": ("all", {"quizzes": args.quizzes}), "apirec": ("code", {"points": args.points})}
    say("items: " + ", ".join(f"{f} {len(v)} ({sum(len(i['fills']) for i in v)} candidates)" for f, v in items.items()))
    results: list[dict] = []
    rows: list[dict] = []

    def flush():
        (args.out / "results.json").write_text(json.dumps({"environment": env, "args": {k: str(v) for k, v in
                                                           vars(args).items() if k != "zoo"}, "zoo": args.zoo,
                                                           "runs": results}, indent=1))
        if rows:
            pq.write_table(pa.Table.from_pylist(rows), args.out / "items.parquet", compression="zstd")
        (args.out / "log.txt").write_text("\n".join(LOG) + "\n")

    def late(what: str) -> bool:
        if args.deadline_s and time.perf_counter() - START > args.deadline_s:
            say(f"SKIPPED (past --deadline-s {args.deadline_s:.0f}): {what}")
            return True
        return False

    peer_dtypes = [d for d in args.peer_dtypes.split(",") if d]
    for dtype in [d for d in args.dtypes.split(",") if d]:
        for name in args.models.split(","):
            if late(f"{name} {dtype}"):
                continue
            entry = zoo[name]
            (loaded, load_s, _) = timed(args.device, load_model, entry, device=args.device, dtype=dtype,
                                        models_dir=args.models_dir)
            shape = model_shape(loaded.model)
            lead = "".join(start_policy(loaded.tokenizer, "causal-lm", getattr(entry, "scoring", "pipeline")).tokens)
            lm = None
            if dtype in peer_dtypes:
                from lm_eval.models.huggingface import HFLM

                t0 = time.perf_counter()
                lm = HFLM(pretrained=str(args.models_dir / name), backend="causal", batch_size=entry.batch_size,
                          device=args.device, max_length=entry.max_length, dtype=dtype)
                peer_load_s = time.perf_counter() - t0
            say(f"{name} {dtype}: loaded in {load_s:.1f} s (lm-eval {'%.1f s' % peer_load_s if lm else 'not run'}); "
                f"{shape}; start token {lead!r}")
            # warm-up on a few items of each family, both sides (kernels, cuBLAS handles, allocator)
            for fam, its in items.items():
                warm, _ = run_ours(loaded, args.token_budget, fam, [dict(i) for i in its[:16]])
                if lm is not None:
                    run_peer(lm, peer_requests(lead, warm), warm)
            for fam, its in items.items():
                if late(f"{name} {dtype} {fam}"):
                    continue
                subset, inp = inputs[fam]
                run = {"model": name, "dtype": dtype, "family": fam, "subset": subset, "device": args.device,
                       "batch_size": entry.batch_size, "token_budget": args.token_budget,
                       "max_length": entry.max_length, "shape": shape, "start_token": lead}
                pred = None
                if dtype in args.predict_dtypes.split(","):
                    pred, run["predict_s"], run["predict_peak_gib"] = timed(
                        args.device, run_predict, fam, subset, inp, params[fam], loaded, args.seed, args.token_budget)
                    say(f"{name} {dtype} {fam}: predict job {run['predict_s']:.2f} s, {pred.num_rows} rows")
                (planned, ours), run["ours_s"], run["ours_peak_gib"] = timed(
                    args.device, run_ours, loaded, args.token_budget, fam, [dict(i) for i in its])
                lengths = [len(job[0]) for _, p in planned for job in p.jobs]
                run.update(items=len(planned), items_too_long=len(its) - len(planned), candidates=len(lengths),
                           tokens=sum(lengths), flops=forward_flops(shape, lengths),
                           peak_tflops=PEAK_TFLOPS.get(dtype))
                say(f"{name} {dtype} {fam}: ours {run['ours_s']:.2f} s, {run['items']} items, {run['candidates']} "
                    f"candidates, {run['tokens']} tokens")
                peer = None
                if lm is not None and not late(f"lm-eval {name} {dtype} {fam}"):
                    reqs = peer_requests(lead, planned)
                    peer, run["peer_s"], run["peer_peak_gib"] = timed(args.device, run_peer, lm, reqs, planned)
                    diffs = [abs(a - b) for so, sp in zip(ours, peer) for a, b in zip(so, sp)]
                    run.update(max_abs_diff=max(diffs), equal_1e4=sum(d <= 1e-4 for d in diffs),
                               ratio=run["peer_s"] / run["ours_s"])
                    say(f"{name} {dtype} {fam}: lm-eval {run['peer_s']:.2f} s ({run['ratio']:.2f}x ours); max |diff| "
                        f"{run['max_abs_diff']:.3g}, {run['equal_1e4']}/{len(diffs)} within 1e-4")
                pred_rank = {}
                if pred is not None:
                    key, proto = ("quiz_id", "protocol") if fam == "apiquiz" else ("point_id", "ranker")
                    want = "rank" if fam == "apiquiz" else "rerank_ngram"
                    for r in pred.select([key, proto, "gold_rank", "status"]).to_pylist():
                        if r[proto] == want:
                            pred_rank[r[key]] = r["gold_rank"] if r["status"] == "ok" else -1
                same = 0
                for k, (it, _) in enumerate(planned):
                    ro = rank(ours[k], fam, it)
                    rp = rank(peer[k], fam, it) if peer is not None else None
                    same += peer is not None and ro == rp
                    rows.append({"model": name, "dtype": dtype, "family": fam, "subset": subset,
                                 "language": it["language"], "item": it["id"], "n_candidates": len(it["fills"]),
                                 "gold_in_pool": gold_index(fam, it) is not None, "rank_ours": ro,
                                 "rank_predict": pred_rank.get(it["id"]), "rank_peer": rp,
                                 "max_abs_diff": max(abs(a - b) for a, b in zip(ours[k], peer[k])) if peer else None,
                                 "gold_ours": ours[k][gold_index(fam, it)] if gold_index(fam, it) is not None else None})
                if peer is not None:
                    run["gold_rank_equal"] = same
                if pred is not None:
                    run["predict_rank_equal_ours"] = sum(
                        pred_rank.get(it["id"]) == rank(ours[k], fam, it) for k, (it, _) in enumerate(planned))
                results.append(run)
                flush()
            del loaded, lm
            if args.device.startswith("cuda"):
                torch.cuda.empty_cache()
    flush()
    say("done")
    flush()
    return 0


def prepare(args) -> None:
    """The predict jobs' seeded subsets, every column kept, for a machine that should carry only those rows."""
    import pyarrow as pa

    from pipeline.families.apiquiz import schemas as quiz_schemas
    from pipeline.families.apirec import schemas as rec_schemas
    from pipeline.io import read_parquet, write_parquet
    from pipeline.runtime.batching import select_shard

    args.prepare.mkdir(parents=True, exist_ok=True)
    t = read_parquet(args.quizzes, quiz_schemas.QUIZZES)
    strata = list(zip(t.column("setting").to_pylist(), t.column("mask_position").to_pylist()))
    keep = select_shard(t.column("quiz_id").to_pylist(), 0, 1, args.max_quizzes, args.seed, strata, 0)
    q = t.filter(pa.array(keep, pa.bool_()))
    write_parquet(q, args.prepare / "quizzes.parquet", quiz_schemas.QUIZZES)
    t = read_parquet(args.points, rec_schemas.POINTS)
    p = t.filter(pa.array(select_shard(t.column("point_id").to_pylist(), 0, 1, args.max_points, args.seed), pa.bool_()))
    write_parquet(p, args.prepare / "points.parquet", rec_schemas.POINTS)
    print(f"{q.num_rows} of {len(keep)} quizzes, {p.num_rows} of {t.num_rows} points -> {args.prepare}")


# ---------------------------------------------------------------- the table (here, from the files that came back)

def cache_collisions(family: str, items: list[dict], tok, lead: str, scoring: str) -> set[str]:
    """Items with a request whose lm-eval logits-cache key (context + continuation[:-1] tokens) is another
    request's with a different context length. lm-eval 0.4.13 (`logits_cache=True`, its default) runs such
    requests once and cuts the logits to the first one's continuation length before handing them to the others
    (`HFLM._loglikelihood_tokens`, `Collator.get_cache`), so the others are scored at the wrong positions."""
    import collections

    from pipeline.runtime.encode import lm_eval_job

    lead = lead if scoring == "pipeline" else ""
    keys = collections.defaultdict(set)
    for it in items:
        for f in it["fills"]:
            ids, start = lm_eval_job(tok, lead + it["prefix"], f + it["suffix"])
            keys[tuple(ids[:-1])].add((it["id"], start))
    return {i for group in keys.values() if len({s for _, s in group}) > 1 for i, _ in group}


def report(folder: Path, tokenizer: Path | None = None, quizzes: Path | None = None, points: Path | None = None,
           args=None) -> str:
    import pyarrow.parquet as pq

    from pipeline.metrics.bootstrap import poisson_bootstrap_mean

    res = json.loads((folder / "results.json").read_text())
    items = pq.read_table(folder / "items.parquet").to_pylist()
    env = res["environment"]
    out = [f"Machine: {env.get('gpu')} ({env.get('gpu_memory_gib')} GiB, {env.get('sms')} SMs), CUDA {env.get('cuda')}; "
           f"Python {env['python']}, torch {env['torch']}, transformers {env['transformers']}, lm_eval {env['lm_eval']}, "
           f"accelerate {env.get('accelerate')}, tokenizers {env.get('tokenizers')}", ""]
    out.append("| family / subset | model | dtype | n | P@1 / SR@1 [95% CI] | predict job s | ours s | lm-eval s | "
               "lm-eval / ours | items/s ours / lm-eval | MFU ours / lm-eval | max abs diff | within 1e-4 | "
               "same gold rank |")
    out.append("|" + " --- |" * 14)
    for run in res["runs"]:
        fam, langs = run["family"], (["python"] if run["family"] == "apiquiz" else ["python", "java", None])
        for lang in langs:
            sel = [r for r in items if r["model"] == run["model"] and r["dtype"] == run["dtype"]
                   and r["family"] == fam and (lang is None or r["language"] == lang)]
            if not sel:
                continue
            hits = [1.0 if r["rank_ours"] == 1 else 0.0 for r in sel]
            ci = poisson_bootstrap_mean([r["item"] for r in sel], hits, 1000, 20261122)
            p1 = f"{100 * sum(hits) / len(hits):.1f} [{100 * ci.lo:.1f}, {100 * ci.hi:.1f}]"
            with_peer = [r for r in sel if r["rank_peer"] is not None or r["max_abs_diff"] is not None]
            same = sum(r["rank_ours"] == r["rank_peer"] for r in with_peer)
            label = f"{fam}/{run['subset']}" + ("" if fam == "apiquiz" else f" ({lang or 'all'})")
            whole = lang is None or fam == "apiquiz"
            secs = lambda k: f"{run[k]:.1f}" if whole and k in run else "-"  # noqa: E731
            peak = run["peak_tflops"] * 1e12
            mfu = (f"{100 * run['flops'] / run['ours_s'] / peak:.1f}% / "
                   f"{100 * run['flops'] / run['peer_s'] / peak:.1f}%") if whole and "peer_s" in run else "-"
            ips = (f"{run['items'] / run['ours_s']:.1f} / {run['items'] / run['peer_s']:.1f}"
                   if whole and "peer_s" in run else "-")
            mad = max((r["max_abs_diff"] for r in with_peer if r["max_abs_diff"] is not None), default=None)
            ratio = f"{run['ratio']:.2f}x" if whole and "ratio" in run else "-"
            mad_s = "-" if mad is None else f"{mad:.1e}"
            within = f"{run['equal_1e4']}/{run['candidates']}" if whole and "equal_1e4" in run else "-"
            same_s = f"{same}/{len(with_peer)} ({100 * same / len(with_peer):.2f}%)" if with_peer else "-"
            out.append(f"| {label} | {run['model']} | {run['dtype']} | {len(sel)} | {p1} | {secs('predict_s')} | "
                       f"{secs('ours_s')} | {secs('peer_s')} | {ratio} | {ips} | {mfu} | {mad_s} | {within} | {same_s} |")
    if tokenizer is not None:
        from transformers import AutoTokenizer

        from pipeline.families.apirec.infer import fit_context

        tok = AutoTokenizer.from_pretrained(str(tokenizer))
        fam_items = {"apiquiz": apiquiz_items(quizzes, 0, 20261122, 50, 0),
                     "apirec": apirec_items(points, 0, 20261122, 20)}
        for it in fam_items["apirec"]:
            it["prefix"] = fit_context(tok, it["context"], tuple(it["fills"]), 512)
        scoring = "lm-eval" if '"scoring": "lm-eval"' in res.get("zoo", "") else "pipeline"
        out += ["", f"Without the items lm-eval's logits cache scores wrongly (cache_collisions; scoring {scoring}):", ""]
        for run in res["runs"]:
            if "peer_s" not in run:
                continue
            sel = [r for r in items if r["model"] == run["model"] and r["dtype"] == run["dtype"]
                   and r["family"] == run["family"]]
            sent = {r["item"] for r in sel}  # the items lm-eval was given (the left-out ones never were)
            bad = cache_collisions(run["family"], [it for it in fam_items[run["family"]] if it["id"] in sent], tok,
                                   run["start_token"], scoring)
            rest = [r for r in sel if r["item"] not in bad]
            out.append(f"- {run['family']} {run['model']} {run['dtype']}: {len(sel) - len(rest)} of {len(sel)} items "
                       f"collide; the other {len(rest)}: max abs diff {max(r['max_abs_diff'] for r in rest):.1e}, "
                       f"{sum(r['max_abs_diff'] <= 1e-4 for r in rest)} items with every candidate within 1e-4, "
                       f"same gold rank {sum(r['rank_ours'] == r['rank_peer'] for r in rest)}/{len(rest)}; the "
                       f"colliding ones: same gold rank {sum(r['rank_ours'] == r['rank_peer'] for r in sel if r['item'] in bad)}"
                       f"/{len(sel) - len(rest)}")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
