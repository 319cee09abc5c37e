#!/usr/bin/env bash
# The transfer measurement of issue 34 on one GPU (docs/results.md): bench/nemo_gym_transfer.py for a
# recipe at seeds 0-2 side by side, each job base -> SFT warm-up -> GRPO, evaluated after each stage on
# NeMo-Gym's own rows (evaluation only) and on the kit's validation tasks. One results file per seed under
# $RUNS (transfer_seedN.json), each shaped like bench/results/nemo_gym_transfer.json.
#   ROWS=validation.jsonl DATABASES=.../databases bash bench/gpu_transfer.sh   # RECIPE=gpu_dialogue
#   RUNS=... SEEDS="0 1 2" EXTRA="k=v ..." to change
set -uo pipefail
: "${ROWS:?set ROWS to the NeMo-Gym workplace validation.jsonl}"
RUNS=${RUNS:-runs/gpu_transfer}
RECIPE=${RECIPE:-gpu_dialogue}
SEEDS=${SEEDS:-0 1 2}
DATABASES=${DATABASES:-../shared/reference/workplace_assistant/databases}
mkdir -p "$RUNS"
source "$(dirname "$0")/gpu_jobs.sh"
for seed in $SEEDS; do
  # shellcheck disable=SC2086  # EXTRA: more dotted overrides, split on spaces
  python bench/nemo_gym_transfer.py --rows "$ROWS" --databases "$DATABASES" --recipe "$RECIPE" --grpo \
    --seed "$seed" --out "$RUNS/transfer_seed$seed.json" serve.port=$((8000 + seed)) "${SERVER_SHARE[@]}" \
    run.output_dir="$RUNS/seed$seed" run.eval_every=0 ${EXTRA:-} > "$RUNS/transfer_seed$seed.log" 2>&1 &
  started_up "$RUNS/seed$seed/server.log" || echo "seed $seed: its server did not start; see its log" >&2
done
wait
echo "transfer done: $(date -u +%FT%TZ)"
