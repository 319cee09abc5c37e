"""Compatibility with NeMo-Gym's workplace_assistant: its schemas, databases and example tasks.

The reference lives in ``shared/`` beside the repository; these tests skip when it is absent.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from kit.envs.workplace.cli import register
from kit.envs.workplace.reward import outcome_reward
from kit.envs.workplace.sandbox import WorkplaceSandbox
from kit.envs.workplace.schemas import STATE_CHANGING, chat_schemas, flat_schemas
from kit.envs.workplace.tasks import build_messages

REFERENCE = Path(__file__).resolve().parents[2] / "shared/reference/workplace_assistant"


@pytest.fixture(scope="module")
def reference() -> Path:
    if not REFERENCE.is_dir():
        pytest.skip(f"NeMo-Gym reference not found at {REFERENCE} (expected shared/ beside the repository)")
    return REFERENCE


@pytest.fixture(scope="module")
def base(reference: Path) -> WorkplaceSandbox:
    return WorkplaceSandbox.from_csv_dir(reference / "databases")


@pytest.fixture(scope="module")
def kit_base(reference: Path) -> WorkplaceSandbox:
    return WorkplaceSandbox.from_csv_dir(reference / "databases", tool_messages="kit")


@pytest.fixture(scope="module")
def examples(reference: Path) -> list[dict]:
    lines = (reference / "example_tasks.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _reference_tools(reference: Path) -> list[dict]:
    return [
        tool
        for path in sorted((reference / "tool_schemas").glob("*.json"))
        if path.name != "environment.json"
        for tool in json.loads(path.read_text(encoding="utf-8"))["tools"]
    ]


def test_schemas_match_the_reference(reference: Path) -> None:
    ours = {schema["name"]: schema for schema in flat_schemas()}
    theirs = {tool["name"]: tool for tool in _reference_tools(reference)}
    assert sorted(ours) == sorted(theirs) and len(ours) == 27
    for name, tool in theirs.items():
        mine, expected = ours[name]["parameters"], tool["parameters"]
        assert set(ours[name]) == set(tool) - {"database", "operation_type"}, name
        assert mine["required"] == expected["required"], name
        assert {k: v["type"] for k, v in mine["properties"].items()} == {
            k: v["type"] for k, v in expected["properties"].items()
        }, name
        assert list(mine["properties"]) == list(expected["properties"]), name
        assert mine["additionalProperties"] is expected["additionalProperties"] is False
        assert (name in STATE_CHANGING) == (tool["operation_type"] != "read"), name
    assert {s["function"]["name"] for s in chat_schemas(compact=True)} == set(theirs)


def test_the_example_tasks_list_tools_in_our_order(examples: list[dict]) -> None:
    order = [schema["name"] for schema in flat_schemas()]
    for example in examples:
        assert [tool["name"] for tool in example["responses_create_params"]["tools"]] == order


def test_reference_databases_load(base: WorkplaceSandbox) -> None:
    state = base.state
    assert (len(state.emails), len(state.calendar), len(state.tasks), len(state.customers)) == (
        500,
        300,
        300,
        200,
    )
    assert len(state.analytics) == 1000 and len(state.directory) == 20


@pytest.mark.parametrize("tools", ["nemo_gym", "kit"])
def test_example_ground_truths_replay_to_reward_one(
    reference: Path, examples: list[dict], tools: str
) -> None:
    assert len(examples) == 5
    base = WorkplaceSandbox.from_csv_dir(reference / "databases", tool_messages=tools)
    for example in examples:
        truth = example["ground_truth"]
        sandbox = base.copy()
        for call in truth:
            observation = sandbox.call(call["name"], call["arguments"])
            assert not observation.refused, (call, observation)
        assert not sandbox.same_state(base)
        assert outcome_reward(truth, truth, base) == 1.0
        assert outcome_reward([], truth, base) == 0.0


def test_changing_any_argument_of_a_state_changing_call_scores_zero(
    base: WorkplaceSandbox, examples: list[dict]
) -> None:
    mutations = 0
    for example in examples:
        truth = example["ground_truth"]
        for index, call in enumerate(truth):
            if call["name"] not in STATE_CHANGING:
                continue
            arguments = json.loads(call["arguments"])
            for key in arguments:
                changed = {
                    **arguments,
                    key: arguments[key] + "0" if key.endswith("_id") else arguments[key] + " x",
                }
                if key == "new_value" and arguments.get("field") == "status":
                    changed[key] = "Won" if arguments[key] != "Won" else "Lead"
                predicted = [
                    *truth[:index],
                    {"name": call["name"], "arguments": json.dumps(changed)},
                    *truth[index + 1 :],
                ]
                assert outcome_reward(predicted, truth, base) == 0.0, (call, key)
                mutations += 1
    assert mutations >= 20


def test_a_status_in_another_case_scores_zero_as_in_nemo_gym(
    base: WorkplaceSandbox, examples: list[dict]
) -> None:
    # NeMo-Gym's update_customer refuses "lost" (only "Lost" is valid) and compares status
    # case-sensitively, so this prediction changes nothing there and scores 0.
    truth = examples[4]["ground_truth"]
    assert all('"new_value": "Lost"' in call["arguments"] for call in truth)
    lowered = [{**call, "arguments": call["arguments"].replace('"Lost"', '"lost"')} for call in truth]
    assert outcome_reward(lowered, truth, base) == 0.0
    assert outcome_reward(truth, truth, base) == 1.0


def _ids(observation: str) -> list[str]:
    return [row[next(iter(row))] for row in json.loads(observation)["results"]]


def _acted_on(example: dict) -> list[str]:
    return [next(iter(json.loads(call["arguments"]).values())) for call in example["ground_truth"]]


def test_nemo_gym_look_ups_find_what_the_example_ground_truths_act_on(
    base: WorkplaceSandbox, examples: list[dict]
) -> None:
    def found(tool: str, arguments: dict, key: str) -> list[str]:
        return [row[next(iter(row))] for row in json.loads(base.call(tool, arguments))["output"][key]]

    query = {"query": "carlos Task Update on Develop prototype for report generation"}
    assert found("email_search_emails", query, "emails")[:1] == _acted_on(examples[0])
    day = {"time_min": "2023-12-01 00:00:00", "time_max": "2023-12-01 23:59:59"}
    assert found("calendar_search_events", day, "events")[:1] == _acted_on(examples[1])  # latest first
    crm = "customer_relationship_manager_search_customers"
    leads = {"assigned_to_email": "akira", "product_interest": "Software", "status": "Lead"}
    assert found(crm, leads, "customers") == _acted_on(examples[2])
    won = {"assigned_to_email": "lena", "product_interest": "Services", "status": "Won"}
    assert found(crm, won, "customers") == _acted_on(examples[3])
    stale = {"status": "Proposal", "product_interest": "Hardware", "last_contact_date_max": "2023-11-02"}
    assert found(crm, stale, "customers") == _acted_on(examples[4])


def test_kit_look_ups_find_what_the_example_ground_truths_act_on(
    kit_base: WorkplaceSandbox, examples: list[dict]
) -> None:
    base, acted_on = kit_base, _acted_on
    newest = base.call(
        "email_search_emails", {"query": "carlos Task Update on Develop prototype for report generation"}
    )
    assert _ids(newest)[:1] == acted_on(examples[0])
    page = json.loads(
        base.call("calendar_search_events", {"time_min": "2023-12-01", "time_max": "2023-12-01"})
    )
    last_page = base.call(
        "calendar_search_events",
        {"time_min": "2023-12-01", "time_max": "2023-12-01", "page": page["total"] // 5 + 1},
    )
    assert _ids(last_page)[-1:] == acted_on(examples[1])
    crm = "customer_relationship_manager_search_customers"
    leads = base.call(crm, {"assigned_to_email": "akira", "product_interest": "Software", "status": "Lead"})
    assert _ids(leads) == acted_on(examples[2])
    won = base.call(crm, {"assigned_to_email": "lena", "product_interest": "Services", "status": "Won"})
    assert _ids(won) == acted_on(examples[3])
    stale = base.call(
        crm, {"status": "Proposal", "product_interest": "Hardware", "last_contact_date_max": "2023-11-02"}
    )
    assert _ids(stale) == acted_on(examples[4])


def test_example_rows_build_prompts(examples: list[dict]) -> None:
    messages, tools = build_messages(examples[2], "task")
    assert messages[1]["content"].startswith("Raj is taking over")
    assert {t["function"]["name"].split("_")[0] for t in tools} == {"company", "customer"}


def test_verify_scores_rollout_rows_on_the_reference_databases(
    reference: Path, examples: list[dict], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = tmp_path / "rollouts.jsonl"
    with rows.open("w", encoding="utf-8") as handle:
        for i, example in enumerate(examples):
            calls = example["ground_truth"] if i % 2 == 0 else example["ground_truth"][:-1]
            output = [{"type": "function_call", "call_id": f"c{j}", **c} for j, c in enumerate(calls)]
            output.append({"type": "message", "content": [{"type": "output_text", "text": "Done."}]})
            handle.write(json.dumps({**example, "response": {"output": output}}) + "\n")
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["verify", "--rows", str(rows), "--databases", str(reference / "databases")])
    assert args.func(args) == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert printed == [{"index": i, "reward": 1.0 if i % 2 == 0 else 0.0} for i in range(5)]


# ---------------------------------------------------------------- rewards never lie on foreign data


@pytest.mark.parametrize("tools", ["nemo_gym", "kit"])
def test_ground_truth_that_does_not_apply_is_flagged(
    reference: Path, examples: list[dict], tools: str
) -> None:
    from kit.envs.rows import read_jsonl
    from kit.envs.workplace.reward import ground_truth_problem

    own = WorkplaceSandbox.from_csv_dir(reference / "databases", tool_messages=tools)
    assert all(ground_truth_problem(row["ground_truth"], own) is None for row in examples)
    # The kit's tasks on NeMo-Gym's databases, and (where the kit's tools refuse an unknown colleague)
    # NeMo-Gym's rows on the kit's databases: some name records or people the other data lacks.
    tasks = read_jsonl(Path(__file__).parents[1] / "data/workplace/validation.jsonl")
    foreign = [(row, own) for row in tasks]
    if tools == "kit":
        foreign += [(row, WorkplaceSandbox(tool_messages=tools)) for row in examples]
    problems = [(row, base, ground_truth_problem(row["ground_truth"], base)) for row, base in foreign]
    assert sum(bool(problem) for *_, problem in problems) >= 10
    assert any(problem and "changes nothing" in problem for *_, problem in problems)
    # Where it is flagged, doing nothing matches the replayed ground truth: the reward would lie.
    for row, base, problem in problems:
        if problem and "changes nothing" in problem:
            assert outcome_reward([], row["ground_truth"], base) == 1.0


def test_kit_eval_counts_inapplicable_rows_as_invalid(reference: Path, examples, cli, tiny_model_dir) -> None:
    rows = str(reference / "example_tasks.jsonl")
    common = ["eval", "--config", "cpu_demo", "--model", tiny_model_dir, "--tasks", rows,
              "grpo.max_completion_length=8", "env.tiers=[easy, medium, hard]"]  # fmt: skip
    # NeMo-Gym's tools accept every reference row on the kit's data; the kit's refuse one (an unknown
    # colleague), which is the case this test needs.
    on_kit_data = json.loads(cli(*common, "env.tool_messages=kit").stdout)
    on_own_data = json.loads(cli(*common, "--databases", str(reference / "databases")).stdout)
    assert on_own_data["invalid"] == 0 and on_own_data["n"] == len(examples)
    assert on_kit_data["invalid"] >= 1 and on_kit_data["n"] == on_own_data["n"] - on_kit_data["invalid"]
    assert on_kit_data["invalid_reasons"]
