"""The workplace state: generated data, copy-on-write isolation, comparison, CSV loading, diffs."""

from __future__ import annotations

import re
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from kit.envs.workplace.generate_state import DOMAIN, default_state, generate_state
from kit.envs.workplace.sandbox import TOOL_SETS, WorkplaceSandbox
from kit.envs.workplace.state import (
    ANALYTICS_COLUMNS,
    CALENDAR_COLUMNS,
    CUSTOMER_COLUMNS,
    EMAIL_COLUMNS,
    TASK_COLUMNS,
    load_csv_dir,
    state_diff,
)


def test_generated_state_is_seeded_and_sized_like_the_reference() -> None:
    state = generate_state(0)
    assert generate_state(0).snapshot() == state.snapshot()
    assert generate_state(1).snapshot() != state.snapshot()
    sizes = (
        len(state.emails),
        len(state.calendar),
        len(state.tasks),
        len(state.customers),
        len(state.analytics),
    )
    assert sizes == (500, 300, 300, 200, 1000)
    assert len(state.directory) == 20 and all(a.endswith("@" + DOMAIN) for a in state.directory)


def test_generated_rows_have_the_reference_columns_and_valid_values() -> None:
    state = default_state()
    for table, columns in (
        (state.emails, EMAIL_COLUMNS),
        (state.calendar, CALENDAR_COLUMNS),
        (state.tasks, TASK_COLUMNS),
        (state.customers, CUSTOMER_COLUMNS),
    ):
        ids = [row[columns[0]] for row in table.rows()]
        assert all(re.fullmatch(r"[0-9]{8}", i) for i in ids) and len(set(ids)) == len(ids)
        assert all(tuple(row) == columns for row in table.rows())
    assert all(tuple(row) == ANALYTICS_COLUMNS for row in state.analytics)
    for event in state.calendar.rows():
        start = datetime.strptime(event["event_start"], "%Y-%m-%d %H:%M:%S")
        end = start + timedelta(minutes=int(event["duration"]))
        assert start.hour >= 9 and (end.hour, end.minute) <= (18, 0) and end.date() == start.date()
    assert all(e["sent_datetime"] <= state.now for e in state.emails.rows())
    owners = {c["assigned_to_email"] for c in state.customers.rows()} | {
        t["assigned_to_email"] for t in state.tasks.rows()
    }
    assert owners <= set(state.directory)


@pytest.mark.parametrize("tools", TOOL_SETS)
def test_copies_are_isolated_and_leave_the_base_untouched(tools: str) -> None:
    base = WorkplaceSandbox(tool_messages=tools)
    before = base.snapshot()
    first, second = base.copy(), base.copy()
    first.call("email_delete_email", {"email_id": next(iter(base.state.emails.rows()))["email_id"]})
    first.call(
        "analytics_create_plot",
        {
            "time_min": "2023-11-01",
            "time_max": "2023-11-02",
            "value_to_plot": "total_visits",
            "plot_type": "bar",
        },
    )
    assert base.snapshot() == before == second.snapshot()
    assert first.snapshot() != before
    assert WorkplaceSandbox(tool_messages=tools).snapshot() == before
    if tools == "kit":
        assert default_state().snapshot() == before
    # A copy of a modified sandbox starts from its state and diverges independently.
    third = first.copy()
    third.call("email_send_email", {"recipient": "a@b.com", "subject": "s", "body": "b"})
    assert len(third.state.emails) == len(first.state.emails) + 1


@pytest.mark.parametrize("tools", TOOL_SETS)
def test_copies_are_cheap(tools: str) -> None:
    base = WorkplaceSandbox(tool_messages=tools)
    start = time.perf_counter()
    for _ in range(10_000):
        base.copy()
    assert time.perf_counter() - start < 2.0


def _send(sandbox: WorkplaceSandbox, to: str, subject: str) -> None:
    assert not sandbox.call("email_send_email", {"recipient": to, "subject": subject, "body": "b"}).refused


def test_kit_same_state_ignores_creation_order_and_case_outside_enum_columns() -> None:
    base = WorkplaceSandbox(tool_messages="kit")
    one, two = base.copy(), base.copy()
    _send(one, "a@b.com", "First")
    _send(one, "c@d.com", "Second")
    _send(two, "c@d.com", "SECOND")
    _send(two, "a@b.com", "first")
    assert one.same_state(two) and one.snapshot() != two.snapshot()
    _send(two, "a@b.com", "third")
    assert not one.same_state(two)


def test_kit_enum_columns_compare_case_sensitively() -> None:
    base = WorkplaceSandbox(tool_messages="kit")
    one, two = base.copy(), base.copy()
    row = dict(next(iter(base.state.tasks.rows())))
    one.state.tasks.replace({**row, "list_name": "Backlog"})
    two.state.tasks.replace({**row, "list_name": "backlog"})
    assert not one.same_state(two)
    one.state.tasks.replace({**row, "task_name": row["task_name"].upper()})
    two.state.tasks.replace({**row, "task_name": row["task_name"].lower()})
    assert one.same_state(two)


