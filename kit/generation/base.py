"""The generator interface shared by every generation mode."""

from __future__ import annotations

import zlib
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


def mixed_seed(*numbers: int) -> int:
    """One 32-bit seed from several integers (a run's seed and a repeat, a seed and a prompt's ids): the
    same numbers always give the same seed."""
    return zlib.crc32(array("q", numbers).tobytes())


@dataclass(frozen=True)
class Sampling:
    """Sampling settings; temperature 0 means greedy. `ignore_eos`: sample the whole token budget, past
    the end-of-sequence token (generation.ignore_eos). `seed`: sample reproducibly (`request_seed`);
    None draws from the generator's own random stream."""

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    repetition_penalty: float = 1.0
    ignore_eos: bool = False
    seed: int | None = None

    @classmethod
    def of(cls, grpo: Any, ignore_eos: bool, seed: int | None = None) -> Sampling:
        """The sampling GRPO's rollouts use: `grpo` is TRL's GRPOConfig or the recipe's `grpo` section."""
        return cls(grpo.temperature, grpo.top_p, grpo.top_k or 0, grpo.repetition_penalty, ignore_eos, seed)

    def request_seed(self, prompt_ids: Sequence[int]) -> int | None:
        """The seed of the request that continues `prompt_ids`: `seed` mixed with the prompt, so that each
        request draws its own random numbers (a conversation's second turn not its first's), the same
        ones whatever order a server answers them in. None when unseeded."""
        if self.seed is None:
            return None
        return mixed_seed(self.seed, *prompt_ids)


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


Request = tuple[list[int], int]
"""A prompt's token ids and the most tokens to sample after it."""

OnCompletion = Callable[[int, Completion], "Request | None"]
"""Called with a conversation's key and its completion; returns the conversation's next request, or None
when it has ended."""


def sampling_of(sampling: Sampling | Mapping[int, Sampling], key: int) -> Sampling:
    """The sampling of conversation `key`: `sampling` itself, or its entry when given per conversation."""
    return sampling[key] if isinstance(sampling, Mapping) else sampling


def generate_conversations(
    generator: Generator,
    first: dict[int, Request],
    sampling: Sampling | Mapping[int, Sampling],
    on_completion: OnCompletion,
) -> None:
    """Run conversations of several requests each, starting with ``first`` (keyed by conversation).

    A generator with ``generate_continuously`` sends a conversation's next request as soon as its last
    one is answered, so a long turn of one conversation never holds up the others. Any other generator
    goes in rounds: every conversation still going gets its next turn in one ``generate`` batch, which
    takes one sampling for all (so `sampling` per conversation, by key, needs the former).
    """
    continuous = getattr(generator, "generate_continuously", None)
    if continuous is not None:
        continuous(first, sampling, on_completion)
        return
    if isinstance(sampling, Mapping):
        raise TypeError(
            f"{type(generator).__name__} samples a batch with one sampling; sampling per conversation "
            "(generation.seed_rollouts) needs the vLLM server's generator."
        )
    pending = dict(first)
    while pending:
        keys = list(pending)
        completions = generator.generate(
            [pending[k][0] for k in keys], [pending[k][1] for k in keys], sampling
        )
        answered = zip(keys, completions, strict=True)
        pending = {k: request for k, c in answered if (request := on_completion(k, c)) is not None}
