"""Semantics of the kit's tool set (``env.tool_messages: kit``) on a small hand-made state, and the checks
every call goes through. NeMo-Gym's tool set, the default, is tested against NeMo-Gym's own server in
test_workplace_vs_nemo_gym.py and without it in test_workplace_gym_tools.py."""

from __future__ import annotations

import json

import pytest

from kit.envs.workplace.sandbox import WorkplaceSandbox
from kit.envs.workplace.state import NOW, WorkplaceState

DIRECTORY = ["ana.lima@atlas.com", "ben.okafor@atlas.com", "anand.rao@atlas.com"]


def _email(email_id: str, sender: str, subject: str, sent: str, body: str) -> dict[str, str]:
    return {
        "email_id": email_id,
        "inbox/outbox": "inbox",
        "sender/recipient": sender,
        "subject": subject,
        "sent_datetime": sent,
        "body": body,
    }


def _event(event_id: str, name: str, who: str, start: str, minutes: str) -> dict[str, str]:
    return {
        "event_id": event_id,
        "event_name": name,
        "participant_email": who,
        "event_start": start,
        "duration": minutes,
    }


@pytest.fixture()
def sandbox() -> WorkplaceSandbox:
    state = WorkplaceState.from_rows(
        emails=[
            _email(
                "00000003", "ana.lima@atlas.com", "Budget review", "2023-11-01 09:00:00", "Numbers attached."
            ),
            _email(
                "00000007", "ben.okafor@atlas.com", "Budget review", "2023-11-05 10:00:00", "My budget notes."
            ),
            _email("00000001", "ana.lima@atlas.com", "Lunch", "2023-11-20 12:00:00", "Pizza on the budget?"),
            _email("00000002", "anand.rao@atlas.com", "Offsite", "2023-11-21 12:00:00", "Venue ideas."),
        ],
        calendar=[
            _event("00000004", "Design sync", "ana.lima@atlas.com", "2023-12-01 09:00:00", "60"),
            _event("00000009", "budget check-in", "ben.okafor@atlas.com", "2023-12-01 16:00:00", "90"),
            _event("00000002", "Design review", "ana.lima@atlas.com", "2023-12-04 11:00:00", "30"),
        ],
        tasks=[
            {
                "task_id": "00000005",
                "task_name": "Fix login form",
                "assigned_to_email": "ana.lima@atlas.com",
                "list_name": "Backlog",
                "due_date": "2023-12-01",
                "board": "Front end",
            },
            {
                "task_id": "00000006",
                "task_name": "Write login tests",
                "assigned_to_email": "ben.okafor@atlas.com",
                "list_name": "In Review",
                "due_date": "2023-12-02",
                "board": "Back end",
            },
        ],
        customers=[
            {
                "customer_id": "00000010",
                "assigned_to_email": "ben.okafor@atlas.com",
                "customer_name": "Kim Stone",
                "customer_email": "kim.stone@acme.com",
                "customer_phone": "",
                "last_contact_date": "2023-11-01 23:59:00",
                "product_interest": "Software",
                "status": "Lead",
                "follow_up_by": "2023-12-01 23:59:00",
                "notes": "",
            },
        ],
        analytics=[
            {
                "date_of_visit": "2023-11-01",
                "visitor_id": "0042",
                "page_views": "3",
                "session_duration_seconds": "10",
                "traffic_source": "direct",
                "user_engaged": "False",
            },
            {
                "date_of_visit": "2023-11-02",
                "visitor_id": "0042",
                "page_views": "9",
                "session_duration_seconds": "30",
                "traffic_source": "referral",
                "user_engaged": "True",
            },
            {
                "date_of_visit": "2023-11-02",
                "visitor_id": "0777",
                "page_views": "1",
                "session_duration_seconds": "2",
                "traffic_source": "direct",
                "user_engaged": "False",
            },
        ],
        directory=DIRECTORY,
    )
    return WorkplaceSandbox(state, tool_messages="kit")


def _ok(sandbox: WorkplaceSandbox, tool: str, /, **arguments: object) -> str:
    observation = sandbox.call(tool, arguments)
    assert not observation.startswith("Error:"), observation
    return observation