def test_nemo_gym_same_state_compares_rows_in_order_as_its_verify_does() -> None:
    base = WorkplaceSandbox()
    one, two = base.copy(), base.copy()
    _send(one, "a@b.com", "First")
    _send(one, "c@d.com", "Second")
    _send(two, "c@d.com", "SECOND")
    _send(two, "a@b.com", "first")
    assert not one.same_state(two)  # the new rows stand in another order (and hold other ids)
    three = base.copy()
    _send(three, "A@B.com", "FIRST")
    _send(three, "c@d.com", "second")
    assert one.same_state(three)  # case does not matter outside status, list_name and board


def test_nemo_gym_enum_columns_compare_case_sensitively() -> None:
    base = WorkplaceSandbox()
    add = "customer_relationship_manager_add_customer"
    owner = next(iter(base.state.customers.rows()))["assigned_to_email"]
    one, two = base.copy(), base.copy()
    one.call(add, {"customer_name": "Ada", "assigned_to_email": owner, "status": "Won"})
    two.call(add, {"customer_name": "ADA", "assigned_to_email": owner, "status": "won"})
    assert not one.same_state(two)
    three = base.copy()
    three.call(add, {"customer_name": "ada", "assigned_to_email": owner.upper(), "status": "Won"})
    assert one.same_state(three)


def test_nemo_gym_index_labels_count_as_its_verify_counts_them() -> None:
    # An email sent after a delete relabels the table (pandas concat with ignore_index); sent before it,
    # the deleted row's label stays missing: the same rows, yet NeMo-Gym scores them apart.
    base = WorkplaceSandbox()
    first = next(iter(base.state.emails.rows()))["email_id"]
    one, two = base.copy(), base.copy()
    one.call("email_delete_email", {"email_id": first})
    _send(one, "a@b.com", "New")
    _send(two, "a@b.com", "New")
    two.call("email_delete_email", {"email_id": first})
    assert one.snapshot()["emails"][2] == two.snapshot()["emails"][2]
    assert not one.same_state(two)


def test_kit_a_reused_id_does_not_stand_for_the_deleted_row() -> None:
    base = WorkplaceSandbox(tool_messages="kit")
    last = max(row["email_id"] for row in base.state.emails.rows())
    kept = dict(base.state.emails.get(last))
    recreated = base.copy()
    recreated.call("email_delete_email", {"email_id": last})
    _send(recreated, kept["sender/recipient"], kept["subject"])
    assert recreated.state.emails.get(last) is not None  # the new email got the freed id
    assert not recreated.same_state(base.copy())


@pytest.mark.parametrize("tools", TOOL_SETS)
def test_unchanged_values_compare_equal_after_writes(tools: str) -> None:
    base = WorkplaceSandbox(tool_messages=tools)
    task = next(iter(base.state.tasks.rows()))
    rewritten = base.copy()
    rewritten.call(
        "project_management_update_task",
        {"task_id": task["task_id"], "field": "task_name", "new_value": task["task_name"].upper()},
    )
    assert rewritten.same_state(base.copy())


@pytest.mark.parametrize("tools", TOOL_SETS)
def test_states_built_separately_compare_by_content(tools: str) -> None:
    one, two = (WorkplaceSandbox(generate_state(0), tool_messages=tools) for _ in range(2))
    assert one.same_state(two)
    _send(one, "a@b.com", "New")
    assert not one.same_state(two)
    _send(two, "A@B.com", "NEW")
    assert one.same_state(two)


def test_load_csv_dir_reports_missing_files_and_columns(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="emails.csv"):
        load_csv_dir(tmp_path)
    for name in (
        "emails",
        "calendar_events",
        "analytics_data",
        "project_tasks",
        "customer_relationship_manager_data",
    ):
        (tmp_path / f"{name}.csv").write_text("only_column\nx\n", encoding="utf-8")
    (tmp_path / "email_addresses.csv").write_text("a@atlas.com\nb@atlas.com", encoding="utf-8")
    with pytest.raises(ValueError, match="missing column"):
        load_csv_dir(tmp_path)
    header = ",".join(CALENDAR_COLUMNS)
    (tmp_path / "calendar_events.csv").write_text(f"{header}\n1,a,b,c,30\n1,d,e,f,60\n", encoding="utf-8")
    for name, columns in (
        ("emails", EMAIL_COLUMNS),
        ("analytics_data", ANALYTICS_COLUMNS),
        ("project_tasks", TASK_COLUMNS),
        ("customer_relationship_manager_data", CUSTOMER_COLUMNS),
    ):
        (tmp_path / f"{name}.csv").write_text(",".join(columns) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="duplicate event_id"):
        load_csv_dir(tmp_path)


@pytest.mark.parametrize("tools", TOOL_SETS)
def test_state_diff_lists_added_removed_and_changed_rows(tools: str) -> None:
    base = WorkplaceSandbox(tool_messages=tools)
    task = next(iter(base.state.tasks.rows()))
    after = base.copy()
    after.call(
        "project_management_update_task",
        {
            "task_id": task["task_id"],
            "field": "board",
            "new_value": "Design" if task["board"] != "Design" else "Back end",
        },
    )
    after.call("email_delete_email", {"email_id": next(iter(base.state.emails.rows()))["email_id"]})
    _send(after, "a@b.com", "New")
    lines = state_diff(base.state, after.state)
    assert [" ".join(line.split()[:2]) for line in lines] == [
        "emails: removed",
        "emails: added",
        "tasks: changed",
    ]
    assert state_diff(base.state, base.copy().state) == []
