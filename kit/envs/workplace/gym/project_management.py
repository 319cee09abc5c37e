"""NeMo-Gym's project management tools. An assignee must already hold a task on the boards."""

from __future__ import annotations

import re
from typing import Any

from kit.envs.workplace.gym.common import Refusal, holds, matching, next_id
from kit.envs.workplace.gym.frame import pandas, quiet, selected
from kit.envs.workplace.gym.state import GymState

LIST_NAMES = ("Backlog", "In Progress", "In Review", "Completed")
BOARDS = ("Back end", "Front end", "Design")
_BAD_LIST = "List not valid. Please choose from: 'Backlog', 'In Progress', 'In Review', 'Completed'."
_BAD_BOARD = "Board not valid. Please choose from: 'Back end', 'Front end', 'Design'."
_BAD_ASSIGNEE = "Assignee email not valid. Please choose from the list of team members."
# An address as the search accepts it, matched from the start; `$` also matches before a final newline.
_ADDRESS = re.compile(r"[A-Za-z0-9_.%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}$")


def _team(state: GymState, email: str) -> bool:
    return holds(state.tasks, "assigned_to_email", email, lowered=True)


def project_management_get_task_information_by_id(
    state: GymState, task_id: Any = None, field: Any = None
) -> Any:
    """``{field: value}`` of one task."""
    if not task_id:
        raise Refusal("Task ID not provided.")
    if not field:
        raise Refusal("Field not provided.")
    found = state.tasks.keep(matching(state.tasks, "task_id", task_id)).records()
    if not found:
        raise Refusal("Task not found.")
    if field not in found[0]:
        raise Refusal("Field not found.")
    return {field: found[0][field]}


def project_management_search_tasks(
    state: GymState, task_name: Any = None, assigned_to_email: Any = None, list_name: Any = None,
    due_date: Any = None, board: Any = None,
) -> Any:  # fmt: skip
    """Tasks matching every given filter: the assignee exactly, the others as regular expressions."""
    if not any([task_name, assigned_to_email, list_name, due_date, board]):
        raise Refusal("No search parameters provided.")
    if assigned_to_email and not _ADDRESS.match(assigned_to_email):
        raise Refusal("Invalid email format for assigned_to_email.")
    tasks = state.tasks
    with quiet():
        if task_name:
            tasks = tasks.keep(selected(tasks.series("task_name").str.contains(task_name, case=False)))
        if assigned_to_email:
            owner = tasks.series("assigned_to_email").str.lower() == assigned_to_email.lower()
            tasks = tasks.keep(selected(owner))
        for column, pattern in (("list_name", list_name), ("due_date", due_date), ("board", board)):
            if pattern:
                tasks = tasks.keep(selected(tasks.series(column).str.contains(pattern, case=False)))
    return tasks.records()


def project_management_create_task(
    state: GymState, task_name: Any = None, assigned_to_email: Any = None, list_name: Any = None,
    due_date: Any = None, board: Any = None,
) -> str:  # fmt: skip
    """Add a task; its id is returned."""
    if not all([task_name, assigned_to_email, list_name, due_date, board]):
        raise Refusal("Missing task details.")
    assigned_to_email = assigned_to_email.lower()
    if not _team(state, assigned_to_email):
        raise Refusal(_BAD_ASSIGNEE)
    if list_name not in LIST_NAMES:
        raise Refusal(_BAD_LIST)
    if board not in BOARDS:
        raise Refusal(_BAD_BOARD)
    task_id = next_id(state.tasks)
    row = {
        "task_id": task_id,
        "task_name": task_name,
        "assigned_to_email": assigned_to_email,
        "list_name": list_name,
        "due_date": due_date,
        "board": board,
    }
    state.tasks = state.tasks.appended(row, relabel=True)
    return task_id


def project_management_delete_task(state: GymState, task_id: Any = None) -> str:
    """Delete a task."""
    if not task_id:
        raise Refusal("Task ID not provided.")
    if not holds(state.tasks, "task_id", task_id):
        raise Refusal("Task not found.")
    state.tasks = state.tasks.keep(selected(state.tasks.series("task_id") != task_id))
    return "Task deleted successfully."


def project_management_update_task(
    state: GymState, task_id: Any = None, field: Any = None, new_value: Any = None
) -> str:
    """Change one field of a task."""
    if not task_id or not field or not new_value:
        raise Refusal("Task ID, field, or new value not provided.")
    if field == "assigned_to_email":
        new_value = new_value.lower()
    if field == "board" and new_value not in BOARDS:
        raise Refusal(_BAD_BOARD)
    if field == "list_name" and new_value not in LIST_NAMES:
        raise Refusal(_BAD_LIST)
    if field == "assigned_to_email" and not _team(state, new_value):
        raise Refusal(_BAD_ASSIGNEE)
    if not holds(state.tasks, "task_id", task_id):
        raise Refusal("Task not found.")
    if field not in pandas().Index(state.tasks.columns):
        raise Refusal("Field not valid.")
    state.tasks = state.tasks.assigned(matching(state.tasks, "task_id", task_id), field, new_value)
    return "Task updated successfully."
