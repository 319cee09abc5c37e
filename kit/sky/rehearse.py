"""`kit sky rehearse`: the multi-node task on one machine, CPU only, with the real node entry.

Each local "node" is a `python -m kit sky node-entry --cpu` process with the environment SkyPilot would
give it: SKYPILOT_NODE_RANK, SKYPILOT_NODE_IPS (all 127.0.0.1), SKYPILOT_NUM_NODES and
SKYPILOT_NUM_GPUS_PER_NODE=1. Rank 0 serves the model with vLLM; ranks 1..N-1 train together through
`accelerate launch` (kit/accelerate/cpu_multi.yaml: torchrun + gloo, one process per "node"), generate
through the server and sync their weights to it every step. Node logs go to LOG_DIR/node<rank>.log and,
prefixed with the rank, to stdout; a summary checks the server came up, how many trainer processes
synced, how many steps were logged and how many syncs each trainer did.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from kit.config.tree import ConfigError, load_config
from kit.net import free_port
from kit.processes import start_in_own_group, stop_process_group

SYNC_LINE = re.compile(r"weight sync \(reload\): [\d.]+ s")
SERVER_READY = "vLLM server ready at"


@dataclass
class NodeRun:
    """One local node: its process, log file and exit code."""

    rank: int
    process: subprocess.Popen
    log_file: Path
    lines: list[str] = field(default_factory=list)

    @property
    def code(self) -> int | None:
        return self.process.poll()


def _pump(node: NodeRun, echo: bool) -> None:
    assert node.process.stdout is not None
    with node.log_file.open("w") as log:
        for line in node.process.stdout:
            log.write(line)
            log.flush()
            node.lines.append(line)
            if echo:
                sys.stdout.write(f"[node {node.rank}] {line}")
                sys.stdout.flush()


@dataclass
class RehearsalResult:
    """What the rehearsal showed; `ok` when every node exited 0 and the log shows the whole loop."""

    codes: dict[int, int | None]
    server_up: bool
    trainer_ranks_synced: list[int]
    syncs_per_rank: dict[int, int]
    steps: list[int]
    episodes_by_rank: dict[int, int]
    seconds: float
    log_dir: Path
    expected_steps: int

    @property
    def ok(self) -> bool:
        return (
            all(code == 0 for code in self.codes.values())
            and self.server_up
            and len(self.trainer_ranks_synced) == len(self.codes) - 1
            and len(self.episodes_by_rank) == len(self.codes) - 1
            and len(self.steps) >= self.expected_steps
            and all(n >= self.expected_steps for n in self.syncs_per_rank.values())
        )

    def summary(self) -> str:
        codes = " ".join(f"rank{r}={c}" for r, c in sorted(self.codes.items()))
        syncs = ", ".join(f"rank {r}: {n}" for r, n in sorted(self.syncs_per_rank.items()))
        episodes = ", ".join(f"process {r}: {n}" for r, n in sorted(self.episodes_by_rank.items()))
        return "\n".join(
            [
                f"rehearsal: {len(self.codes)} local nodes in {self.seconds:.0f} s; logs in {self.log_dir}",
                f"  server on rank 0: {'up' if self.server_up else 'NOT up'}",
                f"  trainer processes that synced weights: {len(self.trainer_ranks_synced)} "
                f"(ranks {', '.join(map(str, self.trainer_ranks_synced)) or '-'})",
                f"  GRPO steps logged: {len(self.steps)} {self.steps} (expected {self.expected_steps})",
                f"  weight syncs per trainer: {syncs or 'none'}",
                f"  episodes by trainer process (trajectories*.jsonl rank): {episodes or 'none'}",
                f"  exit codes: {codes}",
                f"  verdict: {'OK' if self.ok else 'FAILED'}",
            ]
        )


def rehearse(
    nodes: int,
    recipe: str = "cpu_rehearsal",
    overrides: list[str] | tuple[str, ...] = (),
    log_dir: Path | None = None,
    timeout: float = 900.0,
    echo: bool = True,
) -> RehearsalResult:
    """Run `nodes` local node entries (rank 0 serves, the rest train) and report what their logs show."""
    if nodes < 2:
        raise ConfigError("--nodes must be at least 2: rank 0 serves, ranks >= 1 train.")
    cfg = load_config(recipe, list(overrides))
    run_dir = Path(cfg.run.output_dir)
    log_dir = Path(log_dir) if log_dir else run_dir / "rehearsal"
    log_dir.mkdir(parents=True, exist_ok=True)
    seen = {path: path.stat().st_size for path in _run_files(run_dir)}  # read only what this run appends
    port = free_port(span=2)
    trainer_port = next(p for p in iter(free_port, None) if p not in (port, port + 1))
    base_env = {
        **os.environ,
        "SKYPILOT_NODE_IPS": "\n".join(["127.0.0.1"] * nodes),
        "SKYPILOT_NUM_NODES": str(nodes),
        "SKYPILOT_NUM_GPUS_PER_NODE": "1",
        "KIT_RECIPE": recipe,
        "KIT_OVERRIDES": shlex.join(overrides),
        "KIT_SERVER_PORT": str(port),
        "KIT_TRAINER_PORT": str(trainer_port),
        "KIT_ACCELERATE_CONFIG": "cpu_multi",
        "KIT_SKY_CPU": "1",
        "KIT_HEALTH_TIMEOUT": str(int(timeout)),
        "PYTHONUNBUFFERED": "1",
    }
    base_env.pop("WANDB_API_KEY", None)
    started = time.monotonic()
    runs: list[NodeRun] = []
    pumps = []
    command = [sys.executable, "-m", "kit", "sky", "node-entry", "--cpu"]
    for rank in range(nodes):
        env = {**base_env, "SKYPILOT_NODE_RANK": str(rank)}
        if rank > 0:
            env["OMP_NUM_THREADS"] = "1"  # the trainers share the cores with the server
        # Stopped in order below; if this process is killed, with it.
        process = start_in_own_group(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        node = NodeRun(rank, process, log_dir / f"node{rank}.log")
        runs.append(node)
        pump = threading.Thread(target=_pump, args=(node, echo), daemon=True)
        pump.start()
        pumps.append(pump)
    try:
        while time.monotonic() - started < timeout:
            codes = [n.code for n in runs]
            if all(c is not None for c in codes):
                break
            if any(c not in (None, 0) for c in codes):  # like SkyPilot: one failed node fails the job
                break
            time.sleep(1)
    finally:
        for node in sorted(runs, key=lambda n: -n.rank):  # trainers first, then the server
            stop_process_group(node.process, grace=60.0)
        for pump in pumps:
            pump.join(timeout=10)
    return _result(runs, run_dir, seen, time.monotonic() - started, log_dir, cfg)


def _new_rows(path: Path, offset: int) -> list[dict]:
    """JSON lines appended to `path` after byte `offset` (what this rehearsal wrote)."""
    if not path.is_file():
        return []
    rows = []
    with path.open() as handle:
        handle.seek(offset)
        for line in handle:
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue
    return rows


def _run_files(run_dir: Path) -> list[Path]:
    """metrics.jsonl and every rank's trajectories file present in the run folder."""
    return [p for p in (run_dir / "metrics.jsonl", *run_dir.glob("trajectories*.jsonl")) if p.is_file()]


