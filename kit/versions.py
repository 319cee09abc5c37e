"""The versions and device a run used, for summaries and benchmark results."""

from __future__ import annotations

import importlib.metadata
import platform
from typing import Any

from kit.device import gpu_available
from kit.generation.vllm_compat import vllm_version

PACKAGES = ("torch", "transformers", "trl", "accelerate")


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
