"""The run folder: one format that the CLI summary, the notebooks and the benchmarks all read.

runs/NAME/
  config.yaml          resolved config (loadable as a recipe)
  metrics.jsonl        one line per logged training step (TRL's metrics + episode/* metrics)
  trajectories.jsonl   one line per episode: messages, raw completions, parsed calls, reward
                       (trajectories.rank<N>.jsonl: the episodes of trainer process N > 0)
  checkpoints/         TRL checkpoints; final/ holds the trained model
  reward_curve.png     reward and success rate per step
  summary.json         before/after success rates, timings (rewritten after each stage)
  server.log           the vLLM server's log when `kit serve` ran for this run
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


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

    def trajectories_file_of(self, rank: int) -> Path:
        """The episode file trainer process `rank` writes."""
        return self.trajectories_file if rank == 0 else self.path / f"trajectories.rank{rank}.jsonl"

    def write_summary(self, summary: dict[str, Any]) -> None:
        write_atomic(self.summary_file, json.dumps(summary, indent=2) + "\n")

    def read_summary(self) -> dict[str, Any]:
        return json.loads(self.summary_file.read_text()) if self.summary_file.is_file() else {}

    def _append(self, path: Path, lines: list[dict[str, Any]]) -> None:
        # One write call of whole lines: a kill leaves at most a torn last line, which readers skip.
        text = "".join(json.dumps(line, ensure_ascii=False, default=str) + "\n" for line in lines)
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)

    def append_metrics(self, record: dict[str, Any]) -> None:
        self._append(self.metrics_file, [record])

    def append_trajectories(self, step: int, tasks, episodes, rewards: list[float | None]) -> None:
        """Each trainer process writes its own file (trajectories.jsonl for rank 0, trajectories.rank<N>.jsonl
        for the others), so lines of several ranks never interleave."""
        rank = process_rank()
        self._append(self.trajectories_file_of(rank), episode_records(tasks, episodes, rewards, step, rank))

    def read_jsonl(self, path: Path) -> list[dict[str, Any]]:
        """The records of a jsonl file; a torn last line (a writer killed mid-line) is left out."""
        return read_whole_lines(path)

    def truncate_to_step(self, step: int, rank: int = 0) -> None:
        """Drop what was logged after optimizer step `step` (and a torn last line) from the files process
        `rank` writes: metrics.jsonl (rank 0) and its trajectories file. Lines without a step stay."""
        paths = [self.metrics_file] if rank == 0 else []
        for path in (*paths, self.trajectories_file_of(rank)):
            if path.is_file():
                kept = [r for r in read_whole_lines(path) if r.get("step", step) <= step]
                write_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in kept))

    def clear_previous_run(self) -> list[str]:
        """Remove what an earlier run left here (checkpoints, logs, summary, final model); returns the
        names removed. config.yaml is rewritten and server.log appended to, so both stay."""
        removed = []
        earlier = [self.checkpoints, self.final_model, self.metrics_file, self.summary_file, self.reward_plot]
        for path in (*earlier, *sorted(self.path.glob("trajectories*.jsonl"))):
            if path.is_dir():
                shutil.rmtree(path)
            elif path.is_file():
                path.unlink()
            else:
                continue
            removed.append(path.name)
        return removed

    def metrics(self) -> list[dict[str, Any]]:
        return self.read_jsonl(self.metrics_file)

    def trajectories(self) -> list[dict[str, Any]]:
        """Every rank's episodes, rank 0's first."""
        ranks = sorted(self.path.glob("trajectories.rank*.jsonl"), key=lambda p: int(p.stem.split("rank")[1]))
        return [record for path in (self.trajectories_file, *ranks) for record in self.read_jsonl(path)]

    def training_steps(self) -> list[dict[str, Any]]:
        """Metric lines of training steps (those with a reward), without the end-of-training summary line."""
        return [m for m in self.metrics() if "reward" in m]

    def plot_rewards(
        self, summary: dict[str, Any] | None = None, episodes_per_step: int | None = None
    ) -> Path:
        """Write reward_curve.png (`reward_figure`) and return its path."""
        self.reward_figure(summary, episodes_per_step).savefig(self.reward_plot, dpi=100)
        return self.reward_plot

    def reward_figure(self, summary: dict[str, Any] | None = None, episodes_per_step: int | None = None):
        """Reward and success rate per step (points and a 5-step moving average) and, with a `summary`,
        the held-out curve and the success rate after each stage with its 95 % interval."""
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator

        steps = self.training_steps()
        stages = [s for s in ("base", "after_sft", "after_grpo") if summary and summary.get(s)]
        fig = Figure(figsize=(10 if stages else 6, 3.8))
        ax = fig.add_subplot(1, 2 if stages else 1, 1)
        xs = [m["step"] for m in steps]
        for index, (key, label) in enumerate(
            (("reward", "mean reward"), ("episode/success_rate", "success rate"))
        ):
            ys = [m[key] for m in steps if key in m]
            if len(ys) != len(xs):
                continue
            ax.plot(xs, ys, "o", color=f"C{index}", alpha=0.35, markersize=4)
            ax.plot(xs, moving_average(ys, 5), color=f"C{index}", label=f"{label} (5-step mean)")
        curve = held_out_curve(summary, xs[-1] if xs else 0) if summary else []
        if curve:
            rate = [p["success_rate"] for p in curve]
            ax.errorbar(
                [p["step"] for p in curve], rate, capsize=3, color="C3", marker="s", markersize=4,
                yerr=[[r - p["interval95"][0] for r, p in zip(rate, curve, strict=True)],
                      [p["interval95"][1] - r for r, p in zip(rate, curve, strict=True)]],
                label=f"held-out success (n={curve[0]['n']}, 95 % interval)",
            )  # fmt: skip
        per_step = f", {episodes_per_step} episodes per step" if episodes_per_step else ""
        ax.set_xlabel(f"GRPO step{per_step}")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(f"training: {self.path.name}", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        if stages:
            bars = fig.add_subplot(1, 2, 2)
            rates = [summary[s]["success_rate"] for s in stages]
            low = [r - summary[s]["interval95"][0] for s, r in zip(stages, rates, strict=True)]
            high = [summary[s]["interval95"][1] - r for s, r in zip(stages, rates, strict=True)]
            bars.bar(
                range(len(stages)),
                rates,
                yerr=[low, high],
                capsize=6,
                color=["C7", "C1", "C2"][: len(stages)],
            )
            for x, stage in enumerate(stages):  # above the interval, so a 0 % bar still reads
                bars.text(
                    x, summary[stage]["interval95"][1] + 0.03, f"{rates[x]:.0%}", ha="center", fontsize=9
                )
            bars.set_xticks(range(len(stages)), [s.replace("_", " ") for s in stages])
            bars.set_ylim(0, 1.05)
            bars.set_ylabel("success rate (95 % interval)")
            bars.set_title(f"held-out tasks (n={summary[stages[0]]['n']})", fontsize=10)
        fig.tight_layout()
        return fig


def held_out_curve(summary: dict[str, Any], last_step: int) -> list[dict[str, Any]]:
    """Held-out success by GRPO step: the policy GRPO started from at step 0, the evaluations every
    `run.eval_every` steps, and the after-GRPO one at the last step. Empty without the middle ones."""
    middle = summary.get("held_out_curve", [])
    if not middle:
        return []
    start = summary.get("after_sft") or summary.get("base")
    end = summary.get("after_grpo")
    return [
        *([{"step": 0, **start}] if start else []),
        *middle,
        *([{"step": last_step, **end}] if end else []),
    ]


def process_rank() -> int:
    """This trainer process's global rank (0 outside a distributed launch)."""
    return int(os.environ.get("RANK", "0"))


