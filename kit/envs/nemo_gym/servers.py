"""NeMo-Gym's servers, started the way its users start them: its launcher `gym env start` (`ng_run` in
earlier releases), from its own environment, with a config that names each server.

    with NeMoGymServers([resources_server("workplace_assistant")], log_dir) as servers:
        url = servers.url("workplace_assistant")

The launcher (NeMo-Gym's `RunHelper`) starts Ray, its head server and one process per server. For each server
it would build a uv environment in the server's folder from its `requirements.txt`, whose first line is
an editable install of a NeMo-Gym git checkout; installed from PyPI, the kit already has that environment
(.venv-gym), so it gives the launcher a `uv_venv_dir` in which each server's `.venv` links to it and sets
`skip_venv_if_present`. Every server, the head server and Ray listen on 127.0.0.1
(`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0` keeps Ray off the machine's other addresses). The launcher runs in
its own process group under the kit's process guard and is stopped with that group; its output goes
to a log file whose tail is quoted when a server does not come up.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
import yaml

from kit.envs.nemo_gym.gym_python import gym_python, gym_site_packages
from kit.net import free_port
from kit.processes import guarded, start_in_own_group, stop_process_group

log = logging.getLogger(__name__)

STOP_GRACE = 15.0  # seconds the launcher gets to stop its servers and Ray before its group is killed
SERVER_TYPES = ("resources_servers", "responses_api_agents", "responses_api_models")


class NeMoGymError(RuntimeError):
    """A NeMo-Gym server did not start, died, or answered what the kit cannot use; the message says
    which server, what happened and what to change."""


@dataclass
class ServerSpec:
    """One server in NeMo-Gym's config: `instance` (its name, which agents refer to), `kind` (one of
    `SERVER_TYPES`), `folder` (its folder under that type in the NeMo-Gym package) and its settings."""

    instance: str
    kind: str
    folder: str
    settings: dict[str, Any] = field(default_factory=dict)
    port: int | None = None  # None: a free port, chosen at start


def resources_server(folder: str, instance: str | None = None) -> ServerSpec:
    """NeMo-Gym's resources server `resources_servers/<folder>`."""
    return ServerSpec(instance or folder, "resources_servers", folder)


def available_servers(kind: str = "resources_servers") -> list[str]:
    """The folders of `kind` that the installed NeMo-Gym package ships (each with an `app.py`)."""
    root = gym_site_packages() / kind
    return sorted(p.name for p in root.iterdir() if (p / "app.py").is_file()) if root.is_dir() else []


def check_server_folder(spec: ServerSpec) -> None:
    """Raise NeMoGymError naming the valid folders when `spec.folder` is not one NeMo-Gym ships."""
    if spec.kind not in SERVER_TYPES:
        raise NeMoGymError(f"'{spec.kind}' is not a NeMo-Gym server type; valid: {', '.join(SERVER_TYPES)}.")
    valid = available_servers(spec.kind)
    if spec.folder not in valid:
        from kit.config.trl_args import close_matches

        raise NeMoGymError(
            f"NeMo-Gym {gym_version()} has no {spec.kind}/{spec.folder}.{close_matches(spec.folder, valid)} "
            f"It ships {len(valid)}: {', '.join(valid[:60])}{' ...' if len(valid) > 60 else ''}."
        )


def shipped_settings(kind: str, folder: str) -> dict[str, Any]:
    """The settings NeMo-Gym's own config files (`<kind>/<folder>/configs/*.yaml`) give server `folder`;
    {} when none does. Settings that name other servers (`${...}` references, refs) are left out."""
    for path in sorted((gym_site_packages() / kind / folder / "configs").glob("*.yaml")):
        for instance in (yaml.safe_load(path.read_text()) or {}).values():
            settings = (instance or {}).get(kind, {}).get(folder) if isinstance(instance, dict) else None
            if isinstance(settings, dict):
                return {
                    key: value
                    for key, value in settings.items()
                    if not isinstance(value, dict | list) and "${" not in str(value)
                }
    return {}


def gym_version() -> str:
    """The installed NeMo-Gym version, from its package metadata in the gym environment."""
    found = sorted(gym_site_packages().glob("nemo_gym-*.dist-info"))
    return found[-1].name.removeprefix("nemo_gym-").removesuffix(".dist-info") if found else "(unknown)"


