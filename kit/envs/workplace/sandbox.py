"""``WorkplaceSandbox``: one isolated workplace state plus the checked entry point for tool calls.

A sandbox behaves as one of two tool sets (``tool_messages``, the recipe key ``env.tool_messages``):

- ``nemo_gym`` (the default): NeMo-Gym's own workplace server, reproduced in ``kit.envs.workplace.gym``:
  its answers (the HTTP body ``{"output": ...}`` its agent shows the model), its validation, its state
  changes and its verify's reward;
- ``kit``: the kit's earlier tools (``kit.envs.workplace.tools``): stricter checks (dates, meeting hours,
  colleagues from the directory, ...) whose refusals say ``Error: <what is wrong and what is valid>``,
  one-line confirmations, and a reward that matches created rows by content.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from kit.envs.workplace import gym
from kit.envs.workplace.generate_state import default_state
from kit.envs.workplace.schemas import SPECS_BY_NAME, STATE_CHANGING, TOOL_NAMES, ToolSpec
from kit.envs.workplace.state import WorkplaceState, load_csv_dir
from kit.envs.workplace.tools import TOOLS, ToolError
from kit.episode import Observation

_JSON_TYPES = {"string": str, "integer": int}


def parse_arguments(arguments: Any) -> dict[str, Any]:
    """Call arguments as a dict, from a dict, a JSON object string, or nothing (None / empty string).

    Raises ToolError when they are neither.
    """
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError) as error:
            raise ToolError(f"arguments are not valid JSON ({error}); send a JSON object.") from None
    if not isinstance(arguments, dict):
        raise ToolError(f"arguments must be a JSON object, got {type(arguments).__name__}.")
    return arguments


def check_arguments(spec: ToolSpec, arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments with nulls dropped (NeMo-Gym treats null as absent), after checking names, required
    arguments and JSON types against the tool's schema. Raises ToolError naming what is wrong."""
    valid = {p.name: p for p in spec.params}
    listing = ", ".join(valid) or "none"
    unknown = [str(k) for k in arguments if k not in valid]
    if unknown:
        raise ToolError(
            f"{spec.name}: unexpected argument(s) {', '.join(unknown)}; valid arguments: {listing}."
        )
    given = {k: v for k, v in arguments.items() if v is not None}
    missing = [name for name in spec.required if name not in given]
    if missing:
        raise ToolError(
            f"{spec.name}: missing required argument(s) {', '.join(missing)}; "
            f"required: {', '.join(spec.required)}."
        )
    for name, value in given.items():
        expected = valid[name].type
        if not isinstance(value, _JSON_TYPES[expected]) or isinstance(value, bool):
            raise ToolError(f"{spec.name}: argument '{name}' must be a JSON {expected}, got {value!r}.")
    return given


def execute(state: WorkplaceState, name: Any, arguments: Any = None) -> str:
    """Run one tool call on ``state``; raises ToolError for any refused call, leaving state unchanged."""
    spec = SPECS_BY_NAME.get(name) if isinstance(name, str) else None
    if spec is None:
        raise ToolError(f"unknown tool {name!r}; valid tools: {', '.join(TOOL_NAMES)}.")
    return TOOLS[spec.name](state, **check_arguments(spec, parse_arguments(arguments)))


def _kit_call(state: WorkplaceState, name: Any, arguments: Any) -> Observation:
    try:
        return Observation(execute(state, name, arguments), refused=False)
    except ToolError as error:
        return Observation(f"Error: {error}", refused=True)
    except Exception as error:  # noqa: BLE001 - a tool bug must not abort a training rollout
        return Observation(
            f"Error: internal error in {name!r}: {type(error).__name__}: {error}", refused=True
        )


def _kit_replay(state: WorkplaceState, calls: Iterable[tuple[Any, Any]]) -> WorkplaceState:
    # Only state-changing tools run (read-only ones cannot affect the outcome); refused calls are skipped.
    state = state.copy()
    for name, arguments in calls:
        if isinstance(name, str) and name in STATE_CHANGING:
            _kit_call(state, name, arguments)
    return state


