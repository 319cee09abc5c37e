"""The project management tools: read, search, create, delete and update tasks on the boards."""

from __future__ import annotations

from kit.envs.workplace.state import TASK_COLUMNS, WorkplaceState
from kit.envs.workplace.tools.checks import (
    ToolError,
    check_choice,
    check_colleague,
    check_date,
    check_exact,
    check_field,
    check_text,
    find_row,
    haystack,
    query_words,
    to_json,
)

LIST_NAMES = ("Backlog", "In Progress", "In Review", "Completed")
BOARDS = ("Back end", "Front end", "Design")


def project_management_get_task_information_by_id(state: WorkplaceState, task_id: str, field: str) -> str:
    """One field of a task, as ``{field: value}``."""
    row = find_row(state.tasks, task_id, "task")
    return to_json({field: row[check_field(field, TASK_COLUMNS)]})


def project_management_search_tasks(
    state: WorkplaceState,
    task_name: str | None = None,
    assigned_to_email: str | None = None,
    list_name: str | None = None,
    due_date: str | None = None,
    board: str | None = None,
) -> str:
    """Every task that satisfies all the given filters; at least one filter is required."""
    if not any((task_name, assigned_to_email, list_name, due_date, board)):
        raise ToolError(
            "give at least one of 'task_name', 'assigned_to_email', 'list_name', 'due_date', 'board'."
        )
    words = query_words(task_name or "")
    email = (assigned_to_email or "").strip().lower()
    list_name = check_choice(list_name, LIST_NAMES, "list_name") if list_name else None
    board = check_choice(board, BOARDS, "board") if board else None
    due_date = check_date(due_date, "due_date") if due_date else None
    found = [
        dict(row)
        for row in state.tasks.rows()
        if email in row["assigned_to_email"].lower()
        and list_name in (None, row["list_name"])
        and board in (None, row["board"])
        and due_date in (None, row["due_date"])
        and all(w in haystack(row["task_name"]) for w in words)
    ]
    return to_json(found)


def _task_value(state: WorkplaceState, field: str, value: str, arg: str) -> str:
    if field == "task_name":
        return check_text(value, arg)
    if field == "assigned_to_email":
        return check_colleague(state, value, arg)
    if field == "list_name":
        return check_exact(value, LIST_NAMES, arg)
    if field == "board":
        return check_exact(value, BOARDS, arg)
    return check_date(value, arg)


def project_management_create_task(
    state: WorkplaceState, task_name: str, assigned_to_email: str, list_name: str, due_date: str, board: str
) -> str:
    """Add a task assigned to a colleague."""
    given = {
        "task_name": task_name,
        "assigned_to_email": assigned_to_email,
        "list_name": list_name,
        "due_date": due_date,
        "board": board,
    }
    row = {field: _task_value(state, field, value, field) for field, value in given.items()}
    task_id = state.tasks.next_id()
    state.tasks.insert({"task_id": task_id, **row})
    return f"Task created (task_id {task_id})."


def project_management_delete_task(state: WorkplaceState, task_id: str) -> str:
    """Delete a task."""
    find_row(state.tasks, task_id, "task")
    state.tasks.delete(task_id)
    return f"Task {task_id} deleted."


def project_management_update_task(state: WorkplaceState, task_id: str, field: str, new_value: str) -> str:
    """Change one field of a task."""
    row = dict(find_row(state.tasks, task_id, "task"))
    field = check_field(field, TASK_COLUMNS[1:])
    row[field] = _task_value(state, field, new_value, "new_value")
    state.tasks.replace(row)
    return f"Task {task_id} updated: {field} = {row[field]!r}."
