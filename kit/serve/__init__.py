"""`kit serve`: the recipe's vLLM server in the foreground (the process: kit.generation.vllm_process)."""
