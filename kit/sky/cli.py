"""`kit sky validate | launch-command | node-entry | rehearse`."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `kit sky` subcommands to `subparsers`; each sets `func(args) -> exit code`."""
    validate = subparsers.add_parser(
        "validate",
        help="check task YAMLs offline: SkyPilot's schema (in the launcher env) plus the kit's own checks",
        description="Parses each YAML with SkyPilot's sky.Task.from_yaml (run in the launcher environment, "
        "see `make sky-venv`), then checks the recipe it names, the GPU layout, ports and secrets.",
    )
    validate.add_argument("files", nargs="*", help="task YAMLs (default: every sky/*.yaml of the repo)")
    validate.set_defaults(func=_validate)

    launch = subparsers.add_parser(
        "launch-command",
        help="print the `sky launch` line for a task YAML on a cloud, Kubernetes or an SSH node pool",
    )
    launch.add_argument("--yaml", required=True, help="the task YAML, e.g. sky/grpo-single-node.yaml")
    where = launch.add_mutually_exclusive_group()
    where.add_argument("--infra", help="k8s, k8s/CONTEXT, ssh/POOL, or CLOUD[/REGION[/ZONE]]")
    where.add_argument("--cloud", help="CLOUD[/REGION[/ZONE]], e.g. aws or gcp/us-central1 (same as --infra)")
    launch.add_argument("--cluster", "-c", help="cluster name (default: the YAML's name)")
    launch.add_argument("--num-nodes", type=int, help="override the YAML's num_nodes")
    launch.add_argument("--gpus", help="override the YAML's accelerators, e.g. H100:8")
    launch.add_argument(
        "--env", action="append", default=[], metavar="K=V", help="task env override (repeat)"
    )
    launch.set_defaults(func=_launch_command)

    entry = subparsers.add_parser(
        "node-entry",
        help="run this node's role (the task YAMLs' `run:`): vLLM server on rank 0, trainers on the rest",
        description="Reads SKYPILOT_NODE_RANK, SKYPILOT_NODE_IPS, SKYPILOT_NUM_NODES, "
        "SKYPILOT_NUM_GPUS_PER_NODE and the task's KIT_* envs. One node: vLLM on the first KIT_SERVER_GPUS "
        "GPUs, the trainer on the rest "
        "(KIT_SERVER_GPUS=0: vLLM colocated in the trainer). Several nodes: rank 0 serves, ranks >= 1 train "
        "together with `accelerate launch`.",
    )
    entry.add_argument("--config", help="recipe (default: $KIT_RECIPE)")
    entry.add_argument("overrides", nargs="*", help="dotted overrides, appended to $KIT_OVERRIDES")
    entry.add_argument("--server-gpus", type=int, help="one node: GPUs for vLLM (default: $KIT_SERVER_GPUS)")
    entry.add_argument("--port", type=int, help="vLLM server port (default: $KIT_SERVER_PORT or 8000)")
    entry.add_argument(
        "--accelerate-config", help="fsdp, zero3, cpu_multi or a path (default: $KIT_ACCELERATE_CONFIG)"
    )
    entry.add_argument("--cpu", action="store_true", help="CPU processes over gloo (the local rehearsal)")
    entry.add_argument(
        "--print-only", action="store_true", help="print what this node would run, run nothing"
    )
    entry.set_defaults(func=_node_entry)

    rehearse = subparsers.add_parser(
        "rehearse",
        help="run the node entry as local CPU 'nodes' (rank 0 serves, the others train together)",
    )
    rehearse.add_argument("--nodes", type=int, default=3, help="number of local nodes (>= 2; default 3)")
    rehearse.add_argument("--config", default="cpu_rehearsal", help="recipe (default: cpu_rehearsal)")
    rehearse.add_argument("overrides", nargs="*", help="dotted overrides for every node")
    rehearse.add_argument("--log-dir", help="node logs go here (default: RUN_DIR/rehearsal)")
    rehearse.add_argument(
        "--timeout", type=float, default=900, help="stop every node after this many seconds"
    )
    rehearse.set_defaults(func=_rehearse)


def _validate(args: argparse.Namespace) -> int:
    from kit.sky.validate import validate_cli

    return validate_cli(args.files)


def _launch_command(args: argparse.Namespace) -> int:
    from kit.sky.launch_command import launch_command_cli

    return launch_command_cli(args)


def _node_entry(args: argparse.Namespace) -> int:
    from kit.sky.node_run import node_entry_cli

    return node_entry_cli(args)


def _rehearse(args: argparse.Namespace) -> int:
    from kit.sky.rehearse import rehearse_cli

    return rehearse_cli(args)
