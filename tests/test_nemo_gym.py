"""NeMo-Gym's own servers as the kit's environment, against the real NeMo-Gym 0.4.0 package in .venv-gym
(`make gym-venv`): its launcher, its resources servers' protocol, the rows it accepts, and the faults a
job must survive. No mock: every server here is NeMo-Gym's own, started by its own launcher."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
import requests
from conftest import PROJECT_ROOT
from hypothesis import HealthCheck, given, settings
from process_checks import descendants, wait_gone

from kit.config.tree import load_config
from kit.envs.environment import make_environment
from kit.envs.nemo_gym.agent import ModelCall, stitch
from kit.envs.nemo_gym.counter_tasks import RESOURCES_SERVER, counter_splits
from kit.envs.nemo_gym.gym_python import GymNotFound, gym_python
from kit.envs.nemo_gym.servers import NeMoGymError, NeMoGymServers, resources_server
from kit.envs.nemo_gym.session import GymSession, episode_response
from kit.envs.rows import RowsError, load_rows
from kit.episode import Episode, EpisodeFault
from kit.testing.fuzz import rows as fuzz_rows

COUNTER = ["env.name=nemo_gym", f"env.nemo_gym.resources_server={RESOURCES_SERVER}"]


@pytest.fixture(scope="module")
def gym_servers(tmp_path_factory):
    """NeMo-Gym's workplace and counter resources servers, started by its launcher, for the module."""
    with NeMoGymServers(
        [resources_server("workplace_assistant"), resources_server(RESOURCES_SERVER)],
        tmp_path_factory.mktemp("gym"),
    ) as servers:
        yield servers


@pytest.fixture(scope="module")
def counter_rows():
    return counter_splits(seed=1, train=0, validation=12)["validation"]


def test_nemo_gym_s_launcher_starts_the_servers_on_loopback_and_stopping_leaves_nothing(
    tmp_path, counter_rows
):
    servers = NeMoGymServers([resources_server(RESOURCES_SERVER)], tmp_path, start_timeout=120)
    with servers:
        config = servers.config()
        assert config["head_server"]["host"] == "127.0.0.1"
        assert config[RESOURCES_SERVER]["resources_servers"][RESOURCES_SERVER]["domain"] == "agent"  # shipped
        url = servers.url(RESOURCES_SERVER)
        assert url.startswith("http://127.0.0.1:")
        assert requests.post(f"{url}/seed_session", json={"initial_count": 2}, timeout=10).ok
        started = descendants(servers.process.pid)
        assert any("ray" in command for command in started.values())  # NeMo-Gym's launcher, Ray and all
        ray_addresses = {
            part for cmd in started.values() for part in cmd.split() if "node-ip-address=" in part
        }
        assert ray_addresses <= {"--node-ip-address=127.0.0.1"}
    assert wait_gone([servers.process.pid, *started], 30) == []


def test_bad_starts_are_named_with_their_fix(tmp_path, monkeypatch):
    with pytest.raises(NeMoGymError, match="no resources_servers/workplace_assistent.*workplace_assistant"):
        NeMoGymServers([resources_server("workplace_assistent")], tmp_path)
    with pytest.raises(NeMoGymError, match=r"did not answer within 0 s \(nemo_gym.start_timeout\)"):
        NeMoGymServers([resources_server(RESOURCES_SERVER)], tmp_path, start_timeout=0.2).start()
    monkeypatch.setenv("KIT_GYM_PYTHON", str(tmp_path / "nope" / "python"))
    with pytest.raises(GymNotFound, match="KIT_GYM_PYTHON"):
        gym_python()
    monkeypatch.delenv("KIT_GYM_PYTHON")
    monkeypatch.setattr("kit.envs.nemo_gym.gym_python.GYM_VENV", tmp_path / "none")
    with pytest.raises(GymNotFound, match="make gym-venv"):
        gym_python()


