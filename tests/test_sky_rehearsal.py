"""The multi-node task rehearsed on CPU: 3 local "nodes" running the real node entry.

Rank 0 serves the demo model with vLLM; ranks 1 and 2 train 2 GRPO steps together (accelerate launch,
torchrun + gloo across two "machines" on loopback), generating through the server and syncing weights
to it every step.
"""

from __future__ import annotations

import subprocess

import pytest
from conftest import KIT, PROJECT_ROOT
from process_checks import descendants, running


@pytest.mark.slow
def test_three_node_rehearsal_trains_two_steps_with_a_sync_each(demo_model_dir, tmp_path):
    log_dir = tmp_path / "logs"
    out = tmp_path / "run"
    done = subprocess.run(
        [*KIT, "sky", "rehearse", "--nodes", "3", "--config", "cpu_rehearsal", "--log-dir", str(log_dir),
         "--timeout", "330", f"run.output_dir={out}"],
        capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=360,
    )  # fmt: skip
    summary = done.stdout[done.stdout.find("rehearsal:") :]
    assert done.returncode == 0, summary + done.stdout[-4000:] + done.stderr[-2000:]
    assert "server on rank 0: up" in summary
    assert "trainer processes that synced weights: 2 (ranks 1, 2)" in summary
    assert "GRPO steps logged: 2 [1, 2]" in summary
    assert "exit codes: rank0=0 rank1=0 rank2=0" in summary
    # 2 prompts x 2 generations per step, split over the two trainer processes
    assert "episodes by trainer process (trajectories*.jsonl rank): process 0: 4, process 1: 4" in summary
    node0 = (log_dir / "node0.log").read_text()
    assert "vLLM server ready at" in node0 and "the trainers finished (exit 0)" in node0
    for rank in (1, 2):
        log = (log_dir / f"node{rank}.log").read_text()
        assert log.count("weight sync (reload)") >= 2, log[-3000:]


@pytest.mark.slow
def test_a_sigkilled_rehearsal_leaves_no_node_or_server_behind(demo_model_dir, tmp_path):
    """SIGKILL runs no cleanup in `kit sky rehearse`; its nodes run in their own sessions, so only the
    parent-death signal can stop them, and they stop their servers and trainers in turn."""
    import os
    import signal
    import time

    rehearsal = subprocess.Popen(
        [*KIT, "sky", "rehearse", "--nodes", "3", "--config", "cpu_rehearsal", "--log-dir",
         str(tmp_path / "logs"), "--timeout", "300", f"run.output_dir={tmp_path / 'run'}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=PROJECT_ROOT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while not any("vllm.entrypoints" in args for args in descendants(rehearsal.pid).values()):
            assert rehearsal.poll() is None and time.monotonic() < deadline, "rank 0 started no vLLM server"
            time.sleep(1)
        time.sleep(5)
        started = descendants(rehearsal.pid)
        os.kill(rehearsal.pid, signal.SIGKILL)
        rehearsal.wait()
        deadline = time.monotonic() + 90
        while alive := [args for pid, args in started.items() if running(pid)]:
            assert time.monotonic() < deadline, f"outlived the SIGKILLed rehearsal: {alive}"
            time.sleep(1)
    finally:
        rehearsal.kill()
