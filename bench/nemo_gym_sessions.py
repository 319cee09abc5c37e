"""Memory over many episodes on a NeMo-Gym resources server, as `env.name: nemo_gym` runs them.

    python bench/nemo_gym_sessions.py [--episodes 10000] [--server workplace_assistant]
                                      [--max-growth-gib 2.0] [--out bench/results/nemo_gym_sessions.json]

Each episode is what the kit's loop does with a NeMo-Gym session, without a model: seed a session with a
row, make one tool call, verify, close. Every 1,000 episodes it records the resident memory of this
process (the kit's side) and of NeMo-Gym's servers (every process of their group: launcher, Ray, server),
and whether the environment restarted them (`env.nemo_gym.max_memory_growth_gib`; 0 to never restart,
which shows what NeMo-Gym's server keeps by itself). Batches of 64 sessions, as in a GRPO step.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from kit.config.tree import load_config
from kit.device import machine_description
from kit.envs.environment import make_environment
from kit.envs.nemo_gym.counter_tasks import RESOURCES_SERVER, counter_splits
from kit.episode import Episode
from kit.paths import PROJECT_ROOT

BATCH = 64
CALLS = {
    "workplace_assistant": ("company_directory_find_email_address", {"name": "Nadia"}),
    RESOURCES_SERVER: ("get_counter_value", {}),
}


def rss_mib(pid: int = os.getpid()) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def rows_for(server: str) -> list[dict]:
    if server == RESOURCES_SERVER:
        return counter_splits(seed=0, train=0, validation=BATCH)["validation"]
    reference = PROJECT_ROOT.parent / "shared" / "reference" / "workplace_assistant" / "example_tasks.jsonl"
    return [json.loads(line) for line in reference.read_text().splitlines()]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--server", default="workplace_assistant", choices=sorted(CALLS))
    parser.add_argument("--max-growth-gib", type=float, default=2.0)
    parser.add_argument(
        "--out", type=Path, default=PROJECT_ROOT / "bench" / "results" / "nemo_gym_sessions.json"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kit-bench-sessions-"))
    rows_file = work / "rows.jsonl"
    rows_file.write_text("".join(json.dumps(row) + "\n" for row in rows_for(args.server)))
    cfg = load_config(None, ["env.name=nemo_gym", f"env.nemo_gym.resources_server={args.server}",
                             f"env.nemo_gym.max_memory_growth_gib={args.max_growth_gib}"])  # fmt: skip
    env = make_environment(cfg.env, work)
    tasks = env.load_tasks(str(rows_file))
    name, arguments = CALLS[args.server]
    samples, started, done = [], time.perf_counter(), 0
    restarts = 0
    try:
        while done < args.episodes:
            batch = [tasks[(done + i) % len(tasks)] for i in range(min(BATCH, args.episodes - done))]
            server_before = env.servers.process.pid if env.servers else None
            sessions = [env.new_sandbox(task) for task in batch]
            restarts += env.servers is not None and server_before not in (None, env.servers.process.pid)
            for task, session in zip(batch, sessions, strict=True):
                session.call(name, arguments)
                env.score(task, Episode(prompt_ids=[]), session)
                session.close()
            done += len(batch)
            if done % 1000 < BATCH or done == args.episodes:
                sample = {
                    "episodes": done,
                    "seconds": round(time.perf_counter() - started, 1),
                    "kit_rss_mib": round(rss_mib(), 1),
                    "servers_rss_mib": round(env.servers.memory_bytes() / 2**20, 1),
                    "restarts": restarts,
                }
                samples.append(sample)
                print(json.dumps(sample), flush=True)
    finally:
        env.close()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT_ROOT, capture_output=True,
                            text=True).stdout.strip()  # fmt: skip
    result = {
        "command": "python bench/nemo_gym_sessions.py "
        + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if k != "out"),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "commit": commit,
        "machine": machine_description(),
        "episodes_per_second": round(args.episodes / (time.perf_counter() - started), 1),
        "samples": samples,
    }
    previous = json.loads(args.out.read_text()) if args.out.exists() else {}
    previous[f"{args.server}_growth{args.max_growth_gib:g}"] = result
    args.out.write_text(json.dumps(previous, indent=1) + "\n")


if __name__ == "__main__":
    main()