def _error(sandbox: WorkplaceSandbox, name: str, arguments: object) -> str:
    before = sandbox.snapshot()
    observation = sandbox.call(name, arguments)
    assert observation.startswith("Error:"), observation
    assert sandbox.snapshot() == before
    return observation


def _results(observation: str) -> list[str]:
    return [row[next(iter(row))] for row in json.loads(observation)["results"]]


# --- email --------------------------------------------------------------------------------------------------


def test_search_needs_every_word_somewhere_and_lists_newest_first(sandbox: WorkplaceSandbox) -> None:
    assert _results(_ok(sandbox, "email_search_emails", query="budget")) == [
        "00000001",
        "00000007",
        "00000003",
    ]
    # "ana" only occurs in senders, "budget" in subjects or bodies: both must match, in any field.
    assert _results(_ok(sandbox, "email_search_emails", query="ANA budget")) == ["00000001", "00000003"]
    assert _results(_ok(sandbox, "email_search_emails", query="budget venue")) == []


def test_search_filters_by_date_and_pages(sandbox: WorkplaceSandbox) -> None:
    found = _ok(sandbox, "email_search_emails", query="budget", date_min="2023-11-02", date_max="2023-11-20")
    assert _results(found) == ["00000001", "00000007"]
    page = json.loads(_ok(sandbox, "email_search_emails", page=2, page_size=3))
    assert (page["total"], page["page"], page["page_size"]) == (4, 2, 3)
    assert [r["email_id"] for r in page["results"]] == ["00000003"]
    assert "YYYY-MM-DD" in _error(sandbox, "email_search_emails", {"date_min": "11/02/2023"})
    assert "page_size" in _error(sandbox, "email_search_emails", {"page_size": 0})


def test_send_creates_an_outbox_email_with_the_next_id(sandbox: WorkplaceSandbox) -> None:
    _ok(sandbox, "email_send_email", recipient="Kim.Stone@ACME.com", subject="Hello", body="Hi Kim")
    assert sandbox.snapshot()["emails"][-1] == (
        "00000008",
        "outbox",
        "kim.stone@acme.com",
        "hello",
        NOW,
        "hi kim",
    )
    _ok(sandbox, "email_send_email", recipient="ben.okafor@atlas.com", subject="Again", body="Hi Ben")
    assert sandbox.state.emails.get("00000009")["subject"] == "Again"
    assert "email address" in _error(
        sandbox, "email_send_email", {"recipient": "ben", "subject": "s", "body": "b"}
    )
    assert "must not be empty" in _error(
        sandbox, "email_send_email", {"recipient": "ben.okafor@atlas.com", "subject": " ", "body": "b"}
    )


def test_reply_goes_to_the_sender_under_the_same_subject(sandbox: WorkplaceSandbox) -> None:
    assert "00000008" in _ok(sandbox, "email_reply_email", email_id="00000007", body="Thanks!")
    reply = sandbox.state.emails.get("00000008")
    assert dict(reply) == {
        "email_id": "00000008",
        "inbox/outbox": "outbox",
        "sender/recipient": "ben.okafor@atlas.com",
        "subject": "Budget review",
        "sent_datetime": NOW,
        "body": "Thanks!",
    }
    assert "00000099" in _error(sandbox, "email_reply_email", {"email_id": "00000099", "body": "x"})


def test_forward_copies_the_body_under_fw_subject(sandbox: WorkplaceSandbox) -> None:
    _ok(sandbox, "email_forward_email", email_id="00000002", recipient="ana.lima@atlas.com")
    forwarded = sandbox.state.emails.get("00000008")
    assert (forwarded["subject"], forwarded["body"]) == ("FW: Offsite", "Venue ideas.")
    assert forwarded["sender/recipient"] == "ana.lima@atlas.com"


