"""The kit's GPU checks."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any


def gpu_available() -> bool:
    """Whether this process sees a CUDA GPU."""
    import torch

    return torch.cuda.is_available()


def machine_description() -> str:
    """The machine a bench figure was measured on, for its results file: 'N x <GPU name, memory>' where
    nvidia-smi sees GPUs, else 'N CPU cores'."""
    if shutil.which("nvidia-smi"):
        query = ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"]
        names = subprocess.run(query, capture_output=True, text=True).stdout.strip().splitlines()
        if names:
            return f"{len(names)} x {names[0]}"
    return f"{os.cpu_count()} CPU cores"


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
