"""Outcome reward and shaping signals of the workplace environment."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from kit.envs.workplace.reward import (
    SHAPING_REWARDS,
    argument_match,
    outcome_reward,
    replay,
    tool_names_match,
    valid_call_format,
)
from kit.envs.workplace.sandbox import WorkplaceSandbox
from kit.envs.workplace.schemas import TOOL_NAMES


def _call(tool: str, /, **arguments: object) -> dict[str, str]:
    return {"name": tool, "arguments": json.dumps(arguments)}


BASE = WorkplaceSandbox()
TASK_ID = next(iter(BASE.state.tasks.rows()))["task_id"]
SEND = _call("email_send_email", recipient="priya.sharma@atlas.com", subject="Hi", body="Lunch?")
MOVE = _call(
    "project_management_update_task",
    task_id=TASK_ID,
    field="list_name",
    new_value="Completed" if next(iter(BASE.state.tasks.rows()))["list_name"] != "Completed" else "Backlog",
)
LOOKUP = _call("company_directory_find_email_address", name="priya")


def test_equal_outcomes_score_one_whatever_the_reads_and_order() -> None:
    truth = [LOOKUP, SEND, MOVE]
    assert outcome_reward(truth, truth) == 1.0
    assert outcome_reward([MOVE, SEND], truth) == 1.0
    reads = [LOOKUP, _call("email_search_emails", query="lunch"), SEND, LOOKUP, MOVE]
    assert outcome_reward(reads, truth) == 1.0


def test_different_outcomes_score_zero() -> None:
    truth = [SEND, MOVE]
    assert outcome_reward([SEND], truth) == 0.0
    assert outcome_reward([], truth) == 0.0
    assert outcome_reward([SEND, MOVE, SEND], truth) == 0.0
    assert (
        outcome_reward(
            [
                _call("email_send_email", recipient="priya.sharma@atlas.com", subject="Hi", body="Dinner?"),
                MOVE,
            ],
            truth,
        )
        == 0.0
    )
    assert outcome_reward([], []) == 1.0
    assert outcome_reward([LOOKUP], []) == 1.0


def test_call_shapes_and_malformed_calls_are_accepted() -> None:
    chat = {"type": "function", "function": {"name": SEND["name"], "arguments": SEND["arguments"]}}
    responses = {
        "type": "function_call",
        "call_id": "c1",
        "name": SEND["name"],
        "arguments": SEND["arguments"],
    }
    as_dict = {"name": SEND["name"], "arguments": json.loads(SEND["arguments"])}
    for shape in (chat, responses, as_dict):
        assert outcome_reward([shape], [SEND]) == 1.0
    junk = [None, 3, "text", {}, {"name": ["x"]}, {"name": SEND["name"], "arguments": "{bad"}]
    assert outcome_reward([*junk, SEND], [SEND]) == 1.0
    assert valid_call_format(junk, [SEND]) == 0.0


def test_replay_uses_a_fresh_copy_of_the_base() -> None:
    before = BASE.snapshot()
    after = replay([SEND], BASE)
    assert BASE.snapshot() == before and after.snapshot() != before


def test_valid_call_format() -> None:
    assert valid_call_format([SEND, MOVE], [SEND]) == 1.0
    bad = _call("email_send_email", recipient="x@y.com")  # missing subject and body
    assert valid_call_format([SEND, bad], [SEND]) == 0.5
    assert valid_call_format([], []) == 1.0
    assert valid_call_format([], [SEND]) == 0.0


def test_tool_names_match_is_an_f1() -> None:
    assert tool_names_match([LOOKUP, SEND], [LOOKUP, SEND]) == 1.0
    assert tool_names_match([SEND], [LOOKUP, SEND]) == 2 / 3
    assert tool_names_match([MOVE], [SEND]) == 0.0
    assert tool_names_match([], []) == 1.0


def test_argument_match_scores_shared_keys() -> None:
    assert argument_match([SEND], [SEND]) == 1.0
    loud = _call("email_send_email", recipient="PRIYA.SHARMA@atlas.com", subject="hi", body="Lunch?")
    assert argument_match([loud], [SEND]) == 1.0  # strings compare case-insensitively
    other_body = _call("email_send_email", recipient="priya.sharma@atlas.com", subject="Hi", body="Dinner?")
    assert argument_match([other_body], [SEND]) == 2 / 3
    assert argument_match([SEND, MOVE], [SEND]) == 0.5  # the extra call costs
    assert argument_match([MOVE], [SEND]) == 0.0
    assert argument_match([], []) == 1.0


def test_shaping_rewards_registry() -> None:
    assert {
        "valid_call_format": valid_call_format,
        "tool_names_match": tool_names_match,
        "argument_match": argument_match,
    } == SHAPING_REWARDS


_junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
_calls = st.lists(
    st.one_of(
        _junk,
        st.fixed_dictionaries(
            {
                "name": st.sampled_from(TOOL_NAMES) | st.text(max_size=8),
                "arguments": _junk | st.text(max_size=20),
            }
        ),
        st.sampled_from([SEND, MOVE, LOOKUP]),
    ),
    max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(_calls, _calls)
def test_rewards_never_raise_and_stay_in_range(predicted: list, truth: list) -> None:
    for reward in (outcome_reward, *SHAPING_REWARDS.values()):
        assert 0.0 <= reward(predicted, truth) <= 1.0
