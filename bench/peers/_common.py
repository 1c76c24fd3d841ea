"""What the peer benches share (bench/peers/*.py): where the peers venv is, how to say it is missing, and how
one side runs in its own process (one thread, CPU seconds measured inside it).

The peers live in their own venv, never the pipeline's: by default `.peers/venv` in the repository root
(git-ignored), made from the root with `python3.11 -m venv .peers/venv && .peers/venv/bin/pip install -r
bench/peers/requirements.txt` (or `--peers-python` / $PEERS_PYTHON names another interpreter).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_PEERS_PYTHON = str(REPO / ".peers" / "venv" / "bin" / "python")
PEERS_PYTHON = os.environ.get("PEERS_PYTHON", DEFAULT_PEERS_PYTHON)
MAKE_VENV = ("`make peers`, or from the repository root: python3.11 -m venv .peers/venv && "
             ".peers/venv/bin/pip install -r bench/peers/requirements.txt")
# one thread for every library a side may use (torch, BLAS, numba, DuckDB is set by the side itself)
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1",
              "TOKENIZERS_PARALLELISM": "false", "RAYON_NUM_THREADS": "1"}


def make_peers_venv(venv: Path = REPO / ".peers" / "venv", log=print) -> str:
    """The peers venv at `venv` (git-ignored `.peers/venv` by default), made when missing or incomplete: a
    venv of this interpreter's Python with bench/peers/requirements.txt installed by pip; its python's path."""
    python = venv / "bin" / "python"
    modules = ("lm_eval", "accelerate", "minicons", "rank_bm25", "pytrec_eval", "ranx", "ir_measures")
    if peers_missing(str(python), modules) is None:
        return str(python)
    if not python.exists():
        log(f"making the peers venv at {venv} (Python {sys.version.split()[0]})")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    log(f"installing bench/peers/requirements.txt into {venv}")
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-r",
                    str(REPO / "bench" / "peers" / "requirements.txt")], check=True)
    missing = peers_missing(str(python), modules)
    if missing:
        raise SystemExit(missing)
    return str(python)


def project_dir(path: str | None) -> Path:
    """The project folder whose build the bench reads (read-only): `--project`, else this checkout."""
    folder = Path(path).resolve() if path else REPO
    if not folder.is_dir():
        raise SystemExit(f"no project folder {folder}")
    return folder


def peers_missing(python: str, modules: tuple[str, ...]) -> str | None:
    """None when `python` imports every module, else a one-line reason with what to do."""
    if not Path(python).exists():
        return f"no peers interpreter at {python}: make the venv ({MAKE_VENV}) or pass --peers-python / set PEERS_PYTHON"
    probe = subprocess.run([python, "-c", "import " + ", ".join(modules)], capture_output=True, text=True)
    if probe.returncode:
        last = (probe.stderr.strip().splitlines() or ["?"])[-1]
        return f"the peers venv at {python} cannot import {', '.join(modules)} ({last}): " \
               f"{Path(python).parent}/pip install -r bench/peers/requirements.txt"
    return None


def skip_or_fail(reason: str, explicit: bool) -> int:
    """A missing peers venv: one line and exit 0 when the default was used (`python -m bench` runs every
    bench), an error saying what to do when the caller named the interpreter."""
    if explicit:
        raise SystemExit(reason)
    print(f"skipped: {reason}")
    return 0


def run_side(python: str, script: Path, side: str, args: list[str]) -> dict:
    """Run `script --side side args` under `python` in its own process, one thread; its last stdout line is JSON."""
    cmd = [python, str(script), "--side", side, *args]
    env = {**os.environ, "PYTHONPATH": str(REPO), **ONE_THREAD}
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
    if res.returncode:
        raise SystemExit(f"the {side} side failed ({' '.join(cmd)}):\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as v

    try:
        return f"{dist} {v(dist)}"
    except PackageNotFoundError:
        return dist


def as_script() -> None:
    """A bench run as a script by the peers interpreter: the repository on the path."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))


def ours_ranking(args, family: str, **entry) -> dict:
    """Our side of a candidate-ranking bench (peers.causal, peers.pll): the model folder `args.model` loaded as
    a zoo `path:` entry of `family` (one thread), every quiz of `args.requests` ({prefix, fills, suffix})
    planned and scored by the runtime; CPU seconds of the scoring, the load apart."""
    import time

    import torch

    torch.set_num_threads(1)
    t0 = time.process_time()
    from pipeline.models.entries import parse_zoo
    from pipeline.models.zoo import load_model
    from pipeline.runtime.plan import plan_candidates
    from pipeline.runtime.scorer import Scorer, score_plans

    zoo_entry = parse_zoo([{"name": "bench", "source": f"path:{args.model}", "family": family,
                            "max_length": args.max_length, "batch_size": args.batch_size, **entry}])["bench"]
    loaded = load_model(zoo_entry, device="cpu")
    quizzes = json.loads(Path(args.requests).read_text())
    load_s = time.process_time() - t0
    t0 = time.process_time()
    scorer = Scorer(loaded, args.token_budget)
    plans = [plan_candidates(scorer, family, q["prefix"], q["fills"], q["suffix"]) for q in quizzes]
    if any(p is None for p in plans):
        raise SystemExit("a quiz is longer than --max-length: raise it or drop the quiz")
    scores = [list(r.logprob) for r in score_plans(scorer, family, plans, no_context=False)]
    return {"scores": scores, "cpu_s": time.process_time() - t0, "load_cpu_s": load_s, "tool": "ours",
            "torch": torch.__version__}
