"""Asynchronous GRPO (`grpo_async`, generation one step ahead) against synchronous GRPO, whole jobs.

    python bench/async_grpo.py [--recipe cpu_demo] [--seeds 0 1 2] [--out FILE] [overrides ...]

Each seed runs `kit train --config RECIPE run.seed=S` twice, synchronous (grpo_async.enabled=false) and
one step ahead (grpo_async.enabled=true), interleaved (sync, async at seed 0, then async, sync, ...) so
that a drift in the machine's speed touches both modes alike; one run at a time, each in its own process
group. The stages before GRPO (evaluation, SFT, task probe) are the same in both modes at a seed. Per
run, from its run folder:

- seconds per GRPO step (the GRPO stage's wall time over its steps) and episodes per second;
- held-out success after GRPO (and after SFT), with its 95 % interval;
- where a step's time goes, medians over the steps after the first: `generation` (the batch's rollout
  wall time; one step ahead, it runs while the step before trains), `waiting` (the trainer waiting for
  its batch: all of generation when synchronous, `async/wait_seconds` one step ahead), `sync` (the
  weight push), `training` (TRL's step time less waiting and sync) and `other` (the rest of the step's
  wall time: optimizer step, logging, checkpoints);
- async only: the lag of each step, batches missed, TRL's importance-sampling ratio (mean, min).

The summary gives, per seed and as medians, async's episodes/s over sync's and the difference in
held-out success in points. The JSON file (default bench/results/async_grpo_<recipe>.json) is rewritten
after every run, so an interrupted bench keeps what it finished. On 2 CPU cores a cpu_demo run takes
13-15 minutes alone: the whole bench about an hour and a half.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODES = {"sync": ["grpo_async.enabled=false"], "async": ["grpo_async.enabled=true"]}


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def one_run(recipe: str, mode: str, seed: int, overrides: list[str], work: Path) -> dict:
    """`kit train` of one mode at one seed in its own process group, and what its run folder says."""
    run_dir = work / f"seed{seed}-{mode}"
    command = [
        sys.executable, "-m", "kit", "train", "--config", recipe, f"run.seed={seed}",
        f"run.output_dir={run_dir}", *MODES[mode], *overrides,
    ]  # fmt: skip
    log_file = work / f"seed{seed}-{mode}.log"
    started = time.perf_counter()
    with open(log_file, "w") as log, subprocess.Popen(
        command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    ) as process:  # fmt: skip
        try:
            code = process.wait()
        except BaseException:
            os.killpg(process.pid, signal.SIGKILL)
            raise
    record = {
        "command": " ".join(["kit", *command[3:]]),
        "exit_code": code,
        "wall_seconds": round(time.perf_counter() - started, 1),
        "log": str(log_file),
    }
    if code != 0:
        record["error"] = "\n".join(log_file.read_text(errors="replace").splitlines()[-30:])
        return record
    record.update(figures(run_dir, mode))
    return record


def figures(run_dir: Path, mode: str) -> dict:
    """Speed, success and the time per step's parts, from a finished run folder."""
    from kit.config.tree import load_config

    summary = json.loads((run_dir / "summary.json").read_text())
    grpo = load_config(run_dir / "config.yaml").grpo
    steps = [m for m in _read_jsonl(run_dir / "metrics.jsonl") if "step_time" in m]
    later = steps[1:] or steps  # the first batch is generated synchronously in both modes

    def median_of(key: str) -> float | None:
        return _median([m[key] for m in later if key in m])

    grpo_steps = summary["grpo_steps"]
    episodes_per_step = grpo.per_device_train_batch_size * grpo.gradient_accumulation_steps  # one process
    seconds_per_step = summary["seconds"]["grpo"] / grpo_steps
    generation = median_of("rollout/seconds")
    if mode == "async":
        waiting, sync = median_of("async/wait_seconds"), median_of("async/sync_seconds")
    else:
        waiting, sync = generation, summary.get("weight_sync_seconds_median", 0.0)
    step_time = median_of("step_time")
    record = {
        "grpo_steps": grpo_steps,
        "episodes_per_step": episodes_per_step,
        "seconds_per_step": round(seconds_per_step, 2),
        "episodes_per_second": round(episodes_per_step / seconds_per_step, 4),
        "held_out": {stage: _success(summary.get(stage)) for stage in ("base", "after_sft", "after_grpo")},
        "time_per_step": {
            "generation": generation,
            "waiting": waiting,
            "sync": sync,
            "training": round(step_time - waiting - sync, 3),
            "other": _median([seconds_per_step - m["step_time"] for m in later]),
        },
        "reward_first_last": summary.get("reward_first_last"),
        "seconds": summary["seconds"],
        "generation_setup": summary.get("generation"),
        "versions": summary.get("versions"),
    }
    if mode == "async":
        record["lag"] = [m["async/lag"] for m in steps]
        record["missed"] = sum(m["async/missed"] for m in steps)
        record["importance_sampling_ratio"] = {
            "mean": median_of("sampling/importance_sampling_ratio/mean"),
            "min": min(m["sampling/importance_sampling_ratio/min"] for m in steps),
        }
    return record


