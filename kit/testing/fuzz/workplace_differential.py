"""The kit's workplace sandbox against NeMo-Gym's own workplace server, call for call.

Each call sequence runs twice: in a kit sandbox over NeMo-Gym's databases, and in a session of NeMo-Gym's
server (``seed_session``, then ``POST /<tool>``), sent the way NeMo-Gym's simple_agent sends it
(``agent_request`` follows its code: arguments that do not parse are answered by the agent itself and
never reach the server). The observations must be the same text, byte for byte. Rewards compare the
kit's ``outcome_reward`` with the server's ``POST /verify`` for a predicted list of calls against a
ground truth.

Used by tests/test_workplace_vs_nemo_gym.py and bench/workplace_differential.py.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from kit.envs.rows import read_jsonl
from kit.envs.workplace.reward import outcome_reward
from kit.envs.workplace.sandbox import WorkplaceSandbox
from kit.testing.fuzz.workplace_calls import Call

_NO_BODY = object()


def calls_of(ground_truth: Iterable[dict[str, Any]]) -> list[Call]:
    """A row's ground truth as ``(name, arguments)`` calls."""
    return [(call["name"], call["arguments"]) for call in ground_truth]


def row_sequences(paths: Iterable[str | Path]) -> list[list[Call]]:
    """The ground truth of every row of the given jsonl files."""
    return [calls_of(row["ground_truth"]) for path in paths for row in read_jsonl(path)]


def _as_item(index: int, call: Call) -> dict[str, Any]:
    name, arguments = call
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"type": "function_call", "id": f"fc_{index}", "call_id": f"call_{index}", "name": name,
            "arguments": text, "status": "completed"}  # fmt: skip


def kit_reward(base: WorkplaceSandbox, predicted: Sequence[Call], truth: Sequence[Call]) -> float:
    """The kit's outcome reward, the calls given as NeMo-Gym's verify receives them."""
    return outcome_reward(
        [_as_item(i, c) for i, c in enumerate(predicted)], [_as_item(i, c) for i, c in enumerate(truth)], base
    )


def _nulled(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list):
        return [_nulled(v) for v in value]
    if isinstance(value, dict):
        return {k: _nulled(v) for k, v in value.items()}
    return value


def agent_request(arguments: Any) -> tuple[Any, str | None]:
    """What NeMo-Gym's simple_agent does with a call's arguments (its ``responses`` loop and
    ``ServerClient.post``): ``(body, None)`` with the JSON it posts (``_NO_BODY``: none), or
    ``(None, answer)`` when the arguments do not parse and it answers without calling the server.
    Text with a lone surrogate, which the agent's orjson refuses to write (its call fails), goes out
    escaped, so that the comparison reaches the server's answer to it."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (json.JSONDecodeError, TypeError) as error:
            return None, json.dumps({"error": f"Invalid tool call arguments: {error!r}"})
    if arguments is None:
        return _NO_BODY, None  # aiohttp's json=None: no body
    if not arguments:
        return json.dumps(arguments), None  # falsy: aiohttp's own json.dumps
    return json.dumps(_nulled(arguments)), None  # orjson: NaN and infinities as null


class NeMoGymClient:
    """NeMo-Gym's workplace server over one kept-alive HTTP connection; a session is the cookie that
    ``seed_session`` sets. A call's request goes out before the kit computes its own answer, so the two
    sides work at the same time."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.address = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.connection = http.client.HTTPConnection(*self.address, timeout=120)
        self.cookie: str | None = None
        self._sent: tuple[str, Any] | None = None

    def close(self) -> None:
        self.connection.close()

    def _send(self, path: str, body: Any) -> None:
        headers = {} if self.cookie is None else {"Cookie": self.cookie}
        if body is not _NO_BODY:
            headers["Content-Type"] = "application/json"
        payload = None if body is _NO_BODY else body.encode()
        self._sent = (path, body)
        try:
            self.connection.request("POST", f"/{path}", body=payload, headers=headers)
        except (ConnectionError, http.client.HTTPException):  # the server closed an idle connection
            self.connection.close()
            self.connection.request("POST", f"/{path}", body=payload, headers=headers)

    def _receive(self) -> tuple[int, str]:
        try:
            response = self.connection.getresponse()
        except (ConnectionError, http.client.HTTPException):  # closed before it read the request
            self.connection.close()
            assert self._sent is not None
            self._send(*self._sent)
            response = self.connection.getresponse()
        text = response.read().decode()
        cookie = response.getheader("set-cookie")
        if cookie:
            self.cookie = cookie.split(";", 1)[0]
        return response.status, text

    def seed(self) -> None:
        """Start a fresh session: NeMo-Gym's databases as read from its CSV files."""
        self.cookie = None
        self._send("seed_session", "{}")
        status, text = self._receive()
        if status != 200:
            raise RuntimeError(f"seed_session answered {status}: {text[:300]}")

    def ask(self, name: str, arguments: Any) -> Callable[[], str]:
        """Send one call in the current session; the returned function waits for the answer the model
        would read (the agent's own, when the arguments do not parse)."""
        body, answer = agent_request(arguments)
        if answer is not None:
            return lambda: answer
        self._send(quote(name, safe=""), body)
        return lambda: self._receive()[1]

    def run(self, calls: Sequence[Call]) -> list[str]:
        """The server's answers to a sequence, in the current session."""
        return [self.ask(name, arguments)() for name, arguments in calls]

    def outputs(self, calls: Sequence[Call]) -> list[str]:
        """The server's answers to a sequence, in a fresh session."""
        self.seed()
        return self.run(calls)

    def reward(self, predicted: Sequence[Call], truth: Sequence[Call]) -> float:
        """The reward of ``POST /verify`` for the predicted calls against the ground truth."""
        response = {
            "id": "resp_differential", "created_at": 0.0, "model": "differential", "object": "response",
            "output": [_as_item(i, c) for i, c in enumerate(predicted)], "parallel_tool_calls": False,
            "tool_choice": "auto", "tools": [],
        }  # fmt: skip
        body = {
            "responses_create_params": {"input": []},
            "response": response,
            "ground_truth": [
                {"name": item["name"], "arguments": item["arguments"]}
                for item in (_as_item(i, c) for i, c in enumerate(truth))
            ],
            "id": 0,
            "category": "workplace_assistant_differential",
            "environment_name": "workplace_assistant",
        }
        self._send("verify", json.dumps(body))
        status, text = self._receive()
        if status != 200:
            raise RuntimeError(f"verify answered {status}: {text[:300]}")
        return float(json.loads(text)["reward"])


