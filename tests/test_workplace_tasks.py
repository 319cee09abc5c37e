"""The task generator, the committed data files and the prompt builder."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from kit.envs.rows import read_jsonl
from kit.envs.workplace.sandbox import TOOL_SETS, WorkplaceSandbox
from kit.envs.workplace.schemas import STATE_CHANGING, TOOLKITS, flat_schemas, toolkit_of
from kit.envs.workplace.tasks import (
    CATEGORY_PREFIX,
    ENVIRONMENT_NAME,
    build_messages,
    cells,
    make_splits,
    quotas,
    row_toolkits,
    write_splits,
)
from kit.envs.workplace.templates import CATEGORIES, TIERS
from kit.envs.workplace.templates.families import FAMILIES, NEMO_GYM_FAMILIES

DATA = Path(__file__).resolve().parents[1] / "data" / "workplace"
SPLITS = ("train", "validation")


@pytest.fixture(scope="module")
def rows() -> dict[str, list[dict]]:
    return {name: read_jsonl(DATA / f"{name}.jsonl") for name in SPLITS}


def _request(row: dict) -> str:
    return row["responses_create_params"]["input"][1]["content"]


def test_committed_data_is_what_the_generator_writes(tmp_path: Path) -> None:
    first, second = write_splits(tmp_path / "a", seed=0), write_splits(tmp_path / "b", seed=0)
    for name in SPLITS:
        assert first[name].read_bytes() == second[name].read_bytes()
        assert first[name].read_bytes() == (DATA / f"{name}.jsonl").read_bytes(), (
            f"data/workplace/{name}.jsonl is stale: regenerate it with write_splits('data/workplace', 0)"
        )
    total = sum((DATA / f"{name}.jsonl").stat().st_size for name in SPLITS)
    assert total < 40_000_000


def test_other_seeds_give_other_tasks() -> None:
    requests = {_request(row) for row in make_splits(seed=1, train=60, validation=20)["train"]}
    assert requests != {_request(row) for row in make_splits(seed=2, train=60, validation=20)["train"]}


def test_sizes_and_every_category_and_tier_in_both_splits(rows: dict[str, list[dict]]) -> None:
    assert len(rows["train"]) >= 1000 and len(rows["validation"]) >= 300
    expected = {(CATEGORY_PREFIX + category, tier) for category, tier in cells()}
    assert {(c, t) for c in CATEGORIES for t in TIERS} - {(c, t) for c, t in cells()} == {
        ("multi_domain", "easy")
    }
    for name in SPLITS:
        assert {(row["category"], row["tier"]) for row in rows[name]} == expected
        assert [row["id"] for row in rows[name]] == list(range(len(rows[name])))
    tiers = [row["tier"] for row in rows["train"]]
    assert tiers.count("easy") == 500  # the easy tier dominates


def test_no_request_is_shared_or_repeated(rows: dict[str, list[dict]]) -> None:
    train = [_request(row) for row in rows["train"]]
    validation = [_request(row) for row in rows["validation"]]
    assert len(set(train)) == len(train) and len(set(validation)) == len(validation)
    assert not set(train) & set(validation)


def test_rows_follow_the_nemo_gym_format(rows: dict[str, list[dict]]) -> None:
    tools = flat_schemas()
    for row in rows["validation"]:
        params = row["responses_create_params"]
        assert [m["role"] for m in params["input"]] == ["system", "user"]
        assert params["tools"] == tools
        assert row["environment_name"] == ENVIRONMENT_NAME
        for call in row["ground_truth"]:
            assert set(call) == {"name", "arguments"} and isinstance(json.loads(call["arguments"]), dict)
        needed = {toolkit_of(call["name"]) for call in row["ground_truth"]}
        assert needed <= set(row["toolkits"]) <= set(TOOLKITS)
        category = row["category"].removeprefix(CATEGORY_PREFIX)
        assert category == "multi_domain" or category in row["toolkits"]


@pytest.mark.parametrize("tools", TOOL_SETS)
def test_every_ground_truth_replays_cleanly_and_changes_state(
    rows: dict[str, list[dict]], tools: str
) -> None:
    base = WorkplaceSandbox(tool_messages=tools)
    for row in rows["train"] + rows["validation"]:
        sandbox = base.copy()
        for call in row["ground_truth"]:
            observation = sandbox.call(call["name"], call["arguments"])
            assert not observation.refused, (_request(row), call, observation)
        if any(call["name"] in STATE_CHANGING for call in row["ground_truth"]):
            assert not sandbox.same_state(base), _request(row)


def test_requests_name_records_as_people_do_and_ids_arrive_in_tool_results(
    rows: dict[str, list[dict]],
) -> None:
    """No request gives an internal id; replayed on NeMo-Gym's tool set, every id a solution's call uses
    was in an answer before it (what the SFT demonstrations show), and the solution's writes are the
    ground truth, which NeMo-Gym's verifier replays."""
    base = WorkplaceSandbox(tool_messages="nemo_gym")
    for row in (r for name in SPLITS for r in rows[name]):
        request = _request(row)
        assert not re.search(r"\b\d{8}\b", request), request
        sandbox, answers = base.copy(), []
        for call in row["solution"]:
            for key, value in json.loads(call["arguments"]).items():
                if key.endswith("_id") and key != "visitor_id":
                    assert any(value in answer for answer in answers), (request, call)
            answer = sandbox.call(call["name"], call["arguments"])
            assert not answer.refused, (request, call, answer)
            answers.append(str(answer))
        assert [c for c in row["solution"] if c["name"] in STATE_CHANGING] == row["ground_truth"], request
        assert sandbox.same_state(base.replayed((c["name"], c["arguments"]) for c in row["ground_truth"]))


