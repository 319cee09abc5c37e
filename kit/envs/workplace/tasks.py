"""Workplace task datasets in NeMo-Gym's row format, and the prompt messages built from a row.

Rows look like NeMo-Gym's workplace_assistant rows (``responses_create_params`` with the system and user
messages and all 27 flat tool schemas, ``ground_truth`` calls with JSON-string arguments, ``category``,
``environment_name``) plus two kit fields: ``tier`` and ``toolkits`` (the toolkits the request needs).
A share of the rows can be ambiguous dialogue variants (``dialogue_variants``).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kit.envs.rows import RowsError, input_messages
from kit.envs.workplace.dialogue_variants import with_dialogue_variants
from kit.envs.workplace.generate_state import default_state
from kit.envs.workplace.schemas import TOOLKITS, chat_schemas, flat_schemas, toolkit_of
from kit.envs.workplace.templates import CATEGORIES, TEMPLATES, TIERS, GeneratedTask, Skip, World, make_task

ENVIRONMENT_NAME = "workplace_assistant"
CATEGORY_PREFIX = "workplace_assistant_"
SYSTEM_PROMPT = (
    "Today is Thursday, 2023-11-30 and the time is 23:59:00; use this date and time to interpret the "
    "request. Meetings must start at 9am or later and end by 6pm."
)
TIER_SHARES = {"easy": 0.5, "medium": 0.3, "hard": 0.2}
"""Share of each tier in a split; the easy tier dominates so small models see many single calls."""
DEFAULT_TRAIN, DEFAULT_VALIDATION = 1000, 300
_ATTEMPTS_PER_TASK = 200


def cells() -> list[tuple[str, str]]:
    """Every (category, tier) that has templates, in a fixed order."""
    return [(c, t) for c in CATEGORIES for t in TIERS if (c, t) in TEMPLATES]


def quotas(total: int) -> dict[tuple[str, str], int]:
    """How many tasks of each cell a split of ``total`` rows holds: tiers by ``TIER_SHARES``, split evenly
    over the categories of the tier, remainders to the first cells."""
    per_tier = {tier: round(total * share) for tier, share in TIER_SHARES.items()}
    per_tier["easy"] += total - sum(per_tier.values())
    counts: dict[tuple[str, str], int] = {}
    for tier, count in per_tier.items():
        tier_cells = [cell for cell in cells() if cell[1] == tier]
        for i, cell in enumerate(tier_cells):
            counts[cell] = count // len(tier_cells) + (i < count % len(tier_cells))
    return counts


def generate_tasks(
    counts: dict[tuple[str, str], int], seed: int
) -> dict[tuple[str, str], list[GeneratedTask]]:
    """``counts[cell]`` tasks per cell, each with a request text no other task has; deterministic in
    ``seed``. Raises RuntimeError when a cell cannot produce that many distinct tasks."""
    rng = random.Random(seed)
    world = World(default_state())
    seen: set[str] = set()
    tasks: dict[tuple[str, str], list[GeneratedTask]] = {}
    for cell in cells():
        made: list[GeneratedTask] = []
        for _ in range(_ATTEMPTS_PER_TASK * counts.get(cell, 0)):
            if len(made) == counts.get(cell, 0):
                break
            try:
                task = make_task(*cell, rng, world)
            except Skip:
                continue
            if task.request not in seen:
                seen.add(task.request)
                made.append(task)
        if len(made) < counts.get(cell, 0):
            raise RuntimeError(f"only {len(made)} distinct {cell} tasks, {counts[cell]} wanted")
        tasks[cell] = made
    return tasks


def task_row(task: GeneratedTask, index: int) -> dict[str, Any]:
    """A task as a NeMo-Gym row (its ground truth the state-changing calls, as NeMo-Gym's verifier expects)
    plus the kit's ``tier``, ``toolkits``, ``family`` and ``solution`` (the solver's path: reads, then
    writes)."""
    return {
        "id": index,
        "responses_create_params": {
            "input": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": task.request},
            ],
            "tools": flat_schemas(),
            "parallel_tool_calls": False,
            "temperature": 1.0,
        },
        "ground_truth": [dict(call) for call in task.ground_truth],
        "category": CATEGORY_PREFIX + task.category,
        "environment_name": ENVIRONMENT_NAME,
        "tier": task.tier,
        "toolkits": list(task.toolkits),
        "family": task.family,
        "solution": [dict(call) for call in task.calls],
    }


def make_splits(
    seed: int = 0,
    train: int = DEFAULT_TRAIN,
    validation: int = DEFAULT_VALIDATION,
    dialogue_share: float = 0.0,
) -> dict[str, list[dict[str, Any]]]:
    """Train and validation rows with every cell in both and no request text shared between them.

    ``dialogue_share`` of each split's rows (picked from the seed) are replaced by their ambiguous
    dialogue variant (see ``dialogue_variants.ambiguous_row``) where one applies.
    """
    if not 0.0 <= dialogue_share <= 1.0:
        raise ValueError(f"dialogue_share must be between 0 and 1, got {dialogue_share}")
    train_counts, validation_counts = quotas(train), quotas(validation)
    wanted = {cell: train_counts[cell] + validation_counts[cell] for cell in cells()}
    rng = random.Random(seed)
    splits: dict[str, list[GeneratedTask]] = {"train": [], "validation": []}
    for cell, tasks in generate_tasks(wanted, seed).items():
        splits["validation"].extend(tasks[: validation_counts[cell]])
        splits["train"].extend(tasks[validation_counts[cell] :])
    rows = {}
    for name, tasks in splits.items():
        rng.shuffle(tasks)
        rows[name] = [task_row(task, i) for i, task in enumerate(tasks)]
    if dialogue_share:
        # A generator of its own, so that the plain rows stay those of dialogue_share=0.
        dialogue_rng = random.Random(f"dialogue-{seed}")
        rows = {
            name: with_dialogue_variants(split, dialogue_share, dialogue_rng) for name, split in rows.items()
        }
    return rows


def write_rows(path: str | Path, rows: Iterable[dict[str, Any]]) -> Path:
    """Write rows as JSON lines (UTF-8, one row per line, keys in row order)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", encoding="utf-8", newline="\n") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return target