@dataclass
class Difference:
    """One call whose observations differ (or one reward)."""

    source: str
    sequence: int
    call: int
    name: str
    arguments: Any
    kit: str
    nemo_gym: str

    def describe(self, width: int = 300) -> str:
        text = (
            f"[{self.source} #{self.sequence} call {self.call}] {self.name}({str(self.arguments)[:width]})\n"
            f"  kit:      {self.kit[:width]}\n  NeMo-Gym: {self.nemo_gym[:width]}"
        )
        return text.encode("utf-8", "backslashreplace").decode("utf-8")  # printable with lone surrogates


@dataclass
class Tally:
    """Per tool: calls made and calls with the same observation; per source and per tool (each reward
    counts for every tool its calls use): rewards compared, rewards equal; rewards of 1 (per source);
    the first differences."""

    calls: Counter = field(default_factory=Counter)
    same: Counter = field(default_factory=Counter)
    rewards: Counter = field(default_factory=Counter)
    same_rewards: Counter = field(default_factory=Counter)
    ones: Counter = field(default_factory=Counter)
    tool_rewards: Counter = field(default_factory=Counter)
    tool_same_rewards: Counter = field(default_factory=Counter)
    sequences: Counter = field(default_factory=Counter)
    differences: list[Difference] = field(default_factory=list)
    keep: int = 20

    def _differ(self, difference: Difference) -> None:
        if len(self.differences) < self.keep:
            self.differences.append(difference)

    def outputs(self, source: str, index: int, calls: Sequence[Call], kit: list[str], gym: list[str]) -> None:
        self.sequences[source] += 1
        for position, ((name, arguments), mine, theirs) in enumerate(zip(calls, kit, gym, strict=True)):
            self.calls[name] += 1
            if mine == theirs:
                self.same[name] += 1
            else:
                self._differ(Difference(source, index, position, name, arguments, mine, theirs))

    def reward(
        self, source: str, index: int, kit: float, gym: float, note: str, tools: Iterable[str] = ()
    ) -> None:
        self.rewards[source] += 1
        self.ones[source] += gym == 1.0
        for tool in set(tools):
            self.tool_rewards[tool] += 1
            self.tool_same_rewards[tool] += kit == gym
        if kit == gym:
            self.same_rewards[source] += 1
        else:
            self._differ(Difference(source, index, -1, "reward", note, str(kit), str(gym)))

    def merge(self, other: Tally) -> None:
        """Add another tally's counts and differences to this one."""
        for mine, theirs in (
            (self.calls, other.calls),
            (self.same, other.same),
            (self.rewards, other.rewards),
            (self.same_rewards, other.same_rewards),
            (self.ones, other.ones),
            (self.tool_rewards, other.tool_rewards),
            (self.tool_same_rewards, other.tool_same_rewards),
            (self.sequences, other.sequences),
        ):
            mine.update(theirs)
        for difference in other.differences:
            self._differ(difference)

    @property
    def mismatched_calls(self) -> int:
        return sum(self.calls.values()) - sum(self.same.values())

    @property
    def mismatched_rewards(self) -> int:
        return sum(self.rewards.values()) - sum(self.same_rewards.values())

    def summary(self) -> dict[str, Any]:
        return {
            "sequences": dict(self.sequences),
            "calls": sum(self.calls.values()),
            "same_output": sum(self.same.values()),
            "rewards": sum(self.rewards.values()),
            "same_reward": sum(self.same_rewards.values()),
            "per_tool": {
                name: {
                    "calls": n,
                    "same_output": self.same[name],
                    "rewards": self.tool_rewards[name],
                    "same_reward": self.tool_same_rewards[name],
                }
                for name, n in sorted(self.calls.items())
            },
            "rewards_per_source": {
                s: {"rewards": n, "same": self.same_rewards[s], "reward_1": self.ones[s]}
                for s, n in self.rewards.items()
            },
            "first_differences": [d.describe() for d in self.differences],
        }