def test_delete_and_get_information(sandbox: WorkplaceSandbox) -> None:
    assert json.loads(
        _ok(sandbox, "email_get_email_information_by_id", email_id="00000002", field="subject")
    ) == {"subject": "Offsite"}
    message = _error(
        sandbox, "email_get_email_information_by_id", {"email_id": "00000002", "field": "sender"}
    )
    assert "'sender/recipient'" in message
    _ok(sandbox, "email_delete_email", email_id="00000002")
    assert "00000002" not in sandbox.state.emails
    _error(sandbox, "email_delete_email", {"email_id": "00000002"})


# --- calendar -----------------------------------------------------------------------------------------------


def test_meetings_must_fit_between_9am_and_6pm(sandbox: WorkplaceSandbox) -> None:
    event = {"event_name": "Sync", "participant_email": "ana.lima@atlas.com", "duration": "60"}
    assert "9am" in _error(sandbox, "calendar_create_event", {**event, "event_start": "2023-12-05 08:30:00"})
    _error(sandbox, "calendar_create_event", {**event, "event_start": "2023-12-05 17:30:00"})
    assert "00000010" in _ok(
        sandbox, "calendar_create_event", **{**event, "event_start": "2023-12-05 17:00:00"}
    )
    assert "9am" in _error(
        sandbox, "calendar_update_event", {"event_id": "00000009", "field": "duration", "new_value": "150"}
    )
    _error(
        sandbox,
        "calendar_update_event",
        {"event_id": "00000004", "field": "event_start", "new_value": "2023-12-01 08:00:00"},
    )
    _ok(sandbox, "calendar_update_event", event_id="00000009", field="duration", new_value="120")
    assert sandbox.state.calendar.get("00000009")["duration"] == "120"


def test_event_values_are_checked(sandbox: WorkplaceSandbox) -> None:
    base = {
        "event_name": "Sync",
        "participant_email": "ana.lima@atlas.com",
        "event_start": "2023-12-05 10:00:00",
    }
    assert "minutes" in _error(sandbox, "calendar_create_event", {**base, "duration": "half an hour"})
    assert "HH:MM:SS" in _error(
        sandbox, "calendar_create_event", {**base, "event_start": "2023-12-05", "duration": "30"}
    )
    assert "'event_name'" in _error(
        sandbox, "calendar_update_event", {"event_id": "00000004", "field": "event_id", "new_value": "1"}
    )


def test_event_search_matches_words_and_time_window(sandbox: WorkplaceSandbox) -> None:
    assert _results(_ok(sandbox, "calendar_search_events", query="design ana")) == ["00000004", "00000002"]
    # time_min bounds the end of an event: the 16:00 + 90 min check-in ends at 17:30.
    window = _ok(sandbox, "calendar_search_events", time_min="2023-12-01 17:00:00", time_max="2023-12-01")
    assert _results(window) == ["00000009"]
    assert _results(_ok(sandbox, "calendar_search_events", query="BUDGET")) == ["00000009"]


# --- project management -------------------------------------------------------------------------------------


def test_task_updates_validate_field_and_value(sandbox: WorkplaceSandbox) -> None:
    update = {"task_id": "00000005", "field": "list_name"}
    message = _error(sandbox, "project_management_update_task", {**update, "new_value": "Done"})
    assert "'Backlog', 'In Progress', 'In Review', 'Completed'" in message
    # NeMo-Gym's tool refuses another spelling, and compares list_name case-sensitively.
    assert "write 'In Review'" in _error(
        sandbox, "project_management_update_task", {**update, "new_value": "in review"}
    )
    _ok(sandbox, "project_management_update_task", **update, new_value="In Review")
    assert sandbox.state.tasks.get("00000005")["list_name"] == "In Review"
    assert "field" in _error(
        sandbox, "project_management_update_task", {**update, "field": "owner", "new_value": "x"}
    )
    assert "company directory" in _error(
        sandbox,
        "project_management_update_task",
        {"task_id": "00000005", "field": "assigned_to_email", "new_value": "someone@else.com"},
    )
    assert "YYYY-MM-DD" in _error(
        sandbox,
        "project_management_update_task",
        {"task_id": "00000005", "field": "due_date", "new_value": "soon"},
    )
    _error(
        sandbox, "project_management_update_task", {"task_id": "123", "field": "board", "new_value": "Design"}
    )


