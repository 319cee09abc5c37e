"""The kit's GPU checks."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


def gpu_available() -> bool:
    """Whether this process sees a CUDA GPU."""
    import torch

    return torch.cuda.is_available()


@contextlib.contextmanager
def peak_gpu_memory(record: dict[str, Any], key: str) -> Iterator[None]:
    """Write to `record[key]` the most GPU memory (GiB) this process's tensors held while the block ran;
    nothing without CUDA. A vLLM server on the same GPU is another process and is not counted."""
    import torch

    if not torch.cuda.is_available():
        yield
        return
    torch.cuda.reset_peak_memory_stats()
    yield
    record[key] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
