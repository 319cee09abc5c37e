"""Fuzzing requests to a real `kit serve` (vLLM on CPU) with an API key: malformed JSON, wrong types, huge
and negative max_tokens, bad tool schemas and messages, a missing or wrong key.

Every request has a timeout and must return (no hang), never with a 5xx or a dropped connection (no
crash), and every refusal is a 4xx whose message (or `param`) names the problem; the server still answers
/health afterwards. 300 generated requests here; bench/fuzz.py sends more.
"""

from __future__ import annotations

import pytest
import requests
from hypothesis import HealthCheck, given, settings

from kit.config.tree import DEMO_MODEL
from kit.testing.fuzz.server import KEY, TIMEOUT, TOOL, Case, assert_alive, cases, dumps, send

pytestmark = pytest.mark.slow
EXAMPLES = 300


@pytest.fixture
def server(shared_server):
    return shared_server


def test_fuzzed_requests_get_an_answer_and_every_refusal_names_the_problem(server):
    statuses: list[int] = []

    @settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(case=cases)
    def check(case: Case) -> None:
        statuses.append(send(server.url, case))

    check()
    assert_alive(server)
    assert 401 in statuses and 400 in statuses and 200 in statuses  # refusals and answers both exercised


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"messages": 5}, "messages must be a list"),
        ({"messages": None}, "messages must be a list"),
        ({"tools": [{**TOOL, "function": {"name": "f", "parameters": {"properties": [1]}}}]}, "properties"),
        ({"tools": [{**TOOL, "function": {"name": "f", "parameters": {"required": 5}}}]}, "required"),
        ({"messages": [{"role": "user", "content": "\ud800"}]}, "messages.0.content holds an unpaired"),
    ],
)
def test_what_vllm_refuses_unclearly_is_refused_naming_the_field(server, body, field):
    full = {"model": DEMO_MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1} | body
    response = requests.post(
        server.url + "/v1/chat/completions",
        data=dumps(full),
        headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
        timeout=TIMEOUT,
    )
    assert response.status_code == 400
    assert field in response.json()["error"]["message"]


def test_a_surrogate_pair_is_text(server):
    body = {"model": DEMO_MODEL, "messages": [{"role": "user", "content": "\U0001f600"}], "max_tokens": 1}
    raw = dumps(body)
    assert b"\\ud83d\\ude00" in raw  # sent as a pair of escapes
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    response = requests.post(server.url + "/v1/chat/completions", data=raw, headers=headers, timeout=TIMEOUT)
    assert response.status_code == 200, response.text


def test_the_key_is_checked_before_the_body(server):
    response = requests.post(server.url + "/v1/chat/completions", data=b'{"messages": 5}', timeout=TIMEOUT)
    assert response.status_code == 401
