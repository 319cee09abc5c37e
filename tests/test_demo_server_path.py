"""The demo's server path, CI-sized: `kit train` starts `kit serve` itself, evaluates and trains
through it with a weight sync per step, and leaves no server process behind."""

from __future__ import annotations

import json
import subprocess

import pytest

from kit.net import free_port

pytestmark = pytest.mark.slow


def _processes_with(text: str) -> list[str]:
    listing = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout
    return [line for line in listing.splitlines() if text in line and "ps -eo" not in line]


def test_kit_train_runs_its_own_server_and_stops_it(cli, tiny_model_dir, tmp_path):
    port = free_port()
    run_dir = tmp_path / "run"
    done = cli(
        "train", "--config", "cpu_demo", f"model.name_or_path={tiny_model_dir}",
        "generation.mode=server", "generation.start_server=true", f"serve.port={port}",
        "run.eval_tasks=2", "sft.num_examples=8", "grpo.max_steps=2", "grpo.num_generations=2",
        "grpo.per_device_train_batch_size=4", "grpo.max_completion_length=24", f"run.output_dir={run_dir}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["generation_mode"] == "server" and "reload" in summary["generation"]
    assert summary["grpo_steps"] == 2 and summary["weight_sync_seconds_median"] > 0
    assert {"base_eval", "after_sft_eval", "after_grpo_eval", "grpo", "total"} <= set(summary["seconds"])
    for stage in ("base", "after_sft", "after_grpo"):
        assert summary[stage]["n"] == 2
    log = (run_dir / "server.log").read_text()
    assert log.count("POST /v1/completions") >= 3 * 2  # three evaluations of 2 tasks, then rollouts
    assert log.count("POST /collective_rpc") >= 2 + 3  # a sync per GRPO step and before each evaluation
    assert not _processes_with(f"--port {port}"), "the vLLM server outlived the run"