def _result(runs: list[NodeRun], run_dir: Path, seen: dict[Path, int], seconds: float,
            log_dir: Path, cfg) -> RehearsalResult:  # fmt: skip
    server_up = any(SERVER_READY in line for line in runs[0].lines)
    syncs = {n.rank: sum(bool(SYNC_LINE.search(line)) for line in n.lines) for n in runs[1:]}
    steps: list[int] = []
    for row in _new_rows(run_dir / "metrics.jsonl", seen.get(run_dir / "metrics.jsonl", 0)):
        if "reward" in row and row.get("step") not in steps:
            steps.append(row.get("step"))
    episodes: dict[int, int] = {}
    for path in run_dir.glob("trajectories*.jsonl"):
        for row in _new_rows(path, seen.get(path, 0)):
            rank = int(row.get("rank", -1))
            episodes[rank] = episodes.get(rank, 0) + 1
    expected = max(cfg.grpo.max_steps, 0)
    return RehearsalResult(
        codes={n.rank: n.code for n in runs},
        server_up=server_up,
        trainer_ranks_synced=[r for r, n in syncs.items() if n > 0],
        syncs_per_rank=syncs,
        steps=steps,
        episodes_by_rank=episodes,
        seconds=seconds,
        log_dir=log_dir,
        expected_steps=expected,
    )


def rehearse_cli(args) -> int:
    """`kit sky rehearse`: 0 when the rehearsal ran the whole loop, 1 when it did not."""
    result = rehearse(args.nodes, args.config, args.overrides, args.log_dir, args.timeout)
    print(result.summary(), flush=True)
    return 0 if result.ok else 1
