"""The bridge between an environment package and the rollout: tasks, fresh sandboxes, rewards.

The trainer, the evaluator and the notebooks see an environment only through `TaskEnvironment`;
`make_environment(cfg.env)` picks the implementation named by `env.name`: the kit's in-process workplace
assistant, or a NeMo-Gym resources server (kit.envs.nemo_gym).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from kit.config.tree import ConfigError, EnvConfig
from kit.envs.rows import dialogue_fields, load_rows, selected
from kit.episode import Episode, Sandbox, Task
from kit.paths import resolve_path

log = logging.getLogger(__name__)


class TaskEnvironment(Protocol):
    """What the kit needs from an environment."""

    shaping: dict[str, Callable[[Task, Episode], float]]

    def load_tasks(self, source: str, limit: int | None = None, skip_invalid: bool = False) -> list[Task]:
        """Tasks from `source`; each task whose ground truth does not apply to the environment's data
        carries the reason in `task.info["invalid"]`, or is left out with `skip_invalid`."""
        ...

    def new_sandbox(self, task: Task) -> Sandbox: ...

    def outcome(self, task: Task, tool_calls: list[dict[str, Any]]) -> float:
        """The reward of `tool_calls` on a fresh sandbox (what the scripted user and the free-task check
        ask, mid-episode or before any)."""
        ...

    def score(self, task: Task, episode: Episode, sandbox: Sandbox) -> float:
        """The finished episode's reward, asked while its sandbox is alive (as NeMo-Gym's agents call
        verify at the end of an episode); raises EpisodeFault when it cannot be given for this episode."""
        ...

    def close(self) -> None:
        """Stop what the environment started (servers)."""
        ...


class WorkplaceEnvironment:
    """The workplace assistant: five databases, 27 tools, state-diff outcome reward."""

    def __init__(self, cfg: EnvConfig) -> None:
        from kit.envs.workplace.reward import SHAPING_REWARDS
        from kit.envs.workplace.sandbox import WorkplaceSandbox

        self.cfg = cfg
        self.base = (
            WorkplaceSandbox.from_csv_dir(resolve_path(cfg.databases), cfg.tool_messages)
            if cfg.databases
            else WorkplaceSandbox(tool_messages=cfg.tool_messages)
        )
        self.shaping = {
            name: (lambda task, episode, fn=fn: fn(episode.tool_calls, task.ground_truth))
            for name, fn in SHAPING_REWARDS.items()
        }

    def load_tasks(self, source: str, limit: int | None = None, skip_invalid: bool = False) -> list[Task]:
        """NeMo-Gym rows (a local jsonl or a hub dataset id) filtered by the config's tiers and categories.

        A row whose ground truth does not apply to this environment's databases (NeMo-Gym's own rows on
        the kit's generated data, say) is flagged in `task.info["invalid"]`; with `skip_invalid` it is
        left out, and the count is logged once.
        """
        from kit.envs.workplace.dialogue_variants import with_dialogue_variants
        from kit.envs.workplace.reward import ground_truth_problem
        from kit.envs.workplace.task_sets import ensure_task_set
        from kit.envs.workplace.tasks import build_messages

        tasks, skipped = [], []
        ensure_task_set(source)
        rows = load_rows(resolve_path(source))
        if self.cfg.dialogue_share:
            rows = with_dialogue_variants(rows, self.cfg.dialogue_share, random.Random(f"dialogue-{source}"))
        for row in rows:
            if not selected(row, self.cfg.tiers, self.cfg.categories):
                continue
            messages, tools = build_messages(row, self.cfg.tools_in_prompt, self.cfg.compact_tools)
            truth = row.get("ground_truth", [])
            problem = ground_truth_problem(truth, self.base)
            if problem and skip_invalid:
                skipped.append(problem)
                continue
            info = {
                "id": row.get("id"),
                "category": row.get("category"),
                "tier": row.get("tier"),
                "invalid": problem,
            }
            user = dialogue_fields(row)
            solution = row.get("solution") or truth
            tasks.append(
                Task(
                    messages=messages,
                    tools=tools,
                    ground_truth=truth,
                    info=info,
                    user=user,
                    solution=solution,
                )
            )
            if limit is not None and len(tasks) >= limit:
                break
        if skipped:
            log.warning(
                "left out %d task(s) of %s whose ground truth does not apply to the databases (first: %s)",
                len(skipped), source, skipped[0],
            )  # fmt: skip
        if not tasks:
            raise ConfigError(
                f"No task in '{source}' matches env.tiers={self.cfg.tiers} and "
                f"env.categories={self.cfg.categories}."
            )
        return tasks

    def new_sandbox(self, task: Task) -> Sandbox:
        return self.base.copy()

    def outcome(self, task: Task, tool_calls: list[dict[str, Any]]) -> float:
        from kit.envs.workplace.reward import outcome_reward

        return outcome_reward(tool_calls, task.ground_truth, base=self.base)

    def score(self, task: Task, episode: Episode, sandbox: Sandbox) -> float:
        """The state-diff reward: the episode's calls and the ground truth replayed on fresh sandboxes."""
        return self.outcome(task, episode.tool_calls)

    def close(self) -> None:
        """Nothing runs outside this process."""


def make_environment(cfg: EnvConfig, work_dir: str | Path | None = None) -> TaskEnvironment:
    """The environment named by `env.name`; `work_dir` holds what it starts (NeMo-Gym's log and config;
    default: a new temporary folder)."""
    if cfg.name == "workplace":
        return WorkplaceEnvironment(cfg)
    if cfg.name == "nemo_gym":
        from kit.envs.nemo_gym.environment import NeMoGymEnvironment

        return NeMoGymEnvironment(cfg, work_dir)
    raise ConfigError(f"env.name '{cfg.name}' is not a known environment; valid: workplace, nemo_gym.")
