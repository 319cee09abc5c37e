"""Generation with the policy's own `model.generate` (plain-transformers mode)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

import torch

from kit.generation.base import Completion, Sampling
from kit.models import generation_model


@contextmanager
def seeded(seed: int | None, device: torch.device) -> Iterator[None]:
    """Torch's random stream set to `seed` inside, and put back as it was after, so that a seeded
    evaluation inside training leaves the trainer's stream where it was. No change when `seed` is None."""
    if seed is None:
        yield
        return
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        yield


def context_length(model) -> int | None:
    """The positions a transformers model was trained for (its usable context), if its config says."""
    return getattr(model.config, "max_position_embeddings", None)


class TransformersGenerator:
    """Samples from a transformers causal LM, left-padding each batch.

    `model_context` yields the model to generate with; the trainer passes TRL's
    `unwrap_model_for_generation` so distributed wrappers are removed for the duration.
    """

    def __init__(
        self,
        model_context: Callable[[], AbstractContextManager],
        pad_token_id: int,
        eos_token_ids: list[int],
        batch_size: int = 64,
        max_model_len: int | None = None,
    ) -> None:
        self.model_context = model_context
        self.pad_token_id = pad_token_id
        self.eos_token_ids = eos_token_ids
        self.batch_size = batch_size
        self.max_model_len = max_model_len

    @classmethod
    def for_model(cls, model, tokenizer, batch_size: int = 64) -> TransformersGenerator:
        """A generator over a plain model (evaluation, notebooks)."""
        eos = [tokenizer.eos_token_id]
        context = context_length(model)
        return cls(lambda: nullcontext(model), tokenizer.pad_token_id, eos, batch_size, context)

    def generate(
        self, prompts: list[list[int]], max_tokens: list[int], sampling: Sampling
    ) -> list[Completion]:
        results: list[Completion] = []
        with self.model_context() as policy, generation_model(policy) as model:
            for start in range(0, len(prompts), self.batch_size):
                batch = slice(start, start + self.batch_size)
                results.extend(self._generate_batch(model, prompts[batch], max_tokens[batch], sampling))
        return results

    @torch.no_grad()
    def _generate_batch(
        self, model, prompts: list[list[int]], max_tokens: list[int], sampling: Sampling
    ) -> list[Completion]:
        device = next(model.parameters()).device
        width = max(len(p) for p in prompts)
        input_ids = torch.full((len(prompts), width), self.pad_token_id, dtype=torch.long)
        attention = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, prompt in enumerate(prompts):
            input_ids[row, width - len(prompt) :] = torch.tensor(prompt)
            attention[row, width - len(prompt) :] = 1
        greedy = sampling.temperature <= 0
        longest = max(max_tokens)
        # One seed for the batch: its prompts together pick it, so the same batch samples the same tokens.
        seed = sampling.request_seed([token for prompt in prompts for token in prompt])
        with seeded(seed, device):
            out = model.generate(
                input_ids=input_ids.to(device),
                attention_mask=attention.to(device),
                max_new_tokens=longest,
                min_new_tokens=longest if sampling.ignore_eos else None,  # no stop token before the budget
                do_sample=not greedy,
                temperature=None if greedy else sampling.temperature,
                top_p=None if greedy else sampling.top_p,
                top_k=None if greedy else (sampling.top_k or None),
                repetition_penalty=sampling.repetition_penalty,
                pad_token_id=self.pad_token_id,
                eos_token_id=self.eos_token_ids,
                # Trainers switch config.use_cache off for training; generation needs the KV cache.
                use_cache=True,
                output_scores=True,
                return_dict_in_generate=True,
            )
        new_tokens = out.sequences[:, width:]
        # `scores` are the processed logits (after temperature, top-k, top-p): what was sampled from. Step by
        # step, only the sampled tokens' logprobs are kept: a (batch, steps, vocabulary) tensor is gigabytes.
        chosen = torch.stack(
            [
                step.float().log_softmax(-1).gather(-1, tokens[:, None]).squeeze(-1)
                for step, tokens in zip(out.scores, new_tokens.T, strict=True)
            ],
            dim=1,
        ).cpu()
        new_tokens = new_tokens.cpu()
        completions = []
        for row, budget in enumerate(max_tokens):
            ids = new_tokens[row].tolist()
            stop = next((i for i, t in enumerate(ids) if t in self.eos_token_ids), None)
            length = min(budget, stop + 1 if stop is not None else len(ids))
            completions.append(
                Completion(
                    token_ids=ids[:length],
                    logprobs=chosen[row, :length].tolist(),
                    finished=stop is not None and stop < budget,
                )
            )
        return completions
