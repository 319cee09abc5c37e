"""`kit sky launch-command`: the exact `sky launch` line for a task YAML on a cloud, Kubernetes or SSH pool.

SkyPilot 0.14 picks the infrastructure with `--infra` (`aws`, `gcp/us-central1`, `k8s`, `k8s/CONTEXT`,
`ssh/POOL`; `--cloud`/`--region` survive only as hidden, deprecated flags, so `--cloud X` here prints
`--infra X`) and takes secrets with `--secret NAME`, which reads NAME's
value from the launching shell and redacts it in SkyPilot's logs and dashboards.

    $ kit sky launch-command --yaml sky/grpo-multi-node.yaml --infra ssh/my-pool
    sky launch -c gym-grpo-multi-node --infra ssh/my-pool sky/grpo-multi-node.yaml --secret WANDB_API_KEY ...
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import yaml

from kit.config.tree import ConfigError
from kit.sky.sky_venv import PROJECT_ROOT
from kit.sky.validate import REQUIRED_SECRETS


def _check_infra(infra: str) -> str:
    """Catch the forms SkyPilot would reject late; the names themselves are SkyPilot's to check."""
    parts = infra.strip().split("/")
    if not parts[0] or any(not p for p in parts):
        raise ConfigError(f"--infra {infra!r}: use k8s, k8s/CONTEXT, ssh/POOL or CLOUD[/REGION[/ZONE]].")
    if parts[0].lower() == "ssh" and len(parts) != 2:
        raise ConfigError(
            f"--infra {infra!r}: an SSH node pool is ssh/POOL (pools: ~/.sky/ssh_node_pools.yaml)."
        )
    return infra.strip()


def _display_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


def launch_argv(
    yaml_path: str | Path,
    infra: str | None = None,
    cluster: str | None = None,
    num_nodes: int | None = None,
    gpus: str | None = None,
    envs: list[str] | tuple[str, ...] = (),
) -> list[str]:
    """The `sky launch` argv for a task YAML (run from the repo root: `workdir: .` uploads it)."""
    path = Path(yaml_path)
    if not path.is_file():
        raise ConfigError(f"Task YAML {yaml_path} not found.")
    task = yaml.safe_load(path.read_text()) or {}
    secrets = task.get("secrets") or {}
    names = list(secrets) if isinstance(secrets, dict) else [str(s) for s in secrets]
    names = [*names, *(s for s in REQUIRED_SECRETS if s not in names)]
    argv = ["sky", "launch", "-c", cluster or str(task.get("name") or path.stem)]
    if infra:
        argv += ["--infra", _check_infra(infra)]
    if num_nodes is not None:
        argv += ["--num-nodes", str(num_nodes)]
    if gpus:
        argv += ["--gpus", gpus]
    argv.append(_display_path(path))
    for name in names:
        argv += ["--secret", name]
    for item in envs:
        if not item or item.startswith("="):
            raise ConfigError(f"--env {item!r}: use KEY=VALUE (or KEY to pass the local value).")
        argv += ["--env", item]
    return argv


def launch_command_cli(args) -> int:
    """Print the `sky launch` line; a note on where to run it goes to stderr."""
    argv = launch_argv(args.yaml, args.infra or args.cloud, args.cluster, args.num_nodes, args.gpus, args.env)
    print(shlex.join(argv))
    secrets = [argv[i + 1] for i, a in enumerate(argv) if a == "--secret"]
    print(
        f"# run it from {PROJECT_ROOT} with {', '.join(secrets)} set in your shell (`--secret NAME` reads "
        "the local value; `--secret NAME=` sends an empty one, e.g. no W&B); check the YAML offline first: "
        "python -m kit sky validate",
        file=sys.stderr,
    )
    return 0
