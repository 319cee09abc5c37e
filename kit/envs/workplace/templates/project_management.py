"""Project management templates: create, delete, move and reassign tasks on the boards."""

from __future__ import annotations

import random
from datetime import date

from kit.envs.workplace.generate_state import task_names
from kit.envs.workplace.state import Row
from kit.envs.workplace.templates.helpers import (
    between,
    december_weekday,
    first_of,
    other,
    shifted,
    spoken_date,
)
from kit.envs.workplace.templates.registry import Plan, Skip, World, template
from kit.envs.workplace.tools import LIST_NAMES


def _named_task(rng: random.Random, world: World, plan: Plan) -> tuple[Row, str]:
    """A random task and how a request names it ("the task 'Fix login bug' due December 4"), found by
    searching its name and due date."""
    task = rng.choice(world.named_tasks)
    found = plan.read(
        "project_management_search_tasks", task_name=task["task_name"], due_date=task["due_date"]
    )
    if len(found) != 1:
        raise Skip("not a single match")
    return task, f"the task '{task['task_name']}' due {spoken_date(date.fromisoformat(task['due_date']))}"


@template("project_management", "easy", "pm_search_delete_batch")
def delete_named_task(rng: random.Random, world: World, plan: Plan) -> str:
    task, named = _named_task(rng, world, plan)
    plan.act("project_management_delete_task", task_id=task["task_id"])
    return f"Delete {named}."


@template("project_management", "easy", "pm_search_update_batch")
def update_named_task(rng: random.Random, world: World, plan: Plan) -> str:
    task, named = _named_task(rng, world, plan)
    field = rng.choice(("list_name", "due_date", "assigned_to_email"))
    if field == "list_name":
        value = other(rng, LIST_NAMES, task["list_name"])
        request = f"Move {named} to '{value}'."
    elif field == "due_date":
        value = f"{december_weekday(rng):%Y-%m-%d}"
        request = f"Change the due date of {named} to {value}."
    else:
        value = other(rng, [p[1] for p in world.builders], task["assigned_to_email"])
        request = f"Reassign {named} to {value}."
    plan.act("project_management_update_task", task_id=task["task_id"], field=field, new_value=value)
    return request


@template("project_management", "easy", "single_step")
def create_task_explicit(rng: random.Random, world: World, plan: Plan) -> str:
    name, who = rng.choice(task_names()), rng.choice(world.builders)
    board, listed, due = who[2], rng.choice(LIST_NAMES), f"{december_weekday(rng):%Y-%m-%d}"
    plan.act(
        "project_management_create_task",
        task_name=name,
        assigned_to_email=who[1],
        list_name=listed,
        due_date=due,
        board=board,
    )
    return f"Create a task '{name}' assigned to {who[1]} in '{listed}' on the '{board}' board, due {due}."


@template("project_management", "medium", "pm_lookup_create_task")
def create_task_by_first_name(rng: random.Random, world: World, plan: Plan) -> str:
    name, (first, _, board) = rng.choice(task_names()), rng.choice(world.builders)
    listed, day = rng.choice(LIST_NAMES), december_weekday(rng)
    plan.act(
        "project_management_create_task",
        task_name=name,
        assigned_to_email=plan.lookup(first),
        list_name=listed,
        due_date=f"{day:%Y-%m-%d}",
        board=board,
    )
    return f"Create a '{board}' task '{name}' for {first.capitalize()} in '{listed}', due {spoken_date(day)}."


@template("project_management", "medium", "pm_search_update_batch")
def move_named_task(rng: random.Random, world: World, plan: Plan) -> str:
    task = rng.choice(world.tasks)
    first = first_of(task["assigned_to_email"])
    found = plan.read(
        "project_management_search_tasks", task_name=task["task_name"], assigned_to_email=plan.lookup(first)
    )
    if len(found) != 1:
        raise Skip("not a single match")
    target = other(rng, LIST_NAMES, task["list_name"])
    plan.act("project_management_update_task", task_id=task["task_id"], field="list_name", new_value=target)
    return f"Move {first}'s task '{task['task_name']}' to '{target}'."


