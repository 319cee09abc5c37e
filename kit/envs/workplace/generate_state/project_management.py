"""The project management table: 300 tasks on three boards, named from per-board patterns."""

from __future__ import annotations

import random
from datetime import date

from kit.envs.workplace.generate_state.company_directory import EMPLOYEES, address
from kit.envs.workplace.generate_state.draws import random_day, shuffled_ids
from kit.envs.workplace.tools import LIST_NAMES

_TASK_PATTERNS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "Front end": (
        (
            "Add animation to {}",
            "Fix alignment issue in {}",
            "Implement responsive layout for {}",
            "Improve accessibility of {}",
        ),
        (
            "checkout page",
            "navigation bar",
            "settings page",
            "search results",
            "dashboard",
            "login form",
            "image carousel",
            "pricing table",
        ),
    ),
    "Back end": (
        (
            "Add rate limiting to {}",
            "Write unit tests for {}",
            "Optimize queries for {}",
            "Add logging to {}",
        ),
        (
            "payment service",
            "invoice export",
            "user sessions",
            "notification worker",
            "report generator",
            "audit trail",
            "file uploads",
            "search index",
        ),
    ),
    "Design": (
        (
            "Design icons for {}",
            "Create wireframe for {}",
            "Design onboarding flow for {}",
            "Prepare style guide for {}",
        ),
        ("mobile app", "partner portal", "help center", "billing page", "admin console", "newsletter"),
    ),
}
_LIBRARIES = ("Django", "React", "Postgres", "Redis", "Node", "Kafka")


def task_names() -> list[str]:
    """Every task name the generator can use, by board then pattern."""
    names = [
        pattern.format(thing)
        for patterns, things in _TASK_PATTERNS.values()
        for pattern in patterns
        for thing in things
    ]
    return names + [f"Update {lib} to latest version" for lib in _LIBRARIES]


def _board_of(task_name: str) -> str:
    if task_name.startswith("Update "):
        return "Back end"
    return next(
        board
        for board, (patterns, things) in _TASK_PATTERNS.items()
        for pattern in patterns
        for thing in things
        if pattern.format(thing) == task_name
    )


def task_rows(rng: random.Random, count: int = 300) -> list[dict[str, str]]:
    """The tasks table: mostly assigned within the task's board, sorted by due date."""
    names = task_names()
    builders = [(f, la, team) for f, la, team in EMPLOYEES if team != "Sales"]
    rows = []
    for _ in range(count):
        name = rng.choice(names)
        board = _board_of(name)
        first, last, _team = rng.choice(
            [b for b in builders if b[2] == board] if rng.random() < 0.8 else builders
        )
        rows.append(
            {
                "task_name": name,
                "assigned_to_email": address(first, last),
                "list_name": rng.choices(LIST_NAMES, weights=(3, 3, 2, 4))[0],
                "due_date": f"{random_day(date(2023, 11, 20), date(2023, 12, 15), rng):%Y-%m-%d}",
                "board": board,
            }
        )
    rows.sort(key=lambda r: r["due_date"])
    for row, task_id in zip(rows, shuffled_ids(count, rng), strict=True):
        row["task_id"] = task_id
    return rows
