"""The kit's workplace sandbox against NeMo-Gym's own workplace server: per tool, how many calls gave the
same observation text and how many rewards matched NeMo-Gym's verify.

Starts NeMo-Gym's workplace_assistant server (``--servers`` instances, from .venv-gym) and runs, on its
databases: the ground truth of every task in data/workplace, NeMo-Gym's 5 reference rows, the edge
sequences and ``--sequences`` fuzzed ones, each sequence in a fresh session unless ``--per-session``
says otherwise; rewards are compared for every ``--reward-every``-th sequence. ``--tool-messages kit``
runs the kit's own tool set instead, which is what the sandbox did before NeMo-Gym's became its default.
Run from the repository root:

    python -m bench.workplace_differential [--sequences 2000] [--seed 0] [--out FILE] [--tool-messages kit]

Prints one row per tool and writes the counts, the first differences and the run's settings as JSON.
Exits 1 when any observation or reward differs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kit.envs.nemo_gym.servers import NeMoGymServers, gym_version, resources_server
from kit.envs.workplace.sandbox import TOOL_SETS, WorkplaceSandbox
from kit.envs.workplace.state import load_csv_dir
from kit.paths import PROJECT_ROOT
from kit.testing.fuzz.workplace_calls import fuzz_sequences
from kit.testing.fuzz.workplace_differential import NeMoGymClient, Tally, compare, kit_reward, row_sequences
from kit.testing.fuzz.workplace_edges import EDGE_REWARDS, EDGE_SEQUENCES
from kit.versions import versions

REFERENCE = PROJECT_ROOT.parent / "shared" / "reference" / "workplace_assistant"


def table(tally: Tally) -> str:
    """The per-tool counts as a markdown table, with a total row."""
    summary = tally.summary()
    rows = ["| tool | calls | same output | rewards | same reward |", "|---|---|---|---|---|"]
    for name, n in summary["per_tool"].items():
        rows.append(
            f"| `{name}` | {n['calls']:,} | {n['same_output']:,} | {n['rewards']:,} | {n['same_reward']:,} |"
        )
    rows.append(
        f"| all | {summary['calls']:,} | {summary['same_output']:,} | {summary['rewards']:,} "
        f"| {summary['same_reward']:,} |"
    )
    return "\n".join(rows)


def _libraries() -> dict[str, str]:
    """The versions that decide the details on each side: pandas, pyarrow and numpy in the kit's
    environment and in NeMo-Gym's."""
    import numpy
    import pandas
    import pyarrow

    from kit.envs.nemo_gym.gym_python import gym_python

    probe = "import numpy, pandas, pyarrow; print(pandas.__version__, pyarrow.__version__, numpy.__version__)"
    gym = subprocess.run([gym_python(), "-c", probe], capture_output=True, text=True).stdout.split()
    return {
        "kit": f"pandas {pandas.__version__}, pyarrow {pyarrow.__version__}, numpy {numpy.__version__}",
        "nemo_gym": "pandas {}, pyarrow {}, numpy {}".format(*gym) if len(gym) == 3 else "(unknown)",
    }


def _commit() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT_ROOT, capture_output=True, text=True
    )
    return done.stdout.strip() or "(unknown)"


def run(args: argparse.Namespace) -> tuple[Tally, dict[str, Any]]:
    """Start the servers, compare everything, and return the tally and the per-source seconds."""
    databases = args.reference / "databases"
    base = WorkplaceSandbox.from_csv_dir(databases, tool_messages=args.tool_messages)
    sources = {
        "reference": (row_sequences([args.reference / "example_tasks.jsonl"]), 1),
        "tasks": (
            row_sequences(sorted((PROJECT_ROOT / "data" / "workplace").glob("*.jsonl"))),
            args.reward_every,
        ),
        "edges": (EDGE_SEQUENCES, 0),
        "fuzz": (fuzz_sequences(args.sequences, args.seed, load_csv_dir(databases)), args.reward_every),
    }
    tally, seconds = Tally(keep=args.keep), {}
    specs = [resources_server("workplace_assistant", f"workplace_assistant_{i}") for i in range(args.servers)]
    with tempfile.TemporaryDirectory() as work, NeMoGymServers(specs, work) as servers:
        clients = [NeMoGymClient(servers.url(spec.instance)) for spec in specs]
        for source, (sequences, reward_every) in sources.items():
            start = time.perf_counter()
            compare(tally, source, sequences, base, clients, reward_every, args.per_session)
            if source == "edges":
                for note, predicted, truth in EDGE_REWARDS:
                    mine, theirs = kit_reward(base, predicted, truth), clients[0].reward(predicted, truth)
                    tally.reward("edge rewards", 0, mine, theirs, note, [n for n, _ in (*predicted, *truth)])
            seconds[source] = round(time.perf_counter() - start, 1)
            print(f"{source}: {len(sequences):,} sequences in {seconds[source]} s", file=sys.stderr)
        for client in clients:
            client.close()
    return tally, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequences", type=int, default=2000, help="fuzzed call sequences (2000)")
    parser.add_argument("--seed", type=int, default=0, help="fuzzer seed (0)")
    parser.add_argument(
        "--reward-every", type=int, default=10, help="compare rewards every n-th sequence (10)"
    )
    parser.add_argument("--per-session", type=int, default=1, help="sequences sharing a server session (1)")
    parser.add_argument("--servers", type=int, default=2, help="server instances sharing the work (2)")
    parser.add_argument(
        "--tool-messages", choices=list(TOOL_SETS), default="nemo_gym", help="the kit's tool set"
    )
    parser.add_argument("--reference", type=Path, default=REFERENCE, help="NeMo-Gym's reference folder")
    parser.add_argument("--keep", type=int, default=20, help="differences kept in the JSON (20)")
    parser.add_argument("--out", type=Path, default=None, help="JSON file for the results")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    tally, seconds = run(args)
    summary = tally.summary()
    print(table(tally))
    for difference in summary["first_differences"][:5]:
        print(difference, file=sys.stderr)
    if args.out:
        result = {
            "commit": _commit(),
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "device": "2 CPU cores",
            "command": "python -m bench.workplace_differential "
            + " ".join(argv if argv is not None else sys.argv[1:]),
            "versions": {**versions(), "nemo_gym": gym_version(), "libraries": _libraries()},
            "settings": {
                k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items() if k != "out"
            },
            "seconds": {**seconds, "total": round(time.perf_counter() - started, 1)},
            **summary,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 1 if tally.mismatched_calls or tally.mismatched_rewards else 0


if __name__ == "__main__":
    sys.exit(main())
