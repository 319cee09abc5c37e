# Sourced by the bench/gpu_*.sh scripts: what side-by-side kit jobs on one GPU need.
export PYTHONUNBUFFERED=1 VLLM_USE_FLASHINFER_SAMPLER=0

# A fixed KV cache per server (4 GB hold ~170k tokens of SmolLM2-135M, 5x a step's 64 episodes x 512).
# vLLM servers that size theirs from free memory while others start beside them die with "No available
# memory for the cache blocks" (seed 0 of the first dialogue run).
KV_BYTES=${KV_BYTES:-4000000000}
GPU_SHARE=0.08  # serve.gpu_memory_utilization of each server
SERVER_SHARE=(serve.gpu_memory_utilization=$GPU_SHARE "serve.extra_args=[--kv-cache-memory-bytes, '$KV_BYTES']")

started_up() {  # server-log: wait up to 5 minutes for vLLM's startup line; jobs start one after another
  for _ in $(seq 150); do
    grep -qs "Application startup complete" "$1" && return 0
    sleep 2
  done
  return 1
}