def _writable(call: Call) -> bool:
    """Whether a call carries no lone surrogate, in its text or in what its JSON text decodes to."""
    name, arguments = call
    parts = [name, arguments]
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError, RecursionError):  # not JSON: verify skips it
            parts.append(json.loads(arguments))
    try:
        json.dumps(parts, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def reward_pairs(calls: Sequence[Call], index: int) -> list[tuple[str, list[Call], list[Call]]]:
    """Predicted/ground-truth pairs whose rewards are compared for a sequence: the sequence against itself
    less one call, and the sequence reversed against itself (creation order matters to NeMo-Gym). None
    for a sequence with a lone surrogate: verify echoes the calls back and prints their errors, and
    answers 500 when it cannot write one."""
    if not calls or not all(map(_writable, calls)):
        return []
    dropped = index % len(calls)
    return [
        ("all vs one dropped", list(calls), [c for i, c in enumerate(calls) if i != dropped]),
        ("reversed vs all", list(reversed(calls)), list(calls)),
    ]


def _run_sessions(
    groups: Sequence[tuple[int, Sequence[Sequence[Call]]]],
    source: str,
    base: WorkplaceSandbox,
    client: NeMoGymClient,
    reward_every: int,
    keep: int,
) -> Tally:
    tally = Tally(keep=keep)
    for first, group in groups:
        sandbox = base.copy()
        client.seed()
        for index, calls in enumerate(group, start=first):
            kit, gym = [], []
            for name, arguments in calls:
                answer = client.ask(name, arguments)
                kit.append(str(sandbox.call(name, arguments)))
                gym.append(answer())
            tally.outputs(source, index, calls, kit, gym)
            if reward_every and index % reward_every == 0:
                for note, predicted, truth in reward_pairs(calls, index):
                    mine, theirs = kit_reward(base, predicted, truth), client.reward(predicted, truth)
                    tally.reward(source, index, mine, theirs, note, [n for n, _ in (*predicted, *truth)])
    return tally


def compare(
    tally: Tally,
    source: str,
    sequences: Sequence[Sequence[Call]],
    base: WorkplaceSandbox,
    clients: NeMoGymClient | Sequence[NeMoGymClient],
    reward_every: int = 0,
    per_session: int = 1,
) -> Tally:
    """Run every sequence on both sides and count into ``tally``. Each group of ``per_session`` sequences
    shares one session (kit: one copy of ``base``), so later ones start where earlier ones left the
    databases. Every ``reward_every``-th sequence (0: none) also compares the rewards of its
    ``reward_pairs``. With several clients (servers), the sessions are shared out between them."""
    clients = [clients] if isinstance(clients, NeMoGymClient) else list(clients)
    groups = [
        (first, sequences[first : first + per_session]) for first in range(0, len(sequences), per_session)
    ]
    with ThreadPoolExecutor(len(clients)) as pool:
        parts = pool.map(
            lambda i: _run_sessions(
                groups[i :: len(clients)], source, base, clients[i], reward_every, tally.keep
            ),
            range(len(clients)),
        )
        for part in parts:
            tally.merge(part)
    return tally
