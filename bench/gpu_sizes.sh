#!/usr/bin/env bash
# Issue 38 on one GPU, dummy weights (cost only): the shipped big recipes scaled to one GPU, the kit against
# plain TRL at 4B, and the scale table's remaining cells. Each part writes its JSON and log under $RUNS.
#   bash bench/gpu_sizes.sh                 # RUNS=runs/gpu_sizes PARTS="recipe nemotron trl scale"
#   MODEL_EXTRA="model.dtype=bfloat16" for the recipe and TRL parts where float32 master weights do not fit
#   (a 4B policy with AdamW needs ~60 GiB in float32: more than an 80 GB GPU holds beside vLLM)
set -uo pipefail
RUNS=${RUNS:-runs/gpu_sizes}
PARTS=${PARTS:-recipe nemotron trl scale}
SCALE_RUNS=${SCALE_RUNS:-4b-server-full 4b-colocate-lora 1.7b-colocate-full 8b-server-full}
mkdir -p "$RUNS"
export PYTHONUNBUFFERED=1 VLLM_USE_FLASHINFER_SAMPLER=0
# QWEN / NEMOTRON: dummy folders written elsewhere (a GPU machine without the demo model's wheel)
QWEN=${QWEN:-$RUNS/qwen3-4b-dummy} NEMOTRON=${NEMOTRON:-$RUNS/nemotron-nano-9b-v2-dummy}
[ -f "$QWEN/config.json" ] || python -m kit model dummy --arch qwen3-4b --out "$QWEN" > /dev/null
[ -f "$NEMOTRON/config.json" ] || python -m kit model dummy --arch nemotron-nano-9b-v2 --out "$NEMOTRON" > /dev/null
for part in $PARTS; do
  echo "$part: $(date -u +%T)"
  case $part in
    recipe)  # qwen3_4b_8gpu on one GPU: one server replica beside one trainer process, 64 episodes a step
      # shellcheck disable=SC2086  # MODEL_EXTRA: overrides, split on spaces
      python -m kit train --config qwen3_4b_8gpu model.name_or_path="$QWEN" model.chat_template=kit \
        serve.data_parallel_size=1 serve.gpu_memory_utilization=0.3 generation.start_server=true \
        generation.ignore_eos=true grpo.max_steps=3 grpo.gradient_accumulation_steps=16 \
        "grpo.save_strategy='no'" run.output_dir="$RUNS/qwen3_4b_one_gpu" ${MODEL_EXTRA:-} > "$RUNS/qwen3_4b_one_gpu.log" 2>&1
      echo "recipe exit $?" ;;
    nemotron)  # nemotron_nano_9b_multinode's server: one replica, its plugin parser and Mamba cache dtype
      python bench/serve_check.py --config nemotron_nano_9b_multinode --model "$NEMOTRON" \
        --out "$RUNS/serve_check_nemotron.json" serve.data_parallel_size=1 serve.gpu_memory_utilization=0.5 \
        > "$RUNS/serve_check_nemotron.log" 2>&1
      echo "nemotron exit $?" ;;
    trl)  # the kit against TRL's own multi-turn tool loop at 4B, colocated, the same pinned lengths
      # shellcheck disable=SC2086
      python bench/gpu_step_time.py --base "$QWEN" --runs "${TRL_RUNS:-1}" --steps "${TRL_STEPS:-4}" --variants kit trl-tools \
        --work "$RUNS/step_time_work" --out "$RUNS/gpu_step_time_4b.json" generation.ignore_eos=true \
        'grpo.generation_kwargs={ignore_eos: true}' ${MODEL_EXTRA:-} > "$RUNS/gpu_step_time_4b.log" 2>&1
      echo "trl exit $?" ;;
    scale)
      # shellcheck disable=SC2086  # SCALE_RUNS: run names, split on spaces
      python bench/scale.py --only $SCALE_RUNS --steps 3 --run-timeout 300 --out "$RUNS/scale.json" \
        > "$RUNS/scale.log" 2>&1
      echo "scale exit $?" ;;
  esac
done
echo "gpu_sizes done: $(date -u +%T)"
