"""The demo's server path, CI-sized: `kit train` starts `kit serve` itself, evaluates and trains
through it with a weight sync per step, and leaves no server process behind."""

from __future__ import annotations

import json
import subprocess

import pytest

from kit.net import free_port

pytestmark = pytest.mark.slow


def _processes_with(text: str) -> list[str]:
    listing = subprocess.run(["ps", "-eww", "-o", "args"], capture_output=True, text=True, check=True).stdout
    return [line for line in listing.splitlines() if text in line and "ps -eww" not in line]


def test_kit_train_runs_its_own_server_and_stops_it(cli, tiny_model_dir, tmp_path):
    port = free_port()
    run_dir = tmp_path / "run"
    done = cli(
        "train", "--config", "cpu_demo", f"model.name_or_path={tiny_model_dir}",
        "generation.mode=server", "generation.start_server=true", f"serve.port={port}",
        "run.eval_tasks=2", "sft.num_examples=8", "grpo.max_steps=2", "grpo.num_generations=2",
        "grpo.per_device_train_batch_size=4", "grpo.max_completion_length=24", f"run.output_dir={run_dir}",
        "run.eval_every=1", "task_selection.probe_tasks=0",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["generation_mode"] == "server" and "reload" in summary["generation"]
    assert summary["grpo_steps"] == 2 and summary["weight_sync_seconds_median"] > 0
    assert {"base_eval", "after_sft_eval", "after_grpo_eval", "grpo", "total"} <= set(summary["seconds"])
    for stage in ("base", "after_sft", "after_grpo"):
        assert summary[stage]["n"] == 2
    # run.eval_every=1: the held-out curve has the step between the first and the last
    assert [(p["step"], p["n"]) for p in summary["held_out_curve"]] == [(1, 2)]
    from PIL import Image

    with Image.open(run_dir / "reward_curve.png") as plot:  # training curve beside the three stages
        assert plot.format == "PNG" and plot.size == (1000, 380)
    log = (run_dir / "server.log").read_text()
    assert log.count("POST /v1/completions") >= 4 * 2  # four evaluations of 2 tasks, then rollouts
    assert log.count("POST /collective_rpc") >= 2 + 4  # a sync per GRPO step and before each evaluation
    assert not _processes_with(f"--port {port}"), "the vLLM server outlived the run"


def test_server_of_a_killed_trainer_stops_too(tiny_model_dir, tmp_path):
    """SIGKILL (OOM killer, preemption) runs no cleanup in the trainer: the server must still go."""
    import os
    import signal
    import sys
    import time

    port = free_port()
    trainer = subprocess.Popen(
        [
            sys.executable, "-m", "kit", "train", "--config", "cpu_demo",
            f"model.name_or_path={tiny_model_dir}", f"serve.port={port}", "run.eval_tasks=2",
            "task_selection.probe_tasks=0", f"run.output_dir={tmp_path / 'run'}",
        ],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while not _processes_with(f"--port {port}") and trainer.poll() is None:
            assert time.monotonic() < deadline, "kit train started no server"
            time.sleep(1)
        assert trainer.poll() is None, trainer.stderr.read()[-2000:]
        time.sleep(5)  # the server's engine processes are up by now
        os.kill(trainer.pid, signal.SIGKILL)
        trainer.wait()
        deadline = time.monotonic() + 60
        while _processes_with(f"--port {port}"):
            assert time.monotonic() < deadline, "the vLLM server outlived its SIGKILLed trainer"
            time.sleep(1)
    finally:
        trainer.kill()
