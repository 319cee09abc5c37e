"""Models that really emit tool calls in a given format, for the rollout and trainer tests
(kit.testing.warm_models builds and caches them)."""

from __future__ import annotations

from pathlib import Path

from kit.testing.warm_models import warmed_up

# One category and tier, so a 2-layer model can learn the pattern quickly.
TASK_OVERRIDES = ["env.tiers=[easy]", "env.categories=[workplace_assistant_project_management]"]

BRACKET_PLUGIN = Path(__file__).parent / "plugins" / "bracket_call_plugin.py"

PARSERS: dict[str, list[str]] = {
    "kit": ["rollout.tool_parser=kit"],
    "bracket": ["rollout.tool_parser=bracket_call", f"rollout.tool_parser_plugin={BRACKET_PLUGIN}"],
}
"""Recipe overrides that make the warm-up (and a rollout) write and read each test format."""


def tool_caller(base_model_dir: str, call_format: str = "kit", steps: int = 8) -> str:
    """A copy of `base_model_dir` that writes tool calls in `call_format`, built once and cached."""
    overrides = [*TASK_OVERRIDES, "sft.num_examples=32", *PARSERS[call_format]]
    return warmed_up(f"smollm2-tool-caller-{call_format}", base_model_dir, "cpu_demo", overrides, steps)
