"""``WorkplaceSandbox``: one isolated workplace state plus the checked entry point for tool calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kit.envs.workplace.generate_state import default_state
from kit.envs.workplace.schemas import SPECS_BY_NAME, TOOL_NAMES, ToolSpec
from kit.envs.workplace.state import WorkplaceState, load_csv_dir
from kit.envs.workplace.tools import TOOLS, ToolError

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


class WorkplaceSandbox:
    """An isolated workplace whose tools are called by name.

    ``WorkplaceSandbox()`` starts from the kit's generated default state; ``from_csv_dir`` from CSVs in
    NeMo-Gym's layout. Constructing or copying a sandbox is O(1): tables are shared copy-on-write, so keep
    one sandbox as a base and ``copy()`` it per rollout.
    """

    __slots__ = ("state",)

    def __init__(self, state: WorkplaceState | None = None) -> None:
        self.state = (default_state() if state is None else state).copy()

    @classmethod
    def from_csv_dir(cls, directory: str | Path) -> WorkplaceSandbox:
        """A sandbox over CSVs in the reference layout (emails.csv, calendar_events.csv, ...)."""
        return cls(load_csv_dir(directory))

    def copy(self) -> WorkplaceSandbox:
        """An independent sandbox starting from this one's current state."""
        return WorkplaceSandbox(self.state)

    def close(self) -> None:
        """Nothing to release: the state is this object's own."""

    def call(self, name: str, arguments: dict[str, Any] | str | None = None) -> str:
        """Run a tool; ``arguments`` is a dict or a JSON object string. Never raises: a refused call returns
        ``"Error: ..."`` (what was wrong and what is valid) and leaves the state unchanged."""
        try:
            return execute(self.state, name, arguments)
        except ToolError as error:
            return f"Error: {error}"
        except Exception as error:  # noqa: BLE001 - a tool bug must not abort a training rollout
            return f"Error: internal error in {name!r}: {type(error).__name__}: {error}"

    def snapshot(self) -> dict[str, tuple]:
        """Normalised view of the emails, calendar, tasks and customers tables and the plots."""
        return self.state.snapshot()

    def same_state(self, other: WorkplaceSandbox) -> bool:
        """Whether both sandboxes hold the same outcome, compared as NeMo-Gym scores tasks."""
        return self.state.same_as(other.state)
