"""CPU seconds per scored quiz of causal LMs: SmolLM2-135M beside Gemma-3-270M, and where the time goes.

`python -m bench.speed.causal_cost --model NAME=FOLDER [--model ...] [--quizzes 20] [--candidates 20] [--threads 1]
[--full-quizzes 5] [--json out.json]`

Quizzes are synthetic and deterministic: each `os.path.<name>(` call in a few standard-library modules' source (read as
text, never imported for this) is a quiz: the 600 characters before it are the context, the 80 after it the suffix, its
name the gold among `--candidates` os.path functions (the first ones in a fixed list, the gold included), scored as
apiquiz scores a causal LM (`plan_candidates` + `score_plans`, the no-context pass included). CPU seconds are the
process's user+system time (`resource.getrusage`, every torch thread), so a loaded machine inflates them less than
wall time. Per model: the fast path (the LM head on the scored positions only) and the full-logits path
(`head_only=False`: the head over every position, the vocabulary's cost), and within the fast path the CPU-s spent
in the head (a timing wrapper around it) versus the body (the rest).
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import sys
import sysconfig
from pathlib import Path

OS_PATH = ["join", "exists", "dirname", "basename", "abspath", "isdir", "isfile", "splitext", "normpath", "split",
           "expanduser", "getsize", "realpath", "relpath", "islink", "isabs", "normcase", "getmtime", "commonpath",
           "lexists", "samefile", "expandvars", "splitdrive", "getatime", "getctime", "ismount", "commonprefix"]
MODULES = ["shutil", "tempfile", "glob", "zipfile", "tarfile", "site", "posixpath", "pydoc", "pathlib",
           "importlib/util", "logging/handlers", "distutils/util", "sysconfig", "py_compile", "compileall", "mimetypes",
           "netrc", "trace", "pdb", "cgitb", "platform", "runpy", "webbrowser", "inspect", "linecache", "venv/__init__",
           "ensurepip/__init__", "filecmp", "uuid", "ctypes/util"]


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def quizzes(n: int, candidates: int) -> list[tuple[str, list[str], str]]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    out = []
    for module in MODULES:
        path = stdlib / f"{module}.py"
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in re.finditer(r"os\.path\.(\w+)\(", text):
            if m.group(1) not in OS_PATH:
                continue
            start = m.start(1)
            fills = [m.group(1)] + [f for f in OS_PATH if f != m.group(1)][: candidates - 1]
            out.append((text[max(0, start - 600):start], fills, text[m.end(1):m.end(1) + 80]))
            if len(out) == n:
                return out
            break  # one quiz per module: contexts differ
    return out


class Timed:
    """Wraps the LM head: accumulates the process CPU-s spent in it."""

    def __init__(self, head):
        self.head, self.seconds, self.rows = head, 0.0, 0

    def __call__(self, hidden):
        t = cpu()
        out = self.head(hidden)
        self.seconds += cpu() - t
        self.rows += hidden.shape[0]
        return out


def measure(name: str, folder: str, items, threads: int, full_quizzes: int) -> dict:
    import torch

    from pipeline.models.entries import parse_zoo
    from pipeline.models.zoo import load_model
    from pipeline.runtime.plan import plan_candidates
    from pipeline.runtime.scorer import Scorer, score_plans

    torch.set_num_threads(threads)
    entry = parse_zoo([{"name": name, "source": f"path:{folder}", "family": "causal-lm", "max_length": 256,
                        "batch_size": 16}])[name]
    t = cpu()
    lm = load_model(entry, device="cpu")
    load_s = cpu() - t
    row = {"model": name, "parameters": sum(p.numel() for p in lm.model.parameters()),
           "vocab": lm.model.config.vocab_size, "load_cpu_s": round(load_s, 1), "quizzes": len(items)}
    for label, head_only, some in (("head_at_scored_positions", True, items),
                                   ("full_logits", False, items[:full_quizzes])):
        if not some:
            continue
        scorer = Scorer(lm, 4096, head_only=head_only)
        timed = None
        if scorer._causal is not None:
            timed = Timed(scorer._causal[1])
            scorer._causal = (scorer._causal[0], timed)
        t = cpu()
        plans = [plan_candidates(scorer, "causal-lm", p, f, s) for p, f, s in some]
        results = score_plans(scorer, "causal-lm", plans)
        spent = cpu() - t
        tokens = sum(len(ids) - start for p in plans for ids, start in p.jobs)
        top1 = sum(max(range(len(r.logprob)), key=r.logprob.__getitem__) == 0 for r in results)
        row[label] = {"quizzes": len(some), "cpu_s": round(spent, 1), "cpu_s_per_quiz": round(spent / len(some), 2),
                      "scored_tokens": tokens, "top1_in_context": top1}
        if timed is not None:
            row[label]["head_cpu_s"] = round(timed.seconds, 1)
            row[label]["head_rows"] = timed.rows
            row[label]["body_and_rest_cpu_s"] = round(spent - timed.seconds, 1)
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.speed.causal_cost", description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", action="append", required=True, help="NAME=FOLDER (a converted causal LM folder)")
    ap.add_argument("--quizzes", type=int, default=20)
    ap.add_argument("--candidates", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--full-quizzes", type=int, default=5, help="quizzes of the full-logits run (the first ones)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    items = quizzes(args.quizzes, args.candidates)
    rows = [measure(*m.split("=", 1), items, args.threads, args.full_quizzes) for m in args.model]
    text = json.dumps({"quizzes": len(items), "candidates": args.candidates, "threads": args.threads,
                       "models": rows}, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
