"""Shared fixtures: the real demo model (rebuilt offline once) and a tiny random model for fast tests."""

from __future__ import annotations

import os
import subprocess
import sys
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
