"""`kit gym`: NeMo-Gym's own servers from the kit: list them, start them, make rows for them."""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from pathlib import Path
from typing import Any

from kit.envs.nemo_gym.counter_tasks import counter_splits
from kit.envs.nemo_gym.servers import NeMoGymServers, available_servers, gym_version, resources_server

log = logging.getLogger(__name__)


def servers(args: argparse.Namespace) -> int:
    """Print the resources servers the installed NeMo-Gym ships, one a line."""
    names = available_servers()
    print(f"NeMo-Gym {gym_version()}: {len(names)} resources servers")
    for name in names:
        print(name)
    return 0


def start(args: argparse.Namespace) -> int:
    """Start resources servers with NeMo-Gym's launcher and keep them up until Ctrl-C."""
    work_dir = Path(args.work_dir or tempfile.mkdtemp(prefix="kit-nemo-gym-"))
    specs = [resources_server(name) for name in args.server]
    with NeMoGymServers(specs, work_dir, args.timeout) as running:
        for spec in running.specs:
            print(f"{spec.instance} {running.url(spec.instance)}", flush=True)
        print(f"log: {running.log_path}; Ctrl-C stops them", flush=True)
        while True:
            running.check_alive()
            time.sleep(2)


def counter_rows(args: argparse.Namespace) -> int:
    """Write train.jsonl and validation.jsonl for NeMo-Gym's example_session_state_mgmt server."""
    from kit.envs.workplace.tasks import write_rows

    for name, rows in counter_splits(args.seed, args.train, args.validation).items():
        print(write_rows(Path(args.out) / f"{name}.jsonl", rows))
    return 0


def register(subparsers: Any) -> None:
    """Add `servers`, `start` and `counter-rows` to an argparse sub-parsers object."""
    listing = subparsers.add_parser("servers", help="list the resources servers the installed NeMo-Gym ships")
    listing.set_defaults(func=servers)

    run = subparsers.add_parser(
        "start", help="start NeMo-Gym resources servers with its launcher (gym env start) on loopback ports"
    )
    run.add_argument("server", nargs="+", help="resources server folder names (see `kit gym servers`)")
    run.add_argument("--work-dir", help="folder for NeMo-Gym's config and log (default: a new temporary one)")
    run.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for them (default 180)")
    run.set_defaults(func=start)

    rows = subparsers.add_parser(
        "counter-rows", help="write rows for NeMo-Gym's example_session_state_mgmt (counter) server"
    )
    rows.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    rows.add_argument("--out", required=True, help="output directory")
    rows.add_argument("--train", type=int, default=600, help="train rows (default 600)")
    rows.add_argument("--validation", type=int, default=300, help="validation rows (default 300)")
    rows.set_defaults(func=counter_rows)
