"""Generation with vLLM inside the trainer process (TRL's colocate mode, one GPU).

TRL builds the `LLM` (`trainer.vllm_generation.llm`) and syncs its weights before every rollout;
this generator only samples from it, one request per prompt with its own token budget.
"""

from __future__ import annotations

import itertools

from kit.generation.base import Completion, OnCompletion, Request, Sampling


class VLLMColocateGenerator:
    """Samples token-id prompts with an in-process `vllm.LLM`."""

    def __init__(self, llm) -> None:
        self.llm = llm
        self.max_model_len: int | None = llm.llm_engine.vllm_config.model_config.max_model_len
        self._request_ids = itertools.count()

    def generate(
        self, prompts: list[list[int]], max_tokens: list[int], sampling: Sampling
    ) -> list[Completion]:
        from vllm import TokensPrompt

        outputs = self.llm.generate(
            [TokensPrompt(prompt_token_ids=p) for p in prompts],
            [_params(p, budget, sampling) for p, budget in zip(prompts, max_tokens, strict=True)],
            use_tqdm=False,
        )
        return [_completion(output) for output in outputs]

    def generate_continuously(
        self, first: dict[int, Request], sampling: Sampling, on_completion: OnCompletion
    ) -> None:
        """Drive the engine step by step (what `LLM.generate` does inside), adding a conversation's next
        request the moment its last one finishes, so its next turn joins the running batch."""
        from vllm import TokensPrompt

        engine = self.llm.llm_engine
        keys: dict[str, int] = {}

        def add(key: int, request: Request) -> None:
            request_id = f"kit-{next(self._request_ids)}"
            keys[request_id] = key
            prompt, budget = request
            engine.add_request(
                request_id, TokensPrompt(prompt_token_ids=prompt), _params(prompt, budget, sampling)
            )

        try:
            for key, request in first.items():
                add(key, request)
            while keys:
                for output in engine.step():
                    if output.finished and output.request_id in keys:
                        key = keys.pop(output.request_id)
                        if (request := on_completion(key, _completion(output))) is not None:
                            add(key, request)
        except BaseException:
            if keys:  # left in the engine, they would come out of the next `LLM.generate`
                engine.abort_request(list(keys))
            raise


def _params(prompt: list[int], budget: int, sampling: Sampling):
    from vllm import SamplingParams

    return SamplingParams(
        max_tokens=budget,
        seed=sampling.request_seed(prompt),
        temperature=max(sampling.temperature, 0.0),
        top_p=sampling.top_p,
        top_k=sampling.top_k if sampling.top_k > 0 else -1,
        repetition_penalty=sampling.repetition_penalty,
        ignore_eos=sampling.ignore_eos,
        logprobs=0,
        # The rollout decodes the sampled ids itself; vLLM's per-step incremental detokenizing is wasted work.
        detokenize=False,
    )


def _completion(output) -> Completion:
    sample = output.outputs[0]
    logprobs = [step[token].logprob for step, token in zip(sample.logprobs, sample.token_ids, strict=True)]
    return Completion(list(sample.token_ids), logprobs, finished=sample.finish_reason == "stop")