def test_a_session_is_the_counter_s_own_and_verify_reads_its_state(gym_servers, counter_rows):
    url = gym_servers.url(RESOURCES_SERVER)
    row = counter_rows[0]
    one, other = GymSession(url, row, 10), GymSession(url, row, 10)
    change = row["expected_count"] - row["initial_count"]
    assert one.call("increment_counter", {"count": change}) == '{"success":true}'
    assert json.loads(one.call("get_counter_value", "{}")) == {"count": row["expected_count"]}
    assert json.loads(other.call("get_counter_value", {})) == {"count": row["initial_count"]}
    episode = Episode(prompt_ids=[])
    assert one.verify(episode_response(row, episode)) == 1.0
    assert other.verify(episode_response(row, episode)) == float(change == 0)
    one.close(), other.close()


def test_tool_calls_get_what_nemo_gym_s_agent_would_feed_the_model(gym_servers, counter_rows):
    url = gym_servers.url(RESOURCES_SERVER)
    session = GymSession(url, counter_rows[0], 10)
    assert json.loads(session.call("increment_counter", "{oops"))["error"].startswith(
        "Invalid tool call arguments: JSONDecodeError"
    )
    assert "int_parsing" in session.call("increment_counter", {"count": "many"})  # the server's own 422 body
    assert session.call("no_such_tool", {}) == '{"detail":"Not Found"}'
    # What would let a policy reseed or score its own session never reaches the server.
    for name in ("seed_session", "verify", "../verify", "a/b"):
        assert "is not a tool of this environment" in json.loads(session.call(name, {}))["error"]
    task_row = {"responses_create_params": {"input": "x"}}
    workplace = GymSession(gym_servers.url("workplace_assistant"), task_row, 10)
    change = {"task_id": "00000120", "field": "assigned_to_email", "new_value": "nadia.moreau@atlas.com"}
    answer = workplace.call("project_management_update_task", change)
    assert answer == '{"output":"Assignee email not valid. Please choose from the list of team members."}'
    session.close(), workplace.close()


def test_a_slow_server_is_reported_never_waited_on(gym_servers, counter_rows):
    url = gym_servers.url(RESOURCES_SERVER)
    session = GymSession(url, counter_rows[0], 10)
    with socket.socket() as hanging:  # accepts connections (the kernel's backlog) and never answers
        hanging.bind(("127.0.0.1", 0))
        hanging.listen(8)
        session.url, session.timeout = f"http://127.0.0.1:{hanging.getsockname()[1]}", 0.5
        started = time.monotonic()
        assert "env.nemo_gym.request_timeout" in json.loads(session.call("get_counter_value", {}))["error"]
        with pytest.raises(EpisodeFault, match="verify did not answer"):
            session.verify(episode_response(counter_rows[0], Episode(prompt_ids=[])))
        assert time.monotonic() - started < 5
    with pytest.raises(NeMoGymError, match="refused seed_session.*initial_count"):
        GymSession(url, {"responses_create_params": {"input": "x"}}, 10)


def test_rows_nemo_gym_refuses_are_named_before_any_episode(tmp_path, gym_servers):
    cfg = load_config(None, [*COUNTER, "env.nemo_gym.url=", "env.tiers=[easy, medium, hard]"])
    env = make_environment(cfg.env, tmp_path)
    rows = tmp_path / "rows.jsonl"
    good = counter_splits(seed=2, train=0, validation=2)["validation"]
    rows.write_text("".join(json.dumps(r) + "\n" for r in [*good, {**good[0], "initial_count": "three"}]))
    with pytest.raises(RowsError, match=r"rows.jsonl:3: NeMo-Gym's example_session_state_mgmt would refuse .*"
                                        r"seed_session: field 'initial_count'"):  # fmt: skip
        env.load_tasks(str(rows))


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{oops", "rows.jsonl:1: not valid JSON"),
        ('{"responses_create_params": {"input": []}}', "rows.jsonl:1: field 'responses_create_par"),
        ('{"responses_create_params": {"input": "hi"}, "ground_truth": "[1"}', "'ground_truth' is a string"),
        ('{"responses_create_params": {"input": "hi", "tools": {"a": 1}}}', "'responses_create_params.tool"),
    ],
)  # fmt: skip
def test_a_bad_row_is_one_line_naming_file_line_field(tmp_path, cli, line, message):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(line + "\n")
    done = cli("eval", "--config", "cpu_demo", "--tasks", str(rows))
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1


