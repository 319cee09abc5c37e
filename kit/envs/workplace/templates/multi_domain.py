"""Multi-domain templates: requests whose calls span toolkits, such as emailing a task's assignee."""

from __future__ import annotations

import random
from datetime import date

from kit.envs.workplace.generate_state import task_names
from kit.envs.workplace.state import Row
from kit.envs.workplace.templates.calendar import MEETINGS
from kit.envs.workplace.templates.customer_relationship_manager import find_customer
from kit.envs.workplace.templates.email import BODIES, SUBJECTS
from kit.envs.workplace.templates.helpers import (
    between,
    december_weekday,
    first_of,
    meeting_slot,
    spoken_date,
    spoken_time,
    stamp,
)
from kit.envs.workplace.templates.registry import Plan, Skip, World, template
from kit.envs.workplace.tools import BOARDS, PRODUCTS, STATUSES


@template("multi_domain", "medium", "cross_crm_calendar")
def meet_account_owner(rng: random.Random, world: World, plan: Plan) -> str:
    customer = find_customer(rng, world, plan)
    name, minutes = rng.choice(MEETINGS), rng.choice((30, 60))
    day, (hour, minute) = december_weekday(rng), meeting_slot(rng, minutes)
    plan.act(
        "calendar_create_event",
        event_name=name,
        participant_email=customer["assigned_to_email"],
        event_start=stamp(day, hour, minute),
        duration=str(minutes),
    )
    return (
        f"Schedule a {minutes}-minute '{name}' on {spoken_date(day)} at {spoken_time(hour, minute)} with "
        f"the account owner of {customer['customer_name']}."
    )


@template("multi_domain", "medium", "cross_pm_email")
def email_task_assignee(rng: random.Random, world: World, plan: Plan) -> str:
    task = rng.choice(world.named_tasks)
    found = plan.read(
        "project_management_search_tasks", task_name=task["task_name"], due_date=task["due_date"]
    )
    if len(found) != 1:
        raise Skip("not a single match")
    subject, body = rng.choice(SUBJECTS), rng.choice(BODIES)
    plan.act("email_send_email", recipient=found[0]["assigned_to_email"], subject=subject, body=body)
    due = spoken_date(date.fromisoformat(task["due_date"]))
    return (
        f"Email whoever is assigned to the task '{task['task_name']}' due {due} with subject '{subject}' "
        f"and body '{body}'."
    )


@template("multi_domain", "medium", "cross_calendar_email")
def email_event_participant(rng: random.Random, world: World, plan: Plan) -> str:
    event = rng.choice(world.events)
    day = event["event_start"][:10]
    found = plan.read(
        "calendar_search_events", query=event["event_name"], time_min=f"{day} 00:00:00",
        time_max=f"{day} 23:59:59",
    )["results"]  # fmt: skip
    if len(found) != 1:
        raise Skip("not a single match")
    subject, body = rng.choice(SUBJECTS), rng.choice(BODIES)
    plan.act("email_send_email", recipient=found[0]["participant_email"], subject=subject, body=body)
    return (
        f"Send the person I'm meeting for '{event['event_name']}' on {spoken_date(date.fromisoformat(day))} "
        f"an email with subject '{subject}' and body '{body}'."
    )


def _latest_about(rng: random.Random, world: World, plan: Plan) -> Row:
    subject = rng.choice(world.emails)["subject"]
    found = plan.read("email_search_emails", query=subject)["results"]
    if not found or found[0]["subject"] != subject:
        raise Skip("newest match has another subject")
    return found[0]


@template("multi_domain", "medium", "cross_email_pm")
def task_for_sender(rng: random.Random, world: World, plan: Plan) -> str:
    email = _latest_about(rng, world, plan)
    name, board, day = rng.choice(task_names()), rng.choice(BOARDS), december_weekday(rng)
    plan.act(
        "project_management_create_task",
        task_name=name,
        assigned_to_email=email["sender/recipient"],
        list_name="Backlog",
        due_date=f"{day:%Y-%m-%d}",
        board=board,
    )
    return (
        f"Create a '{board}' task '{name}' in 'Backlog', due {day:%Y-%m-%d}, for the person who sent the "
        f"latest email about '{email['subject']}'."
    )


