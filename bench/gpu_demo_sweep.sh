#!/usr/bin/env bash
# Variants of the CPU demo's recipe (cpu_demo) at several seeds, side by side on one GPU (docs/results.md,
# issue 25). A CPU run of the demo takes 12-23 minutes on 2 cores; on one H200 twenty take minutes
# together, so a change to the recipe can be ranked by its median over seeds before the CPU runs that
# measure it. The GPU decodes in bf16 where the CPU runs float32: the figures rank variants, they are not
# the demo's figures.
#   bash bench/gpu_demo_sweep.sh          # RUNS=... SEEDS="0 1 2" EXTRA="run.eval_tasks=200" to change
#   VARIANTS="base|;shaped|env.shaping_rewards=[argument_match]" bash bench/gpu_demo_sweep.sh
set -uo pipefail
RUNS=$(realpath -m "${RUNS:-runs/gpu_demo_sweep}")
SEEDS=${SEEDS:-0 1 2}
# name|overrides, separated by ";" (overrides: space-separated `kit train` overrides without spaces).
VARIANTS=${VARIANTS:-"base|;shaped|env.shaping_rewards=[argument_match]"}
EXTRA=${EXTRA:-}  # overrides for every variant
KV_BYTES=${KV_BYTES:-1000000000}  # 16 episodes a step of <= 2048 tokens
mkdir -p "$RUNS"
source "$(dirname "$0")/gpu_jobs.sh"
GPU_SHARE=${DEMO_GPU_SHARE:-0.03}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}  # tens of trainers share the host's cores
port=8500
first=1
IFS=';' read -ra variants <<< "$VARIANTS"
read -ra extra <<< "$EXTRA"
for variant in "${variants[@]}"; do
  name=${variant%%|*}
  read -ra overrides <<< "${variant#*|}"
  for seed in $SEEDS; do
    out="$RUNS/${name}_seed$seed"
    python -m kit train --config cpu_demo run.seed="$seed" run.output_dir="$out" serve.port=$port \
      serve.gpu_memory_utilization="$GPU_SHARE" "serve.extra_args=[--kv-cache-memory-bytes, '$KV_BYTES']" \
      "${extra[@]}" "${overrides[@]}" > "$out.log" 2>&1 &
    # The first job builds the demo model into the kit's cache; the others reuse it.
    if [ $first = 1 ]; then
      started_up "$out/server.log" || echo "$name seed $seed: its server did not start; see its log" >&2
      first=0
    else
      sleep 3
    fi
    port=$((port + 10))  # a server takes its port and the next (control endpoint)
  done
done
wait
echo "sweep done: $(date -u +%FT%TZ)"
python bench/summarize_runs.py "$RUNS"/*/summary.json
