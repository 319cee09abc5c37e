"""The simulated user's rules (kit.rollout.user_rules) and `kit user check` (kit.rollout.user_check).

The scripted user is the upper bound and must pass every check. The LLM-like users here are real HTTP
endpoints on loopback, each a small function of the messages it is sent: one that answers as an
assistant, one that invents, one that dodges the question it is asked and answers the next one with
what it held back. The check must catch each of them.
"""

from __future__ import annotations

import json
import re

import pytest

from kit.config.tree import load_config
from kit.envs.environment import make_environment
from kit.episode import Task
from kit.rollout.user_check import COMPLETION, EARLY_DONE, UNKNOWN_QUESTION, check_user
from kit.rollout.user_rules import Detail, details, held_back, invented, mentions, reply_breaks
from kit.rollout.user_simulators import ScriptedUser

DIALOGUE = ["env.dialogue_share=1.0", "env.tiers=[easy, medium]"]


@pytest.fixture(scope="module")
def talks():
    cfg = load_config("cpu_demo", DIALOGUE)
    env = make_environment(cfg.env)
    tasks = [t for t in env.load_tasks(cfg.env.eval_file, limit=120) if t.is_dialogue][:24]
    assert len(tasks) == 24
    return env, tasks


def test_details_match_however_they_are_written():
    found = details("Move my 'Team sync' with Carlos on May 3 at 3pm to 2024-05-04 15:30:00, task 00000012.")
    assert found == {
        Detail("quoted", "team sync"),
        Detail("name", "carlos"),
        Detail("date", "05-03"),
        Detail("time", "15:00"),
        Detail("date", "05-04"),
        Detail("time", "15:30"),
        Detail("number", "12"),
    }
    assert mentions("It's on the 3rd of May, at 15:00, task 12.", Detail("date", "05-03"))
    assert mentions("It's on the 3rd of May, at 15:00, task 12.", Detail("time", "15:00"))
    assert mentions("It's on the 3rd of May, at 15:00, task 12.", Detail("number", "12"))
    assert mentions("Carlos, please.", Detail("name", "carlos"))  # a name anywhere, first word too
    # A capitalised first word is not a name; a quoted text is one detail, not the date inside it.
    assert details("Sure. The body is 'See you on June 2'.") == {Detail("quoted", "see you on june 2")}


def _task(request: str, original: str, truth: list | None = None) -> Task:
    user = {
        "user_model_system_prompt": f"You are a user. Your original intent was:\n{original}",
        "verifier_metadata": {"original_user_query": original},
    }
    return Task([{"role": "user", "content": request}], [], truth or [], {}, user)


def test_held_back_details_are_what_the_request_lacks():
    task = _task("Email my colleague about 'Lunch'.", "Email wei.chen@atlas.com about 'Lunch' on May 3.")
    assert held_back(task) == [Detail("date", "05-03"), Detail("email", "wei.chen@atlas.com")]
    # Nothing the detail patterns see was left out: the left-out words stand in.
    plot = _task("Create a plot of visits.", "Create a scatter plot of visits.")
    assert held_back(plot) == [Detail("word", "scatter")]


def test_each_online_rule_is_caught_and_a_good_reply_passes():
    truth = [{"name": "email_send_email", "arguments": "{}"}]
    task = _task("Email my colleague.", "Email wei.chen@atlas.com on May 3.", truth)
    view = [{"role": "user", "content": "Who should get it? Maybe Omar?"}]
    assert reply_breaks(task, view, [], "wei.chen@atlas.com, on the 3rd of May.", stop=False) == []
    assert reply_breaks(task, view, [], "Omar, yes.", stop=False) == []  # the policy named him first
    assert invented(task, view, "Send it to bob.ray@atlas.com by 5pm.") == [
        Detail("email", "bob.ray@atlas.com"),
        Detail("time", "17:00"),
    ]
    assert reply_breaks(task, view, [], "How can I help you today?", stop=False) == ["assistant_speak"]
    # What the served 135M model says (`kit user check`, docs/dialogue.md): assistant-speak every time.
    for said in ("I'm sorry for any confusion, but as a chatbot, I don't have the ability to access it.",
                 "I'm designed to provide assistance and support."):  # fmt: skip
        assert reply_breaks(task, view, [], said, stop=False) == ["assistant_speak"]
    dictated = _task("Email Wei.", "Email Wei with body 'Let me know if you have any questions.'")
    assert (
        reply_breaks(dictated, [], [], "The body: 'Let me know if you have any questions.'", stop=False) == []
    )
    assert reply_breaks(task, view, [], "```python\nsend()\n```", stop=False) == ["tool_call"]
    assert reply_breaks(task, view, [], "ok " * 500, stop=False) == ["too_long"]
    assert reply_breaks(task, view, [], "", stop=True) == ["premature_end"]
    assert reply_breaks(task, view, truth, "", stop=True) == []  # it ended after the policy acted


