"""Choosing the training tasks GRPO learns from.

GRPO's advantage is an episode's reward minus its group's mean, so a group whose rewards are all equal (a
task the policy always solves, or never does) adds nothing to the gradient. After the warm-up, a job can
sample a few episodes of each candidate task with the policy as it stands and keep the tasks whose
episodes mix outcomes (a recipe's `task_selection` section; bench/learning_signal.py picks its tasks the
same way).
"""

from __future__ import annotations

from dataclasses import dataclass

from kit.episode import Task, episode_reward, is_success
from kit.generation.base import Generator, Sampling
from kit.rollout.loop import Rollouts

# Tasks probed per rollout batch (times the samples per task).
PROBE_BATCH_TASKS = 32


@dataclass
class Selection:
    """The tasks kept and what probing saw: the mean sampled reward of every probed task, in order."""

    tasks: list[Task]
    probed_rewards: list[float]

    def report(self) -> dict:
        probed = self.probed_rewards
        return {
            "probed": len(probed),
            "kept": len(self.tasks),
            "always_solved": sum(map(is_success, probed)),
            "never_solved": sum(r <= 0.0 for r in probed),
            "kept_ids": [task.info.get("id") for task in self.tasks],
        }


def mixed_outcome_tasks(
    candidates: list[Task],
    rollouts: Rollouts,
    generator: Generator,
    sampling: Sampling,
    max_tokens: int,
    samples: int,
    want: int | None = None,
) -> Selection:
    """The candidates whose `samples` sampled episodes do not all get the same reward, in order; probing
    stops once `want` of them are found."""
    kept: list[Task] = []
    probed: list[float] = []
    for start in range(0, len(candidates), PROBE_BATCH_TASKS):
        batch = candidates[start : start + PROBE_BATCH_TASKS]
        episodes = rollouts.run([t for t in batch for _ in range(samples)], generator, sampling, max_tokens)
        for i, task in enumerate(batch):
            # Episodes whose simulated user broke a rule (reward None) say nothing about the task.
            rewards = [
                r for e in episodes[i * samples : (i + 1) * samples] if (r := episode_reward(e)) is not None
            ]
            probed.append(sum(rewards) / max(len(rewards), 1))
            if len(set(rewards)) > 1 and (want is None or len(kept) < want):
                kept.append(task)
        if want is not None and len(kept) >= want:
            break
    return Selection(kept, probed)