def process_count() -> int:
    """How many trainer processes this launch runs: $WORLD_SIZE under `accelerate launch`/torchrun (an
    empty value counts as unset), else 1."""
    return int(os.environ.get("WORLD_SIZE") or 1)


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file and a rename: readers and a kill mid-write see the
    old content or the new, never a part."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def read_whole_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON records of a jsonl file. A last line that does not parse is the torn tail of a writer
    killed mid-line: left out, with a log line. A bad line before the last is an error."""
    if not path.is_file():
        return []
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")  # the piece after the last newline is "" for a whole file
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as err:
            if number == len(lines):
                log.warning("%s: leaving out a torn last line (%d characters)", path, len(line))
                break
            raise ValueError(f"{path}, line {number}: not JSON ({err}); the file is damaged.") from err
    return records


def moving_average(values: list[float], window: int) -> list[float]:
    """Mean of each value and the (up to) window - 1 values before it."""
    means = []
    for end in range(1, len(values) + 1):
        recent = values[max(0, end - window) : end]
        means.append(sum(recent) / len(recent))
    return means


def episode_records(
    tasks, episodes, rewards: list[float | None], step: int = -1, rank: int | None = None
) -> list[dict[str, Any]]:
    """Episodes in the trajectories.jsonl format (what the notebooks' TrajectoryBrowser reads); the
    reward of an episode whose simulated user broke a rule (`user_breaks`) is null."""
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
            "user_turns": episode.user_turns,
            "ambiguity_type": task.ambiguity_type,
            "end_reason": episode.end_reason,
            "failure": episode.failure,
            "user_breaks": episode.user_breaks,
        }
        for task, episode, reward in zip(tasks, episodes, rewards, strict=True)
    ]