def test_task_search_and_create(sandbox: WorkplaceSandbox) -> None:
    assert "at least one" in _error(sandbox, "project_management_search_tasks", {})
    found = json.loads(
        _ok(sandbox, "project_management_search_tasks", task_name="login", assigned_to_email="ben")
    )
    assert [t["task_id"] for t in found] == ["00000006"]
    assert (
        json.loads(_ok(sandbox, "project_management_search_tasks", board="front END"))[0]["task_id"]
        == "00000005"
    )
    _ok(
        sandbox,
        "project_management_create_task",
        task_name="New",
        assigned_to_email="ANA.lima@atlas.com",
        list_name="Backlog",
        due_date="2023-12-08",
        board="Design",
    )
    assert sandbox.state.tasks.get("00000007")["assigned_to_email"] == "ana.lima@atlas.com"
    task = {"task_name": "X", "assigned_to_email": "ben.okafor@atlas.com", "due_date": "2023-12-08"}
    assert "write 'Design'" in _error(
        sandbox, "project_management_create_task", {**task, "list_name": "Backlog", "board": "design"}
    )
    assert "write 'Backlog'" in _error(
        sandbox, "project_management_create_task", {**task, "list_name": "backlog ", "board": "Design"}
    )


# --- customer relationship manager --------------------------------------------------------------------------


def test_customer_updates_validate_and_normalise(sandbox: WorkplaceSandbox) -> None:
    update = {"customer_id": "00000010"}
    crm_update = "customer_relationship_manager_update_customer"
    assert "'Qualified', 'Won', 'Lost', 'Lead', 'Proposal'" in _error(
        sandbox, crm_update, {**update, "field": "status", "new_value": "Done"}
    )
    # NeMo-Gym's update refuses a status or product spelt in another case (and compares status
    # case-sensitively), so "won" would score 0 there: it is refused here too.
    for field, value, canonical in (("status", "won", "Won"), ("product_interest", "hardware", "Hardware")):
        message = _error(sandbox, crm_update, {**update, "field": field, "new_value": value})
        assert f"write '{canonical}'" in message
    assert sandbox.state.customers.get("00000010")["status"] != "Won"
    _ok(sandbox, crm_update, **update, field="status", new_value="Won")
    _ok(
        sandbox,
        "customer_relationship_manager_update_customer",
        **update,
        field="follow_up_by",
        new_value="2023-12-24",
    )
    customer = sandbox.state.customers.get("00000010")
    assert (customer["status"], customer["follow_up_by"]) == ("Won", "2023-12-24 23:59:00")
    _error(
        sandbox,
        "customer_relationship_manager_update_customer",
        {**update, "field": "product_interest", "new_value": "Cars"},
    )


def test_customer_search_and_add(sandbox: WorkplaceSandbox) -> None:
    found = _ok(
        sandbox,
        "customer_relationship_manager_search_customers",
        status="lead",
        follow_up_by_max="2023-12-01",
    )
    assert _results(found) == ["00000010"]
    assert _results(
        _ok(sandbox, "customer_relationship_manager_search_customers", customer_name="stone kim")
    ) == ["00000010"]
    _ok(
        sandbox,
        "customer_relationship_manager_add_customer",
        customer_name="Lee Park",
        assigned_to_email="ben.okafor@atlas.com",
        status="Qualified",
        product_interest="training",
    )
    added = sandbox.state.customers.get("00000011")
    # NeMo-Gym's add stores any product spelling and compares it case-insensitively.
    assert (added["product_interest"], added["customer_phone"], added["notes"]) == ("Training", "", "")
    customer = {"customer_name": "X", "assigned_to_email": "ben.okafor@atlas.com"}
    _error(sandbox, "customer_relationship_manager_add_customer", {**customer, "status": "Hot"})
    # Its add stores any status, but compares status case-sensitively: "qualified" never matches.
    assert "write 'Qualified'" in _error(
        sandbox, "customer_relationship_manager_add_customer", {**customer, "status": "qualified"}
    )


# --- analytics and directory --------------------------------------------------------------------------------


