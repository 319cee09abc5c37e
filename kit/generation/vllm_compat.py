"""What the installed vLLM offers, found by feature rather than by one release's layout.

vLLM moves things between releases: the tool-call protocol classes live in
`vllm.entrypoints.openai.engine.protocol` in 0.26 and in `vllm.entrypoints.generate.base.protocol` in
0.32 (plugin files try both), `--enable-scale-out` exists from 0.30, and the weight-transfer engines
behind `--weight-transfer-config` arrived in the 0.2x series. Looking a module up imports only
the packages above it, not vLLM's engine.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
from functools import cache


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


@cache
def has_weight_transfer_engines() -> bool:
    """True when vLLM has weight-transfer engines (`--weight-transfer-config`, TRL's NCCL sync)."""
    return _module_exists("vllm.distributed.weight_transfer")
