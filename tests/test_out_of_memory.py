"""Running out of memory in training names the recipe's settings to change (issue 38), not only a tensor size.

The allocation that fails here is real: the CPU allocator refuses a tensor larger than any machine's memory.
(A CUDA out-of-memory error takes the same path; it cannot be raised without a GPU.)"""

from __future__ import annotations

import pytest
import torch

from kit.config.tree import load_config
from kit.train.out_of_memory import TrainingOutOfMemory, fixes, out_of_memory_advice


def _allocate_too_much() -> None:
    torch.empty(2**52, dtype=torch.uint8)


def test_an_allocation_that_cannot_fit_is_reported_with_the_settings_to_change():
    cfg = load_config("single_gpu")
    model = torch.nn.Linear(64, 64)
    with pytest.raises(TrainingOutOfMemory) as raised, out_of_memory_advice(cfg, "GRPO", model):
        _allocate_too_much()
    message = str(raised.value)
    assert message.startswith("Training ran out of memory on this machine during GRPO")
    assert "AdamW states alone take about 0 GiB (model.dtype=auto)" in message
    steps = [line.removeprefix("  - ") for line in message.splitlines() if line.startswith("  - ")]
    assert steps == fixes(cfg)
    assert steps[0].startswith("model.lora.enabled=true")
    # The recipe's server shares the trainer's GPU.
    assert any(step.startswith("serve.gpu_memory_utilization lower") for step in steps)


def test_the_advice_leaves_out_what_the_recipe_already_does():
    done = ["model.lora.enabled=true", "model.dtype=bfloat16", "generation.mode=colocate"]
    cfg = load_config("single_gpu", done)
    found = fixes(cfg)
    assert not any(step.startswith(("model.lora", "model.dtype")) for step in found)
    assert found[0].startswith("grpo.vllm_gpu_memory_utilization lower")


def test_other_errors_pass_through_unchanged():
    cfg, model = load_config("cpu_demo"), torch.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="not memory"), out_of_memory_advice(cfg, "GRPO", model):
        raise ValueError("not memory")
