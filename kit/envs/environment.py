"""The bridge between an environment package and the rollout: tasks, fresh sandboxes, rewards.

The trainer, the evaluator and the notebooks see an environment only through `TaskEnvironment`;
`make_environment(cfg.env)` picks the implementation named by `env.name`.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from typing import Any, Protocol

from kit.config.tree import ConfigError, EnvConfig
from kit.paths import resolve_path
from kit.rollout.episode import Episode, Sandbox, Task

log = logging.getLogger(__name__)

DIALOGUE_FIELDS = ("user_model_system_prompt", "verifier_metadata")
"""A row's fields for its simulated user (NeMo-Gym's multi-turn rows); a row with a user prompt is a
dialogue task."""


class TaskEnvironment(Protocol):
    """What the kit needs from an environment."""

    shaping: dict[str, Callable[[Task, Episode], float]]

    def load_tasks(self, source: str, limit: int | None = None, skip_invalid: bool = False) -> list[Task]:
        """Tasks from `source`; each task whose ground truth does not apply to the environment's data
        carries the reason in `task.info["invalid"]`, or is left out with `skip_invalid`."""
        ...

    def new_sandbox(self, task: Task) -> Sandbox: ...

    def outcome(self, task: Task, tool_calls: list[dict[str, Any]]) -> float: ...


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
        from kit.envs.workplace.tasks import build_messages, load_rows

        tasks, skipped = [], []
        ensure_task_set(source)
        rows = load_rows(resolve_path(source))
        if self.cfg.dialogue_share:
            rows = with_dialogue_variants(rows, self.cfg.dialogue_share, random.Random(f"dialogue-{source}"))
        for row in rows:
            tier, category = row.get("tier"), row.get("category")
            if tier is not None and self.cfg.tiers and tier not in self.cfg.tiers:
                continue
            if self.cfg.categories and category not in self.cfg.categories:
                continue
            messages, tools = build_messages(row, self.cfg.tools_in_prompt, self.cfg.compact_tools)
            truth = row.get("ground_truth", [])
            problem = ground_truth_problem(truth, self.base)
            if problem and skip_invalid:
                skipped.append(problem)
                continue
            info = {"id": row.get("id"), "category": category, "tier": tier, "invalid": problem}
            user = {key: row[key] for key in DIALOGUE_FIELDS if key in row}
            tasks.append(Task(messages=messages, tools=tools, ground_truth=truth, info=info, user=user))
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


def episode_reward(env: TaskEnvironment, task: Task, episode: Episode) -> float:
    """The episode's outcome reward, or 0 when it failed (its simulated user broke down)."""
    return 0.0 if episode.failure else env.outcome(task, episode.tool_calls)


def make_environment(cfg: EnvConfig) -> TaskEnvironment:
    """The environment named by `env.name`."""
    if cfg.name == "workplace":
        return WorkplaceEnvironment(cfg)
    raise ConfigError(f"env.name '{cfg.name}' is not a known environment; valid: workplace.")
