"""Hand-written call sequences at the corners of NeMo-Gym's workplace tools, on NeMo-Gym's databases
(they name its records): what the fuzzer reaches only by luck. Each is a regression case of the
differential test; the comment says what it pins down."""

from __future__ import annotations

from typing import Any

from kit.testing.fuzz.workplace_calls import Call

CRM = "customer_relationship_manager_"
ADD: Call = (
    CRM + "add_customer",
    {"customer_name": "Ada", "assigned_to_email": "raj.patel@atlas.com", "status": "Lead"},
)
SEND: Call = ("email_send_email", {"recipient": "a@b.com", "subject": "s", "body": "b"})
EVENT = {
    "event_name": "e",
    "participant_email": "p@q.com",
    "event_start": "2023-12-01 10:00:00",
    "duration": "30",
}


def _call(tool: str, /, **arguments: Any) -> Call:
    return tool, arguments


EDGE_SEQUENCES: list[list[Call]] = [
    # A customer added without an email makes the column hold a missing value: searching it then fails.
    [
        ADD,
        _call(CRM + "search_customers", customer_email="a"),
        _call(CRM + "search_customers", customer_name="Ada"),
        _call(CRM + "search_customers", last_contact_date_min="2023-11-01"),
    ],
    # The average over all dates turns the table's durations into floats, which later look-ups show.
    [
        _call("analytics_get_average_session_duration"),
        _call("analytics_get_visitor_information_by_id", visitor_id="0860"),
        _call("analytics_engaged_users_count"),
        _call("analytics_get_visitor_information_by_id", visitor_id="0860"),
    ],
    # Sent emails share one timestamp: the order of ties in the newest-first sort.
    [
        SEND,
        ("email_send_email", {"recipient": "c@d.com", "subject": "two", "body": "b"}),
        _call("email_search_emails", query="", page_size=3),
        _call("email_search_emails", query="b", page_size=3),
        _call("email_search_emails", page_size=600),
    ],
    # A time zone in an event's start: comparing it with a plain time fails.
    [
        _call("calendar_create_event", **{**EVENT, "event_start": "2023-12-01T10:00:00Z"}),
        _call("calendar_search_events", time_min="2023-11-01"),
        _call("calendar_search_events", query="^e$"),
    ],
    # A task id changed into another's: two rows share it.
    [
        _call("project_management_update_task", task_id="00000001", field="task_id", new_value="00000002"),
        _call("project_management_get_task_information_by_id", task_id="00000002", field="task_name"),
        _call("project_management_search_tasks", task_name="a", board="Design"),
        _call("project_management_delete_task", task_id="00000002"),
        _call(
            "project_management_create_task",
            task_name="t",
            assigned_to_email="raj.patel@atlas.com",
            list_name="Backlog",
            due_date="2023-12-01",
            board="Design",
        ),
    ],
    # Values that are not strings, written into a string column.
    [
        _call("calendar_update_event", event_id="00000013", field="duration", new_value=45),
        _call("calendar_update_event", event_id="00000013", field="event_name", new_value=["a"]),
        _call("calendar_update_event", event_id="00000013", field="event_name", new_value={"a": 1, "b": 2}),
        _call("calendar_get_event_information_by_id", event_id="00000013", field="event_name"),
    ],
    # An event created with numbers: the columns become object columns, then take lists and dicts.
    [
        _call(
            "calendar_create_event",
            event_name=5,
            participant_email="A@B.com",
            event_start=1700000000000000000,
            duration=30.7,
        ),
        _call("calendar_search_events", query="a"),
        _call("calendar_search_events", query=""),
        _call("calendar_get_event_information_by_id", event_id="00000300", field="event_start"),
        _call("calendar_update_event", event_id="00000300", field="event_name", new_value=[7]),
        _call("calendar_get_event_information_by_id", event_id="00000300", field="event_name"),
        _call("calendar_update_event", event_id="00000300", field="event_name", new_value={"a": 7}),
        _call("calendar_get_event_information_by_id", event_id="00000300", field="event_name"),
    ],
    [
        _call(CRM + "add_customer", customer_name=5, assigned_to_email="x@y.com", status=["Won"], notes=None),
        _call(CRM + "search_customers", customer_name="a"),
        _call(CRM + "search_customers", status="Won"),
        _call(CRM + "search_customers", follow_up_by_max="2024"),
        _call(CRM + "update_customer", customer_id="00000200", field="customer_name", new_value=[3]),
        _call(CRM + "search_customers", customer_id="x"),
        _call(CRM + "search_customers", assigned_to_email="x@y"),
    ],
    # Patterns pyarrow's RE2 cannot run go to Python's re; others fail in RE2's words.
    [
        _call(CRM + "search_customers", customer_name="(?=a)j"),
        _call(CRM + "search_customers", customer_name=r"\s"),
        _call(CRM + "search_customers", customer_name="\\"),
        _call("company_directory_find_email_address", name="a|b"),
        _call("company_directory_find_email_address", name="("),
        _call("company_directory_find_email_address", name=5),
        _call("company_directory_find_email_address", name="İ"),
    ],
    # An id that is not a number: the next new id cannot be computed.
    [
        _call(CRM + "update_customer", customer_id="00000189", field="customer_id", new_value="abc"),
        ADD,
        _call(CRM + "delete_customer", customer_id="abc"),
        ADD,
    ],
    # Page arithmetic on odd page numbers and sizes.
    [
        _call("email_search_emails", page_size=0),
        _call("email_search_emails", page_size="2"),
        _call("email_search_emails", page_size=2.5),
        _call("email_search_emails", page_size=-1),
        _call("email_search_emails", page=True, page_size=True),
        _call("calendar_search_events", page_size=0),
        _call(CRM + "search_customers", status="Lost", page="2"),
        _call(CRM + "search_customers", status="x", page_size=0),
    ],
    # Recipients that are not strings.
    [
        _call("email_forward_email", email_id="00000373", recipient=["@", "."]),
        _call("email_send_email", recipient=5, subject="s", body="b"),
        _call("email_send_email", recipient={"@": 1, ".": 1}, subject="s", body="b"),
        _call("email_send_email", recipient="a@b.c", subject=["s"], body={"b": 1}),
        _call("email_search_emails", query="[1]"),
        _call("email_reply_email", email_id="00000500", body=7),
    ],
    # The assignee filter: a trailing newline passes its address check, the match ignores case.
    [
        _call("project_management_search_tasks", assigned_to_email="raj.patel@atlas.com\n"),
        _call("project_management_search_tasks", assigned_to_email=5),
        _call("project_management_search_tasks", assigned_to_email="RAJ.PATEL@atlas.com"),
        _call("project_management_search_tasks", due_date="2023-11-2[0-9]"),
    ],
    # Comparisons with lists and dicts: pandas' own errors, with the table's length.
    [
        _call("email_get_email_information_by_id", email_id=["x"], field="body"),
        _call("email_get_email_information_by_id", email_id="00000373", field=["body"]),
        _call("email_get_email_information_by_id", email_id="00000373", field=5),
        _call("project_management_get_task_information_by_id", task_id={"a": 1}, field="x"),
        _call("analytics_get_visitor_information_by_id", visitor_id=[1, 2]),
        _call("analytics_total_visits_count", time_min=5),
        _call("analytics_total_visits_count", time_min="2023-11-01", time_max=[1]),
        _call("analytics_traffic_source_count", traffic_source={"a": 1}),
    ],
    # Times pandas parses its own way: NaT, now, out of range.
    [
        _call("calendar_search_events", time_min="NaT"),
        _call("calendar_search_events", time_min="now"),
        _call("calendar_search_events", time_min="tomorrow"),
        _call("calendar_search_events", time_min=[1]),
        _call("email_search_emails", date_min="NaT"),
        _call("email_search_emails", date_max="99999-01-01"),
        _call("calendar_create_event", **{**EVENT, "event_start": "2262-05-01"}),
    ],
    # The case: an assignee with no task on the boards; numbers as task fields.
    [
        _call(
            "project_management_update_task",
            task_id="00000120",
            field="assigned_to_email",
            new_value="nadia.moreau@atlas.com",
        ),
        _call("project_management_update_task", task_id="00000149", field="due_date", new_value=5),
        _call("project_management_update_task", task_id="00000149", field=["board"], new_value="x"),
        _call(
            "project_management_create_task",
            task_name=5,
            assigned_to_email="raj.patel@atlas.com",
            list_name="Backlog",
            due_date=20231201,
            board="Design",
        ),
        _call("project_management_search_tasks", task_name="a"),
        _call("project_management_search_tasks", due_date="2"),
    ],
]

