"""One episode's session on a NeMo-Gym resources server, driven as NeMo-Gym's `simple_agent` drives it.

    session = GymSession(url, row, timeout)    # POST /seed_session with the row; the server sets a cookie
    session.call("get_counter_value", {})       # POST /get_counter_value; the observation is the body text
    session.verify(response)                    # POST /verify with the row and the episode as a Responses
                                                # object; the reward
    session.close()

The observation the policy reads is what NeMo-Gym's agent feeds its model: the raw body of the tool's
answer (`{"output": ...}` for the workplace server), or `{"error": "Invalid tool call arguments: ..."}`
when the arguments are not a JSON object, whatever the HTTP status. Two things the agent would send on
are refused with an error observation instead: names of the server's own endpoints (`verify`,
`seed_session`, ...), which would let a policy reseed or score its own session, and names that are not
one path segment.

A server that does not answer at all is a fault of the environment (NeMoGymError: the job stops, saying
which server). A tool call past `env.nemo_gym.request_timeout` becomes an error observation and the
episode goes on; a verify that fails or times out fails that episode (EpisodeFault).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

import requests

from kit.envs.nemo_gym.servers import NeMoGymError
from kit.episode import Episode, EpisodeFault, Observation

RESERVED_ENDPOINTS = frozenset({"seed_session", "verify", "aggregate_metrics", "mcp", "reset", "step"})
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]+")
TIMEOUT_SETTING = "env.nemo_gym.request_timeout"


class GymSession:
    """A seeded session on the resources server at `url` (see module docstring)."""

    def __init__(
        self, url: str, row: dict[str, Any], timeout: float, on_close: Callable[[], None] | None = None
    ) -> None:
        self.url = url.rstrip("/")
        self.row = row
        self.timeout = timeout
        self.on_close = on_close
        self.http = requests.Session()
        answer = self._post("seed_session", row)
        if not answer.ok:
            self.close()
            raise NeMoGymError(
                f"NeMo-Gym's server at {self.url} refused seed_session for row {row.get('id', '(no id)')}: "
                f"HTTP {answer.status_code} {answer.text[:400]}\nThe row lacks what this server's "
                "seed_session needs, or the rows are for another resources server "
                "(env.nemo_gym.resources_server)."
            )

    def _post(self, endpoint: str, body: Any) -> requests.Response:
        try:
            return self.http.post(f"{self.url}/{endpoint}", json=body, timeout=self.timeout)
        except requests.Timeout:  # first: a connect timeout is a ConnectionError too, but a slow server
            raise
        except requests.ConnectionError as error:
            raise NeMoGymError(
                f"NeMo-Gym's server at {self.url} is not answering ({type(error).__name__} on /{endpoint}). "
                "It stopped or was never started: check its log (nemo_gym/nemo_gym.log in the run folder, "
                "when the job started it) or env.nemo_gym.url."
            ) from None

    def call(self, name: str, arguments: dict[str, Any] | str) -> Observation:
        """The observation of one tool call (see module docstring); `refused` when the server answered
        with an error status or the call never reached it."""
        if name in RESERVED_ENDPOINTS or not _TOOL_NAME.fullmatch(name):
            return _refused(f"{name!r} is not a tool of this environment")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except (ValueError, RecursionError) as error:
                return _refused(f"Invalid tool call arguments: {error!r}")
        try:
            answer = self._post(name, arguments)
        except requests.Timeout:
            return _refused(f"the tool {name!r} did not answer within {self.timeout:g} s ({TIMEOUT_SETTING})")
        return Observation(answer.text, refused=not answer.ok)

    def verify(self, response: dict[str, Any]) -> float:
        """NeMo-Gym's reward for the episode written as `response`; EpisodeFault when it cannot be had."""
        try:
            answer = self._post("verify", {**self.row, "response": response})
        except requests.Timeout:
            raise EpisodeFault(
                f"verify did not answer within {self.timeout:g} s ({TIMEOUT_SETTING})"
            ) from None
        if not answer.ok:
            raise EpisodeFault(f"verify failed: HTTP {answer.status_code} {answer.text[:300]}")
        try:
            return float(answer.json()["reward"])
        except (ValueError, KeyError, TypeError):
            raise EpisodeFault(f"verify answered without a numeric 'reward': {answer.text[:300]}") from None

    def close(self) -> None:
        """Release the connection (NeMo-Gym has no endpoint that ends a session: its server keeps it)."""
        self.http.close()
        if self.on_close is not None:
            self.on_close()
            self.on_close = None


def _refused(message: str) -> Observation:
    return Observation(json.dumps({"error": message}), refused=True)


def episode_response(row: dict[str, Any], episode: Episode | None, calls: list[dict[str, Any]] = ()) -> dict:
    """The episode as a NeMo-Gym Responses object (what `/verify` reads): each turn's calls as
    `function_call` items, their results as `function_call_output`, answers and simulated-user replies as
    messages. Without an episode, `calls` alone (a ground truth, or calls judged before any were run)."""
    if episode is None:
        output = [_function_call(f"call_{k}", call) for k, call in enumerate(calls)]
    else:
        output = [item for message in episode.messages for item in _items(message)]
    params = row.get("responses_create_params", {})
    return {
        "id": f"resp_{uuid.uuid4().hex}",
        "created_at": int(time.time()),
        "model": "gym-grpo-kit-policy",
        "object": "response",
        "output": output,
        "parallel_tool_calls": params.get("parallel_tool_calls", True),
        "tool_choice": params.get("tool_choice", "auto"),
        "tools": params.get("tools", []),
    }


def _items(message: dict[str, Any]) -> list[dict[str, Any]]:
    role = message["role"]
    if role == "assistant" and message.get("tool_calls"):
        return [_function_call(call["id"], call["function"]) for call in message["tool_calls"]]
    if role == "assistant":
        text = {"type": "output_text", "text": message["content"], "annotations": []}
        item = {
            "id": f"msg_{uuid.uuid4().hex}",
            "type": "message",
            "role": "assistant",
            "status": "completed",
        }
        return [{**item, "content": [text]}]
    if role == "tool" and "tool_call_id" in message:
        return [
            {"type": "function_call_output", "call_id": message["tool_call_id"], "output": message["content"]}
        ]
    if role == "user":
        return [{"type": "message", "role": "user", "content": message["content"]}]
    return []  # a parse failure's feedback: the kit's own, with no call to answer


def _function_call(call_id: str, call: dict[str, Any]) -> dict[str, Any]:
    arguments = call.get("arguments", "{}")
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": call["name"],
        "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
        "status": "completed",
    }
