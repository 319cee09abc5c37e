"""Generation with vLLM inside the trainer process (TRL's colocate mode, one GPU).

TRL builds the `LLM` (`trainer.vllm_generation.llm`) and syncs its weights before every rollout;
this generator only samples from it, one request per prompt with its own token budget.
"""

from __future__ import annotations

from kit.generation.base import Completion, Sampling


class VLLMColocateGenerator:
    """Samples token-id prompts with an in-process `vllm.LLM`."""

    def __init__(self, llm) -> None:
        self.llm = llm
        self.max_model_len: int | None = llm.llm_engine.vllm_config.model_config.max_model_len

    def generate(
        self, prompts: list[list[int]], max_tokens: list[int], sampling: Sampling
    ) -> list[Completion]:
        from vllm import SamplingParams, TokensPrompt

        params = [
            SamplingParams(
                max_tokens=budget,
                temperature=max(sampling.temperature, 0.0),
                top_p=sampling.top_p,
                top_k=sampling.top_k if sampling.top_k > 0 else -1,
                repetition_penalty=sampling.repetition_penalty,
                logprobs=0,
            )
            for budget in max_tokens
        ]
        outputs = self.llm.generate(
            [TokensPrompt(prompt_token_ids=p) for p in prompts], params, use_tqdm=False
        )
        completions = []
        for output in outputs:
            sample = output.outputs[0]
            logprobs = [
                step[token].logprob for step, token in zip(sample.logprobs, sample.token_ids, strict=True)
            ]
            completions.append(
                Completion(list(sample.token_ids), logprobs, finished=sample.finish_reason == "stop")
            )
        return completions
