"""Finding SkyPilot's launcher environment and asking it to parse task YAMLs.

SkyPilot cannot live in the training environment (its `click<8.2` pin conflicts with the `click>=8.4.2`
that `huggingface_hub` needs), so the kit runs it in a separate interpreter, found in this order:
`$KIT_SKY_PYTHON`, `.venv-sky/bin/python` at the repo root (`make sky-venv`), or the current interpreter
when it can import `sky`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.paths import PROJECT_ROOT

SKY_VENV = PROJECT_ROOT / ".venv-sky"
PROBE = Path(__file__).with_name("_sky_probe.py")


class LauncherNotFound(RuntimeError):
    """No interpreter with SkyPilot was found; the message says to run `make sky-venv`."""


def launcher_python() -> str:
    """The interpreter that has SkyPilot (see module docstring); raises LauncherNotFound."""
    configured = os.environ.get("KIT_SKY_PYTHON")
    if configured:
        if not Path(configured).is_file():
            raise LauncherNotFound(f"$KIT_SKY_PYTHON is {configured!r}, which is not a file.")
        return configured
    venv_python = SKY_VENV / "bin" / "python"
    if venv_python.is_file():
        return str(venv_python)
    if importlib.util.find_spec("sky") is not None:
        return sys.executable
    raise LauncherNotFound(
        f"SkyPilot's launcher environment was not found: no $KIT_SKY_PYTHON, no {venv_python}, and `sky` "
        "is not importable here. Run `make sky-venv` at the repo root (it builds .venv-sky with skypilot), "
        "or point $KIT_SKY_PYTHON at a Python that has skypilot installed."
    )


@dataclass
class ParsedTask:
    """What SkyPilot made of one task YAML (`error` is SkyPilot's message when it rejected it)."""

    path: str
    ok: bool
    error: str | None = None
    seconds: float = 0.0
    name: str | None = None
    num_nodes: int = 1
    envs: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, Any] = field(default_factory=dict)
    resources: list[dict[str, Any]] = field(default_factory=list)
    setup: str = ""
    run: str = ""
    workdir: str | None = None
    mounts: list[str] = field(default_factory=list)

    def node_env(self, rank: int, ips: list[str] | None = None) -> dict[str, str]:
        """What SkyPilot gives node `rank` of this task: its envs as SkyPilot parsed them, plus the
        SKYPILOT_* variables (`ips`: one private address per node; made up when not given)."""
        ips = ips or [f"10.0.0.{i + 1}" for i in range(self.num_nodes)]
        counts = {count for resources in self.resources for count in resources["accelerators"].values()}
        if len(ips) != self.num_nodes or len(counts) != 1:
            raise ValueError(
                f"{self.path}: {self.num_nodes} node(s) need as many IPs (got {len(ips)}) and one GPU count "
                f"per node (the accelerators give {sorted(counts) or 'none'}); `kit sky validate` says more."
            )
        return {
            **{name: str(value) for name, value in self.envs.items()},
            "SKYPILOT_NODE_RANK": str(rank),
            "SKYPILOT_NUM_NODES": str(self.num_nodes),
            "SKYPILOT_NODE_IPS": "\n".join(ips),
            "SKYPILOT_NUM_GPUS_PER_NODE": str(int(counts.pop())),
        }


@dataclass
class ProbeResult:
    """The launcher's answer for a batch of YAMLs, with its interpreter and total wall time."""

    python: str
    sky_version: str
    import_seconds: float
    tasks: list[ParsedTask]


def parse_task_yamls(paths: list[str | Path], python: str | None = None) -> ProbeResult:
    """Run `sky.Task.from_yaml` on each path in the launcher env (one subprocess, offline)."""
    python = python or launcher_python()
    command = [python, str(PROBE), *[str(Path(p).resolve()) for p in paths]]
    done = subprocess.run(command, capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=300)
    if done.returncode != 0 or not done.stdout.strip():
        raise LauncherNotFound(
            f"The SkyPilot launcher ({python}) failed to run its probe (exit {done.returncode}): "
            f"{done.stderr.strip()[-1500:]}\nRebuild it with `make sky-venv`."
        )
    data = json.loads(done.stdout.strip().splitlines()[-1])
    tasks = [ParsedTask(**t) for t in data["tasks"]]
    return ProbeResult(python, data["sky_version"], data["import_seconds"], tasks)
