"""`env.name: nemo_gym`: the kit's own loop (its parsers, generation modes and simulated users) acting on a
NeMo-Gym resources server over HTTP: per episode a `seed_session` with the row, each parsed tool call as
`POST /<tool>` in that session, and the reward from `POST /verify` with the episode as a Responses object
(kit.envs.nemo_gym.session). Any NeMo-Gym resources server whose tasks are tool calls trains this way.

The server is the one `env.nemo_gym.url` names, or the one `env.nemo_gym.resources_server` names,
started with NeMo-Gym's own launcher on first use and stopped by `close()` (kit.envs.nemo_gym.servers).
"""

from __future__ import annotations

import json
import logging
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

from kit.config.tree import ConfigError, EnvConfig, KitConfig
from kit.envs.nemo_gym.agent import NeMoGymAgentRollouts
from kit.envs.nemo_gym.gym_python import gym_python
from kit.envs.nemo_gym.servers import NeMoGymServers, check_server_folder, resources_server
from kit.envs.nemo_gym.session import GymSession, episode_response
from kit.envs.rows import RowsError, dialogue_fields, input_messages, load_rows, selected, tool_schemas
from kit.episode import Episode, Task
from kit.paths import resolve_path

log = logging.getLogger(__name__)

PROBE = Path(__file__).with_name("_row_probe.py")


class NeMoGymEnvironment:
    """A NeMo-Gym resources server as the kit's environment (see module docstring)."""

    shaping: dict = {}  # NeMo-Gym's verify is the reward; the kit's shaping rewards are workplace-only

    def __init__(self, cfg: EnvConfig, work_dir: str | Path | None = None) -> None:
        self.cfg = cfg
        self.gym = cfg.nemo_gym
        self.work_dir = Path(work_dir) if work_dir else None
        self.servers: NeMoGymServers | None = None
        self._url = self.gym.url
        self._lock = threading.Lock()
        self._agent: NeMoGymAgentRollouts | None = None
        self._open = 0  # sessions not closed yet
        if self._url is None:
            check_server_folder(resources_server(self.gym.resources_server))

    @property
    def url(self) -> str:
        """The resources server's address; the first call starts it unless `env.nemo_gym.url` is set."""
        with self._lock:
            if self._url is None:
                work_dir = self.work_dir or Path(tempfile.mkdtemp(prefix="kit-nemo-gym-"))
                spec = resources_server(self.gym.resources_server)
                self.servers = NeMoGymServers([spec], work_dir, self.gym.start_timeout).start()
                self._url = self.servers.url(spec.instance)
            return self._url

    def load_tasks(self, source: str, limit: int | None = None, skip_invalid: bool = False) -> list[Task]:
        """NeMo-Gym rows of `source` (a local jsonl or a hub dataset id), checked with the kit's rules and
        then by this resources server's own request models; filtered by `env.categories` (and
        `env.tiers`, for rows that carry a tier)."""
        rows = load_rows(resolve_path(source))
        self.check_rows(rows, source)
        tasks = []
        for row in rows:
            if not selected(row, self.cfg.tiers, self.cfg.categories):
                continue
            params = row["responses_create_params"]
            tasks.append(
                Task(
                    messages=input_messages(params),
                    tools=tool_schemas(params),
                    ground_truth=row.get("ground_truth", []),
                    solution=row.get("solution") or row.get("ground_truth", []),
                    info={"id": row.get("id"), "category": row.get("category"), "tier": row.get("tier")},
                    user=dialogue_fields(row),
                    row=row,
                )
            )
            if limit is not None and len(tasks) >= limit:
                break
        if not tasks:
            raise ConfigError(
                f"No row in '{source}' matches env.tiers={self.cfg.tiers} and "
                f"env.categories={self.cfg.categories}."
            )
        return tasks

    def check_rows(self, rows: list[dict[str, Any]], source: str) -> None:
        """Validate the rows against the resources server's own `seed_session` and `verify` request models,
        in NeMo-Gym's interpreter; raises RowsError naming the first row that does not fit."""
        if self.gym.url is not None:
            return  # a server elsewhere: its own answers say what it refuses
        lines = "".join(json.dumps(row) + "\n" for row in rows)
        done = subprocess.run(
            [gym_python(), str(PROBE), self.gym.resources_server],
            input=lines, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        if done.returncode != 0:
            raise RowsError(f"checking {source} with NeMo-Gym failed: {done.stderr.strip()[-800:]}")
        for line in done.stdout.splitlines():
            verdict = json.loads(line)
            if verdict["error"]:
                raise RowsError(
                    f"{source}:{verdict['index'] + 1}: NeMo-Gym's {self.gym.resources_server} would refuse "
                    f"this row at {verdict['error']}. Rows must carry what this resources server's "
                    "seed_session and verify read (see its data/example.jsonl in the NeMo-Gym package)."
                )

    def new_sandbox(self, task: Task) -> GymSession:
        """A session seeded with the task's row. The first of a batch (no session open) may restart the
        servers the job started, when they have grown too much (`env.nemo_gym.max_memory_growth_gib`)."""
        with self._lock:
            growth = self.gym.max_memory_growth_gib
            if not self._open and self.servers is not None and self.servers.recycle_if_grown(growth):
                self._url = self.servers.url(self.gym.resources_server)
            self._open += 1
        return GymSession(self.url, task.row, self.gym.request_timeout, on_close=self._closed)

    def _closed(self) -> None:
        with self._lock:
            self._open -= 1

    def outcome(self, task: Task, tool_calls: list[dict[str, Any]]) -> float:
        """NeMo-Gym's verify of `tool_calls` written as the response of a fresh session in which none ran:
        the reward for verifiers that replay the calls (workplace_assistant), and for stateful ones the
        reward of the state the session starts in."""
        session = self.new_sandbox(task)
        try:
            return session.verify(episode_response(task.row, None, tool_calls))
        finally:
            session.close()

    def score(self, task: Task, episode: Episode, sandbox: GymSession) -> float:
        return sandbox.verify(episode_response(task.row, episode))

    def agent_rollouts(self, cfg: KitConfig, tokenizer) -> NeMoGymAgentRollouts:
        """Rollouts run by NeMo-Gym's agent (`rollout.agent: nemo_gym`); its servers stop with `close()`."""
        if self._agent is None:
            work_dir = (self.work_dir or Path(tempfile.mkdtemp(prefix="kit-nemo-gym-"))) / "agent"
            self._agent = NeMoGymAgentRollouts(cfg, tokenizer, work_dir)
        return self._agent

    def close(self) -> None:
        """Stop the servers this environment started; a later use starts them again."""
        with self._lock:
            if self.servers is not None:
                self.servers.stop()
                self.servers, self._url = None, self.gym.url
            if self._agent is not None:
                self._agent.close()
