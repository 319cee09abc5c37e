"""The generator interface shared by every generation mode."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Sampling:
    """Sampling settings; temperature 0 means greedy."""

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    repetition_penalty: float = 1.0


@dataclass
class Completion:
    """One generated continuation: the exact token ids the generator sampled and their logprobs."""

    token_ids: list[int]
    logprobs: list[float]
    finished: bool  # ended on a stop token rather than on the token budget


class Generator(Protocol):
    """Generates one continuation per prompt, each within its own token budget.

    `max_model_len` is the context the generator can hold (prompt plus completion), or None when it
    has no fixed limit; the rollout never asks for more tokens than fit in it.
    """

    @property
    def max_model_len(self) -> int | None: ...

    def generate(
        self, prompts: list[list[int]], max_tokens: list[int], sampling: Sampling
    ) -> list[Completion]: ...
