"""LoRA adapters (`model.lora`): peft's config for TRL's trainers, and the merged weights a vLLM server gets.

The trainers wrap the policy themselves (`peft_config=` of SFTTrainer and GRPOTrainer). The SFT warm-up
merges its adapter into the weights when it ends, so GRPO starts a fresh adapter on the warmed-up model.
A server is synced by merge-and-push, as TRL does for its own vLLM sync: the adapter is merged into the
base weights for the push and taken out again, and the server receives plain weights under the base
model's names, so it runs at full speed with no LoRA kernels and nothing changes on its side.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from kit.config.tree import LoraSettings

_WRAPPER_PREFIX = "base_model.model."


def peft_config(settings: LoraSettings) -> Any | None:
    """peft's LoraConfig for `settings`, or None when LoRA is off."""
    if not settings.enabled:
        return None
    from peft import LoraConfig

    return LoraConfig(
        r=settings.r,
        lora_alpha=settings.alpha,
        lora_dropout=settings.dropout,
        target_modules=settings.target_modules,
        task_type="CAUSAL_LM",
    )


def is_peft_model(model: Any) -> bool:
    """Whether `model` carries peft adapters."""
    return hasattr(model, "peft_config") and hasattr(model, "merge_adapter")


def base_name(name: str) -> str:
    """A parameter's name in the base model: peft's wrapper prefix and `.base_layer` taken out."""
    return name.removeprefix(_WRAPPER_PREFIX).replace(".base_layer.", ".")


@contextlib.contextmanager
def merged_parameters(model: Any) -> Iterator[list[tuple[str, Any]]]:
    """The model's weights as the base model names them, with the adapter merged in, while the block
    runs; the adapter is unmerged after it (the parameters are live tensors: copy what must outlive it)."""
    model.merge_adapter()
    try:
        yield [
            (base_name(name), param.detach())
            for name, param in model.named_parameters()
            if "lora_" not in name and "modules_to_save" not in name
        ]
    finally:
        model.unmerge_adapter()


def trainable_share(model: Any) -> tuple[int, int]:
    """(trainable, total) parameter counts."""
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return trainable, sum(p.numel() for p in model.parameters())
