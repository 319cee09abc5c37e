"""Fuzzing requests to a running `kit serve` with an API key: generated requests (`cases`), and the check
each answer must pass (`send`): no hang, no 5xx or dropped connection, a refusal that names the problem.

`fuzz_server` starts the server the cases are written for. Used by tests/test_server_fuzz.py and
bench/fuzz.py.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import requests
from hypothesis import strategies as st

from kit.config.tree import DEMO_MODEL, load_config
from kit.generation.vllm_process import VLLMServer
from kit.net import free_port
from kit.testing.fuzz.verdicts import Crash, Hang, Unclear

KEY = "kit-fuzz-key-41c9"
TIMEOUT = 60.0


@dataclass(frozen=True)
class Case:
    """One request, and the words of which a refusal must mention one (case-insensitively)."""

    path: str
    body: bytes
    key: str | None
    names: tuple[str, ...]


@contextlib.contextmanager
def fuzz_server(model_dir: str, run_dir: Path) -> Iterator[VLLMServer]:
    """`kit serve` for the demo model with the kit parser and an API key."""
    port = free_port()
    cfg = load_config(
        "cpu_demo", [f"serve.port={port}", f"run.output_dir={run_dir}", f"generation.api_key={KEY}"]
    )
    with VLLMServer(cfg, run_dir / "server.log", model=model_dir) as server:
        yield server


def dumps(body: object) -> bytes:
    """``body`` as a request's JSON bytes."""
    return json.dumps(body).encode()  # ASCII: lone surrogates travel as \\ud800 escapes


junk = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=5,
)
TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"],
        },
    },
}


@st.composite
def valid_chat(draw: st.DrawFn) -> dict:
    body = {
        "model": DEMO_MODEL,
        "messages": [{"role": "user", "content": draw(st.text(min_size=1, max_size=30))}],
        "max_tokens": draw(st.integers(1, 3)),
        "temperature": draw(st.sampled_from([0, 0.7])),
    }
    if draw(st.booleans()):
        body["tools"] = [json.loads(json.dumps(TOOL))]
    if draw(st.booleans()):
        body["stream"] = True
    return body


def _set(body: dict, path: tuple, value: object) -> dict:
    node = body
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return body


# Field mutations, with the words a refusal must use: (path in the body, names).
FIELDS = [
    (("model",), ("model",)),
    (("messages",), ("message",)),
    (("messages", 0), ("message",)),
    (("messages", 0, "role"), ("message", "role")),
    (("messages", 0, "content"), ("message", "content", "prompt")),
    (("max_tokens",), ("max_tokens",)),
    (("temperature",), ("temperature",)),
    (("top_p",), ("top_p",)),
    (("n",), ("n",)),
    (("stream",), ("stream",)),
    (("stop",), ("stop",)),
    (("seed",), ("seed",)),
    (("logprobs",), ("logprobs",)),
    (("top_logprobs",), ("logprobs",)),
    (("stream_options",), ("stream",)),
    (("tool_choice",), ("tool_choice",)),
    (("tools",), ("tools",)),
    (("tools", 0), ("tools",)),
    (("tools", 0, "type"), ("tools",)),
    (("tools", 0, "function"), ("tools", "function")),
    (("tools", 0, "function", "name"), ("tools", "name")),
    (("tools", 0, "function", "description"), ("tools", "description")),
    (("tools", 0, "function", "parameters"), ("tools", "parameters")),
    (("tools", 0, "function", "parameters", "properties"), ("tools", "properties")),
    (("tools", 0, "function", "parameters", "properties", "city"), ("tools", "city")),
    (("tools", 0, "function", "parameters", "properties", "city", "description"), ("tools", "description")),
    (("tools", 0, "function", "parameters", "required"), ("tools", "required")),
]
# Values that are valid but expensive (long generations, many sequences) are left out on purpose.
field_values = {
    ("max_tokens",): st.integers(max_value=0) | st.integers(min_value=2049) | st.integers(1, 3) | junk,
    ("n",): st.integers(max_value=0) | st.integers(min_value=16385) | st.integers(1, 2) | junk,
    ("messages", 0, "content"): junk | st.just("\ud800") | st.just("a\x00b") | st.just("x " * 3000),
}


