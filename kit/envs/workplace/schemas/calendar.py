"""The calendar tools' schemas."""

from kit.envs.workplace.schemas.spec import TIME_FORMAT, Param, ToolSpec, paging_params

CALENDAR_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "calendar_get_event_information_by_id",
        "calendar",
        False,
        "Reads one field of the calendar event with the given ID.",
        "Read one field of an event.",
        (
            Param("event_id", "string", "The 8-digit ID of the event.", "8-digit id", True),
            Param(
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
            Param("query", "string", "Words to look for in the event name or participant email.", "words"),
            Param(
                "time_min",
                "string",
                f"Only events ending at or after this time. {TIME_FORMAT}",
                "YYYY-MM-DD HH:MM:SS",
            ),
            Param(
                "time_max",
                "string",
                f"Only events starting at or before this time. {TIME_FORMAT}",
                "YYYY-MM-DD HH:MM:SS",
            ),
            *paging_params("events"),
        ),
    ),
    ToolSpec(
        "calendar_create_event",
        "calendar",
        True,
        "Adds an event to the calendar. Meetings may not start before 9am or end after 6pm.",
        "Create an event (between 9am and 6pm).",
        (
            Param("event_name", "string", "The title of the event.", required=True),
            Param("participant_email", "string", "The participant's email address.", "email address", True),
            Param(
                "event_start", "string", f"When the event starts. {TIME_FORMAT}", "YYYY-MM-DD HH:MM:SS", True
            ),
            Param("duration", "string", "Length of the event in minutes, e.g. '30'.", "minutes", True),
        ),
    ),
    ToolSpec(
        "calendar_delete_event",
        "calendar",
        True,
        "Removes the event with the given ID from the calendar.",
        "Delete an event.",
        (Param("event_id", "string", "The 8-digit ID of the event to delete.", "8-digit id", True),),
    ),
    ToolSpec(
        "calendar_update_event",
        "calendar",
        True,
        "Changes one field of the event with the given ID. Meetings may not start before 9am or end "
        "after 6pm.",
        "Change one field of an event.",
        (
            Param("event_id", "string", "The 8-digit ID of the event.", "8-digit id", True),
            Param(
                "field",
                "string",
                "The field to change: 'event_name', 'participant_email', 'event_start' or 'duration'.",
                "event_name|participant_email|event_start|duration",
                True,
            ),
            Param("new_value", "string", "The new value for that field.", required=True),
        ),
    ),
)
