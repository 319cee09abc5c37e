"""The kit's one GPU check."""

from __future__ import annotations


def gpu_available() -> bool:
    """Whether this process sees a CUDA GPU."""
    import torch

    return torch.cuda.is_available()