def _success(report: dict | None) -> dict | None:
    if not report:
        return None
    return {"success_rate": report["success_rate"], "interval95": report["interval95"], "n": report["n"]}


def summarize(runs: dict, seeds: list[int]) -> dict:
    """Async against sync per seed and as medians: episodes/s ratio, held-out success difference."""
    per_seed = {}
    for seed in seeds:
        sync, ahead = runs.get(f"seed{seed}-sync"), runs.get(f"seed{seed}-async")
        if not sync or not ahead or "episodes_per_second" not in sync or "episodes_per_second" not in ahead:
            continue
        after = [run["held_out"]["after_grpo"] for run in (sync, ahead)]
        per_seed[seed] = {
            "episodes_per_second_ratio": round(ahead["episodes_per_second"] / sync["episodes_per_second"], 3),
            "held_out_points": (
                round(100 * (after[1]["success_rate"] - after[0]["success_rate"]), 1) if all(after) else None
            ),
        }
    ratios = [s["episodes_per_second_ratio"] for s in per_seed.values()]
    points = [s["held_out_points"] for s in per_seed.values() if s["held_out_points"] is not None]
    return {
        "per_seed": per_seed,
        "median_episodes_per_second_ratio": _median(ratios),
        "median_held_out_points": _median(points),
    }


def machine() -> str:
    cpu = next(
        (line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
         if line.startswith("model name")),
        platform.processor(),
    ) if Path("/proc/cpuinfo").is_file() else platform.processor()  # fmt: skip
    return f"{os.cpu_count()} CPU cores ({cpu})"


def write(out: Path, result: dict) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.replace(out)


def print_table(result: dict) -> None:
    parts = ("generation", "waiting", "sync", "training")
    print(f"\n{'run':<14} {'s/step':>7} {'ep/s':>7} {'held-out':>9}", *(f"{p[:6]:>6}" for p in parts))
    for name, run in result["runs"].items():
        if "episodes_per_second" not in run:
            print(f"{name:<14} failed (exit {run['exit_code']}): see {run['log']}")
            continue
        after = run["held_out"]["after_grpo"]
        held = f"{after['success_rate']:.1%}" if after else "-"
        seconds = run["time_per_step"]
        cells = [f"{seconds[p]:6.1f}" if seconds[p] is not None else f"{'-':>6}" for p in parts]
        print(
            f"{name:<14} {run['seconds_per_step']:7.1f} {run['episodes_per_second']:7.3f} {held:>9}", *cells
        )
    summary = result["summary"]
    print(
        f"async / sync episodes/s (median over seeds): {summary['median_episodes_per_second_ratio']}; "
        f"held-out success async - sync: {summary['median_held_out_points']} points"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--recipe", default="cpu_demo")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--work", type=Path, default=Path("/tmp/kit-bench-async"), help="run folders and logs"
    )
    parser.add_argument("--out", type=Path, help="JSON file (default bench/results/async_grpo_<recipe>.json)")
    parser.add_argument("overrides", nargs="*", help="recipe overrides for every run, e.g. grpo.max_steps=2")
    args = parser.parse_args()
    out = args.out or ROOT / "bench" / "results" / f"async_grpo_{Path(args.recipe).stem}.json"
    args.work.mkdir(parents=True, exist_ok=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    result = {
        "about": __doc__.split("\n\n")[0],
        "command": " ".join(["python", "bench/async_grpo.py", *sys.argv[1:]]),
        "commit": commit.stdout.strip(),
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "runs": {},
    }
    for index, seed in enumerate(args.seeds):
        order = ["sync", "async"] if index % 2 == 0 else ["async", "sync"]
        for mode in order:
            print(f"seed {seed}, {mode} ...", flush=True)
            result["runs"][f"seed{seed}-{mode}"] = one_run(args.recipe, mode, seed, args.overrides, args.work)
            result["summary"] = summarize(result["runs"], args.seeds)
            write(out, result)
    print_table(result)
    print(f"written: {out}")


if __name__ == "__main__":
    main()
