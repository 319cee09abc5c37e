"""examples/grpo_workplace.py, the whole loop in one file, runs as its docstring says."""

from __future__ import annotations

import re
import subprocess
import sys

from tool_models import tool_caller

from kit.paths import PROJECT_ROOT


def test_grpo_workplace_example_trains_a_step_with_plain_trl(demo_model_dir, tmp_path):
    # A model that calls tools, so the step's episodes are multi-turn: calls, tool answers, more calls.
    model = tool_caller(demo_model_dir)
    done = subprocess.run(
        [sys.executable, "examples/grpo_workplace.py", "--model", model, "--max-steps", "1", "--tasks", "16",
         "--output-dir", str(tmp_path / "run")],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    step = re.search(r"step 1: reward ([\d.]+), tool calls an episode ([\d.]+), loss", done.stdout)
    assert step, done.stdout[-2000:]
    assert float(step.group(2)) > 0  # the policy acted through the kit's rollout inside TRL's trainer
    assert (tmp_path / "run" / "model.safetensors").is_file()