def test_the_scripted_user_passes_every_check(talks):
    env, tasks = talks
    checked: list[int] = []
    report = check_user(ScriptedUser(env.outcome), tasks, progress=lambda: checked.append(1))
    assert len(checked) == report["rows"] and report == check_user(ScriptedUser(env.outcome), tasks)
    rates = {name: check["rate"] for name, check in report["checks"].items()}
    assert rates == {
        "carries_asked_detail": 1.0,
        "reveals_unasked_detail": 0.0,
        "invents_detail": 0.0,
        "says_unknown": 1.0,
        "ends_after_completion": 1.0,
        "never_ends_early": 1.0,
        "not_fooled_by_early_done": 1.0,
        "stays_in_role": 1.0,
        "within_length": 1.0,
        "no_reply": 0.0,
    }
    assert report["rows"] == 24 and report["checks"]["carries_asked_detail"]["n"] == 24
    low, high = report["checks"]["carries_asked_detail"]["interval95"]
    assert 0.8 < low < high == 1.0


def _intent(messages: list[dict]) -> str:
    return re.search(r"original intent was:\n(.*?)\n\n", messages[0]["content"], re.DOTALL)[1]


def _rates(report: dict) -> dict[str, float]:
    return {name: check["rate"] for name, check in report["checks"].items()}


def test_a_user_that_talks_as_the_assistant_is_caught(talks, llm_user):
    env, tasks = talks
    user = llm_user(lambda messages: "I'm here to assist you. How can I help you today?")
    rates = _rates(check_user(user, tasks))
    assert rates["stays_in_role"] == 0.0 and rates["carries_asked_detail"] == 0.0
    assert rates["ends_after_completion"] == 0.0 and rates["says_unknown"] == 0.0


def test_a_user_that_invents_or_leaks_or_ends_early_is_caught(talks, llm_user):
    env, tasks = talks

    def dodge_then_leak(messages: list[dict]) -> str:
        last = messages[-1]["content"]
        if last == UNKNOWN_QUESTION:  # answers the earlier question now, and invents a number
            return f"It's 555-0199. And what I want is: {_intent(messages)}"
        if last in (COMPLETION, EARLY_DONE):
            return "END_CONVERSATION"
        return "Not sure, can you just do it?"

    report = check_user(llm_user(dodge_then_leak), tasks)
    rates = _rates(report)
    assert rates["carries_asked_detail"] == 0.0 and rates["reveals_unasked_detail"] == 1.0
    assert rates["invents_detail"] == 0.5  # of the two replies with text per row, the second
    assert rates["no_reply"] == 0.0
    assert rates["not_fooled_by_early_done"] == 0.0 and rates["ends_after_completion"] == 1.0
    assert rates["stays_in_role"] == 1.0
    assert "555-0199" in report["failing_examples"]["invents_detail"][0]


def test_kit_user_check_prints_a_table_and_writes_the_report(cli, tmp_path):
    out = tmp_path / "user_check.json"
    result = cli("user", "check", "--config", "cpu_demo", *DIALOGUE, "--limit", "6", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "answers carry the asked detail" in result.stdout and "100.0%" in result.stdout
    report = json.loads(out.read_text())
    assert report["user_model"] == "scripted" and report["rows"] == 6


def test_kit_user_check_on_rows_without_a_dialogue_says_how_to_make_some(cli):
    result = cli("user", "check", "--config", "cpu_demo", "--limit", "5")
    assert result.returncode == 2
    assert "no dialogue row" in result.stderr and "--dialogue-share" in result.stderr