def test_analytics_counts_and_plots(sandbox: WorkplaceSandbox) -> None:
    assert json.loads(_ok(sandbox, "analytics_total_visits_count", time_min="2023-11-02")) == {
        "total_visits": 2
    }
    assert json.loads(_ok(sandbox, "analytics_engaged_users_count")) == {"engaged_users": 1}
    assert json.loads(_ok(sandbox, "analytics_traffic_source_count", traffic_source="direct"))["visits"] == 2
    assert json.loads(_ok(sandbox, "analytics_get_average_session_duration", time_max="2023-11-01")) == {
        "visits": 1,
        "average_session_duration_seconds": 10.0,
    }
    assert len(json.loads(_ok(sandbox, "analytics_get_visitor_information_by_id", visitor_id="0042"))) == 2
    _ok(
        sandbox,
        "analytics_create_plot",
        time_min="2023-11-01",
        time_max="2023-11-02",
        value_to_plot="total_visits",
        plot_type="bar",
    )
    assert sandbox.snapshot()["plots"] == ("plots/2023-11-01_2023-11-02_total_visits_bar.png",)
    _error(
        sandbox,
        "analytics_create_plot",
        {
            "time_min": "2023-11-03",
            "time_max": "2023-11-02",
            "value_to_plot": "total_visits",
            "plot_type": "bar",
        },
    )
    assert "'visits_direct'" in _error(
        sandbox,
        "analytics_create_plot",
        {"time_min": "2023-11-01", "time_max": "2023-11-02", "value_to_plot": "direct", "plot_type": "bar"},
    )
    plot = {"time_min": "2023-11-01", "time_max": "2023-11-02"}
    assert "write 'bar'" in _error(
        sandbox, "analytics_create_plot", {**plot, "value_to_plot": "total_visits", "plot_type": "Bar"}
    )
    assert "write 'total_visits'" in _error(
        sandbox, "analytics_create_plot", {**plot, "value_to_plot": "Total_Visits", "plot_type": "bar"}
    )


def test_directory_finds_names_and_fragments(sandbox: WorkplaceSandbox) -> None:
    assert json.loads(_ok(sandbox, "company_directory_find_email_address", name="Ben")) == [
        "ben.okafor@atlas.com"
    ]
    assert json.loads(_ok(sandbox, "company_directory_find_email_address", name="ana")) == [
        "ana.lima@atlas.com",
        "anand.rao@atlas.com",
    ]
    assert json.loads(_ok(sandbox, "company_directory_find_email_address", name="Anand Rao")) == [
        "anand.rao@atlas.com"
    ]
    _error(sandbox, "company_directory_find_email_address", {})


# --- the checks every call goes through ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("email_send", {}, "unknown tool 'email_send'; valid tools: company_directory_find_email_address"),
        ("email_delete_email", {}, "missing required argument(s) email_id"),
        ("email_delete_email", {"email_id": "00000001", "force": True}, "unexpected argument(s) force"),
        ("email_delete_email", {"email_id": 1}, "'email_id' must be a JSON string"),
        ("email_search_emails", {"page": "2"}, "'page' must be a JSON integer"),
        ("email_search_emails", {"page": True}, "'page' must be a JSON integer"),
        ("email_delete_email", '{"email_id": "00000001"', "not valid JSON"),
        ("email_delete_email", "[1, 2]", "must be a JSON object"),
        ("email_delete_email", {"email_id": None}, "missing required argument(s) email_id"),
        (None, {}, "unknown tool None"),
    ],
)
def test_bad_calls_return_errors_and_change_nothing(
    sandbox: WorkplaceSandbox, name: object, arguments: object, expected: str
) -> None:
    assert expected in _error(sandbox, name, arguments)  # type: ignore[arg-type]


def test_arguments_may_be_json_strings_and_nulls_mean_absent(sandbox: WorkplaceSandbox) -> None:
    assert "00000002" in _ok(sandbox, "email_delete_email", **json.loads('{"email_id": "00000002"}'))
    observation = sandbox.call("email_search_emails", '{"query": "venue", "date_min": null}')
    assert _results(observation) == []
    assert json.loads(sandbox.call("analytics_total_visits_count", None)) == {"total_visits": 3}
