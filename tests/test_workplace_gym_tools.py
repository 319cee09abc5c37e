"""NeMo-Gym's tool set (``env.tool_messages: nemo_gym``, the default) without NeMo-Gym's server: answers
recorded from its server, the agent's and FastAPI's handling of odd arguments, verify's replay, the JSON
writer, and a property run over fuzzed sequences. The server itself: test_workplace_vs_nemo_gym.py."""

from __future__ import annotations

import json
import pickle
import random
from pathlib import Path

import pytest

from kit.envs.workplace.gym.json_text import pydantic_json
from kit.envs.workplace.reward import outcome_reward
from kit.envs.workplace.sandbox import DEFAULT_TOOL_MESSAGES, TOOL_SETS, WorkplaceSandbox
from kit.envs.workplace.state import load_csv_dir
from kit.testing.fuzz.workplace_calls import fuzz_sequences

CRM = "customer_relationship_manager_"


@pytest.fixture(scope="module")
def base(reference_dir: Path) -> WorkplaceSandbox:
    return WorkplaceSandbox.from_csv_dir(reference_dir / "databases")


def _output(observation: str) -> object:
    return json.loads(observation)["output"]


def test_the_two_differences_the_issue_names_are_gone(base: WorkplaceSandbox) -> None:
    sandbox = base.copy()
    before = sandbox.snapshot()
    refused = sandbox.call(
        "project_management_update_task",
        {"task_id": "00000120", "field": "assigned_to_email", "new_value": "nadia.moreau@atlas.com"},
    )
    assert refused == '{"output":"Assignee email not valid. Please choose from the list of team members."}'
    assert refused.refused and sandbox.snapshot() == before
    found = _output(sandbox.call(CRM + "search_customers", {"customer_name": "Taylor Jackson"}))
    assert list(found) == ["customers", "pagination"]
    assert found["pagination"] == {"total_customers": 1, "page": 1, "page_size": 5, "total_pages": 1}
    assert found["customers"][0]["customer_phone"] is None  # an empty CSV cell is pandas' NaN: null


def test_writes_and_counts_answer_as_nemo_gym_does(base: WorkplaceSandbox) -> None:
    sandbox = base.copy()
    update = {"customer_id": "00000005", "field": "status", "new_value": "Won"}
    assert sandbox.call(CRM + "update_customer", update) == '{"output":"Customer updated successfully."}'
    visits = _output(sandbox.call("analytics_total_visits_count", {"time_min": "2023-11-28"}))
    assert visits == {"2023-11-28": 19, "2023-11-29": 9, "2023-11-30": 7}
    averages = sandbox.call("analytics_get_average_session_duration", {"time_min": "2023-11-29"})
    assert averages == '{"output":{"2023-11-29":20.666666666666668,"2023-11-30":18.142857142857142}}'
    event = {
        "event_name": "x",
        "participant_email": "A@B.com",
        "event_start": "2023-12-01 10:00",
        "duration": "30",
    }
    new_id = sandbox.call("calendar_create_event", event)
    assert new_id == '{"output":"00000300"}' and not new_id.refused


@pytest.mark.parametrize(
    ("name", "arguments", "answer"),
    [
        ("unknown", {}, '{"output":"Error executing tool \'unknown\': \'unknown\'"}'),
        (CRM + "search_customers", {"customer_name": "a", "foo": 1},
         '{"output":"Error executing tool \'customer_relationship_manager_search_customers\': '
         'CustomerRelationshipManagerTool.search_customers() got an unexpected keyword argument \'foo\'"}'),
        (CRM + "search_customers", {"customer_name": "("},
         '{"output":"Error executing tool \'customer_relationship_manager_search_customers\': '
         'Invalid regular expression: missing ): ("}'),
        ("email_search_emails", {"query": 5},
         '{"output":"Error searching emails: \'int\' object has no attribute \'lower\'"}'),
        ("email_delete_email", {"email_id": None}, '{"output":"Email ID not provided."}'),  # nulls dropped
        ("email_delete_email", "{bad",
         '{"error": "Invalid tool call arguments: JSONDecodeError(\'Expecting property name enclosed in '
         'double quotes: line 1 column 2 (char 1)\')"}'),
        ("email_delete_email", "[1, 2]",
         '{"detail":[{"type":"model_attributes_type","loc":["body"],"msg":"Input should be a valid '
         'dictionary or object to extract fields from","input":[1,2]}]}'),
        ("email_delete_email", "null",
         '{"detail":[{"type":"missing","loc":["body"],"msg":"Field required","input":null}]}'),
    ],
)  # fmt: skip
def test_odd_calls_answer_as_nemo_gym_s_agent_and_server_do(
    base: WorkplaceSandbox, name: str, arguments: object, answer: str
) -> None:
    sandbox = base.copy()
    observation = sandbox.call(name, arguments)
    assert observation == answer and observation.refused


