"""Shared fixtures: the real demo model (rebuilt offline once), a tiny random model for fast tests, and a
user model on loopback whose replies a test writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from kit.paths import PROJECT_ROOT

REFERENCE = PROJECT_ROOT.parent / "shared" / "reference" / "workplace_assistant"
KIT = [sys.executable, "-m", "kit"]

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def chat_prompt(tokenizer, text: str) -> list[int]:
    """Token ids of one user message rendered with the tokenizer's chat template, ready to generate after."""
    messages = [{"role": "user", "content": text}]
    return list(tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_dict=False))


@pytest.fixture(scope="session")
def demo_model_dir() -> str:
    from kit.config.tree import DEMO_MODEL
    from kit.models import resolve_model

    return resolve_model(DEMO_MODEL)


@pytest.fixture(scope="session")
def tiny_model_dir(demo_model_dir: str) -> str:
    from kit.models import build_tiny_model, cache_dir

    return str(build_tiny_model(cache_dir() / "models" / "tiny-llama-h128-l4"))


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    if not REFERENCE.is_dir():
        pytest.fail(f"NeMo-Gym reference data not found at {REFERENCE} (expected ../shared beside the repo)")
    return REFERENCE


@pytest.fixture
def cli(monkeypatch, capsys):
    """`kit.cli.main` in this process (same code path as the command, without a new interpreter each time)."""

    def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        monkeypatch.chdir(PROJECT_ROOT)
        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
        capsys.readouterr()
        from kit.cli import main

        code = main(list(args))
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, out, err)

    return run


@pytest.fixture(scope="session")
def shared_server(demo_model_dir, tmp_path_factory):
    """One `kit serve` (vLLM on CPU) for the tests that can share it: the demo model, the kit parser and
    the API key `kit.testing.fuzz.server.KEY`. A test that changes its weights requests `served_weights`."""
    from kit.testing.fuzz.server import fuzz_server

    with fuzz_server(demo_model_dir, tmp_path_factory.mktemp("shared_server")) as server:
        yield server


@pytest.fixture
def served_weights(shared_server, demo_model_dir):
    """For a test that changes `shared_server`'s weights (by `load(model_dir)`, or a job's weight sync):
    the demo model's weights are loaded back after it, so no later test sees them."""
    from kit.generation.vllm_server import VLLMServerClient
    from kit.testing.fuzz.server import KEY

    client = VLLMServerClient(shared_server.url, api_key=KEY)

    def load(model_dir: str) -> VLLMServerClient:
        client.reload_weights(model_dir)
        return client

    yield load
    client.reload_weights(demo_model_dir)


class _LLMUser(BaseHTTPRequestHandler):
    """An OpenAI-style chat endpoint whose reply is `answer(messages)`."""

    answer: Callable[[list[dict]], str] = staticmethod(lambda messages: "")

    def log_message(self, *args) -> None:
        pass

    def _send(self, payload: dict) -> None:
        body = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._send({"data": [{"id": "user-llm"}]})

    def do_POST(self) -> None:
        messages = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["messages"]
        self._send({"choices": [{"message": {"content": type(self).answer(messages)}}]})


class _Server(ThreadingHTTPServer):
    request_queue_size = 64  # the check asks 16 rows at once; the default backlog of 5 would refuse some


@pytest.fixture
def llm_user():
    """`llm_user(answer)`: a checked EndpointUser whose model, on loopback, replies `answer(messages)`."""
    server = _Server(("127.0.0.1", 0), _LLMUser)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def user(answer: Callable[[list[dict]], str]):
        from kit.config.tree import UserModelConfig
        from kit.rollout.user_simulators import EndpointUser

        _LLMUser.answer = staticmethod(answer)
        simulator = EndpointUser(
            UserModelConfig(kind="endpoint", base_url=f"http://127.0.0.1:{server.server_address[1]}")
        )
        simulator.check()
        return simulator

    yield user
    server.shutdown()
    server.server_close()