def test_easy_tasks_change_one_record_the_request_names_exactly(rows: dict[str, list[dict]]) -> None:
    for row in (r for name in SPLITS for r in rows[name] if r["tier"] == "easy"):
        (call,) = row["ground_truth"]
        reads = row["solution"][:-1]
        assert call["name"] in STATE_CHANGING and len(reads) <= 1, _request(row)
        for key, value in json.loads(call["arguments"]).items():
            if key != "field" and not key.endswith("_id"):  # the field is named in words ("Rename")
                assert value in _request(row), (key, value, _request(row))


def test_harder_tiers_look_things_up_or_act_more_than_once(rows: dict[str, list[dict]]) -> None:
    for row in (r for r in rows["train"] if r["tier"] == "hard"):
        assert len(row["solution"]) >= 2 or row["category"].endswith("analytics"), _request(row)
    lookups = [
        r
        for r in rows["train"]
        if r["tier"] == "medium" and any(c["name"] not in STATE_CHANGING for c in r["solution"])
    ]
    assert len(lookups) >= 0.8 * sum(r["tier"] == "medium" for r in rows["train"])


def test_every_nemo_gym_task_family_has_tasks(rows: dict[str, list[dict]], reference_dir: Path) -> None:
    """NeMo-Gym's workplace patterns (its public tool_schemas/environment.json) are the kit's families."""
    published = json.loads((reference_dir / "tool_schemas" / "environment.json").read_text())
    assert {p["id"] for p in published["common_multi_step_patterns"]} == set(NEMO_GYM_FAMILIES)
    counts = Counter(r["family"] for name in SPLITS for r in rows[name])
    assert set(counts) == set(FAMILIES) and min(counts.values()) >= 5, counts


def test_quotas_add_up() -> None:
    for total in (17, 300, 1000, 1234):
        assert sum(quotas(total).values()) == total


def test_build_messages_scopes_and_compacts_tools(rows: dict[str, list[dict]]) -> None:
    row = next(r for r in rows["train"] if set(r["toolkits"]) == {"company_directory", "email"})
    messages, tools = build_messages(row, "task", compact=True)
    assert messages == row["responses_create_params"]["input"]
    names = [tool["function"]["name"] for tool in tools]
    assert {toolkit_of(name) for name in names} == set(row["toolkits"]) == {"company_directory", "email"}
    assert all(
        tool["type"] == "function" and set(tool["function"]) == {"name", "description", "parameters"}
        for tool in tools
    )
    _, everything = build_messages(row, "all", compact=False)
    assert len(everything) == 27
    _, full = build_messages(row, "task", compact=False)
    assert len(json.dumps(tools)) < 0.75 * len(json.dumps(full))
    assert [tool["function"]["parameters"]["required"] for tool in tools] == [
        tool["function"]["parameters"]["required"] for tool in full
    ]
    with pytest.raises(ValueError, match="tools_scope"):
        build_messages(row, "some")


def test_rows_without_toolkits_get_them_from_category_and_ground_truth() -> None:
    row = {
        "category": "workplace_assistant_customer_relationship_manager",
        "ground_truth": [{"name": "email_send_email", "arguments": "{}"}],
    }
    assert row_toolkits(row) == ["company_directory", "email", "customer_relationship_manager"]
    assert row_toolkits({"category": "workplace_assistant_multi_domain"}) == ["company_directory"]


def test_every_recipe_task_file_is_committed_or_made_on_first_use() -> None:
    """A fresh clone has only data/workplace: every other file a shipped recipe names is a known set."""
    import subprocess

    from kit.config.tree import load_config
    from kit.envs.workplace.task_sets import task_set_for

    root = DATA.parents[1]
    tracked = set(subprocess.run(["git", "ls-files", "data"], cwd=root, capture_output=True, text=True,
                                 check=True).stdout.split())  # fmt: skip
    for recipe in sorted((root / "kit" / "recipes").glob("*.yaml")):
        cfg = load_config(recipe.stem)
        for source in (cfg.env.train_file, cfg.env.eval_file):
            assert source in tracked or task_set_for(source) is not None, (recipe.name, source)


def test_a_task_set_is_its_command(tmp_path: Path) -> None:
    """`TaskSet.command()` (what the logs and docs show) makes the same files `ensure_task_set` makes."""
    import argparse
    import shlex

    from kit.envs.workplace.cli import register
    from kit.envs.workplace.task_sets import TASK_SETS

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    for task_set in TASK_SETS:
        words = shlex.split(task_set.command())
        assert words[:3] == ["kit", "env", "generate"] and words[-2:] == ["--out", task_set.folder]
        args = parser.parse_args(["generate", *words[3:-2], "--out", str(tmp_path)])
        assert (args.seed, args.train, args.validation, args.dialogue_share) == (
            task_set.seed, task_set.train, task_set.validation, task_set.dialogue_share)  # fmt: skip
