"""Models that really emit tool calls in a given format, for the rollout and trainer tests
(kit.testing.warm_models builds and caches them)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from kit.testing.warm_models import warmed_up
from kit.train.sft import kit_call_format

# One category and tier, so a 2-layer model can learn the pattern quickly.
TASK_OVERRIDES = ["env.tiers=[easy]", "env.categories=[workplace_assistant_project_management]"]


def bracket_call_format(name: str, arguments: dict[str, Any]) -> str:
    """The format of tests/plugins/bracket_call_plugin.py."""
    return f"[[call {name} {json.dumps(arguments)}]]"


CALL_FORMATS: dict[str, Callable[[str, dict[str, Any]], str]] = {
    "kit": kit_call_format,
    "bracket": bracket_call_format,
}


def tool_caller(base_model_dir: str, call_format: str = "kit", steps: int = 8) -> str:
    """A copy of `base_model_dir` that writes tool calls in `call_format`, built once and cached."""
    overrides = [*TASK_OVERRIDES, "sft.num_examples=32"]
    return warmed_up(f"smollm2-tool-caller-{call_format}", base_model_dir, "cpu_demo", overrides, steps,
                     CALL_FORMATS[call_format])  # fmt: skip