def write_splits(
    out_dir: str | Path,
    seed: int = 0,
    train: int = DEFAULT_TRAIN,
    validation: int = DEFAULT_VALIDATION,
    dialogue_share: float = 0.0,
) -> dict[str, Path]:
    """Generate the splits and write ``train.jsonl`` and ``validation.jsonl`` under ``out_dir``; the same
    arguments always produce byte-identical files."""
    return {
        name: write_rows(Path(out_dir) / f"{name}.jsonl", rows)
        for name, rows in make_splits(seed, train, validation, dialogue_share).items()
    }


def predicted_calls(row: dict[str, Any]) -> list[Any]:
    """The model's calls in a row: its ``predicted`` list (same form as ``ground_truth``), else the
    ``function_call`` items of a NeMo-Gym rollout's ``response.output``. Raises RowsError when it has
    neither."""
    if "predicted" in row:
        predicted = row["predicted"] or []
        if not isinstance(predicted, list):
            raise RowsError("'predicted' must be a list of calls")
        return predicted
    response = row.get("response")
    output = response.get("output") if isinstance(response, dict) else None
    if not isinstance(output, list):
        raise RowsError("the row has neither a 'predicted' list nor a 'response.output' list")
    return [item for item in output if isinstance(item, dict) and item.get("type") == "function_call"]


def row_toolkits(row: dict[str, Any]) -> list[str]:
    """The toolkits a row's request needs: its ``toolkits`` field, or for rows without one (e.g. NeMo-Gym's)
    the category's toolkit, the ground truth's toolkits and the company directory."""
    if row.get("toolkits"):
        return list(row["toolkits"])
    needed = {"company_directory", str(row.get("category", "")).removeprefix(CATEGORY_PREFIX)}
    needed.update(toolkit_of(str(call.get("name"))) for call in row.get("ground_truth") or [])
    return [t for t in TOOLKITS if t in needed]


def build_messages(
    row: dict[str, Any], tools_scope: str = "task", compact: bool = True
) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    """Chat messages (system + user) and Chat-Completions tool schemas for a row.

    ``tools_scope="task"`` offers only the toolkits the task needs (see ``row_toolkits``), ``"all"`` all 27
    tools; ``compact`` uses the short descriptions.
    """
    if tools_scope not in ("task", "all"):
        raise ValueError(f"tools_scope must be 'task' or 'all', got {tools_scope!r}")
    messages = input_messages(row["responses_create_params"])
    toolkits = row_toolkits(row) if tools_scope == "task" else None
    return messages, chat_schemas(toolkits, compact=compact)