EDGE_REWARDS: list[tuple[str, list[Call], list[Call]]] = [
    ("creations in two tables, either order", [ADD, SEND], [SEND, ADD]),
    (
        "two emails in the other order",
        [SEND, ("email_send_email", {**SEND[1], "recipient": "c@d.com"})],
        [("email_send_email", {**SEND[1], "recipient": "c@d.com"}), SEND],
    ),
    ("notes null (verify keeps it) vs left out", [(ADD[0], {**ADD[1], "notes": None})], [ADD]),
    ("notes empty vs left out (both empty)", [(ADD[0], {**ADD[1], "notes": ""})], [ADD]),
    ("phone empty vs left out (missing)", [(ADD[0], {**ADD[1], "customer_phone": ""})], [ADD]),
    (
        "delete then send vs send then delete (index labels)",
        [_call("email_delete_email", email_id="00000373"), SEND],
        [SEND, _call("email_delete_email", email_id="00000373")],
    ),
    (
        "calendar: delete then create vs create then delete",
        [_call("calendar_delete_event", event_id="00000013"), _call("calendar_create_event", **EVENT)],
        [_call("calendar_create_event", **EVENT), _call("calendar_delete_event", event_id="00000013")],
    ),
    (
        "a customer added then deleted vs nothing (dtypes)",
        [ADD, _call(CRM + "delete_customer", customer_id="00000200")],
        [],
    ),
    (
        "duration 30 vs '30'",
        [_call("calendar_create_event", **{**EVENT, "duration": 30})],
        [_call("calendar_create_event", **{**EVENT, "event_name": "E"})],
    ),
    (
        "status Won vs won",
        [_call(CRM + "update_customer", customer_id="00000189", field="status", new_value="Won")],
        [_call(CRM + "update_customer", customer_id="00000189", field="status", new_value="won")],
    ),
    (
        "a name rewritten in capitals vs nothing",
        [
            _call(
                "project_management_update_task",
                task_id="00000149",
                field="task_name",
                new_value="ADD ANIMATION TO CAROUSEL",
            )
        ],
        [],
    ),
    (
        "plot paths differ in case",
        [
            _call(
                "analytics_create_plot",
                time_min="A",
                time_max="b",
                value_to_plot="total_visits",
                plot_type="bar",
            )
        ],
        [
            _call(
                "analytics_create_plot",
                time_min="a",
                time_max="B",
                value_to_plot="total_visits",
                plot_type="bar",
            )
        ],
    ),
    (
        "subjects 5 vs [5] (both NaN once lower-cased)",
        [("email_send_email", {**SEND[1], "subject": 5})],
        [("email_send_email", {**SEND[1], "subject": [5]})],
    ),
    (
        "İ vs its lower case",
        [("email_send_email", {**SEND[1], "subject": "İ"})],
        [("email_send_email", {**SEND[1], "subject": "i̇"})],
    ),
]
