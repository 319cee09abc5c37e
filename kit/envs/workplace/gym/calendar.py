"""NeMo-Gym's calendar tools: 8-digit event ids, times parsed by pandas, no meeting-hour rule."""

from __future__ import annotations

from typing import Any

from kit.envs.workplace.gym.common import Refusal, next_id, page_window
from kit.envs.workplace.gym.frame import pandas, quiet, selected
from kit.envs.workplace.gym.state import GymState

EVENT_FIELDS = ("event_id", "event_name", "participant_email", "event_start", "duration")
EDITABLE_FIELDS = EVENT_FIELDS[1:]
_BAD_START = "Invalid event_start format. Expected YYYY-MM-DD HH:MM:SS."


def _eight_digits(event_id: Any) -> bool:
    return isinstance(event_id, str) and len(event_id) == 8 and event_id.isdigit()


def _check_start(value: Any) -> None:
    try:
        pandas().Timestamp(value)
    except ValueError:
        raise Refusal(_BAD_START) from None


def _check_minutes(value: Any) -> None:
    try:
        if int(value) <= 0:
            raise Refusal("Duration must be a positive number of minutes.")
    except ValueError:
        raise Refusal("Invalid duration format. Expected a number of minutes.") from None


def calendar_get_event_information_by_id(state: GymState, event_id: Any = None, field: Any = None) -> Any:
    """``{field: value}`` of one event."""
    if not event_id:
        raise Refusal("Event ID not provided.")
    if not field:
        raise Refusal("Field not provided.")
    if not _eight_digits(event_id):
        raise Refusal("Invalid event ID format. Expected 8-digit ID.")
    if field not in EVENT_FIELDS:
        raise Refusal(f"Invalid field. Available fields are: {', '.join(EVENT_FIELDS)}")
    event = state.calendar.get(event_id)
    if event is None:
        raise Refusal("Event not found.")
    return {field: event[field]}


def calendar_search_events(
    state: GymState, query: Any = "", time_min: Any = None, time_max: Any = None, page: Any = 1,
    page_size: Any = 5,
) -> Any:  # fmt: skip
    """Events whose name or participant matches ``query`` (a regular expression) starting within the
    times, latest first, one page."""
    pd = pandas()
    if time_min:
        try:
            time_min = pd.Timestamp(time_min)
        except ValueError:
            raise Refusal("Invalid time_min format. Expected YYYY-MM-DD HH:MM:SS.") from None
    if time_max:
        try:
            time_max = pd.Timestamp(time_max)
        except ValueError:
            raise Refusal("Invalid time_max format. Expected YYYY-MM-DD HH:MM:SS.") from None
    events = state.calendar
    with quiet():
        named = events.series("event_name").str.contains(query, case=False, na=False)
        hit = named | events.series("participant_email").str.contains(query, case=False, na=False)
    found = events.keep(selected(hit)).records()
    if time_min:
        found = [e for e in found if pd.Timestamp(e["event_start"]) >= time_min]
    if time_max:
        found = [e for e in found if pd.Timestamp(e["event_start"]) <= time_max]
    if not found:
        return "No events found."
    found.sort(key=lambda e: pd.Timestamp(e["event_start"]), reverse=True)
    page, total_pages, start, end = page_window(len(found), page, page_size)
    pagination = {
        "total_events": len(found),
        "page": page,
        "page_size": page_size,
        "total_pages": total_pages,
    }
    return {"events": found[start:end], "pagination": pagination}


def calendar_create_event(
    state: GymState, event_name: Any = None, participant_email: Any = None, event_start: Any = None,
    duration: Any = None,
) -> str:  # fmt: skip
    """Add an event; its id is returned."""
    for value, what in (
        (event_name, "Event name"),
        (participant_email, "Participant email"),
        (event_start, "Event start"),
        (duration, "Event duration"),
    ):
        if not value:
            raise Refusal(f"{what} not provided.")
    _check_start(event_start)
    _check_minutes(duration)
    participant_email = participant_email.lower()
    event_id = next_id(state.calendar)
    row = {
        "event_id": event_id,
        "event_name": event_name,
        "participant_email": participant_email,
        "event_start": event_start,
        "duration": duration,
    }
    state.calendar = state.calendar.appended(row, relabel=False)
    return event_id


def calendar_delete_event(state: GymState, event_id: Any = None) -> str:
    """Delete an event."""
    if not event_id:
        raise Refusal("Event ID not provided.")
    if not _eight_digits(event_id):
        raise Refusal("Invalid event ID format. Expected 8-digit ID.")
    if event_id not in state.calendar:
        raise Refusal("Event not found.")
    state.calendar = state.calendar.keep([e != event_id for e in state.calendar.column("event_id")])
    return "Event deleted successfully."


def calendar_update_event(
    state: GymState, event_id: Any = None, field: Any = None, new_value: Any = None
) -> str:
    """Change one field of an event."""
    if not event_id or not field or not new_value:
        raise Refusal("Event ID, field, or new value not provided.")
    if not _eight_digits(event_id):
        raise Refusal("Invalid event ID format. Expected 8-digit ID.")
    if field not in EDITABLE_FIELDS:
        raise Refusal(f"Invalid field. Available fields are: {', '.join(EDITABLE_FIELDS)}")
    if field == "event_start":
        _check_start(new_value)
    elif field == "duration":
        _check_minutes(new_value)
    if event_id not in state.calendar:
        raise Refusal("Event not found.")
    if field == "participant_email":
        new_value = new_value.lower()
    hits = [e == event_id for e in state.calendar.column("event_id")]
    state.calendar = state.calendar.assigned(hits, field, new_value)
    return "Event updated successfully."
