"""Rewards for workplace tasks: NeMo-Gym's outcome check plus optional shaping signals.

A call is a mapping ``{"name": ..., "arguments": dict or JSON string}``; Responses ``function_call`` items
and Chat-Completions tool calls (``{"function": {"name", "arguments"}}``) are accepted as they are. Every
function here returns a float in [0, 1] and never raises on malformed calls.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kit.envs.workplace.sandbox import WorkplaceSandbox, check_arguments, parse_arguments
from kit.envs.workplace.schemas import SPECS_BY_NAME, STATE_CHANGING
from kit.envs.workplace.tools import ToolError

Call = Mapping[str, Any]


def call_parts(call: Any) -> tuple[Any, Any]:
    """``(name, arguments)`` of a call in any accepted shape; ``(None, None)`` when it is not a mapping."""
    if not isinstance(call, Mapping):
        return None, None
    function = call.get("function")
    if isinstance(function, Mapping):
        call = function
    return call.get("name"), call.get("arguments")


def replay(calls: Sequence[Call], base: WorkplaceSandbox | None = None) -> WorkplaceSandbox:
    """A fresh copy of ``base`` (default: the kit's state) after running ``calls`` as the reward replays
    them: with NeMo-Gym's tools as its verify does (null arguments kept, failing calls skipped), with the
    kit's tools their state-changing calls alone, refused ones skipped."""
    sandbox = base if base is not None else WorkplaceSandbox()
    return sandbox.replayed(call_parts(call) for call in calls)


def ground_truth_problem(
    ground_truth_calls: Sequence[Call], base: WorkplaceSandbox | None = None
) -> str | None:
    """Why a task's ground truth does not apply to ``base``, or None when it does.

    It does not apply when one of its state-changing calls is refused there (it names a record the
    databases lack), or when it has state-changing calls and yet changes nothing. Scored on such a
    sandbox, a model that does nothing would match the ground truth and get 1.0.
    """
    base = base if base is not None else WorkplaceSandbox()
    sandbox = base.copy()
    changing = 0
    for call in ground_truth_calls:
        name, arguments = call_parts(call)
        if isinstance(name, str) and name in STATE_CHANGING:
            changing += 1
            observation = sandbox.call(name, arguments)
            if observation.refused:
                return f"ground-truth call {name} fails on these databases ({observation[:160]})"
    if changing and sandbox.same_state(base):
        return "the ground truth changes nothing on these databases"
    return None


def outcome_reward(
    predicted_calls: Sequence[Call], ground_truth_calls: Sequence[Call], base: WorkplaceSandbox | None = None
) -> float:
    """1.0 when replaying the predicted calls leaves the same state as replaying the ground truth, each on
    a fresh copy of ``base``, else 0.0. Strings compare case-insensitively except ``status``,
    ``list_name`` and ``board``. With NeMo-Gym's tools (the default) the tables must also hold their rows
    in the same order, as its verify compares them; with the kit's, rows created in another order still
    match."""
    same = replay(predicted_calls, base).same_state(replay(ground_truth_calls, base))
    return 1.0 if same else 0.0


def _arguments(call: Any) -> dict[str, Any] | None:
    try:
        return parse_arguments(call_parts(call)[1])
    except ToolError:
        return None


def _well_formed(call: Any) -> bool:
    name, _ = call_parts(call)
    spec = SPECS_BY_NAME.get(name) if isinstance(name, str) else None
    arguments = _arguments(call)
    if spec is None or arguments is None:
        return False
    try:
        check_arguments(spec, arguments)
    except ToolError:
        return False
    return True


def valid_call_format(predicted_calls: Sequence[Call], ground_truth_calls: Sequence[Call]) -> float:
    """Fraction of predicted calls naming a real tool with schema-valid arguments (names, required
    arguments, JSON types). No predicted call scores 1.0 only when none was expected."""
    if not predicted_calls:
        return 0.0 if ground_truth_calls else 1.0
    return sum(_well_formed(call) for call in predicted_calls) / len(predicted_calls)


def tool_names_match(predicted_calls: Sequence[Call], ground_truth_calls: Sequence[Call]) -> float:
    """F1 between the multisets of predicted and ground-truth tool names (1.0 when both are empty)."""
    predicted = Counter(str(call_parts(c)[0]) for c in predicted_calls)
    expected = Counter(str(call_parts(c)[0]) for c in ground_truth_calls)
    if not predicted and not expected:
        return 1.0
    common = sum((predicted & expected).values())
    return 2 * common / (sum(predicted.values()) + sum(expected.values()))


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.strip().lower() == b.strip().lower()
    return a == b and type(a) is type(b)


def _argument_overlap(predicted: dict[str, Any], expected: dict[str, Any]) -> float:
    keys = predicted.keys() | expected.keys()
    if not keys:
        return 1.0
    matched = sum(k in predicted and k in expected and _same_value(predicted[k], expected[k]) for k in keys)
    return matched / len(keys)


def argument_match(predicted_calls: Sequence[Call], ground_truth_calls: Sequence[Call]) -> float:
    """How closely the arguments agree: each ground-truth call is paired, in order, with the first unused
    predicted call of the same name and scored by the share of argument keys whose values agree (strings
    case-insensitively); the sum is divided by the larger call count, so extra or missing calls cost."""
    if not predicted_calls and not ground_truth_calls:
        return 1.0
    unused = list(range(len(predicted_calls)))
    total = 0.0
    for expected_call in ground_truth_calls:
        name = call_parts(expected_call)[0]
        match = next((i for i in unused if call_parts(predicted_calls[i])[0] == name), None)
        if match is None:
            continue
        unused.remove(match)
        total += _argument_overlap(_arguments(predicted_calls[match]) or {}, _arguments(expected_call) or {})
    return total / max(len(predicted_calls), len(ground_truth_calls))


SHAPING_REWARDS: dict[str, Callable[[Sequence[Call], Sequence[Call]], float]] = {
    "valid_call_format": valid_call_format,
    "tool_names_match": tool_names_match,
    "argument_match": argument_match,
}
"""The optional shaping signals by name, each ``(predicted_calls, ground_truth_calls) -> float``."""
