"""Generators: where rollout tokens come from. The rollout asks for tokens; modes differ only here.

- `TransformersGenerator`: the policy's own `model.generate` (no extra process; slowest).
- `VLLMServerGenerator`: a vLLM OpenAI-compatible server started by `kit serve`.
- `VLLMColocateGenerator`: vLLM inside the trainer process (TRL's colocate mode, GPU only).
"""

from kit.generation.base import Completion, Generator, Sampling

__all__ = ["Completion", "Generator", "Sampling"]
