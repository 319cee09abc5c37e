"""NeMo-Gym's company directory tool."""

from __future__ import annotations

from typing import Any

from kit.envs.workplace.gym.common import Refusal
from kit.envs.workplace.gym.frame import quiet, selected
from kit.envs.workplace.gym.state import GymState


def company_directory_find_email_address(state: GymState, name: Any = "") -> list[Any]:
    """Directory addresses matching ``name`` as a case-insensitive regular expression."""
    if name == "":
        raise Refusal("Name not provided.")
    name = name.lower()
    directory = state.directory
    with quiet():
        found = directory.keep(selected(directory.series("email_address").str.contains(name, case=False)))
    return found.column("email_address")
