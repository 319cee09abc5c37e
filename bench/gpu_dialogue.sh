#!/usr/bin/env bash
# The dialogue measurement on one GPU (docs/results.md): gpu_dialogue at seeds 0-2 side by side (scripted
# user; base, after-SFT and after-GRPO held-out success inside each job), then the untrained base model and
# each trained policy evaluated through `kit eval --server` with an LLM user: the frozen base model served
# by vLLM. Writes everything under $RUNS (default runs/gpu_dialogue_bench).
#   bash bench/gpu_dialogue.sh            # RUNS=... STEPS=50 SEEDS="0 1 2" EXTRA="k=v ..." LLM_USER=0 to change
set -uo pipefail
RUNS=${RUNS:-runs/gpu_dialogue_bench}
STEPS=${STEPS:-50}
SEEDS=${SEEDS:-0 1 2}
KIT=${KIT:-python -m kit}
EVAL_TASKS=${EVAL_TASKS:-300}
mkdir -p "$RUNS"
source "$(dirname "$0")/gpu_jobs.sh"
for seed in $SEEDS; do
  # shellcheck disable=SC2086  # EXTRA: more dotted overrides, split on spaces
  $KIT train --config gpu_dialogue run.seed=$seed run.output_dir=$RUNS/seed$seed grpo.max_steps=$STEPS \
    serve.port=$((8000 + seed)) "${SERVER_SHARE[@]}" run.eval_every=0 ${EXTRA:-} \
    > "$RUNS/train_seed$seed.log" 2>&1 &
  started_up "$RUNS/seed$seed/server.log" || echo "seed $seed: its server did not start; see its log" >&2
done
wait
echo "training done: $(date -u +%FT%TZ)"
[ "${LLM_USER:-1}" = 1 ] || exit 0

# The LLM user: the frozen base model, with its own chat template, on its own server.
$KIT serve --config gpu_dialogue --port 8200 model.chat_template=model serve.gpu_memory_utilization=0.1 \
  --log-file "$RUNS/user_model_server.log" > "$RUNS/user_model_serve.out" 2>&1 &
user_server=$!
healthy() {  # port pid: wait up to 5 minutes for the server's /health, or for it to die
  for _ in $(seq 150); do
    curl -sf "http://127.0.0.1:$1/health" > /dev/null && return 0
    kill -0 "$2" 2> /dev/null || break
    sleep 2
  done
  echo "server on port $1 did not come up" >&2
  return 1
}
policy_eval() {  # label model port
  $KIT serve --config gpu_dialogue --model "$2" --port "$3" serve.gpu_memory_utilization=0.1 \
    --log-file "$RUNS/serve_$1.log" > "$RUNS/serve_$1.out" 2>&1 &
  local server=$!
  healthy "$3" $server || return 1
  $KIT eval --config gpu_dialogue --model "$2" --server "http://127.0.0.1:$3" --limit "$EVAL_TASKS" \
    --out "$RUNS/llm_user_$1.json" user_model.kind=endpoint user_model.base_url=http://127.0.0.1:8200 \
    > "$RUNS/eval_$1.log" 2>&1
  kill $server; wait $server 2> /dev/null
}
healthy 8200 $user_server || exit 1
# One policy server at a time, for the same reason as above.
policy_eval base HuggingFaceTB/SmolLM2-135M-Instruct 8110
for seed in $SEEDS; do
  policy_eval "grpo_seed$seed" "$RUNS/seed$seed/final" $((8111 + seed))
done
kill $user_server
echo "evaluations done: $(date -u +%FT%TZ)"
