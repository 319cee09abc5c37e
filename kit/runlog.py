"""The run folder: one format that the CLI summary, the notebooks and the benchmarks all read.

runs/NAME/
  config.yaml          resolved config (loadable as a recipe)
  metrics.jsonl        one line per logged training step (TRL's metrics + episode/* metrics)
  trajectories.jsonl   one line per episode: messages, raw completions, parsed calls, reward
  checkpoints/         TRL checkpoints; final/ holds the trained model
  reward_curve.png     reward and success rate per step
  summary.json         before/after success rates, timings
  server.log           the vLLM server's log when `kit serve` ran for this run
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


class RunFolder:
    """Paths and append-only writers of one run."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def create(self) -> RunFolder:
        self.path.mkdir(parents=True, exist_ok=True)
        return self

    @property
    def checkpoints(self) -> Path:
        return self.path / "checkpoints"

    @property
    def final_model(self) -> Path:
        return self.path / "final"

    @property
    def metrics_file(self) -> Path:
        return self.path / "metrics.jsonl"

    @property
    def trajectories_file(self) -> Path:
        return self.path / "trajectories.jsonl"

    @property
    def server_log(self) -> Path:
        return self.path / "server.log"

    @property
    def summary_file(self) -> Path:
        return self.path / "summary.json"

    @property
    def reward_plot(self) -> Path:
        return self.path / "reward_curve.png"

    def _append(self, path: Path, lines: list[dict[str, Any]]) -> None:
        text = "".join(json.dumps(line, ensure_ascii=False, default=str) + "\n" for line in lines)
        # One write per batch in append mode, so lines from several ranks never interleave mid-line.
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)

    def append_metrics(self, record: dict[str, Any]) -> None:
        self._append(self.metrics_file, [record])

    def append_trajectories(self, step: int, tasks, episodes, rewards: list[float]) -> None:
        rank = int(os.environ.get("RANK", "0"))
        self._append(self.trajectories_file, episode_records(tasks, episodes, rewards, step, rank))

    def read_jsonl(self, path: Path) -> list[dict[str, Any]]:
        if not path.is_file():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    def metrics(self) -> list[dict[str, Any]]:
        return self.read_jsonl(self.metrics_file)

    def trajectories(self) -> list[dict[str, Any]]:
        return self.read_jsonl(self.trajectories_file)

    def training_steps(self) -> list[dict[str, Any]]:
        """Metric lines of training steps (those with a reward), without the end-of-training summary line."""
        return [m for m in self.metrics() if "reward" in m]

    def plot_rewards(self) -> Path:
        """Draw reward and success rate per step into reward_curve.png."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        steps = self.training_steps()
        fig, ax = plt.subplots(figsize=(6, 3.5))
        xs = [m["step"] for m in steps]
        ax.plot(xs, [m["reward"] for m in steps], marker="o", label="mean reward")
        if steps and "episode/success_rate" in steps[0]:
            ax.plot(xs, [m["episode/success_rate"] for m in steps], marker="s", label="success rate")
        ax.set_xlabel("GRPO step")
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(self.path.name)
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(self.reward_plot, dpi=100)
        plt.close(fig)
        return self.reward_plot


def episode_records(
    tasks, episodes, rewards: list[float], step: int = -1, rank: int | None = None
) -> list[dict[str, Any]]:
    """Episodes in the trajectories.jsonl format (what the notebooks' TrajectoryBrowser reads)."""
    return [
        {
            "step": step,
            **({} if rank is None else {"rank": rank}),
            "task": task.info,
            "prompt": task.messages,
            "messages": episode.messages,
            "raw_completions": episode.raw_completions,
            "tool_calls": episode.tool_calls,
            "ground_truth": task.ground_truth,
            "reward": reward,
            "turns": episode.turns,
            "parse_failures": episode.parse_failures,
            "tool_errors": episode.tool_errors,
            "completion_tokens": episode.generated_tokens,
        }
        for task, episode, reward in zip(tasks, episodes, rewards, strict=True)
    ]