class NeMoGymServers:
    """NeMo-Gym servers started by its launcher (see module docstring); a context manager that stops them."""

    def __init__(self, specs: list[ServerSpec], work_dir: str | Path, start_timeout: float = 180.0) -> None:
        if not specs:
            raise ValueError("NeMoGymServers needs at least one server")
        for spec in specs:
            check_server_folder(spec)
        self.specs = [dataclasses.replace(s, port=s.port or free_port()) for s in specs]
        self.work_dir = Path(work_dir).resolve()
        self.log_path = self.work_dir / "nemo_gym.log"
        self.start_timeout = start_timeout
        self.head_port = free_port()
        self.process: subprocess.Popen | None = None
        self.memory_at_start = 0

    def url(self, instance: str) -> str:
        for spec in self.specs:
            if spec.instance == instance:
                return f"http://127.0.0.1:{spec.port}"
        raise KeyError(f"no NeMo-Gym server named {instance!r}; started: {[s.instance for s in self.specs]}")

    def config(self) -> dict[str, Any]:
        """NeMo-Gym's config for these servers: each with the settings its own shipped config gives it
        (a resources server's `domain`, say), then the spec's, on its loopback port; the head server too."""
        config: dict[str, Any] = {"head_server": {"host": "127.0.0.1", "port": self.head_port}}
        for spec in self.specs:
            settings = {**shipped_settings(spec.kind, spec.folder), **spec.settings}
            settings.update(entrypoint="app.py", host="127.0.0.1", port=spec.port)
            config[spec.instance] = {spec.kind: {spec.folder: settings}}
        return config

    def _link_environments(self) -> Path:
        """A `uv_venv_dir` where each server's `.venv` is the gym environment itself."""
        root = self.work_dir / "venvs"
        venv = Path(gym_python()).parent.parent
        for spec in self.specs:
            link = root / spec.kind / spec.folder / ".venv"
            link.parent.mkdir(parents=True, exist_ok=True)
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(venv.resolve(), target_is_directory=True)
        return root

    def command(self) -> list[str]:
        config_path = self.work_dir / "nemo_gym_config.yaml"
        config_path.write_text(yaml.safe_dump(self.config(), sort_keys=False))
        gym = str(Path(gym_python()).with_name("gym"))
        return [
            gym, "env", "start", "--config", str(config_path),
            "+skip_venv_if_present=true", f"+uv_venv_dir={self._link_environments()}",
        ]  # fmt: skip

    def start(self) -> NeMoGymServers:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # Ray on the loopback address only
            "RAY_USAGE_STATS_ENABLED": "0",
            "PYTHONUNBUFFERED": "1",
            "PATH": f"{Path(gym_python()).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        env.pop("VIRTUAL_ENV", None)
        env.pop("PYTHONPATH", None)  # the kit's own environment must not leak into NeMo-Gym's
        with self.log_path.open("ab") as log_file:
            self.process = start_in_own_group(
                guarded(self.command(), STOP_GRACE),
                cwd=self.work_dir, env=env, stdout=log_file, stderr=subprocess.STDOUT,
            )  # fmt: skip
        try:
            self._wait_until_up()
        except BaseException:
            self.stop()
            raise
        self.memory_at_start = self.memory_bytes()
        started = ", ".join(f"{s.instance} {self.url(s.instance)}" for s in self.specs)
        log.info("NeMo-Gym servers up: %s (log: %s)", started, self.log_path)
        return self

    def _wait_until_up(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        waiting = list(self.specs)
        while waiting:
            if self.process.poll() is not None:
                raise NeMoGymError(
                    f"NeMo-Gym's launcher (gym env start) exited with code {self.process.returncode} before "
                    f"{', '.join(s.instance for s in waiting)} came up.\n{self.log_tail()}"
                )
            waiting = [s for s in waiting if not server_answers(self.url(s.instance))]
            if waiting and time.monotonic() > deadline:
                raise NeMoGymError(
                    f"NeMo-Gym's {', '.join(s.instance for s in waiting)} did not answer within "
                    f"{self.start_timeout:.0f} s (nemo_gym.start_timeout).\n{self.log_tail()}"
                )
            time.sleep(0.5)

    def memory_bytes(self) -> int:
        """The resident memory of every process of the servers' group: the launcher, Ray, each server."""
        if self.process is None or self.process.poll() is not None:
            return 0
        total = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
                if int(fields[2]) == self.process.pid:  # its process group
                    total += int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
            except (OSError, IndexError, ValueError):
                continue  # a process that ended while being read
        return total

    def recycle_if_grown(self, limit_gib: float) -> bool:
        """Restart the servers when their memory has grown by more than `limit_gib` since they came up
        (0: never); the caller makes sure no session is open. True when they were restarted."""
        grown = (self.memory_bytes() - self.memory_at_start) / 2**30
        if not limit_gib or grown <= limit_gib:
            return False
        log.info("NeMo-Gym's servers grew by %.2f GiB (env.nemo_gym.max_memory_growth_gib=%g): restarting",
                 grown, limit_gib)  # fmt: skip
        self.restart()
        return True

    def restart(self) -> NeMoGymServers:
        """Stop the servers and start them again, on new ports (`url` answers the new ones)."""
        self.stop()
        self.specs = [dataclasses.replace(s, port=free_port()) for s in self.specs]
        self.head_port = free_port()
        return self.start()

    def check_alive(self) -> None:
        """Raise NeMoGymError with the log's tail when the launcher has exited."""
        if self.process is not None and self.process.poll() is not None:
            raise NeMoGymError(
                f"NeMo-Gym's servers stopped (its launcher exited with code {self.process.returncode}).\n"
                f"{self.log_tail()}"
            )

    def log_tail(self, lines: int = 40) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        tail = "\n".join(text.splitlines()[-lines:])
        return f"Last lines of {self.log_path}:\n{tail}" if tail else f"{self.log_path} is empty."

    def stop(self) -> None:
        stop_process_group(self.process, STOP_GRACE)

    def __enter__(self) -> NeMoGymServers:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def server_answers(url: str, timeout: float = 2.0) -> bool:
    """Whether a NeMo-Gym server answers at `url` (any HTTP answer: its routes are all POST)."""
    try:
        requests.get(url, timeout=timeout)
    except requests.RequestException:
        return False
    return True
