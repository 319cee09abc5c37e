"""gym-grpo-kit: GRPO training of LLM tool-use agents on TRL, with vLLM server mode and a tool-parser hook."""

__version__ = "0.1.0"
