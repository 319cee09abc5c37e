#!/usr/bin/env bash
# Notebook 01 on its defaults, executed by papermill on one GPU, at seeds 0-2 side by side (docs/results.md,
# issue 25): base -> SFT -> GRPO on the single_gpu recipe, each run in its own folder with its executed
# notebook. Only what side-by-side runs need is overridden: each job's server port and a fixed KV cache.
#   bash bench/gpu_notebook01.sh          # RUNS=... SEEDS="0 1 2" KV_BYTES=... to change
set -uo pipefail
RUNS=$(realpath -m "${RUNS:-runs/gpu_notebook01}")
SEEDS=${SEEDS:-0 1 2}
mkdir -p "$RUNS"
source "$(dirname "$0")/gpu_jobs.sh"
for seed in $SEEDS; do
  overrides="[serve.port=$((8300 + seed)), serve.gpu_memory_utilization=$GPU_SHARE, 'serve.extra_args=[--kv-cache-memory-bytes, \"$KV_BYTES\"]']"
  python -m papermill notebooks/01_single_gpu_grpo.ipynb "$RUNS/01_seed$seed.ipynb" --cwd notebooks \
    -p seed "$seed" -p run_dir "$RUNS/seed$seed" -y "extra_overrides: $overrides" \
    > "$RUNS/papermill_seed$seed.log" 2>&1 &
  started_up "$RUNS/seed$seed/server.log" || echo "seed $seed: its server did not start; see its log" >&2
done
wait
echo "notebooks done: $(date -u +%FT%TZ)"
