"""What to change when training runs out of memory, said where it happens.

A CUDA out-of-memory error (or the CPU allocator's refusal) names a tensor size and an allocator setting;
what a user needs is which of the recipe's settings to change. `out_of_memory_advice` turns the error into
a `TrainingOutOfMemory` that says what the process held, how much of the GPU the vLLM server or the
colocated engine was given, and the settings that free the most memory for this recipe, in that order
(measured on one H100 80GB with Qwen3 architectures, docs/results.md "At the sizes users train": float32
master weights and AdamW take about 16 bytes a parameter, so 4B full weights need ~60 GiB before
activations).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from kit.config.tree import KitConfig

BYTES_PER_TRAINED_PARAMETER = {"auto": 16, "float32": 16, "bfloat16": 8}
"""Weights, gradients and AdamW's two moments per trained parameter, by `model.dtype`."""


class TrainingOutOfMemory(RuntimeError):
    """Training ran out of memory in a stage; the message names the settings to change."""


def is_out_of_memory(error: BaseException) -> bool:
    """A CUDA out-of-memory error, or the CPU allocator refusing a tensor (a RuntimeError in torch)."""
    cpu_refusal = "DefaultCPUAllocator: can't allocate memory" in str(error)
    return isinstance(error, torch.OutOfMemoryError) or cpu_refusal


def advice(cfg: KitConfig, stage: str, model: torch.nn.Module, error: BaseException) -> str:
    """The message for an out-of-memory `error` in `stage` (sft or grpo) of `model` under `cfg`."""
    total = sum(p.numel() for p in model.parameters())
    trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
    state_gib = trained * BYTES_PER_TRAINED_PARAMETER.get(cfg.model.dtype, 16) / 2**30
    where = "the GPU" if isinstance(error, torch.OutOfMemoryError) else "this machine"
    lines = [f"Training ran out of memory on {where} during {stage} ({str(error).splitlines()[0][:200]})."]
    if where == "the GPU":
        gpu = torch.cuda.get_device_properties(torch.cuda.current_device())
        held = torch.cuda.max_memory_allocated() / 2**30
        size = gpu.total_memory / 2**30
        lines.append(f"This process held up to {held:.1f} GiB of the {size:.0f} GiB {gpu.name}.")
    lines.append(
        f"The policy has {total / 1e9:.2f} B parameters, {trained / 1e9:.2f} B of them trained: their "
        f"weights, gradients and AdamW states alone take about {state_gib:.0f} GiB "
        f"(model.dtype={cfg.model.dtype})."
    )
    if cfg.generation.mode == "server" and cfg.generation.start_server:
        share = cfg.serve.gpu_memory_utilization
        lines.append(f"The vLLM server on this GPU was given serve.gpu_memory_utilization={share} of it.")
    elif cfg.generation.mode == "colocate":
        share = cfg.grpo.vllm_gpu_memory_utilization
        lines.append(f"The colocated vLLM engine was given grpo.vllm_gpu_memory_utilization={share} of it.")
    lines.append("What frees the most, in order:")
    lines += [f"  - {fix}" for fix in fixes(cfg)]
    return "\n".join(lines)


def fixes(cfg: KitConfig) -> list[str]:
    """The settings to change, the largest saving first; those the recipe already has are left out."""
    found = []
    if not cfg.model.lora.enabled:
        found.append(
            "model.lora.enabled=true: LoRA adapters; the base weights stay frozen, with no gradients or "
            "optimizer states (Qwen3 4B fit beside the server in 26 GiB; full weights did not fit in 80)"
        )
    if cfg.model.dtype in ("auto", "float32"):
        found.append(
            "model.dtype=bfloat16: halves weights, gradients and optimizer states (updates smaller than "
            "bf16's precision are lost)"
        )
    if cfg.generation.mode == "server" and cfg.generation.start_server:
        found.append(
            "serve.gpu_memory_utilization lower (its KV cache shrinks; fewer episodes run at once), or the "
            "server on its own GPU (generation.start_server=false, generation.server_url)"
        )
    elif cfg.generation.mode == "colocate":
        found.append(
            "grpo.vllm_gpu_memory_utilization lower, or generation.mode=server with the server on its own GPU"
        )
    if not cfg.grpo.gradient_checkpointing:
        found.append("grpo.gradient_checkpointing=true: recomputes activations in the backward pass")
    found.append(
        f"grpo.per_device_train_batch_size lower (now {cfg.grpo.per_device_train_batch_size}) with "
        "grpo.gradient_accumulation_steps higher: the same episodes a step, fewer at once"
    )
    found.append(
        "more GPUs: KIT_NUM_PROCESSES=N shards weights and optimizer with FSDP (kit/accelerate/fsdp.yaml), "
        "or offloads them to CPU memory with ZeRO-3 (kit/accelerate/zero3.yaml); docs/recipes.md"
    )
    return found


@contextlib.contextmanager
def out_of_memory_advice(cfg: KitConfig, stage: str, model: torch.nn.Module) -> Iterator[None]:
    """Re-raise an out-of-memory error inside the block as `TrainingOutOfMemory` with `advice`."""
    try:
        yield
    except RuntimeError as error:  # torch.OutOfMemoryError is one
        if not is_out_of_memory(error):
            raise
        raise TrainingOutOfMemory(advice(cfg, stage, model, error)) from error
