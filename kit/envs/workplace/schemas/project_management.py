"""The project management tools' schemas."""

from kit.envs.workplace.schemas.spec import DATE_FORMAT, Param, ToolSpec

PROJECT_MANAGEMENT_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "project_management_get_task_information_by_id",
        "project_management",
        False,
        "Reads one field of the task with the given ID.",
        "Read one field of a task.",
        (
            Param("task_id", "string", "The 8-digit ID of the task.", "8-digit id", True),
            Param(
                "field",
                "string",
                "The field to read: 'task_id', 'task_name', 'assigned_to_email', 'list_name', 'due_date' or "
                "'board'.",
                "task_id|task_name|assigned_to_email|list_name|due_date|board",
                True,
            ),
        ),
    ),
    ToolSpec(
        "project_management_search_tasks",
        "project_management",
        False,
        "Lists the tasks that satisfy every given filter. Give at least one filter.",
        "Search tasks (all filters must hold).",
        (
            Param("task_name", "string", "Words that must all occur in the task name.", "words"),
            Param(
                "assigned_to_email", "string", "The assignee's email address, or part of it.", "email or part"
            ),
            Param(
                "list_name",
                "string",
                "The list: 'Backlog', 'In Progress', 'In Review' or 'Completed'.",
                "Backlog|In Progress|In Review|Completed",
            ),
            Param("due_date", "string", f"The due date. {DATE_FORMAT}", "YYYY-MM-DD"),
            Param(
                "board",
                "string",
                "The board: 'Back end', 'Front end' or 'Design'.",
                "Back end|Front end|Design",
            ),
        ),
    ),
    ToolSpec(
        "project_management_create_task",
        "project_management",
        True,
        "Adds a task to a board.",
        "Create a task.",
        (
            Param("task_name", "string", "The name of the task.", required=True),
            Param("assigned_to_email", "string", "The assignee's email address.", "email address", True),
            Param(
                "list_name",
                "string",
                "The list: 'Backlog', 'In Progress', 'In Review' or 'Completed'.",
                "Backlog|In Progress|In Review|Completed",
                True,
            ),
            Param("due_date", "string", f"The due date. {DATE_FORMAT}", "YYYY-MM-DD", True),
            Param(
                "board",
                "string",
                "The board: 'Back end', 'Front end' or 'Design'.",
                "Back end|Front end|Design",
                True,
            ),
        ),
    ),
    ToolSpec(
        "project_management_delete_task",
        "project_management",
        True,
        "Removes the task with the given ID.",
        "Delete a task.",
        (Param("task_id", "string", "The 8-digit ID of the task to delete.", "8-digit id", True),),
    ),
    ToolSpec(
        "project_management_update_task",
        "project_management",
        True,
        "Changes one field of the task with the given ID.",
        "Change one field of a task.",
        (
            Param("task_id", "string", "The 8-digit ID of the task.", "8-digit id", True),
            Param(
                "field",
                "string",
                "The field to change: 'task_name', 'assigned_to_email', 'list_name', 'due_date' or 'board'.",
                "task_name|assigned_to_email|list_name|due_date|board",
                True,
            ),
            Param("new_value", "string", "The new value for that field.", required=True),
        ),
    ),
)