@dataclass(frozen=True)
class ToolSet:
    """How a sandbox behaves: its state built from the kit's tables, a call, and the reward's replay."""

    start: Callable[[WorkplaceState], Any]
    call: Callable[[Any, Any, Any], Observation]
    replay: Callable[[Any, Iterable[tuple[Any, Any]]], Any]


TOOL_SETS: dict[str, ToolSet] = {
    "nemo_gym": ToolSet(gym.GymState.from_workplace, gym.answer, gym.replay),
    "kit": ToolSet(WorkplaceState.copy, _kit_call, _kit_replay),
}
"""``tool_messages`` -> tool set; the first is the default."""
DEFAULT_TOOL_MESSAGES = next(iter(TOOL_SETS))


@lru_cache(maxsize=len(TOOL_SETS))
def _default_start(tool_messages: str) -> Any:
    return TOOL_SETS[tool_messages].start(default_state())


class WorkplaceSandbox:
    """An isolated workplace whose tools are called by name.

    ``WorkplaceSandbox()`` starts from the kit's generated default state; ``from_csv_dir`` from CSVs in
    NeMo-Gym's layout; ``tool_messages`` picks the tool set (module docstring). Copying a sandbox is O(1):
    tables are shared copy-on-write, so keep one sandbox as a base and ``copy()`` it per rollout.
    """

    __slots__ = ("state", "tool_messages")

    def __init__(
        self, state: WorkplaceState | None = None, tool_messages: str = DEFAULT_TOOL_MESSAGES
    ) -> None:
        if tool_messages not in TOOL_SETS:
            raise ValueError(f"tool_messages must be one of {', '.join(TOOL_SETS)}, got {tool_messages!r}")
        self.tool_messages = tool_messages
        self.state = (
            _default_start(tool_messages) if state is None else TOOL_SETS[tool_messages].start(state)
        ).copy()

    @classmethod
    def from_csv_dir(
        cls, directory: str | Path, tool_messages: str = DEFAULT_TOOL_MESSAGES
    ) -> WorkplaceSandbox:
        """A sandbox over CSVs in the reference layout (emails.csv, calendar_events.csv, ...)."""
        return cls(load_csv_dir(directory), tool_messages)

    def _with(self, state: Any) -> WorkplaceSandbox:
        sandbox = WorkplaceSandbox.__new__(WorkplaceSandbox)
        sandbox.state, sandbox.tool_messages = state, self.tool_messages
        return sandbox

    def copy(self) -> WorkplaceSandbox:
        """An independent sandbox starting from this one's current state."""
        return self._with(self.state.copy())

    def close(self) -> None:
        """Nothing to release: the state is this object's own."""

    def call(self, name: str, arguments: dict[str, Any] | str | None = None) -> Observation:
        """Run a tool; ``arguments`` is a dict or a JSON object string. Never raises: the answer says what
        went wrong, and a refused call (``Observation.refused``) leaves the state unchanged."""
        return TOOL_SETS[self.tool_messages].call(self.state, name, arguments)

    def replayed(self, calls: Iterable[tuple[Any, Any]]) -> WorkplaceSandbox:
        """A copy after the ``(name, arguments)`` calls, replayed as the reward replays them."""
        return self._with(TOOL_SETS[self.tool_messages].replay(self.state, calls))

    def snapshot(self) -> dict[str, tuple]:
        """Normalised view of the emails, calendar, tasks and customers tables and the plots."""
        return self.state.snapshot()

    def same_state(self, other: WorkplaceSandbox) -> bool:
        """Whether both sandboxes hold the same outcome, compared as their tool set's reward does."""
        if other.tool_messages != self.tool_messages:
            raise ValueError(
                f"cannot compare a {self.tool_messages} sandbox with a {other.tool_messages} one"
            )
        return self.state.same_as(other.state)
