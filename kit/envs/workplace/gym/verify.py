"""The state a list of calls leaves, replayed as NeMo-Gym's verify replays them for its reward.

Verify runs each call's JSON arguments straight into the tool: unlike the server it keeps arguments
whose value is null (so ``notes: null`` stores a missing value where a live call stored ``""``), and it
skips a call that fails in any way, whatever the tool, the arguments or the error.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from kit.envs.workplace.gym.route import TOOLS, signature_problem
from kit.envs.workplace.gym.state import GymState
from kit.envs.workplace.schemas import STATE_CHANGING


def replay(base: GymState, calls: Iterable[tuple[Any, Any]]) -> GymState:
    """A copy of ``base`` after the ``(name, arguments)`` calls. Read-only tools are left out: none of them
    changes what verify compares."""
    state = base.copy()
    for name, arguments in calls:
        if not isinstance(name, str) or name not in STATE_CHANGING:
            continue
        if arguments is None:
            arguments = {}
        elif isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except (ValueError, RecursionError):
                continue
        if not isinstance(arguments, dict) or signature_problem(name, arguments):
            continue
        try:
            TOOLS[name](state, **arguments)
        except Exception:  # noqa: BLE001, S112 - verify skips whatever fails
            continue
    return state
