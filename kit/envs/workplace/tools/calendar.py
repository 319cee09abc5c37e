"""The calendar tools: read, search, create, delete and update events within meeting hours."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from kit.envs.workplace.state import CALENDAR_COLUMNS, Row, WorkplaceState
from kit.envs.workplace.tools.checks import (
    DEFAULT_PAGE_SIZE,
    ISO_DATE,
    ToolError,
    check_date,
    check_datetime,
    check_email,
    check_field,
    check_text,
    find_row,
    haystack,
    page_of,
    query_words,
    to_json,
)

WORKDAY_START, WORKDAY_END = 9 * 60, 18 * 60  # meeting hours, in minutes after midnight


def _bound(value: str, arg: str, end_of_day: bool) -> str:
    """A time-window bound given as a date or a timestamp, as a comparable timestamp string."""
    if ISO_DATE.fullmatch(value):
        return check_date(value, arg) + (" 23:59:59" if end_of_day else " 00:00:00")
    check_datetime(value, arg)
    return value


def _minutes(value: str) -> int:
    digits = value.strip()
    if not re.fullmatch("[0-9]{1,4}", digits) or int(digits) == 0:
        raise ToolError(f"'duration' must be a whole number of minutes such as '30', got {value!r}.")
    return int(digits)


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
    """One field of an event, as ``{field: value}``."""
    row = find_row(state.calendar, event_id, "event")
    return to_json({field: row[check_field(field, CALENDAR_COLUMNS)]})


def calendar_search_events(
    state: WorkplaceState,
    query: str = "",
    time_min: str | None = None,
    time_max: str | None = None,
    page: int = 1,
    page_size: int = DEFAULT_PAGE_SIZE,
) -> str:
    """Events overlapping the window whose name or participant holds every query word; earliest first,
    one page."""
    words = query_words(query)
    low = _bound(time_min, "time_min", end_of_day=False) if time_min else None
    high = _bound(time_max, "time_max", end_of_day=True) if time_max else None
    found = [
        row
        for row in state.calendar.rows()
        if (high is None or row["event_start"] <= high)
        and all(w in haystack(row["event_name"], row["participant_email"]) for w in words)
        and (low is None or _event_end(row) >= low)
    ]
    found.sort(key=lambda r: (r["event_start"], r["event_id"]))
    return page_of(found, page, page_size)


def calendar_create_event(
    state: WorkplaceState, event_name: str, participant_email: str, event_start: str, duration: str
) -> str:
    """Add an event that starts at 9am or later and ends by 6pm."""
    name = check_text(event_name, "event_name")
    email = check_email(participant_email, "participant_email")
    start = check_datetime(event_start, "event_start")
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
    """Delete an event."""
    find_row(state.calendar, event_id, "event")
    state.calendar.delete(event_id)
    return f"Event {event_id} deleted."


def calendar_update_event(state: WorkplaceState, event_id: str, field: str, new_value: str) -> str:
    """Change one field of an event; a new start or duration must keep it within meeting hours."""
    row = dict(find_row(state.calendar, event_id, "event"))
    field = check_field(field, CALENDAR_COLUMNS[1:])
    if field == "event_name":
        row[field] = check_text(new_value, "new_value")
    elif field == "participant_email":
        row[field] = check_email(new_value, "new_value")
    elif field == "event_start":
        check_datetime(new_value, "new_value")
        row[field] = new_value
    else:
        row[field] = str(_minutes(new_value))
    if field in ("event_start", "duration"):
        _check_hours(check_datetime(row["event_start"], "event_start"), int(row["duration"]))
    state.calendar.replace(row)
    return f"Event {event_id} updated: {field} = {row[field]!r}."
