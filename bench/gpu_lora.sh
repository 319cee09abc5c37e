#!/usr/bin/env bash
# LoRA against full fine-tuning on one GPU (docs/results.md, issue 26): the single_gpu recipe (server mode,
# CUDA IPC sync of merged weights) with model.lora on, at two learning-rate pairs; the full-weights arm is
# the same recipe at the same seed (bench/gpu_notebook01.sh runs it in notebook 01). Each summary.json has
# held-out success, s per step, sync seconds and the trainer's peak GPU memory.
#   bash bench/gpu_lora.sh                # RUNS=... SEED=0 KV_BYTES=... to change
set -uo pipefail
RUNS=${RUNS:-runs/gpu_lora}
SEED=${SEED:-0}
mkdir -p "$RUNS"
source "$(dirname "$0")/gpu_jobs.sh"
port=8400
# LoRA usually wants ~10x the full-weights learning rate (single_gpu: SFT 1e-4, GRPO 1e-5).
for arm in "sft1e-3_grpo1e-4 1.0e-3 1.0e-4" "sft1e-3_grpo5e-5 1.0e-3 5.0e-5"; do
  read -r name sft_lr grpo_lr <<< "$arm"
  python -m kit train --config single_gpu run.seed="$SEED" run.output_dir="$RUNS/lora_$name" \
    model.lora.enabled=true sft.args.learning_rate="$sft_lr" grpo.learning_rate="$grpo_lr" run.eval_every=0 \
    serve.port=$port "${SERVER_SHARE[@]}" \
    > "$RUNS/train_lora_$name.log" 2>&1 &
  started_up "$RUNS/lora_$name/server.log" || echo "$name: its server did not start; see its log" >&2
  port=$((port + 1))
done
wait
echo "lora runs done: $(date -u +%FT%TZ)"
