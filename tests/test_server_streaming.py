"""`stream=True` chat completions with tools against a real `kit serve` (vLLM on CPU) and the kit parser.

The session's shared server (conftest.py), serving the demo model taught the kit's call format
(tool_models.py) for each test. Greedy
decoding makes the streamed and the plain request generate the same tokens, so the deltas must add up to
exactly the plain response's tool calls and content.
"""

from __future__ import annotations

import json

import pytest
from tool_models import TASK_OVERRIDES, tool_caller

from kit.config.tree import load_config
from kit.envs.environment import make_environment
from kit.testing.fuzz.server import KEY

pytestmark = pytest.mark.slow
MAX_TOKENS = 160


@pytest.fixture
def served(shared_server, served_weights, demo_model_dir):
    client = served_weights(tool_caller(demo_model_dir, "kit"))
    cfg = load_config("cpu_demo", TASK_OVERRIDES)
    from openai import OpenAI

    return {
        "client": client,
        "openai": OpenAI(base_url=shared_server.url + "/v1", api_key=KEY),
        "model": shared_server.cfg.model.name_or_path,
        "tasks": make_environment(cfg.env).load_tasks(cfg.env.eval_file, limit=2),
    }


def _both(served, task) -> tuple[dict, dict]:
    """The same greedy request made plainly and streamed, each reduced to calls, content and finish."""
    request = {
        "model": served["model"],
        "messages": task.messages,
        "tools": task.tools,
        "temperature": 0,
        "max_tokens": MAX_TOKENS,
    }
    plain = served["openai"].chat.completions.create(**request).choices[0]
    calls = [(c.function.name, c.function.arguments) for c in plain.message.tool_calls or []]
    plain_result = {"calls": calls, "content": plain.message.content, "finish": plain.finish_reason}

    streamed_calls: dict[int, dict] = {}
    content: list[str] = []
    chunks = 0
    finish = None
    for chunk in served["openai"].chat.completions.create(**request, stream=True):
        chunks += 1
        choice = chunk.choices[0]
        finish = choice.finish_reason or finish
        content.append(choice.delta.content or "")
        for delta in choice.delta.tool_calls or []:
            call = streamed_calls.setdefault(delta.index, {"id": None, "name": "", "arguments": ""})
            call["id"] = call["id"] or delta.id
            call["name"] += delta.function.name or ""
            call["arguments"] += delta.function.arguments or ""
    assert all(call["id"] for call in streamed_calls.values()), streamed_calls
    stream_result = {
        "calls": [(c["name"], c["arguments"]) for _, c in sorted(streamed_calls.items())],
        "content": "".join(content) or None,
        "finish": finish,
        "chunks": chunks,
    }
    return plain_result, stream_result


def test_streamed_tool_calls_add_up_to_the_plain_response(served):
    for task in served["tasks"]:
        plain, stream = _both(served, task)
        assert plain["calls"], f"the tool caller wrote no call: {plain}"
        assert plain["finish"] == stream["finish"] == "tool_calls"
        assert stream["calls"] == plain["calls"]
        assert stream["content"] == plain["content"]
        names = {tool["function"]["name"] for tool in task.tools}
        assert {name for name, _ in stream["calls"]} <= names
        assert all(isinstance(json.loads(arguments), dict) for _, arguments in stream["calls"])


def test_a_reply_without_a_call_streams_as_content(served, demo_model_dir):
    # The base model does not write calls: serve its weights (served_weights restores them afterwards too).
    served["client"].reload_weights(demo_model_dir)
    plain, stream = _both(served, served["tasks"][0])
    assert plain["calls"] == stream["calls"] == []
    assert plain["content"] and stream["content"] == plain["content"]
    assert stream["chunks"] > 10  # token by token, not one piece at the end
    assert plain["finish"] == stream["finish"]
