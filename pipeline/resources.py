"""What each job asks a scheduler for: the Snakemake `resources:` (`gpu`, `mem_mb`, `runtime` in minutes) of
every rule, from params.yaml (a cluster job gets only what it asks for). A local run ignores them except `gpu`
under `--resources gpu=1`; a cluster executor (profiles/slurm/) turns them into its request. Torch-free and
cheap: the Snakefile calls these for every job.

- `gpu`: 1 only on the jobs that run on models.device (train_model, evaluate_model, predict) when that
  device is a GPU: `cuda`/`cuda:N`; `auto` is a GPU only on a local run on a machine that shows one (a
  cluster job gets none unless asked: name `cuda` there). Every other job: 0.
- `mem_mb`: the measured floor of the job's kind (peak RSS on `.test`: a torch job 739 MB, any other
  Python stage <= 517 MB in an earlier `.test` build, docs/cluster.md; GNU time around each job of
  a later `.test` build: predict 623 MB (max of 33 jobs), train_model 513, evaluate_model 481, other
  stages <= 427, the corpus stages <= 136) plus what the params add: pool workers,
  the model's weights (its card once built, else an estimate from params.yaml), the activations of one
  batch (items x max_length, under the token budget), the optimizer state when training, the host side
  of a CUDA context; times MEM_MARGIN, rounded up to 256 MB.
- `runtime`: CPU seconds measured on `.test` scaled by what drives them (corpus files, training tokens x
  parameters, items x parameters), divided by the threads and the device's speed-up, times
  RUNTIME_MARGIN; never under RUNTIME_FLOOR minutes nor over RUNTIME_CAP (shard a longer job).

All are estimates, made to be safe rather than tight: override any with Snakemake's
`--set-resources RULE:mem_mb=N` (or `set-resources:` in a profile) and `--default-resources`.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Mapping

# Floors (MB): the larger peak RSS of the two .test measurements in the docstring.
TORCH_MB = 740          # a job that imports torch and holds a tiny model (predict: 739 MB)
PYTHON_MB = 520         # any other stage (all <= 517 MB)
WORKER_MB = 300         # one more pool worker process (pyarrow, libcst / tree-sitter loaded again)
CUDA_HOST_MB = 2500     # host memory a CUDA context and torch's GPU kernels take
MEM_MARGIN = 1.5
MEM_STEP = 256

RUNTIME_FLOOR = 10      # minutes: below this a request only costs the scheduler
RUNTIME_MARGIN = 3.0
RUNTIME_CAP = 2880      # minutes (2 days): partitions refuse longer requests; a longer job wants more shards
CPU_FLOPS = 5e9         # dense float32 FLOP/s per CPU thread torch reaches on small matrices (conservative)
# A GPU job, in the units of the estimates below: a RoBERTa-base-sized masked LM ranked 33 items/s in
# float32 on an H100 (docs/gpu_validation.md: 137 items/s in float16, 4.1x), about 8e13 "FLOP/s" in these units; 2x margin (then RUNTIME_MARGIN).
GPU_FLOPS = 4e13
SECONDS_PER_FILE = 0.05  # a corpus stage per file and worker (scan, extract, identifiers, labelling, .test: <= 0.02)
FALLBACK_PARAMETERS = 500_000_000  # an external model before its card exists (planning): the zoo's largest class

GPU_RULES = ("train_model", "evaluate_model", "predict")


def _bytes_per_value(dtype: str | None) -> int:
    return 2 if dtype in ("float16", "bfloat16") else 4


def _round_mb(mb: float) -> int:
    return int(math.ceil(mb * MEM_MARGIN / MEM_STEP) * MEM_STEP)


def _minutes(seconds: float) -> int:
    return min(RUNTIME_CAP, max(RUNTIME_FLOOR, int(math.ceil(seconds * RUNTIME_MARGIN / 60))))


def gpu_visible_here() -> bool:
    """A GPU on this machine, without importing torch (NVIDIA's driver lists its GPUs under /proc)."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    gpus = Path("/proc/driver/nvidia/gpus")
    return gpus.is_dir() and any(gpus.iterdir())


def device_is_gpu(config: Mapping, local: bool) -> bool:
    """Whether the jobs that run on models.device run on a GPU: `cuda`/`cuda:N` always; `auto` when
    the run is local and this machine has one (a cluster job gets no GPU it did not ask for)."""
    device = config["models"]["device"]
    return device.startswith("cuda") or (device == "auto" and local and gpu_visible_here())


def gpus(config: Mapping, local: bool) -> int:
    return int(device_is_gpu(config, local))


# ---- model size -------------------------------------------------------------------------------------

def _trained_shape(config: Mapping) -> dict:
    m = config["training"]["model"]
    vocab = config["training"]["tokenizer"]["vocab_size"]
    h, layers, inter = m["hidden_size"], m["layers"], m["intermediate_size"]
    # embeddings + per layer attention (4 h^2) and MLP (2 h i); seq2seq: a decoder as deep again (x2)
    return {"parameters": vocab * h + layers * (4 * h * h + 2 * h * inter), "hidden_size": h, "layers": layers,
            "vocab_size": vocab}


MODELS_DIR = "data/models"  # where built models' cards are read (tests point it at an empty folder: tests/conftest.py)


def model_shape(config: Mapping, model: str, models_dir: str | None = None) -> dict:
    """parameters / hidden_size / layers / vocab_size of a zoo model: its card when built, else an estimate.
    A pipeline-trained model's card (or its twin's) counts only while it has the width and depth params.yaml
    `training.model` asks for: a card of another shape is a model the run will retrain, not the one it sizes."""
    models_dir = MODELS_DIR if models_dir is None else models_dir
    entries = {e["name"]: e for e in config["models"]["zoo"]}
    source = entries[model]["source"]
    trained = source.startswith("trained:") or (
        source.startswith("random:") and entries.get(source.split(":", 1)[1], {}).get("source", "").startswith("trained:"))
    card = Path(models_dir) / model / "card.json"
    if card.is_file():
        try:
            data = json.loads(card.read_text())
            shape = {k: data.get(k) or 0 for k in ("parameters", "hidden_size", "layers", "vocab_size")}
            wanted = _trained_shape(config) if trained else shape
            if (shape["hidden_size"], shape["layers"]) == (wanted["hidden_size"], wanted["layers"]):
                return shape
        except (OSError, ValueError, KeyError, TypeError):
            pass
    if source.startswith("random:"):
        return model_shape(config, source.split(":", 1)[1], models_dir)
    if source.startswith("trained:"):
        shape = _trained_shape(config)
        return {**shape, "parameters": shape["parameters"] * (2 if source == "trained:seq2seq" else 1)}
    return {"parameters": FALLBACK_PARAMETERS, "hidden_size": 1024, "layers": 24, "vocab_size": 51200}


def _entry(config: Mapping, model: str) -> dict:
    """The zoo entry a job of `model` runs with: a twin's length and batch are its model's; a max_length or
    batch_size left out is filled as planning fills it (pipeline.models.entries.fill_sizes)."""
    from pipeline.models.entries import fill_sizes

    entries = {e["name"]: e for e in config["models"]["zoo"]}
    entry = dict(entries[model])
    base = entries.get(entry["source"].split(":", 1)[1], {}) if entry["source"].startswith("random:") else entry
    try:
        base = fill_sizes(base, config) if base else base
    except ValueError:
        pass  # sized by the callers' defaults; planning (parse_zoo) says what is wrong
    return {**base, **entry}


# ---- the three kinds of torch jobs ----------------------------------------------------------------

def _batch_activations_mb(tokens: int, shape: dict, keep_layers: bool) -> float:
    """One batch's activations (float32): hidden states (all layers when features are pooled), the
    intermediate MLP block and the logits over the vocabulary."""
    h, layers, vocab = shape["hidden_size"] or 768, shape["layers"] or 12, shape["vocab_size"] or 50000
    values = tokens * (h * ((layers + 1) if keep_layers else 2) + 4 * h + vocab)
    return values * 4 / 2**20


def predict_mem_mb(config: Mapping, model: str, local: bool) -> int:
    entry, shape = _entry(config, model), model_shape(config, model)
    dtype = entry.get("dtype") or config["inference"].get("dtype", "float32")
    weights = shape["parameters"] * _bytes_per_value(dtype) / 2**20
    tokens = min(config["inference"]["token_budget"], entry.get("batch_size", 16) * entry.get("max_length", 512))
    if device_is_gpu(config, local):  # weights pass through the host once; activations live on the GPU
        return _round_mb(TORCH_MB + CUDA_HOST_MB + weights)
    return _round_mb(TORCH_MB + weights + _batch_activations_mb(tokens, shape, keep_layers=True))


def train_mem_mb(config: Mapping, model: str, local: bool) -> int:
    shape, m = model_shape(config, model), config["training"]["model"]
    state = shape["parameters"] * 4 * 4 / 2**20  # weights, gradients, Adam's two moments (float32)
    tokens = m["batch_size"] * m["seq_length"]
    if device_is_gpu(config, local):
        return _round_mb(TORCH_MB + CUDA_HOST_MB + state / 4)
    # training keeps every layer's activations for the backward pass (about 16 values per hidden unit)
    return _round_mb(TORCH_MB + state + 16 * _batch_activations_mb(tokens, shape, keep_layers=True))


def evaluate_mem_mb(config: Mapping, model: str, local: bool) -> int:
    shape, m = model_shape(config, model), config["training"]["model"]
    weights = shape["parameters"] * 4 / 2**20
    if device_is_gpu(config, local):
        return _round_mb(TORCH_MB + CUDA_HOST_MB + weights)
    return _round_mb(TORCH_MB + weights + _batch_activations_mb(m["batch_size"] * m["seq_length"], shape, False))


def _torch_seconds(flops: float, threads: int, gpu: bool) -> float:
    return flops / (GPU_FLOPS if gpu else CPU_FLOPS * max(1, threads))


def train_runtime(config: Mapping, model: str, local: bool) -> int:
    m, shape = config["training"]["model"], model_shape(config, model)
    tokens = m["steps"] * m["batch_size"] * m["seq_length"]
    return _minutes(_torch_seconds(6 * shape["parameters"] * tokens, config["training"]["threads"],
                                   device_is_gpu(config, local)))


def evaluate_runtime(config: Mapping, model: str, local: bool) -> int:
    ev, m, shape = config["training"]["evaluation"], config["training"]["model"], model_shape(config, model)
    tokens = ev["max_blocks"] * m["seq_length"] if ev.get("max_blocks") else 10_000_000
    return _minutes(_torch_seconds(2 * shape["parameters"] * tokens, config["training"]["threads"],
                                   device_is_gpu(config, local)))


PASSES_PER_ITEM = 20  # forward passes of max_length per item (the 20 candidates the GPU figure above ranks)


def _rows(paths) -> int | None:
    """Rows of the smallest Parquet input once it exists (its footer only; a family's items table, not
    the per-token or per-edge tables beside it), else None."""
    found = [p for p in map(str, paths) if p.endswith(".parquet") and os.path.isfile(p)]
    if not found:
        return None
    import pyarrow.parquet as pq

    return min(pq.read_metadata(p).num_rows for p in found)


def predict_runtime(config: Mapping, model: str, inputs, max_items: int, local: bool) -> int:
    """Items in this shard (the family's max_items, or its input's rows once built; 10,000 before) x passes x
    2 x parameters x max_length."""
    entry, shape = _entry(config, model), model_shape(config, model)
    rows = _rows(inputs)
    items = min(max_items or rows or 10_000, rows or max_items or 10_000)
    per_shard = math.ceil(items / config["inference"]["shards"])
    flops = 2 * shape["parameters"] * entry.get("max_length", 512) * PASSES_PER_ITEM * per_shard
    return _minutes(_torch_seconds(flops, config["inference"]["threads"], device_is_gpu(config, local)))


# ---- CPU stages --------------------------------------------------------------------------------------

def stage_mem_mb(workers: int = 1) -> int:
    """A Python stage and its process pool (workers - 1 more processes)."""
    return _round_mb(PYTHON_MB + WORKER_MB * max(0, workers - 1))


def corpus_files(paths) -> int | None:
    """Files the corpus stage reads: the sources' records (`files`) or the manifest's rows, once built."""
    total, known = 0, False
    for p in map(str, paths):
        if p.endswith(".json") and os.path.isfile(p):
            try:
                total += int(json.loads(Path(p).read_text()).get("files") or 0)
                known = True
            except (OSError, ValueError):
                pass
    if known:
        return total
    return _rows([p for p in map(str, paths) if p.endswith("manifest.parquet")])


def stage_runtime(paths, workers: int = 1, fallback_files: int = 100_000) -> int:
    files = corpus_files(paths)
    return _minutes((fallback_files if files is None else files) * SECONDS_PER_FILE / max(1, workers))
