"""The 27 workplace tools, as functions of a ``WorkplaceState`` and already type-checked arguments.

Each tool validates everything before its single write, and reports a refused call by raising
``ToolError`` whose message tells the model what was wrong and what is valid; the sandbox turns that into
an ``Error: ...`` observation. Successful calls return a short sentence or JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from kit.envs.workplace.state import (
    CALENDAR_COLUMNS,
    CUSTOMER_COLUMNS,
    EMAIL_COLUMNS,
    TASK_COLUMNS,
    Row,
    Table,
    WorkplaceState,
)


class ToolError(Exception):
    """A tool refused a call; the message is shown to the model after ``Error:``."""


LIST_NAMES = ("Backlog", "In Progress", "In Review", "Completed")
BOARDS = ("Back end", "Front end", "Design")
STATUSES = ("Qualified", "Won", "Lost", "Lead", "Proposal")
PRODUCTS = ("Software", "Hardware", "Services", "Consulting", "Training")
TRAFFIC_SOURCES = ("direct", "referral", "search engine", "social media")
PLOT_VALUES = (
    "total_visits",
    "session_duration_seconds",
    "user_engaged",
    "visits_direct",
    "visits_referral",
    "visits_search_engine",
    "visits_social_media",
)
PLOT_TYPES = ("bar", "line", "scatter", "histogram")
WORKDAY_START, WORKDAY_END = 9 * 60, 18 * 60  # meeting hours, in minutes after midnight
DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE = 5, 100
CRM_TIME = " 23:59:00"  # CRM dates are stored as end-of-day timestamps

_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_DATETIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


def _quoted(options: Iterable[str]) -> str:
    return ", ".join(f"'{o}'" for o in options)


# --- argument checks ----------------------------------------------------------------------------------------


def _text(value: str, arg: str) -> str:
    if not value.strip():
        raise ToolError(f"'{arg}' must not be empty.")
    return value


def _date(value: str, arg: str) -> str:
    try:
        if _DATE.fullmatch(value):
            datetime.strptime(value, "%Y-%m-%d")
            return value
    except ValueError:
        pass
    raise ToolError(f"'{arg}' must be a date in the format YYYY-MM-DD, got {value!r}.")


def _datetime(value: str, arg: str) -> datetime:
    try:
        if _DATETIME.fullmatch(value):
            return datetime.strptime(value, "%Y-%m-%d %H:%M:%S")
    except ValueError:
        pass
    raise ToolError(f"'{arg}' must be a time in the format YYYY-MM-DD HH:MM:SS, got {value!r}.")


def _bound(value: str, arg: str, end_of_day: bool) -> str:
    """A time-window bound given as a date or a timestamp, as a comparable timestamp string."""
    if _DATE.fullmatch(value):
        return _date(value, arg) + (" 23:59:59" if end_of_day else " 00:00:00")
    _datetime(value, arg)
    return value


def _email(value: str, arg: str) -> str:
    value = value.strip().lower()
    if not _EMAIL.fullmatch(value):
        raise ToolError(f"'{arg}' must be an email address like name@example.com, got {value!r}.")
    return value


def _colleague(state: WorkplaceState, value: str, arg: str) -> str:
    value = _email(value, arg)
    if value not in state.directory:
        raise ToolError(
            f"'{arg}' must be a colleague's address from the company directory, got {value!r}; "
            "look it up with company_directory_find_email_address."
        )
    return value


def _choice(value: str, options: tuple[str, ...], arg: str) -> str:
    """The option matching ``value`` case-insensitively, in its canonical spelling."""
    for option in options:
        if value.strip().lower() == option.lower():
            return option
    raise ToolError(f"'{arg}' must be one of {_quoted(options)}, got {value!r}.")


def _exact(value: str, options: tuple[str, ...], arg: str) -> str:
    """``value`` when it is one of ``options`` exactly.

    For values a tool writes where NeMo-Gym's tool refuses any other spelling: accepting "won" for "Won"
    would score a task NeMo-Gym scores 0 (and it compares ``status``, ``list_name`` and ``board``
    case-sensitively)."""
    if value in options:
        return value
    close = [option for option in options if option.lower() == value.strip().lower()]
    hint = f"; write '{close[0]}'" if close else ""
    raise ToolError(f"'{arg}' must be one of {_quoted(options)}, spelt exactly, got {value!r}{hint}.")


def _minutes(value: str) -> int:
    digits = value.strip()
    if not re.fullmatch("[0-9]{1,4}", digits) or int(digits) == 0:
        raise ToolError(f"'duration' must be a whole number of minutes such as '30', got {value!r}.")
    return int(digits)


def _crm_date(value: str, arg: str) -> str:
    if _DATETIME.fullmatch(value):
        _datetime(value, arg)
        return value
    return _date(value, arg) + CRM_TIME


def _row(table: Table, row_id: str, noun: str) -> Row:
    row = table.get(row_id)
    if row is None:
        raise ToolError(f"no {noun} has id {row_id!r}; ids are 8-digit strings such as '00000042'.")
    return row


def _field(field: str, columns: tuple[str, ...]) -> str:
    if field not in columns:
        raise ToolError(f"'field' must be one of {_quoted(columns)}, got {field!r}.")
    return field


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _page(rows: list[Row], page: int, page_size: int) -> str:
    if page < 1:
        raise ToolError(f"'page' must be 1 or more, got {page}.")
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise ToolError(f"'page_size' must be between 1 and {MAX_PAGE_SIZE}, got {page_size}.")
    start = (page - 1) * page_size
    return _json(
        {
            "total": len(rows),
            "page": page,
            "page_size": page_size,
            "results": [dict(r) for r in rows[start : start + page_size]],
        }
    )


def _words(query: str) -> list[str]:
    return query.lower().split()


@lru_cache(maxsize=16384)
def _haystack(*fields: str) -> str:
    return " ".join(fields).lower()


def _in_range(day: str, time_min: str | None, time_max: str | None) -> bool:
    return (time_min is None or day >= time_min) and (time_max is None or day <= time_max)


# --- company directory --------------------------------------------------------------------------------------


def company_directory_find_email_address(state: WorkplaceState, name: str = "") -> str:
    words = name.replace(".", " ").lower().split()
    if not words:
        raise ToolError("'name' must be a name or part of one, e.g. 'alex'.")
    return _json([a for a in state.directory if all(w in a.lower() for w in words)])


# --- email --------------------------------------------------------------------------------------------------


def email_get_email_information_by_id(state: WorkplaceState, email_id: str, field: str) -> str:
    row = _row(state.emails, email_id, "email")
    return _json({field: row[_field(field, EMAIL_COLUMNS)]})


def email_search_emails(
    state: WorkplaceState,
    query: str = "",
    date_min: str | None = None,
    date_max: str | None = None,
    page: int = 1,
    page_size: int = DEFAULT_PAGE_SIZE,
) -> str:
    words = _words(query)
    low = _date(date_min, "date_min") if date_min else None
    high = _date(date_max, "date_max") if date_max else None
    found = [
        row
        for row in state.emails.rows()
        if _in_range(row["sent_datetime"][:10], low, high)
        and all(w in _haystack(row["subject"], row["body"], row["sender/recipient"]) for w in words)
    ]
    found.sort(key=lambda r: (r["sent_datetime"], r["email_id"]), reverse=True)
    return _page(found, page, page_size)


def _outbox(state: WorkplaceState, recipient: str, subject: str, body: str) -> str:
    email_id = state.emails.next_id()
    state.emails.insert(
        {
            "email_id": email_id,
            "inbox/outbox": "outbox",
            "sender/recipient": recipient,
            "subject": subject,
            "sent_datetime": state.now,
            "body": body,
        }
    )
    return email_id


def email_send_email(state: WorkplaceState, recipient: str, subject: str, body: str) -> str:
    recipient = _email(recipient, "recipient")
    email_id = _outbox(state, recipient, _text(subject, "subject"), _text(body, "body"))
    return f"Email sent to {recipient} (email_id {email_id})."


def email_delete_email(state: WorkplaceState, email_id: str) -> str:
    _row(state.emails, email_id, "email")
    state.emails.delete(email_id)
    return f"Email {email_id} deleted."


def email_forward_email(state: WorkplaceState, email_id: str, recipient: str) -> str:
    original = _row(state.emails, email_id, "email")
    recipient = _email(recipient, "recipient")
    new_id = _outbox(state, recipient, f"FW: {original['subject']}", original["body"])
    return f"Email {email_id} forwarded to {recipient} (email_id {new_id})."


def email_reply_email(state: WorkplaceState, email_id: str, body: str) -> str:
    original = _row(state.emails, email_id, "email")
    recipient = original["sender/recipient"]
    new_id = _outbox(state, recipient, original["subject"], _text(body, "body"))
    return f"Reply sent to {recipient} (email_id {new_id})."


# --- calendar -----------------------------------------------------------------------------------------------


def _check_hours(start: datetime, minutes: int) -> None:
    begin = start.hour * 60 + start.minute
    if begin < WORKDAY_START or begin + minutes > WORKDAY_END:
        end = start + timedelta(minutes=minutes)
        raise ToolError(
            f"meetings must not start before 9am or end after 6pm; this one runs from "
            f"{start:%Y-%m-%d %H:%M:%S} to {end:%Y-%m-%d %H:%M:%S}."
        )


def _event_end(row: Row) -> str:
    start = datetime.strptime(row["event_start"], "%Y-%m-%d %H:%M:%S")
    return f"{start + timedelta(minutes=int(row['duration'])):%Y-%m-%d %H:%M:%S}"


def calendar_get_event_information_by_id(state: WorkplaceState, event_id: str, field: str) -> str:
    row = _row(state.calendar, event_id, "event")
    return _json({field: row[_field(field, CALENDAR_COLUMNS)]})


def calendar_search_events(
    state: WorkplaceState,
    query: str = "",
    time_min: str | None = None,
    time_max: str | None = None,
    page: int = 1,
    page_size: int = DEFAULT_PAGE_SIZE,
) -> str:
    words = _words(query)
    low = _bound(time_min, "time_min", end_of_day=False) if time_min else None
    high = _bound(time_max, "time_max", end_of_day=True) if time_max else None
    found = [
        row
        for row in state.calendar.rows()
        if (high is None or row["event_start"] <= high)
        and all(w in _haystack(row["event_name"], row["participant_email"]) for w in words)
        and (low is None or _event_end(row) >= low)
    ]
    found.sort(key=lambda r: (r["event_start"], r["event_id"]))
    return _page(found, page, page_size)


def calendar_create_event(
    state: WorkplaceState, event_name: str, participant_email: str, event_start: str, duration: str
) -> str:
    name = _text(event_name, "event_name")
    email = _email(participant_email, "participant_email")
    start = _datetime(event_start, "event_start")
    minutes = _minutes(duration)
    _check_hours(start, minutes)
    event_id = state.calendar.next_id()
    state.calendar.insert(
        {
            "event_id": event_id,
            "event_name": name,
            "participant_email": email,
            "event_start": event_start,
            "duration": str(minutes),
        }
    )
    return f"Event created (event_id {event_id})."


def calendar_delete_event(state: WorkplaceState, event_id: str) -> str:
    _row(state.calendar, event_id, "event")
    state.calendar.delete(event_id)
    return f"Event {event_id} deleted."


def calendar_update_event(state: WorkplaceState, event_id: str, field: str, new_value: str) -> str:
    row = dict(_row(state.calendar, event_id, "event"))
    field = _field(field, CALENDAR_COLUMNS[1:])
    if field == "event_name":
        row[field] = _text(new_value, "new_value")
    elif field == "participant_email":
        row[field] = _email(new_value, "new_value")
    elif field == "event_start":
        _datetime(new_value, "new_value")
        row[field] = new_value
    else:
        row[field] = str(_minutes(new_value))
    if field in ("event_start", "duration"):
        _check_hours(_datetime(row["event_start"], "event_start"), int(row["duration"]))
    state.calendar.replace(row)
    return f"Event {event_id} updated: {field} = {row[field]!r}."


# --- analytics ----------------------------------------------------------------------------------------------


def _visits(state: WorkplaceState, time_min: str | None, time_max: str | None) -> list[Row]:
    low = _date(time_min, "time_min") if time_min else None
    high = _date(time_max, "time_max") if time_max else None
    return [row for row in state.analytics if _in_range(row["date_of_visit"], low, high)]


def analytics_get_visitor_information_by_id(state: WorkplaceState, visitor_id: str) -> str:
    visits = [dict(row) for row in state.analytics if row["visitor_id"] == visitor_id]
    if not visits:
        raise ToolError(f"no visitor has id {visitor_id!r}; visitor ids are 4-digit strings such as '0421'.")
    return _json(visits)


def analytics_create_plot(
    state: WorkplaceState, time_min: str, time_max: str, value_to_plot: str, plot_type: str
) -> str:
    low, high = _date(time_min, "time_min"), _date(time_max, "time_max")
    if low > high:
        raise ToolError(f"'time_min' ({low}) must not be after 'time_max' ({high}).")
    value = _exact(value_to_plot, PLOT_VALUES, "value_to_plot")
    kind = _exact(plot_type, PLOT_TYPES, "plot_type")
    path = f"plots/{low}_{high}_{value}_{kind}.png"
    state.plots = state.plots + (path,)
    return f"Plot saved to {path}."


def analytics_total_visits_count(
    state: WorkplaceState, time_min: str | None = None, time_max: str | None = None
) -> str:
    return _json({"total_visits": len(_visits(state, time_min, time_max))})


def analytics_engaged_users_count(
    state: WorkplaceState, time_min: str | None = None, time_max: str | None = None
) -> str:
    visits = _visits(state, time_min, time_max)
    return _json({"engaged_users": sum(row["user_engaged"].lower() == "true" for row in visits)})


def analytics_traffic_source_count(
    state: WorkplaceState,
    time_min: str | None = None,
    time_max: str | None = None,
    traffic_source: str | None = None,
) -> str:
    source = _choice(traffic_source, TRAFFIC_SOURCES, "traffic_source") if traffic_source else None
    visits = _visits(state, time_min, time_max)
    count = sum(source is None or row["traffic_source"] == source for row in visits)
    return _json({"traffic_source": source or "all", "visits": count})


def analytics_get_average_session_duration(
    state: WorkplaceState, time_min: str | None = None, time_max: str | None = None
) -> str:
    visits = _visits(state, time_min, time_max)
    seconds = [float(row["session_duration_seconds"]) for row in visits]
    average = round(sum(seconds) / len(seconds), 2) if seconds else None
    return _json({"visits": len(seconds), "average_session_duration_seconds": average})


# --- project management -------------------------------------------------------------------------------------


def project_management_get_task_information_by_id(state: WorkplaceState, task_id: str, field: str) -> str:
    row = _row(state.tasks, task_id, "task")
    return _json({field: row[_field(field, TASK_COLUMNS)]})


def project_management_search_tasks(
    state: WorkplaceState,
    task_name: str | None = None,
    assigned_to_email: str | None = None,
    list_name: str | None = None,
    due_date: str | None = None,
    board: str | None = None,
) -> str:
    if not any((task_name, assigned_to_email, list_name, due_date, board)):
        raise ToolError(
            "give at least one of 'task_name', 'assigned_to_email', 'list_name', 'due_date', 'board'."
        )
    words = _words(task_name or "")
    email = (assigned_to_email or "").strip().lower()
    list_name = _choice(list_name, LIST_NAMES, "list_name") if list_name else None
    board = _choice(board, BOARDS, "board") if board else None
    due_date = _date(due_date, "due_date") if due_date else None
    found = [
        dict(row)
        for row in state.tasks.rows()
        if email in row["assigned_to_email"].lower()
        and list_name in (None, row["list_name"])
        and board in (None, row["board"])
        and due_date in (None, row["due_date"])
        and all(w in _haystack(row["task_name"]) for w in words)
    ]
    return _json(found)


def _task_value(state: WorkplaceState, field: str, value: str, arg: str) -> str:
    if field == "task_name":
        return _text(value, arg)
    if field == "assigned_to_email":
        return _colleague(state, value, arg)
    if field == "list_name":
        return _exact(value, LIST_NAMES, arg)
    if field == "board":
        return _exact(value, BOARDS, arg)
    return _date(value, arg)


def project_management_create_task(
    state: WorkplaceState, task_name: str, assigned_to_email: str, list_name: str, due_date: str, board: str
) -> str:
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
    _row(state.tasks, task_id, "task")
    state.tasks.delete(task_id)
    return f"Task {task_id} deleted."


def project_management_update_task(state: WorkplaceState, task_id: str, field: str, new_value: str) -> str:
    row = dict(_row(state.tasks, task_id, "task"))
    field = _field(field, TASK_COLUMNS[1:])
    row[field] = _task_value(state, field, new_value, "new_value")
    state.tasks.replace(row)
    return f"Task {task_id} updated: {field} = {row[field]!r}."


# --- customer relationship manager --------------------------------------------------------------------------


def customer_relationship_manager_search_customers(
    state: WorkplaceState,
    customer_name: str | None = None,
    customer_email: str | None = None,
    product_interest: str | None = None,
    status: str | None = None,
    assigned_to_email: str | None = None,
    last_contact_date_min: str | None = None,
    last_contact_date_max: str | None = None,
    follow_up_by_min: str | None = None,
    follow_up_by_max: str | None = None,
    page: int = 1,
    page_size: int = DEFAULT_PAGE_SIZE,
) -> str:
    words = _words(customer_name or "")
    customer_email = (customer_email or "").strip().lower()
    owner = (assigned_to_email or "").strip().lower()
    product = _choice(product_interest, PRODUCTS, "product_interest") if product_interest else None
    status = _choice(status, STATUSES, "status") if status else None
    bounds = {
        arg: _date(value, arg) if value else None
        for arg, value in (
            ("last_contact_date_min", last_contact_date_min),
            ("last_contact_date_max", last_contact_date_max),
            ("follow_up_by_min", follow_up_by_min),
            ("follow_up_by_max", follow_up_by_max),
        )
    }
    found = [
        row
        for row in state.customers.rows()
        if customer_email in row["customer_email"].lower()
        and owner in row["assigned_to_email"].lower()
        and product in (None, row["product_interest"])
        and status in (None, row["status"])
        and _in_range(
            row["last_contact_date"][:10], bounds["last_contact_date_min"], bounds["last_contact_date_max"]
        )
        and _in_range(row["follow_up_by"][:10], bounds["follow_up_by_min"], bounds["follow_up_by_max"])
        and all(w in _haystack(row["customer_name"]) for w in words)
    ]
    return _page(found, page, page_size)


def _customer_value(state: WorkplaceState, field: str, value: str, arg: str) -> str:
    if field == "assigned_to_email":
        return _colleague(state, value, arg)
    if field == "customer_email":
        return _email(value, arg)
    if field == "status":
        return _exact(value, STATUSES, arg)
    if field == "product_interest":
        return _choice(value, PRODUCTS, arg)
    if field in ("last_contact_date", "follow_up_by"):
        return _crm_date(value, arg)
    return _text(value, arg)


def customer_relationship_manager_update_customer(
    state: WorkplaceState, customer_id: str, field: str, new_value: str
) -> str:
    row = dict(_row(state.customers, customer_id, "customer"))
    field = _field(field, CUSTOMER_COLUMNS[1:])
    if field == "product_interest":
        # NeMo-Gym's update refuses another spelling; its add stores any, compared case-insensitively.
        _exact(new_value, PRODUCTS, "new_value")
    row[field] = _customer_value(state, field, new_value, "new_value")
    state.customers.replace(row)
    return f"Customer {customer_id} updated: {field} = {row[field]!r}."


def customer_relationship_manager_add_customer(
    state: WorkplaceState,
    customer_name: str,
    assigned_to_email: str,
    status: str,
    customer_email: str = "",
    customer_phone: str = "",
    last_contact_date: str = "",
    product_interest: str = "",
    notes: str = "",
    follow_up_by: str = "",
) -> str:
    given = {
        "customer_name": customer_name,
        "assigned_to_email": assigned_to_email,
        "status": status,
        "customer_email": customer_email,
        "customer_phone": customer_phone,
        "last_contact_date": last_contact_date,
        "product_interest": product_interest,
        "notes": notes,
        "follow_up_by": follow_up_by,
    }
    required = ("customer_name", "assigned_to_email", "status")
    row = {
        field: _customer_value(state, field, value, field) if value or field in required else ""
        for field, value in given.items()
    }
    customer_id = state.customers.next_id()
    state.customers.insert({"customer_id": customer_id, **row})
    return f"Customer added (customer_id {customer_id})."


def customer_relationship_manager_delete_customer(state: WorkplaceState, customer_id: str) -> str:
    _row(state.customers, customer_id, "customer")
    state.customers.delete(customer_id)
    return f"Customer {customer_id} deleted."


TOOLS: dict[str, Callable[..., str]] = {
    fn.__name__: fn
    for fn in (
        company_directory_find_email_address,
        email_get_email_information_by_id,
        email_search_emails,
        email_send_email,
        email_delete_email,
        email_forward_email,
        email_reply_email,
        calendar_get_event_information_by_id,
        calendar_search_events,
        calendar_create_event,
        calendar_delete_event,
        calendar_update_event,
        analytics_get_visitor_information_by_id,
        analytics_create_plot,
        analytics_total_visits_count,
        analytics_engaged_users_count,
        analytics_traffic_source_count,
        analytics_get_average_session_duration,
        project_management_get_task_information_by_id,
        project_management_search_tasks,
        project_management_create_task,
        project_management_delete_task,
        project_management_update_task,
        customer_relationship_manager_search_customers,
        customer_relationship_manager_update_customer,
        customer_relationship_manager_add_customer,
        customer_relationship_manager_delete_customer,
    )
}
"""Tool name -> implementation, in canonical order."""
