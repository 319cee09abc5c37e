"""Simulated users for dialogue tasks, as in NeMo-Gym's `multi_turn_agent`.

A dialogue task is a row with a `user_model_system_prompt`: an ambiguous request whose missing details
only the user knows. After each policy turn that ends in plain text, the user simulator sees the
conversation from its own side (the policy's texts as "user" messages, its own replies as "assistant")
and replies; the reply goes back to the policy as a user message. The user ends the talk by saying the
stop token (`END_CONVERSATION`).

Three simulators, chosen by `user_model.kind`:
- `scripted`: no model. Stops once the policy's calls leave the state the ground truth leaves, else
  answers with the row's clarification (`verifier_metadata.clarification`, or its original intent).
  It never misleads and never forgets: an upper bound on user quality, for CPU, CI and the demo.
- `endpoint`: any OpenAI-compatible chat endpoint (a hosted model, or a second `kit serve`).
- `served`: `endpoint` on a vLLM server that the job starts itself for `user_model.model`.

A simulator never raises for one episode's trouble: an unreachable, slow or silent user gives a
`UserReply` with `error` set and the job goes on. Whether a reply keeps the user's rules is the rollout's
check (kit.rollout.user_rules), the same for every simulator; an episode whose user failed or broke a
rule is kept out of training and counted apart, never scored as the policy's failure.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import requests

from kit.config.tree import ConfigError, KitConfig, UserModelConfig
from kit.episode import Task, is_success

log = logging.getLogger(__name__)


USER_WORKERS = 16
"""User replies asked for at once (each a blocking call to the user model)."""


@dataclass(frozen=True)
class UserReply:
    """What the simulated user said: text for the policy, the stop token, or a failure."""

    text: str = ""
    stop: bool = False
    error: str | None = None


class UserSimulator(Protocol):
    """Replies as the user of a dialogue task.

    `dialogue` is the conversation from the user's side: {"role": "user"} messages hold the policy's
    texts, {"role": "assistant"} ones the user's earlier replies. `calls` are the policy's tool calls so
    far (what the scripted user checks the state with).
    """

    name: str

    def reply(self, task: Task, dialogue: list[dict[str, str]], calls: list[dict[str, Any]]) -> UserReply: ...


class ScriptedUser:
    """A deterministic user: stops when the task is done, else reveals what the request left out; asked
    again, it says that this is all it knows."""

    name = "scripted"

    def __init__(self, outcome: Callable[[Task, list[dict[str, Any]]], float]) -> None:
        self.outcome = outcome

    def reply(self, task: Task, dialogue: list[dict[str, str]], calls: list[dict[str, Any]]) -> UserReply:
        if is_success(self.outcome(task, calls)):
            return UserReply(stop=True)
        said = clarification(task)
        if any(m["role"] == "assistant" and said in m["content"] for m in dialogue):
            return UserReply(text=f"I only know what I said: {said}")
        return UserReply(text=said)


def clarification(task: Task) -> str:
    """What the user says to resolve the task's ambiguity: the row's `clarification`, else its original
    intent, else that the user knows nothing more."""
    metadata = task.user.get("verifier_metadata") or {}
    if metadata.get("clarification"):
        return str(metadata["clarification"])
    if metadata.get("original_user_query"):
        return f"To be precise, what I want is: {metadata['original_user_query']}"
    return "Sorry, I don't know more than what I said."


class EndpointUser:
    """A user model behind an OpenAI-compatible `/v1/chat/completions` endpoint."""

    name = "endpoint"

    def __init__(self, cfg: UserModelConfig, base_url: str | None = None) -> None:
        self.cfg = cfg
        self.base_url = (base_url or cfg.base_url or "").rstrip("/").removesuffix("/v1")
        self.session = requests.Session()
        # One pooled connection per reply asked at once (the rollout's and the check's workers).
        self.session.mount("http://", requests.adapters.HTTPAdapter(pool_maxsize=USER_WORKERS))
        self.session.mount("https://", requests.adapters.HTTPAdapter(pool_maxsize=USER_WORKERS))
        if cfg.api_key:
            self.session.headers["Authorization"] = f"Bearer {cfg.api_key}"
        self.model = cfg.model

    def check(self) -> None:
        """Fail now, naming the setting, when the endpoint cannot be reached or lists no model."""
        try:
            response = self.session.get(f"{self.base_url}/v1/models", timeout=(5, self.cfg.timeout))
            response.raise_for_status()
            models = [card["id"] for card in response.json()["data"]]
        except (requests.RequestException, ValueError, KeyError, TypeError) as err:
            raise ConfigError(
                f"The user model at user_model.base_url={self.base_url} cannot be reached "
                f"({type(err).__name__}: {err}). Start it (e.g. `kit serve --config RECIPE --port 8100`), "
                "fix user_model.base_url, or use user_model.kind=served or scripted."
            ) from None
        if not models:
            raise ConfigError(f"The user model endpoint at {self.base_url} lists no model.")
        if self.model is None or self.model not in models:
            if self.model is not None:
                log.warning("user_model.model %r is not served at %s; using %r",
                            self.model, self.base_url, models[0])  # fmt: skip
            self.model = models[0]

    def reply(self, task: Task, dialogue: list[dict[str, str]], calls: list[dict[str, Any]]) -> UserReply:
        messages = [{"role": "system", "content": task.user["user_model_system_prompt"]}, *dialogue]
        payload = {
            "model": self.model,
            "messages": messages,
            "temperature": self.cfg.temperature,
            "max_tokens": self.cfg.max_tokens,
        }
        try:
            response = self.session.post(
                f"{self.base_url}/v1/chat/completions", json=payload, timeout=(5, self.cfg.timeout)
            )
        except requests.Timeout:
            return UserReply(
                error=f"the user model did not answer within {self.cfg.timeout:g} s (user_model.timeout)"
            )
        except requests.RequestException as err:
            return UserReply(error=f"the user model is unreachable ({type(err).__name__})")
        if response.status_code != 200:
            return UserReply(error=f"the user model answered {response.status_code}: {response.text[:200]}")
        try:
            text = response.json()["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError):
            return UserReply(error=f"the user model's answer is not a chat completion: {response.text[:200]}")
        return judge_reply(text, self.cfg.stop_token)


def judge_reply(text: str, stop_token: str) -> UserReply:
    """A user model's raw text as a reply: the stop token anywhere ends the talk (NeMo-Gym's rule);
    empty text is no reply. The rules of what it says are checked by the rollout (kit.rollout.user_rules)."""
    if stop_token and stop_token in text:
        return UserReply(stop=True)
    text = text.strip()
    if not text:
        return UserReply(error="the user model replied with no text")
    return UserReply(text=text)


@contextlib.contextmanager
def open_user_simulator(
    cfg: KitConfig, outcome: Callable[[Task, list[dict[str, Any]]], float], log_dir: Path
) -> Iterator[UserSimulator]:
    """The simulator `cfg.user_model` names, ready to reply; a `served` one's vLLM server runs until
    the block ends."""
    user = cfg.user_model
    if user.kind == "scripted":
        yield ScriptedUser(outcome)
        return
    if user.kind == "endpoint":
        simulator = EndpointUser(user)
        simulator.check()
        yield simulator
        return
    from kit.generation.vllm_process import VLLMServer

    model = user.model or cfg.model.name_or_path
    serve = dataclasses.replace(cfg.serve, gpu_memory_utilization=user.gpu_memory_utilization)
    # The user model is frozen: no weight-sync flags, the model's own chat template.
    server_cfg = dataclasses.replace(
        cfg,
        model=dataclasses.replace(cfg.model, name_or_path=model, chat_template="model"),
        serve=serve,
        generation=dataclasses.replace(cfg.generation, mode="transformers", api_key=user.api_key),
    )
    with VLLMServer(server_cfg, Path(log_dir) / "user_model_server.log", port=user.port) as server:
        simulator = EndpointUser(dataclasses.replace(user, model=None), base_url=server.url)
        simulator.check()
        simulator.name = "served"
        yield simulator