def test_text_utf8_cannot_encode_fails_where_it_fails_there(base: WorkplaceSandbox) -> None:
    # A lone surrogate (JSON's "\ud800") cannot be stored in a pandas string column, nor written by
    # pydantic or Starlette; the server answers 500 with the exception's repr (recorded from it).
    sandbox = base.copy()
    stored = sandbox.call("analytics_create_plot", '{"time_min": "\\ud800", "time_max": "b", '
                          '"value_to_plot": "total_visits", "plot_type": "bar"}')  # fmt: skip
    assert json.loads(stored)["output"] == (
        "Error executing tool 'analytics_create_plot': 'utf-8' codec can't encode character '\\ud800' "
        "in position 6: surrogates not allowed"
    )
    echoed = sandbox.call("email_get_email_information_by_id", '{"email_id": "00000373", "field": "\\ud800"}')
    assert json.loads(echoed) == (
        "PydanticSerializationError(Error serializing to JSON: UnicodeEncodeError: 'utf-8' codec can't "
        "encode character '\\ud800' in position 7: surrogates not allowed)"
    )
    rejected = sandbox.call("email_delete_email", '["\\ud800"]')
    assert json.loads(rejected) == (
        """UnicodeEncodeError('utf-8', '{"detail":[{"type":"model_attributes_type","loc":["body"],"msg":"""
        """"Input should be a valid dictionary or object to extract fields from","input":["\\ud800"]}]}', """
        """144, 145, 'surrogates not allowed')"""
    )
    assert stored.refused and echoed.refused and rejected.refused and not sandbox.state.plots


def test_verify_keeps_null_arguments_and_row_order(base: WorkplaceSandbox) -> None:
    add = {"customer_name": "Ada", "assigned_to_email": "raj.patel@atlas.com", "status": "Lead"}
    truth = [{"name": CRM + "add_customer", "arguments": json.dumps(add)}]
    with_null = [{"name": CRM + "add_customer", "arguments": json.dumps({**add, "notes": None})}]
    live = base.copy()
    live.call(CRM + "add_customer", {**add, "notes": None})  # the server drops the null: notes ""
    assert live.same_state(base.replayed([(truth[0]["name"], truth[0]["arguments"])]))
    assert outcome_reward(with_null, truth, base) == 0.0  # verify keeps it: notes missing
    send = [
        {"name": "email_send_email", "arguments": json.dumps({"recipient": to, "subject": "s", "body": "b"})}
        for to in ("a@b.com", "c@d.com")
    ]
    assert outcome_reward(send, send, base) == 1.0
    assert outcome_reward(send[::-1], send, base) == 0.0  # created in another order


def test_json_floats_are_written_as_pydantic_writes_them() -> None:
    pydantic_core = pytest.importorskip("pydantic_core")
    rng = random.Random(0)
    values = [1e16, 1e-5, 1.234e-5, 1e-7, -0.0, 20.666666666666668, 5e-324, 1.7976931348623157e308]
    values += [rng.random() * 10.0 ** rng.randint(-30, 30) * rng.choice([1, -1]) for _ in range(20_000)]
    for value in values:
        assert pydantic_json(value) == pydantic_core.to_json(value).decode(), value
    text = {"s": 'é\u2028\x7f\x00\x1f"\\/', "n": None, "b": [True, 1, 2.5], "nan": float("nan")}
    assert (
        pydantic_json(text)
        == '{"s":"é\u2028\x7f\\u0000\\u001f\\"\\\\/","n":null,"b":[true,1,2.5],"nan":null}'
    )


def test_observations_carry_whether_the_call_was_refused() -> None:
    from kit.episode import is_error_observation

    sandbox = WorkplaceSandbox()
    refused = sandbox.call("email_delete_email", {"email_id": "none"})
    done = sandbox.call("company_directory_find_email_address", {"name": "a"})
    assert is_error_observation(refused) and not is_error_observation(done)
    assert pickle.loads(pickle.dumps(refused)).refused
    assert is_error_observation("Error: plain text") and not is_error_observation("plain text")


def test_the_recipe_key_reaches_the_sandbox() -> None:
    from kit.config.tree import _CHOICES, EnvConfig
    from kit.envs.environment import make_environment

    assert _CHOICES[("env", "tool_messages")] == tuple(TOOL_SETS)
    assert EnvConfig().tool_messages == DEFAULT_TOOL_MESSAGES == "nemo_gym"
    for tools in TOOL_SETS:
        assert make_environment(EnvConfig(tool_messages=tools)).base.tool_messages == tools
    with pytest.raises(ValueError, match="tool_messages"):
        WorkplaceSandbox(tool_messages="other")


def test_fuzzed_calls_never_raise_and_refusals_change_nothing(reference_dir: Path) -> None:
    base = WorkplaceSandbox.from_csv_dir(reference_dir / "databases")
    for calls in fuzz_sequences(300, seed=11, state=load_csv_dir(reference_dir / "databases")):
        sandbox = base.copy()
        for name, arguments in calls:
            before = sandbox.snapshot()
            observation = sandbox.call(name, arguments)
            json.loads(observation)  # every answer is JSON: a body, FastAPI's error or the agent's
            if observation.refused:
                assert sandbox.snapshot() == before, (name, arguments, observation)
    assert base.snapshot() == WorkplaceSandbox.from_csv_dir(reference_dir / "databases").snapshot()