@st.composite
def chat_with_a_bad_field(draw: st.DrawFn) -> Case:
    body = draw(valid_chat())
    path, names = draw(st.sampled_from(FIELDS))
    if path[0] == "tools" and "tools" not in body:
        body["tools"] = [json.loads(json.dumps(TOOL))]
    _set(body, path, draw(field_values.get(path, junk)))
    return Case("/v1/chat/completions", dumps(body), KEY, names)


@st.composite
def bad_json(draw: st.DrawFn) -> Case:
    valid = dumps(draw(valid_chat()))
    body = draw(
        st.integers(0, len(valid) - 1).map(lambda cut: valid[:cut])
        | st.binary(max_size=40)
        | st.sampled_from([b"[1, 2]", b"null", b'"text"', b"{" * 5000, b'{"model": NaN}', b"\xff\xfe"])
    )
    return Case("/v1/chat/completions", body, KEY, ("json", "body", "dictionary", "object"))


@st.composite
def bad_key(draw: st.DrawFn) -> Case:
    body = draw(valid_chat().map(dumps) | st.binary(max_size=20))
    key = draw(st.none() | st.sampled_from(["", "wrong", KEY + "x", KEY[:-1]]))
    path = draw(st.sampled_from(["/v1/chat/completions", "/v1/completions", "/collective_rpc", "/v1/models"]))
    return Case(path, body, key, ("api key",))


@st.composite
def bad_completion(draw: st.DrawFn) -> Case:
    prompt = draw(
        junk
        | st.lists(st.integers(-(10**12), 10**12), min_size=1, max_size=3)
        | st.just("\udfff")
        | st.just([[1, 2], "x"])
    )
    body = {"model": DEMO_MODEL, "prompt": prompt, "max_tokens": draw(st.integers(1, 3))}
    return Case("/v1/completions", dumps(body), KEY, ("prompt", "token"))


cases = st.one_of(chat_with_a_bad_field(), chat_with_a_bad_field(), bad_json(), bad_key(), bad_completion())


def _error_of(text: str) -> tuple[int | None, str]:
    """The code and the words of an error answer: vLLM's {"error": {...}}, FastAPI's {"detail": ...}, or
    the kit's 401."""
    try:
        answer = json.loads(text)
    except ValueError:
        return None, text
    error = answer.get("error", answer.get("detail", "")) if isinstance(answer, dict) else answer
    if isinstance(error, dict):
        return error.get("code"), f"{error.get('message', '')} {error.get('param') or ''}"
    return None, str(error)


def send(url: str, case: Case) -> int:
    """Send ``case``; raise the verdict when the answer is a hang, a crash or an unclear refusal. Returns
    the HTTP status."""
    headers = {"Content-Type": "application/json"}
    if case.key is not None:
        headers["Authorization"] = f"Bearer {case.key}"
    try:
        with requests.post(
            url + case.path, data=case.body, headers=headers, timeout=TIMEOUT, stream=True
        ) as r:
            status, text = r.status_code, r.content.decode("utf-8", "replace")
    except requests.Timeout as error:
        raise Hang(f"{case}: no answer in {TIMEOUT:.0f} s") from error
    except requests.ConnectionError as error:
        raise Crash(f"{case}: {error}") from error
    if status >= 500:
        raise Crash(f"{case}: {status} {text[:300]}")
    if status >= 400:
        _, words = _error_of(text)
        if not any(name in words.lower() for name in case.names):
            raise Unclear(f"{case}: {status} {text[:300]}")
    elif status == 200 and text.startswith("data:"):  # a stream: an error may come as an event
        for line in text.splitlines():
            if line.startswith("data: {") and '"error"' in line[:20]:
                code, words = _error_of(line.removeprefix("data: "))
                if code is None or code >= 500:
                    raise Crash(f"{case}: error event {line[:300]}")
                if not any(name in words.lower() for name in case.names):
                    raise Unclear(f"{case}: error event {line[:300]}")
    return status


def assert_alive(server: VLLMServer) -> None:
    if not server.is_running():
        raise Crash("the server process exited")
    try:
        health = requests.get(server.url + "/health", timeout=30)
    except requests.RequestException as error:
        raise Crash(f"/health: {error}") from error
    if health.status_code != 200:
        raise Crash(f"/health answered {health.status_code}")
