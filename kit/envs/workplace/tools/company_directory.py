"""The company directory tool: colleagues' email addresses found by name."""

from __future__ import annotations

from kit.envs.workplace.state import WorkplaceState
from kit.envs.workplace.tools.checks import ToolError, to_json


def company_directory_find_email_address(state: WorkplaceState, name: str = "") -> str:
    """Every directory address containing all words of ``name`` (dots count as spaces)."""
    words = name.replace(".", " ").lower().split()
    if not words:
        raise ToolError("'name' must be a name or part of one, e.g. 'alex'.")
    return to_json([a for a in state.directory if all(w in a.lower() for w in words)])