@template("multi_domain", "medium", "cross_email_calendar")
def meet_sender_about(rng: random.Random, world: World, plan: Plan) -> str:
    email = _latest_about(rng, world, plan)
    minutes, day = rng.choice((30, 60)), december_weekday(rng)
    hour, minute = meeting_slot(rng, minutes)
    plan.act(
        "calendar_create_event",
        event_name=email["subject"],
        participant_email=email["sender/recipient"],
        event_start=stamp(day, hour, minute),
        duration=str(minutes),
    )
    return (
        f"Schedule a {minutes}-minute meeting called '{email['subject']}' with whoever sent the latest email "
        f"about it, on {spoken_date(day)} at {spoken_time(hour, minute)}."
    )


@template("multi_domain", "hard", "cross_crm_email")
def email_portfolio(rng: random.Random, world: World, plan: Plan) -> str:
    sample = rng.choice(world.customers)
    first = first_of(sample["assigned_to_email"])
    found = plan.read(
        "customer_relationship_manager_search_customers",
        assigned_to_email=plan.lookup(first),
        status=sample["status"],
        product_interest=sample["product_interest"],
    )["results"]
    subject, body = rng.choice(SUBJECTS), rng.choice(BODIES)
    for match in between(found, 1, 4):
        plan.act("email_send_email", recipient=match["customer_email"], subject=subject, body=body)
    return (
        f"Email each of {first}'s {sample['status']} customers interested in {sample['product_interest']} "
        f"with subject '{subject}' and body '{body}'."
    )


@template("multi_domain", "hard", "cross_pm_email")
def remind_due_tasks(rng: random.Random, world: World, plan: Plan) -> str:
    task = rng.choice(world.tasks)
    first, day = first_of(task["assigned_to_email"]), task["due_date"]
    who = plan.lookup(first)
    body = rng.choice(BODIES)
    for match in between(
        plan.read("project_management_search_tasks", assigned_to_email=who, due_date=day), 1, 4
    ):
        plan.act("email_send_email", recipient=who, subject=f"Reminder: {match['task_name']}", body=body)
    return (
        f"For each of {first}'s tasks due on {day}, send {first} an email with subject 'Reminder: ' followed "
        f"by the task name, and body '{body}'."
    )


@template("multi_domain", "hard", "cross_crm_calendar")
def pipeline_review_or_email(rng: random.Random, world: World, plan: Plan) -> str:
    first = rng.choice(world.sales)[0]
    status, product = rng.choice(STATUSES), rng.choice(PRODUCTS)
    who = plan.lookup(first)
    plan.needs("calendar", "email")
    found = plan.read(
        "customer_relationship_manager_search_customers",
        assigned_to_email=who,
        status=status,
        product_interest=product,
    )["results"]
    day, body = december_weekday(rng), rng.choice(BODIES)
    if found:
        plan.act(
            "calendar_create_event",
            event_name="Pipeline review",
            participant_email=who,
            event_start=stamp(day, 11, 0),
            duration="30",
        )
    else:
        plan.act("email_send_email", recipient=who, subject="Pipeline", body=body)
    first = first.capitalize()
    return (
        f"If {first} has any {status} customers interested in {product}, schedule a 30-minute 'Pipeline "
        f"review' with {first} on {day:%Y-%m-%d} at 11am; otherwise email {first} with subject 'Pipeline' "
        f"and body '{body}'."
    )


@template("multi_domain", "hard", "cross_analytics_email")
def traffic_report_or_plot(rng: random.Random, world: World, plan: Plan) -> str:
    day = rng.choice(world.visits)["date_of_visit"]
    threshold = rng.choice((8, 10, 12, 14))
    first = rng.choice(world.people)[0].capitalize()
    plan.needs("email", "company_directory")
    visits = plan.read("analytics_total_visits_count", time_min=day, time_max=day)["total_visits"]
    if visits > threshold:
        plan.act(
            "email_send_email",
            recipient=plan.lookup(first),
            subject="Traffic report",
            body=f"Traffic was high on {day}.",
        )
    else:
        plan.act(
            "analytics_create_plot", time_min=day, time_max=day, value_to_plot="total_visits", plot_type="bar"
        )
    return (
        f"If there were more than {threshold} visits on {day}, email {first} with subject 'Traffic report' "
        f"and body 'Traffic was high on {day}.'; otherwise create a bar plot of total_visits for that day."
    )
