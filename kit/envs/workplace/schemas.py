"""The 27 workplace tool schemas, in NeMo-Gym (Responses) and Chat-Completions shapes.

Names, argument names, required lists and JSON types follow NeMo-Gym's workplace_assistant so its tasks
run unchanged; descriptions are the kit's own. Every tool exists in a full and a compact wording: the
compact one keeps prompts short for small models.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

TOOLKITS: tuple[str, ...] = (
    "company_directory",
    "email",
    "calendar",
    "analytics",
    "project_management",
    "customer_relationship_manager",
)

_ISO_DATE = "Format: YYYY-MM-DD"
_ISO_TIME = "Format: YYYY-MM-DD HH:MM:SS"


@dataclass(frozen=True)
class Param:
    """One tool argument: JSON type, full and compact description, whether it is required."""

    name: str
    type: str
    description: str
    compact: str = ""
    required: bool = False


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its toolkit, whether it can change state, descriptions and arguments."""

    name: str
    toolkit: str
    changes_state: bool
    description: str
    compact: str
    params: tuple[Param, ...]

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if p.required)


def _p(name: str, type_: str, description: str, compact: str = "", required: bool = False) -> Param:
    return Param(name, type_, description, compact, required)


def _paging(noun: str) -> tuple[Param, Param]:
    return (
        _p("page", "integer", "Which page of results to return, starting at 1 (default 1).", "default 1"),
        _p("page_size", "integer", f"How many {noun} each page holds (default 5).", "default 5"),
    )


_RANGE = (
    _p("time_min", "string", f"First day of the range (inclusive). {_ISO_DATE}", "YYYY-MM-DD"),
    _p("time_max", "string", f"Last day of the range (inclusive). {_ISO_DATE}", "YYYY-MM-DD"),
)

SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "company_directory_find_email_address",
        "company_directory",
        False,
        "Looks up colleagues in the company directory: returns every email address that contains the "
        "given name or name fragment (case-insensitive).",
        "Find colleagues' email addresses by (part of) a name.",
        (
            _p(
                "name",
                "string",
                "A first name, last name or fragment of one to look for.",
                "name or fragment",
            ),
        ),
    ),
    ToolSpec(
        "email_get_email_information_by_id",
        "email",
        False,
        "Reads one field of the email with the given ID.",
        "Read one field of an email.",
        (
            _p("email_id", "string", "The 8-digit ID of the email.", "8-digit id", True),
            _p(
                "field",
                "string",
                "The field to read: 'email_id', 'inbox/outbox', 'sender/recipient', 'subject', "
                "'sent_datetime' or 'body'.",
                "email_id|inbox/outbox|sender/recipient|subject|sent_datetime|body",
                True,
            ),
        ),
    ),
    ToolSpec(
        "email_search_emails",
        "email",
        False,
        "Searches the mailbox. An email matches when every word of the query occurs somewhere in its "
        "subject, body or sender/recipient. Results come newest first, one page at a time.",
        "Search emails (all query words must occur in subject, body or sender); newest first.",
        (
            _p("query", "string", "Words to look for in the subject, body or sender/recipient.", "words"),
            _p("date_min", "string", f"Earliest sent date to include. {_ISO_DATE}", "YYYY-MM-DD"),
            _p("date_max", "string", f"Latest sent date to include. {_ISO_DATE}", "YYYY-MM-DD"),
            *_paging("emails"),
        ),
    ),
    ToolSpec(
        "email_send_email",
        "email",
        True,
        "Sends a new email to one recipient; it is stored in the outbox.",
        "Send an email.",
        (
            _p("recipient", "string", "The recipient's email address.", "email address", True),
            _p("subject", "string", "The subject line.", required=True),
            _p("body", "string", "The message text.", required=True),
        ),
    ),
    ToolSpec(
        "email_delete_email",
        "email",
        True,
        "Deletes the email with the given ID.",
        "Delete an email.",
        (_p("email_id", "string", "The 8-digit ID of the email to delete.", "8-digit id", True),),
    ),
    ToolSpec(
        "email_forward_email",
        "email",
        True,
        "Forwards the email with the given ID to a recipient (a new outbox email with subject 'FW: ...').",
        "Forward an email.",
        (
            _p("email_id", "string", "The 8-digit ID of the email to forward.", "8-digit id", True),
            _p("recipient", "string", "The email address to forward it to.", "email address", True),
        ),
    ),
    ToolSpec(
        "email_reply_email",
        "email",
        True,
        "Replies to the email with the given ID: sends the body to its sender under the same subject.",
        "Reply to an email.",
        (
            _p("email_id", "string", "The 8-digit ID of the email to answer.", "8-digit id", True),
            _p("body", "string", "The reply text.", required=True),
        ),
    ),
    ToolSpec(
        "calendar_get_event_information_by_id",
        "calendar",
        False,
        "Reads one field of the calendar event with the given ID.",
        "Read one field of an event.",
        (
            _p("event_id", "string", "The 8-digit ID of the event.", "8-digit id", True),
            _p(
                "field",
                "string",
                "The field to read: 'event_id', 'event_name', 'participant_email', 'event_start' or "
                "'duration'.",
                "event_id|event_name|participant_email|event_start|duration",
                True,
            ),
        ),
    ),
    ToolSpec(
        "calendar_search_events",
        "calendar",
        False,
        "Searches the calendar. An event matches when every word of the query occurs in its name or "
        "participant email, and it overlaps the optional time window. Results come earliest first, one "
        "page at a time.",
        "Search events (all query words in name or participant); earliest first.",
        (
            _p("query", "string", "Words to look for in the event name or participant email.", "words"),
            _p(
                "time_min",
                "string",
                f"Only events ending at or after this time. {_ISO_TIME}",
                "YYYY-MM-DD HH:MM:SS",
            ),
            _p(
                "time_max",
                "string",
                f"Only events starting at or before this time. {_ISO_TIME}",
                "YYYY-MM-DD HH:MM:SS",
            ),
            *_paging("events"),
        ),
    ),
    ToolSpec(
        "calendar_create_event",
        "calendar",
        True,
        "Adds an event to the calendar. Meetings may not start before 9am or end after 6pm.",
        "Create an event (between 9am and 6pm).",
        (
            _p("event_name", "string", "The title of the event.", required=True),
            _p("participant_email", "string", "The participant's email address.", "email address", True),
            _p("event_start", "string", f"When the event starts. {_ISO_TIME}", "YYYY-MM-DD HH:MM:SS", True),
            _p("duration", "string", "Length of the event in minutes, e.g. '30'.", "minutes", True),
        ),
    ),
    ToolSpec(
        "calendar_delete_event",
        "calendar",
        True,
        "Removes the event with the given ID from the calendar.",
        "Delete an event.",
        (_p("event_id", "string", "The 8-digit ID of the event to delete.", "8-digit id", True),),
    ),
    ToolSpec(
        "calendar_update_event",
        "calendar",
        True,
        "Changes one field of the event with the given ID. Meetings may not start before 9am or end "
        "after 6pm.",
        "Change one field of an event.",
        (
            _p("event_id", "string", "The 8-digit ID of the event.", "8-digit id", True),
            _p(
                "field",
                "string",
                "The field to change: 'event_name', 'participant_email', 'event_start' or 'duration'.",
                "event_name|participant_email|event_start|duration",
                True,
            ),
            _p("new_value", "string", "The new value for that field.", required=True),
        ),
    ),
    ToolSpec(
        "analytics_get_visitor_information_by_id",
        "analytics",
        False,
        "Returns every recorded website visit of the visitor with the given ID.",
        "Get a visitor's visits.",
        (_p("visitor_id", "string", "The 4-digit visitor ID.", "4-digit id", True),),
    ),
    ToolSpec(
        "analytics_create_plot",
        "analytics",
        True,
        "Creates a plot of one website metric over a date range and returns the plot's file path.",
        "Create a plot of a metric.",
        (
            _p("time_min", "string", f"First day to plot. {_ISO_DATE}", "YYYY-MM-DD", True),
            _p("time_max", "string", f"Last day to plot. {_ISO_DATE}", "YYYY-MM-DD", True),
            _p(
                "value_to_plot",
                "string",
                "The metric: 'total_visits', 'session_duration_seconds', 'user_engaged', 'visits_direct', "
                "'visits_referral', 'visits_search_engine' or 'visits_social_media'.",
                "total_visits|session_duration_seconds|user_engaged|visits_direct|visits_referral|"
                "visits_search_engine|visits_social_media",
                True,
            ),
            _p(
                "plot_type",
                "string",
                "The chart type: 'bar', 'line', 'scatter' or 'histogram'.",
                "bar|line|scatter|histogram",
                True,
            ),
        ),
    ),
    ToolSpec(
        "analytics_total_visits_count",
        "analytics",
        False,
        "Counts the website visits in a date range (all days when no range is given).",
        "Count visits.",
        _RANGE,
    ),
    ToolSpec(
        "analytics_engaged_users_count",
        "analytics",
        False,
        "Counts the visits by engaged users in a date range.",
        "Count engaged-user visits.",
        _RANGE,
    ),
    ToolSpec(
        "analytics_traffic_source_count",
        "analytics",
        False,
        "Counts the visits that came from one traffic source in a date range.",
        "Count visits from a traffic source.",
        (
            *_RANGE,
            _p(
                "traffic_source",
                "string",
                "The source: 'direct', 'referral', 'search engine' or 'social media'.",
                "direct|referral|search engine|social media",
            ),
        ),
    ),
    ToolSpec(
        "analytics_get_average_session_duration",
        "analytics",
        False,
        "Returns the mean session length, in seconds, of the visits in a date range.",
        "Average session seconds.",
        _RANGE,
    ),
    ToolSpec(
        "project_management_get_task_information_by_id",
        "project_management",
        False,
        "Reads one field of the task with the given ID.",
        "Read one field of a task.",
        (
            _p("task_id", "string", "The 8-digit ID of the task.", "8-digit id", True),
            _p(
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
            _p("task_name", "string", "Words that must all occur in the task name.", "words"),
            _p(
                "assigned_to_email", "string", "The assignee's email address, or part of it.", "email or part"
            ),
            _p(
                "list_name",
                "string",
                "The list: 'Backlog', 'In Progress', 'In Review' or 'Completed'.",
                "Backlog|In Progress|In Review|Completed",
            ),
            _p("due_date", "string", f"The due date. {_ISO_DATE}", "YYYY-MM-DD"),
            _p(
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
            _p("task_name", "string", "The name of the task.", required=True),
            _p("assigned_to_email", "string", "The assignee's email address.", "email address", True),
            _p(
                "list_name",
                "string",
                "The list: 'Backlog', 'In Progress', 'In Review' or 'Completed'.",
                "Backlog|In Progress|In Review|Completed",
                True,
            ),
            _p("due_date", "string", f"The due date. {_ISO_DATE}", "YYYY-MM-DD", True),
            _p(
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
        (_p("task_id", "string", "The 8-digit ID of the task to delete.", "8-digit id", True),),
    ),
    ToolSpec(
        "project_management_update_task",
        "project_management",
        True,
        "Changes one field of the task with the given ID.",
        "Change one field of a task.",
        (
            _p("task_id", "string", "The 8-digit ID of the task.", "8-digit id", True),
            _p(
                "field",
                "string",
                "The field to change: 'task_name', 'assigned_to_email', 'list_name', 'due_date' or 'board'.",
                "task_name|assigned_to_email|list_name|due_date|board",
                True,
            ),
            _p("new_value", "string", "The new value for that field.", required=True),
        ),
    ),
    ToolSpec(
        "customer_relationship_manager_search_customers",
        "customer_relationship_manager",
        False,
        "Lists the CRM customers that satisfy every given filter, one page at a time.",
        "Search customers (all filters must hold).",
        (
            _p("customer_name", "string", "Words that must all occur in the customer's name.", "words"),
            _p("customer_email", "string", "The customer's email address, or part of it.", "email or part"),
            _p(
                "product_interest",
                "string",
                "The product: 'Software', 'Hardware', 'Services', 'Consulting' or 'Training'.",
                "Software|Hardware|Services|Consulting|Training",
            ),
            _p(
                "status",
                "string",
                "The stage: 'Qualified', 'Won', 'Lost', 'Lead' or 'Proposal'.",
                "Qualified|Won|Lost|Lead|Proposal",
            ),
            _p(
                "assigned_to_email",
                "string",
                "The account owner's email address, or part of it.",
                "email or part",
            ),
            _p("last_contact_date_min", "string", f"Earliest last-contact date. {_ISO_DATE}", "YYYY-MM-DD"),
            _p("last_contact_date_max", "string", f"Latest last-contact date. {_ISO_DATE}", "YYYY-MM-DD"),
            _p("follow_up_by_min", "string", f"Earliest follow-up date. {_ISO_DATE}", "YYYY-MM-DD"),
            _p("follow_up_by_max", "string", f"Latest follow-up date. {_ISO_DATE}", "YYYY-MM-DD"),
            *_paging("customers"),
        ),
    ),
    ToolSpec(
        "customer_relationship_manager_update_customer",
        "customer_relationship_manager",
        True,
        "Changes one field of the customer with the given ID.",
        "Change one field of a customer.",
        (
            _p("customer_id", "string", "The 8-digit ID of the customer.", "8-digit id", True),
            _p(
                "field",
                "string",
                "The field to change: 'customer_name', 'assigned_to_email', 'customer_email', "
                "'customer_phone', 'last_contact_date', 'product_interest', 'status', 'notes' or "
                "'follow_up_by'.",
                "customer_name|assigned_to_email|customer_email|customer_phone|last_contact_date|"
                "product_interest|status|notes|follow_up_by",
                True,
            ),
            _p("new_value", "string", "The new value for that field.", required=True),
        ),
    ),
    ToolSpec(
        "customer_relationship_manager_add_customer",
        "customer_relationship_manager",
        True,
        "Adds a customer to the CRM.",
        "Add a customer.",
        (
            _p("customer_name", "string", "The customer's full name.", required=True),
            _p("assigned_to_email", "string", "The account owner's email address.", "email address", True),
            _p(
                "status",
                "string",
                "The stage: 'Qualified', 'Won', 'Lost', 'Lead' or 'Proposal'.",
                "Qualified|Won|Lost|Lead|Proposal",
                True,
            ),
            _p("customer_email", "string", "The customer's email address.", "email address"),
            _p("customer_phone", "string", "The customer's phone number.", "phone"),
            _p(
                "last_contact_date",
                "string",
                f"When the customer was last contacted. {_ISO_DATE}",
                "YYYY-MM-DD",
            ),
            _p(
                "product_interest",
                "string",
                "The product: 'Software', 'Hardware', 'Services', 'Consulting' or 'Training'.",
                "Software|Hardware|Services|Consulting|Training",
            ),
            _p("notes", "string", "Free-text notes.", "notes"),
            _p("follow_up_by", "string", f"When to follow up next. {_ISO_DATE}", "YYYY-MM-DD"),
        ),
    ),
    ToolSpec(
        "customer_relationship_manager_delete_customer",
        "customer_relationship_manager",
        True,
        "Removes the customer with the given ID from the CRM.",
        "Delete a customer.",
        (_p("customer_id", "string", "The 8-digit ID of the customer to delete.", "8-digit id", True),),
    ),
)

SPECS_BY_NAME: dict[str, ToolSpec] = {spec.name: spec for spec in SPECS}
TOOL_NAMES: tuple[str, ...] = tuple(SPECS_BY_NAME)
STATE_CHANGING: frozenset[str] = frozenset(spec.name for spec in SPECS if spec.changes_state)


def toolkit_of(tool_name: str) -> str | None:
    """The toolkit a tool belongs to, or None for an unknown name."""
    spec = SPECS_BY_NAME.get(tool_name)
    return spec.toolkit if spec else None


def _parameters(spec: ToolSpec, compact: bool) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for param in spec.params:
        prop: dict[str, Any] = {"type": param.type}
        description = param.compact if compact else param.description
        if description:
            prop["description"] = description
        properties[param.name] = prop
    parameters = {"type": "object", "properties": properties, "required": list(spec.required)}
    if not compact:  # the sandbox rejects extra arguments anyway; compact prompts save the tokens
        parameters["additionalProperties"] = False
    return parameters


def _selected(toolkits: Iterable[str] | None) -> list[ToolSpec]:
    if toolkits is None:
        return list(SPECS)
    wanted = set(toolkits)
    unknown = wanted.difference(TOOLKITS)
    if unknown:
        raise ValueError(f"unknown toolkit(s) {sorted(unknown)}; valid: {list(TOOLKITS)}")
    return [spec for spec in SPECS if spec.toolkit in wanted]


def flat_schemas(toolkits: Iterable[str] | None = None, compact: bool = False) -> list[dict[str, Any]]:
    """Schemas in NeMo-Gym/Responses shape: ``{"type": "function", "name", "description", "parameters",
    "strict"}``, in canonical tool order, optionally limited to some toolkits."""
    return [
        {
            "type": "function",
            "name": spec.name,
            "description": spec.compact if compact else spec.description,
            "parameters": _parameters(spec, compact),
            "strict": False,
        }
        for spec in _selected(toolkits)
    ]


def chat_schemas(toolkits: Iterable[str] | None = None, compact: bool = False) -> list[dict[str, Any]]:
    """Schemas in Chat-Completions shape: ``{"type": "function", "function": {"name", "description",
    "parameters"}}``."""
    return [
        {"type": "function", "function": {k: v for k, v in schema.items() if k not in ("type", "strict")}}
        for schema in flat_schemas(toolkits, compact)
    ]