def test_a_ground_truth_given_as_a_json_string_is_a_list_of_calls(tmp_path, reference_dir):
    rows = [json.loads(line) for line in (reference_dir / "example_tasks.jsonl").read_text().splitlines()]
    as_strings = [{**row, "ground_truth": json.dumps(row["ground_truth"])} for row in rows]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in as_strings))
    assert [r["ground_truth"] for r in load_rows(path)] == [r["ground_truth"] for r in rows]
    env = make_environment(load_config(None, [f"env.databases={reference_dir / 'databases'}"]).env)
    tasks = env.load_tasks(str(path))
    assert [env.outcome(t, t.ground_truth) for t in tasks] == [1.0] * len(rows)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=fuzz_rows.files)
def test_fuzzed_rows_are_loaded_or_refused_naming_where_never_crash(tmp_path: Path, rows) -> None:
    fuzz_rows.check_rows(tmp_path, rows)


def _call(prompt: list[int], sampled: list[int]) -> ModelCall:
    return ModelCall({"prompt_token_ids": prompt, "generation_token_ids": sampled,
                      "generation_log_probs": [-0.5] * len(sampled)})  # fmt: skip


END = 2  # the end-of-turn token of these id sequences


def test_stitching_keeps_the_sampled_ids_and_masks_what_the_agent_added():
    first = _call([1, 5, 6, END, 9], [7, 7, END])
    second = _call([1, 5, 6, END, 9, 7, 7, END, 3, 4, END, 9], [8, END])
    episode, replaced = stitch([first, second], END, budget=100)
    assert replaced == 0 and episode.prompt_ids == [1, 5, 6, END, 9]
    assert episode.completion_ids == [7, 7, END, 3, 4, END, 9, 8, END]
    assert episode.env_mask == [1, 1, 1, 0, 0, 0, 0, 1, 1]
    assert episode.logprobs == [-0.5, -0.5, -0.5, 0.0, 0.0, 0.0, 0.0, -0.5, -0.5] and episode.turns == 2


def test_a_re_rendered_turn_is_replaced_by_what_was_sampled_and_counted():
    first = _call([1, 5, END, 9], [7, 7, END])
    # The template rendered the sampled turn [7, 7] as [6, 6, 6]; the tool result [3, 4, END] and the next
    # prompt [9] follow its end-of-turn token.
    second = _call([1, 5, END, 9, 6, 6, 6, END, 3, 4, END, 9], [8, END])
    episode, replaced = stitch([first, second], END, budget=100)
    assert replaced == 1
    assert episode.prompt_ids + episode.completion_ids == [1, 5, END, 9, 7, 7, END, 3, 4, END, 9, 8, END]
    assert episode.env_mask == [1, 1, 1, 0, 0, 0, 0, 1, 1]
    with pytest.raises(NeMoGymError, match="dropped earlier turns"):
        stitch([first, _call([9, 9], [8, END])], END, budget=100)


def test_stitching_cuts_at_the_budget_with_every_stream_aligned():
    episode, _ = stitch([_call([1, END], [7] * 10 + [END])], END, budget=4)
    assert len(episode.completion_ids) == len(episode.env_mask) == len(episode.logprobs) == 4
    assert episode.end_reason == "budget"


def test_the_committed_counter_rows_are_what_the_generator_writes(tmp_path, cli):
    assert cli("gym", "counter-rows", "--out", str(tmp_path)).returncode == 0
    for name in ("train.jsonl", "validation.jsonl"):
        assert (tmp_path / name).read_bytes() == (
            PROJECT_ROOT / "data" / "nemo_gym_counter" / name
        ).read_bytes()
    rows = {name: load_rows(tmp_path / f"{name}.jsonl") for name in ("train", "validation")}
    requests_of = {
        name: {r["responses_create_params"]["input"][0]["content"] for r in rs} for name, rs in rows.items()
    }
    assert not requests_of["train"] & requests_of["validation"]
    for row in rows["validation"]:
        counts = [
            json.loads(c["arguments"])["count"]
            for c in row["ground_truth"]
            if c["name"] == "increment_counter"
        ]
        assert row["initial_count"] + sum(counts) == row["expected_count"]