@template("project_management", "medium", "pm_get_info_update")
def push_due_date(rng: random.Random, world: World, plan: Plan) -> str:
    (task, named), days = _named_task(rng, world, plan), rng.choice((1, 2, 3, 7, 14))
    due = plan.read(
        "project_management_get_task_information_by_id", task_id=task["task_id"], field="due_date"
    )
    plan.act(
        "project_management_update_task",
        task_id=task["task_id"],
        field="due_date",
        new_value=shifted(due["due_date"], days),
    )
    return f"Push {named} back by {days} day{'s' if days > 1 else ''}."


@template("project_management", "hard", "pm_reassign_tasks")
def reassign_tasks(rng: random.Random, world: World, plan: Plan) -> str:
    task = rng.choice(world.tasks)
    giver = first_of(task["assigned_to_email"])
    taker = other(rng, [p[0] for p in world.builders], giver.lower()).capitalize()
    giver_address, taker_address = plan.lookup(giver), plan.lookup(taker)
    found = plan.read(
        "project_management_search_tasks",
        assigned_to_email=giver_address,
        list_name=task["list_name"],
        board=task["board"],
    )
    for match in between(found, 1, 5):
        plan.act(
            "project_management_update_task",
            task_id=match["task_id"],
            field="assigned_to_email",
            new_value=taker_address,
        )
    return f"Reassign all of {giver}'s '{task['list_name']}' tasks on the '{task['board']}' board to {taker}."


@template("project_management", "hard", "pm_search_update_batch")
def move_list_of_person(rng: random.Random, world: World, plan: Plan) -> str:
    task = rng.choice(world.tasks)
    first, source = first_of(task["assigned_to_email"]), task["list_name"]
    target = other(rng, LIST_NAMES, source)
    found = plan.read(
        "project_management_search_tasks", assigned_to_email=plan.lookup(first), list_name=source
    )
    for match in between(found, 1, 5):
        plan.act(
            "project_management_update_task", task_id=match["task_id"], field="list_name", new_value=target
        )
    return f"Move all of {first}'s tasks in '{source}' to '{target}'."


@template("project_management", "hard", "pm_search_update_batch")
def start_backlog_or_create(rng: random.Random, world: World, plan: Plan) -> str:
    first, _, board = rng.choice(world.builders)
    day = rng.choice(world.tasks)["due_date"]
    who = plan.lookup(first)
    found = plan.read(
        "project_management_search_tasks", assigned_to_email=who, list_name="Backlog", due_date=day
    )
    name = rng.choice(task_names())
    if found:
        for match in between(found, 1, 5):
            plan.act(
                "project_management_update_task",
                task_id=match["task_id"],
                field="list_name",
                new_value="In Progress",
            )
    else:
        plan.act(
            "project_management_create_task",
            task_name=name,
            assigned_to_email=who,
            list_name="Backlog",
            due_date=day,
            board=board,
        )
    first = first.capitalize()
    return (
        f"If {first} has any Backlog tasks due on {day}, move them to 'In Progress'; otherwise create a "
        f"'{board}' task '{name}' for {first} in 'Backlog' due that day."
    )


@template("project_management", "hard", "pm_search_delete_batch")
def delete_completed_of(rng: random.Random, world: World, plan: Plan) -> str:
    first, _, board = rng.choice(world.builders)
    found = plan.read(
        "project_management_search_tasks",
        assigned_to_email=plan.lookup(first),
        list_name="Completed",
        board=board,
    )
    for match in between(found, 1, 5):
        plan.act("project_management_delete_task", task_id=match["task_id"])
    return f"Delete all of {first.capitalize()}'s completed tasks on the '{board}' board."


@template("project_management", "hard", "pm_search_update_batch")
def finish_reviewed(rng: random.Random, world: World, plan: Plan) -> str:
    first, _, board = rng.choice(world.builders)
    found = plan.read(
        "project_management_search_tasks",
        assigned_to_email=plan.lookup(first),
        list_name="In Review",
        board=board,
    )
    for match in between(found, 0, 5):
        plan.act(
            "project_management_update_task",
            task_id=match["task_id"],
            field="list_name",
            new_value="Completed",
        )
    return (
        f"If {first.capitalize()} has any tasks in 'In Review' on the '{board}' board, move them to "
        f"'Completed'."
    )
