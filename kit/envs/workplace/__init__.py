"""The workplace-assistant environment: a NeMo-Gym-compatible sandbox of five workplace databases and 27
tools, its outcome reward and shaping signals, and a seeded task generator.

Modules: ``state`` (tables), ``generate_state`` (the kit's seeded data), ``schemas`` (tool schemas),
``gym`` (NeMo-Gym's tools, written here: the default tool set), ``tools`` (the kit's own tool set,
``env.tool_messages: kit``), ``sandbox`` (tool calls on one state, with either set), ``observation``
(what a call answers), ``reward``, ``templates`` and ``tasks`` (task generation, rows, prompts),
``dialogue_variants`` (ambiguous rows for a clarifying dialogue), ``cli`` (``kit env`` subcommands).
``generate_state``, ``schemas``, ``tools`` and ``templates`` are packages with a module per database
(toolkit), each exporting its public names from the package itself; ``gym`` has a module per toolkit too.
"""

from kit.envs.rows import load_rows
from kit.envs.workplace.reward import (
    SHAPING_REWARDS,
    argument_match,
    outcome_reward,
    tool_names_match,
    valid_call_format,
)
from kit.envs.workplace.sandbox import WorkplaceSandbox
from kit.envs.workplace.schemas import TOOL_NAMES, chat_schemas, flat_schemas
from kit.envs.workplace.tasks import build_messages, write_splits

__all__ = [
    "SHAPING_REWARDS",
    "TOOL_NAMES",
    "WorkplaceSandbox",
    "argument_match",
    "build_messages",
    "chat_schemas",
    "flat_schemas",
    "load_rows",
    "outcome_reward",
    "tool_names_match",
    "valid_call_format",
    "write_splits",
]
