"""Task templates: each turns random choices over the kit's state into a request and its ground truth.

A template writes the request and performs the ground-truth calls through a ``Plan``, which runs them on
its own sandbox: look-ups return what the real tools return, so the ground truth is right for the state
by construction, and a template whose choice turns out ambiguous or invalid raises ``Skip``.

Tiers: ``easy`` is one state-changing call with every argument spelled out; ``medium`` looks something up
(or works out a value) and then acts; ``hard`` acts on several records, across domains, or on a condition.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from kit.envs.workplace.generate_state import EMPLOYEES, address, task_names
from kit.envs.workplace.sandbox import WorkplaceSandbox
from kit.envs.workplace.schemas import STATE_CHANGING, toolkit_of
from kit.envs.workplace.state import NOW, Row, WorkplaceState
from kit.envs.workplace.tools import (
    BOARDS,
    LIST_NAMES,
    PLOT_TYPES,
    PLOT_VALUES,
    PRODUCTS,
    STATUSES,
    TRAFFIC_SOURCES,
)

CATEGORIES = (
    "email",
    "calendar",
    "analytics",
    "project_management",
    "customer_relationship_manager",
    "multi_domain",
)
TIERS = ("easy", "medium", "hard")


class Skip(Exception):
    """The random choices do not make a good task for this state; try other ones."""


@dataclass(frozen=True)
class GeneratedTask:
    """A generated task: request text, ground-truth calls and the toolkits they need."""

    category: str
    tier: str
    request: str
    calls: tuple[dict[str, str], ...]
    toolkits: tuple[str, ...]


class Plan:
    """Records ground-truth calls while running them on a private sandbox."""

    def __init__(self, base: WorkplaceSandbox) -> None:
        self.base = base
        self.sandbox = base.copy()
        self.calls: list[dict[str, str]] = []
        self.toolkits: set[str] = set()

    def _run(self, tool: str, arguments: dict[str, Any]) -> str:
        observation = self.sandbox.call(tool, arguments)
        if observation.startswith("Error:"):
            raise Skip(observation)
        self.calls.append({"name": tool, "arguments": json.dumps(arguments, ensure_ascii=False)})
        return observation

    def read(self, tool: str, /, **arguments: Any) -> Any:
        """Run a read-only tool and return its decoded JSON result."""
        return json.loads(self._run(tool, arguments))

    def act(self, tool: str, /, **arguments: Any) -> None:
        """Run a state-changing tool."""
        self._run(tool, arguments)

    def needs(self, *toolkits: str) -> None:
        """Declare toolkits the request may need beyond those of the calls made (the branch not taken)."""
        self.toolkits.update(toolkits)

    def lookup(self, first: str) -> str:
        """Find a colleague's address by first name, as the agent would."""
        found = self.read("company_directory_find_email_address", name=first.capitalize())
        if len(found) != 1:
            raise Skip(f"{first!r} is ambiguous in the directory")
        return found[0]


class World:
    """Read-only views of the base state that templates draw from."""

    def __init__(self, state: WorkplaceState) -> None:
        self.base = WorkplaceSandbox(state)
        self.emails = list(state.emails.rows())
        self.events = list(state.calendar.rows())
        self.tasks = list(state.tasks.rows())
        self.customers = list(state.customers.rows())
        self.visits = list(state.analytics)
        self.people = [(first, address(first, last), team) for first, last, team in EMPLOYEES]
        self.builders = [p for p in self.people if p[2] != "Sales"]
        self.sales = [p for p in self.people if p[2] == "Sales"]


Template = Callable[[random.Random, World, Plan], str]
TEMPLATES: dict[tuple[str, str], list[Template]] = {}


def template(category: str, tier: str) -> Callable[[Template], Template]:
    def register(fn: Template) -> Template:
        TEMPLATES.setdefault((category, tier), []).append(fn)
        return fn

    return register


def make_task(category: str, tier: str, rng: random.Random, world: World) -> GeneratedTask:
    """One task of the given cell from a randomly chosen template; raises Skip when the draw is unusable."""
    plan = Plan(world.base)
    request = rng.choice(TEMPLATES[(category, tier)])(rng, world, plan)
    if any(call["name"] in STATE_CHANGING for call in plan.calls) and plan.sandbox.same_state(world.base):
        raise Skip("the calls leave the state as it was")
    toolkits = plan.toolkits | {toolkit_of(call["name"]) for call in plan.calls}
    if category != "multi_domain":
        toolkits.add(category)
    if request.endswith(("!'.", ".'.", "?'.")):
        request = request[:-1]  # the quoted text already ends the sentence
    return GeneratedTask(
        category,
        tier,
        request,
        tuple(plan.calls),
        tuple(t for t in ("company_directory", *CATEGORIES) if t in toolkits),
    )


# --- shared vocabulary and helpers --------------------------------------------------------------------------

SUBJECTS = (
    "Quarterly numbers",
    "Lunch on Friday",
    "Design review notes",
    "Project kickoff",
    "Budget update",
    "Offsite agenda",
    "Interview schedule",
    "Release checklist",
    "Client visit next week",
    "Team survey results",
    "Holiday coverage",
    "Sprint demo",
    "Onboarding buddy",
    "Vendor invoice",
    "Security reminder",
    "Roadmap questions",
    "Expense report",
    "Training sign-up",
    "Maintenance window",
    "Welcome aboard",
)
BODIES = (
    "Please send me the latest figures by Monday.",
    "Thanks for all your help this week.",
    "Can we meet tomorrow at 10am?",
    "The draft is in the shared folder for your review.",
    "Let me know if you have any questions.",
    "Please confirm you can make it.",
    "Could you review this before Friday?",
    "Great work on the launch!",
    "Reminder: the deadline is next Wednesday.",
    "Happy to help if you need anything.",
    "Let's sync on this after the holidays.",
    "Please add your notes to the agenda.",
)
REPLIES = (
    "Thanks for the update, I will review it tomorrow.",
    "Sounds good, go ahead.",
    "Let's discuss this at our next one-on-one.",
    "Great work, thank you!",
    "Noted, thanks for letting me know.",
    "Can you send me more details?",
    "I will get back to you by Friday.",
    "Approved.",
)
MEETINGS = (
    "Design sync",
    "Budget check-in",
    "Project kickoff",
    "Hiring sync",
    "Roadmap review",
    "Demo dry run",
    "Career chat",
    "Launch planning",
    "Release retro",
    "Customer debrief",
    "Pipeline review",
    "Catch up",
)
NEW_CUSTOMERS = (
    "Alex Morgan",
    "Jordan Blake",
    "Sam Rivera",
    "Charlie Kim",
    "Robin Patel",
    "Jesse Ward",
    "Dana Fox",
    "Reese Cole",
    "Cameron Lee",
    "Hayden Cruz",
    "Peyton Shaw",
    "Elliot Park",
    "Marley Quinn",
    "Tatum Ross",
)
VALUE_WORDS = {
    "total_visits": "total visits",
    "session_duration_seconds": "session duration",
    "user_engaged": "engaged users",
    "visits_direct": "direct visits",
    "visits_referral": "referral visits",
    "visits_search_engine": "search engine visits",
    "visits_social_media": "social media visits",
}
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
TODAY = date.fromisoformat(NOW[:10])


def spoken_date(day: date) -> str:
    return f"{_MONTHS[day.month - 1]} {day.day}"


def spoken_time(hour: int, minute: int) -> str:
    suffix = "am" if hour < 12 else "pm"
    shown = hour if hour <= 12 else hour - 12
    return f"{shown}{suffix}" if minute == 0 else f"{shown}:{minute:02d}{suffix}"


def december_weekday(rng: random.Random) -> date:
    """A working day in the month after the sandbox's 'today'."""
    while True:
        day = date(2023, 12, rng.randrange(1, 30))
        if day.weekday() < 5:
            return day


def meeting_slot(rng: random.Random, minutes: int) -> tuple[int, int]:
    """A start (hour, minute) on the half hour such that the meeting ends by 6pm."""
    slot = rng.randrange(18, (18 * 60 - minutes) // 30 + 1)
    return divmod(30 * slot, 60)


def stamp(day: date, hour: int, minute: int) -> str:
    return f"{day:%Y-%m-%d} {hour:02d}:{minute:02d}:00"


def shifted(day_text: str, days: int) -> str:
    return f"{date.fromisoformat(day_text[:10]) + timedelta(days=days):%Y-%m-%d}"


def visit_range(rng: random.Random, longest: int = 30) -> tuple[str, str]:
    start = date(2023, 9, 1) + timedelta(days=rng.randrange(91))
    end = min(start + timedelta(days=rng.randrange(longest)), TODAY)
    return f"{start:%Y-%m-%d}", f"{end:%Y-%m-%d}"


def first_of(person_address: str) -> str:
    return person_address.split(".")[0].capitalize()


def other(rng: random.Random, options: tuple[str, ...] | list[Any], current: Any) -> Any:
    return rng.choice([o for o in options if o != current])


def between(results: list[Row], low: int, high: int) -> list[Row]:
    if not low <= len(results) <= high:
        raise Skip("wrong number of matches")
    return results


def only(results: list[Row], column: str, value: str) -> list[Row]:
    """The results, provided every one has ``value`` in ``column`` (else the request would be ambiguous)."""
    if any(row[column] != value for row in results):
        raise Skip(f"search also matches rows with another {column}")
    return results


# --- email --------------------------------------------------------------------------------------------------


@template("email", "easy")
def send_explicit(rng: random.Random, world: World, plan: Plan) -> str:
    to = rng.choice(world.people)[1] if rng.random() < 0.7 else rng.choice(world.customers)["customer_email"]
    subject, body = rng.choice(SUBJECTS), rng.choice(BODIES)
    plan.act("email_send_email", recipient=to, subject=subject, body=body)
    return (
        rng.choice(
            (
                f"Send an email to {to} with subject '{subject}' and body '{body}'",
                f"Email {to} with the subject '{subject}' and the body '{body}'",
            )
        )
        + "."
    )


@template("email", "easy")
def delete_email_by_id(rng: random.Random, world: World, plan: Plan) -> str:
    email_id = rng.choice(world.emails)["email_id"]
    plan.act("email_delete_email", email_id=email_id)
    return rng.choice((f"Delete the email with id {email_id}.", f"Delete email {email_id}."))


@template("email", "easy")
def forward_by_id(rng: random.Random, world: World, plan: Plan) -> str:
    email_id, to = rng.choice(world.emails)["email_id"], rng.choice(world.people)[1]
    plan.act("email_forward_email", email_id=email_id, recipient=to)
    return rng.choice(
        (f"Forward the email with id {email_id} to {to}.", f"Forward email {email_id} to {to}.")
    )


@template("email", "easy")
def reply_by_id(rng: random.Random, world: World, plan: Plan) -> str:
    email_id, body = rng.choice(world.emails)["email_id"], rng.choice(REPLIES)
    plan.act("email_reply_email", email_id=email_id, body=body)
    return rng.choice(
        (f"Reply to the email with id {email_id} with '{body}'.", f"Reply '{body}' to email {email_id}.")
    )


@template("email", "medium")
def send_by_first_name(rng: random.Random, world: World, plan: Plan) -> str:
    first = rng.choice(world.people)[0]
    subject, body = rng.choice(SUBJECTS), rng.choice(BODIES)
    plan.act("email_send_email", recipient=plan.lookup(first), subject=subject, body=body)
    return f"Send {first.capitalize()} an email with subject '{subject}' and body '{body}'."


def _latest_from(world: World, plan: Plan, rng: random.Random) -> tuple[str, Row]:
    """A random sender and subject, and the newest email from them with that subject, found by search."""
    sample = rng.choice(world.emails)
    first = first_of(sample["sender/recipient"])
    found = plan.read("email_search_emails", query=f"{first} {sample['subject']}")["results"]
    if (
        not found
        or found[0]["subject"] != sample["subject"]
        or found[0]["sender/recipient"] != sample["sender/recipient"]
    ):
        raise Skip("search does not single out the email")
    return first, found[0]


@template("email", "medium")
def reply_latest_from(rng: random.Random, world: World, plan: Plan) -> str:
    first, email = _latest_from(world, plan, rng)
    body = rng.choice(REPLIES)
    plan.act("email_reply_email", email_id=email["email_id"], body=body)
    return f"Reply to {first}'s latest email about '{email['subject']}' with '{body}'."


@template("email", "medium")
def delete_latest_from(rng: random.Random, world: World, plan: Plan) -> str:
    first, email = _latest_from(world, plan, rng)
    plan.act("email_delete_email", email_id=email["email_id"])
    return f"Delete {first}'s most recent email about '{email['subject']}'."


@template("email", "medium")
def forward_latest_about(rng: random.Random, world: World, plan: Plan) -> str:
    subject = rng.choice(world.emails)["subject"]
    found = plan.read("email_search_emails", query=subject)["results"]
    if not found or found[0]["subject"] != subject:
        raise Skip("newest match has another subject")
    first = rng.choice(world.people)[0]
    plan.act("email_forward_email", email_id=found[0]["email_id"], recipient=plan.lookup(first))
    return f"Forward the most recent email about '{subject}' to {first.capitalize()}."


@template("email", "hard")
def delete_all_from_about(rng: random.Random, world: World, plan: Plan) -> str:
    sample = rng.choice(world.emails)
    first, subject = first_of(sample["sender/recipient"]), sample["subject"]
    found = plan.read("email_search_emails", query=f"{first} {subject}")["results"]
    for email in only(
        only(between(found, 2, 5), "subject", subject), "sender/recipient", sample["sender/recipient"]
    ):
        plan.act("email_delete_email", email_id=email["email_id"])
    return f"Delete all emails from {first} about '{subject}'."


@template("email", "hard")
def reply_to_all_on_day(rng: random.Random, world: World, plan: Plan) -> str:
    sample = rng.choice(world.emails)
    first, day = first_of(sample["sender/recipient"]), sample["sent_datetime"][:10]
    found = plan.read("email_search_emails", query=first, date_min=day, date_max=day)["results"]
    body = rng.choice(REPLIES)
    for email in only(between(found, 2, 5), "sender/recipient", sample["sender/recipient"]):
        plan.act("email_reply_email", email_id=email["email_id"], body=body)
    return f"Reply '{body}' to every email {first} sent me on {day}."


@template("email", "hard")
def reply_or_send(rng: random.Random, world: World, plan: Plan) -> str:
    sample = rng.choice(world.emails)
    first = first_of(sample["sender/recipient"])
    topic = sample["subject"] if rng.random() < 0.5 else rng.choice(world.emails)["subject"]
    since = shifted(sample["sent_datetime"], -rng.randrange(0, 20))
    body = rng.choice(REPLIES)
    plan.needs("company_directory")
    found = plan.read("email_search_emails", query=f"{first} {topic}", date_min=since)["results"]
    if found:
        if found[0]["subject"] != topic:
            raise Skip("newest match has another subject")
        plan.act("email_reply_email", email_id=found[0]["email_id"], body=body)
    else:
        plan.act("email_send_email", recipient=plan.lookup(first), subject=topic, body=body)
    return (
        f"If {first} has emailed me about '{topic}' since {since}, reply to the latest such email with "
        f"'{body}'; otherwise send {first} an email with subject '{topic}' and body '{body}'."
    )


# --- calendar -----------------------------------------------------------------------------------------------


@template("calendar", "easy")
def create_event_explicit(rng: random.Random, world: World, plan: Plan) -> str:
    name, who, minutes = rng.choice(MEETINGS), rng.choice(world.people)[1], rng.choice((30, 60, 90))
    start = stamp(december_weekday(rng), *meeting_slot(rng, minutes))
    plan.act(
        "calendar_create_event",
        event_name=name,
        participant_email=who,
        event_start=start,
        duration=str(minutes),
    )
    return f"Create a calendar event '{name}' with {who} starting {start} for {minutes} minutes."


@template("calendar", "easy")
def delete_event_by_id(rng: random.Random, world: World, plan: Plan) -> str:
    event_id = rng.choice(world.events)["event_id"]
    plan.act("calendar_delete_event", event_id=event_id)
    return rng.choice((f"Delete the calendar event with id {event_id}.", f"Cancel event {event_id}."))


@template("calendar", "easy")
def update_event_by_id(rng: random.Random, world: World, plan: Plan) -> str:
    event = rng.choice(world.events)
    event_id, field = (
        event["event_id"],
        rng.choice(("event_name", "participant_email", "event_start", "duration")),
    )
    if field == "event_name":
        value = other(rng, MEETINGS, event["event_name"])
        request = f"Rename event {event_id} to '{value}'."
    elif field == "participant_email":
        value = other(rng, [p[1] for p in world.people], event["participant_email"])
        request = f"Change the participant of event {event_id} to {value}."
    elif field == "event_start":
        value = stamp(december_weekday(rng), *meeting_slot(rng, int(event["duration"])))
        request = f"Move event {event_id} to start at {value}."
    else:
        value = str(other(rng, (30, 45, 60, 90, 120), int(event["duration"])))
        request = f"Change the duration of event {event_id} to {value} minutes."
    plan.act("calendar_update_event", event_id=event_id, field=field, new_value=value)
    return request


@template("calendar", "medium")
def schedule_by_first_name(rng: random.Random, world: World, plan: Plan) -> str:
    first, name, minutes = rng.choice(world.people)[0], rng.choice(MEETINGS), rng.choice((30, 60))
    day, (hour, minute) = december_weekday(rng), meeting_slot(rng, minutes)
    plan.act(
        "calendar_create_event",
        event_name=name,
        participant_email=plan.lookup(first),
        event_start=stamp(day, hour, minute),
        duration=str(minutes),
    )
    return (
        f"Schedule a {minutes}-minute meeting called '{name}' with {first.capitalize()} on "
        f"{spoken_date(day)} at {spoken_time(hour, minute)}."
    )


def _events_on(plan: Plan, day: str, query: str = "") -> list[Row]:
    arguments = {"query": query} if query else {}
    return plan.read(
        "calendar_search_events", **arguments, time_min=f"{day} 00:00:00", time_max=f"{day} 23:59:59"
    )["results"]


@template("calendar", "medium")
def first_or_last_on_day(rng: random.Random, world: World, plan: Plan) -> str:
    day = rng.choice(world.events)["event_start"][:10]
    found = between(_events_on(plan, day), 2, 5)
    which = rng.choice(("first", "last"))
    target, neighbour = (found[0], found[1]) if which == "first" else (found[-1], found[-2])
    if target["event_start"] == neighbour["event_start"]:
        raise Skip("two events start together")
    spoken = spoken_date(date.fromisoformat(day))
    if rng.random() < 0.5:
        plan.act("calendar_delete_event", event_id=target["event_id"])
        return f"Cancel my {which} meeting on {spoken}."
    new_name = other(rng, MEETINGS, target["event_name"])
    plan.act("calendar_update_event", event_id=target["event_id"], field="event_name", new_value=new_name)
    return f"Change the name of the {which} event on {spoken} to '{new_name}'."


@template("calendar", "medium")
def reschedule_named(rng: random.Random, world: World, plan: Plan) -> str:
    event = rng.choice(world.events)
    first, day = first_of(event["participant_email"]), event["event_start"][:10]
    found = _events_on(plan, day, f"{event['event_name']} {first}")
    if len(found) != 1:
        raise Skip("not a single match")
    hour, minute = meeting_slot(rng, int(event["duration"]))
    new_start = stamp(date.fromisoformat(day), hour, minute)
    if new_start == event["event_start"]:
        raise Skip("same time")
    plan.act("calendar_update_event", event_id=event["event_id"], field="event_start", new_value=new_start)
    return (
        f"Move my '{event['event_name']}' with {first} on {spoken_date(date.fromisoformat(day))} to "
        f"{spoken_time(hour, minute)} the same day."
    )


@template("calendar", "hard")
def cancel_all_with_between(rng: random.Random, world: World, plan: Plan) -> str:
    event = rng.choice(world.events)
    first = first_of(event["participant_email"])
    low = shifted(event["event_start"], -rng.randrange(0, 10))
    high = shifted(event["event_start"], rng.randrange(0, 10))
    found = plan.read(
        "calendar_search_events", query=first, time_min=f"{low} 00:00:00", time_max=f"{high} 23:59:59"
    )["results"]
    for match in only(between(found, 2, 5), "participant_email", event["participant_email"]):
        plan.act("calendar_delete_event", event_id=match["event_id"])
    return f"Cancel all my meetings with {first} between {low} and {high}."


@template("calendar", "hard")
def push_back_day(rng: random.Random, world: World, plan: Plan) -> str:
    event = rng.choice(world.events)
    first, day = first_of(event["participant_email"]), event["event_start"][:10]
    for match in only(
        between(_events_on(plan, day, first), 1, 3), "participant_email", event["participant_email"]
    ):
        later = datetime.strptime(match["event_start"], "%Y-%m-%d %H:%M:%S") + timedelta(hours=1)
        plan.act(
            "calendar_update_event",
            event_id=match["event_id"],
            field="event_start",
            new_value=f"{later:%Y-%m-%d %H:%M:%S}",
        )
    return f"Push all my meetings with {first} on {day} back by one hour."


@template("calendar", "hard")
def cancel_or_schedule(rng: random.Random, world: World, plan: Plan) -> str:
    first, who, _ = rng.choice(world.people)
    first = first.capitalize()
    if rng.random() < 0.5:
        day = date.fromisoformat(rng.choice(world.events)["event_start"][:10])
    else:
        day = december_weekday(rng)
    plan.needs("company_directory")
    found = only(between(_events_on(plan, f"{day:%Y-%m-%d}", first), 0, 5), "participant_email", who)
    if found:
        for match in found:
            plan.act("calendar_delete_event", event_id=match["event_id"])
    else:
        plan.act(
            "calendar_create_event",
            event_name="Catch up",
            participant_email=plan.lookup(first),
            event_start=stamp(day, 10, 0),
            duration="30",
        )
    return (
        f"If I have any meetings with {first} on {day:%Y-%m-%d}, cancel them; otherwise schedule a "
        f"30-minute 'Catch up' with {first} at 10am that day."
    )


# --- analytics ----------------------------------------------------------------------------------------------


@template("analytics", "easy")
def plot_explicit(rng: random.Random, world: World, plan: Plan) -> str:
    low, high = visit_range(rng)
    value, kind = rng.choice(PLOT_VALUES), rng.choice(PLOT_TYPES)
    plan.act("analytics_create_plot", time_min=low, time_max=high, value_to_plot=value, plot_type=kind)
    return rng.choice(
        (
            f"Create a {kind} plot of {value} from {low} to {high}.",
            f"Make a {kind} plot of '{value}' for {low} through {high}.",
        )
    )


@template("analytics", "medium")
def plot_since_visitor(rng: random.Random, world: World, plan: Plan) -> str:
    visitor = rng.choice(world.visits)["visitor_id"]
    first_day = min(
        v["date_of_visit"] for v in plan.read("analytics_get_visitor_information_by_id", visitor_id=visitor)
    )
    value, kind = rng.choice(PLOT_VALUES), rng.choice(PLOT_TYPES)
    plan.act(
        "analytics_create_plot", time_min=first_day, time_max=NOW[:10], value_to_plot=value, plot_type=kind
    )
    return (
        f"Create a {kind} plot of {VALUE_WORDS[value]} from the day visitor {visitor} first visited the "
        f"site until today."
    )


@template("analytics", "medium")
def plot_last_days(rng: random.Random, world: World, plan: Plan) -> str:
    days = rng.choice((7, 14, 30))
    value, kind = rng.choice(PLOT_VALUES), rng.choice(PLOT_TYPES)
    plan.act(
        "analytics_create_plot",
        time_min=shifted(NOW, 1 - days),
        time_max=NOW[:10],
        value_to_plot=value,
        plot_type=kind,
    )
    return f"Plot {VALUE_WORDS[value]} as a {kind} chart for the last {days} days, including today."


@template("analytics", "hard")
def plot_busier_source(rng: random.Random, world: World, plan: Plan) -> str:
    low, high = visit_range(rng, longest=14)
    first, second = rng.sample(TRAFFIC_SOURCES, 2)
    counts = [
        plan.read("analytics_traffic_source_count", time_min=low, time_max=high, traffic_source=s)["visits"]
        for s in (first, second)
    ]
    winner, kind = (first, "bar") if counts[0] > counts[1] else (second, "line")
    plan.act(
        "analytics_create_plot",
        time_min=low,
        time_max=high,
        value_to_plot=f"visits_{winner.replace(' ', '_')}",
        plot_type=kind,
    )
    return (
        f"If there were more {first} visits than {second} visits between {low} and {high}, create a bar "
        f"plot of {first} visits for that period; otherwise create a line plot of {second} visits."
    )


@template("analytics", "hard")
def plot_by_session_length(rng: random.Random, world: World, plan: Plan) -> str:
    low, high = visit_range(rng, longest=10)
    threshold = rng.choice((15, 20, 25, 30))
    average = plan.read("analytics_get_average_session_duration", time_min=low, time_max=high)
    seconds = average["average_session_duration_seconds"]
    if seconds is None:
        raise Skip("no visits")
    value, kind = (
        ("session_duration_seconds", "histogram") if seconds > threshold else ("user_engaged", "bar")
    )
    plan.act("analytics_create_plot", time_min=low, time_max=high, value_to_plot=value, plot_type=kind)
    return (
        f"If the average session between {low} and {high} lasted more than {threshold} seconds, make a "
        f"histogram of session_duration_seconds for those days; otherwise make a bar chart of user_engaged."
    )


# --- project management -------------------------------------------------------------------------------------


@template("project_management", "easy")
def delete_task_by_id(rng: random.Random, world: World, plan: Plan) -> str:
    task_id = rng.choice(world.tasks)["task_id"]
    plan.act("project_management_delete_task", task_id=task_id)
    return rng.choice((f"Delete the task with id {task_id}.", f"Remove task {task_id}."))


@template("project_management", "easy")
def update_task_by_id(rng: random.Random, world: World, plan: Plan) -> str:
    task = rng.choice(world.tasks)
    task_id, field = (
        task["task_id"],
        rng.choice(("list_name", "board", "due_date", "assigned_to_email", "task_name")),
    )
    if field == "list_name":
        value = other(rng, LIST_NAMES, task["list_name"])
        request = f"Move task {task_id} to '{value}'."
    elif field == "board":
        value = other(rng, BOARDS, task["board"])
        request = f"Move task {task_id} to the '{value}' board."
    elif field == "due_date":
        value = f"{december_weekday(rng):%Y-%m-%d}"
        request = f"Change the due date of task {task_id} to {value}."
    elif field == "assigned_to_email":
        value = other(rng, [p[1] for p in world.builders], task["assigned_to_email"])
        request = f"Reassign task {task_id} to {value}."
    else:
        value = other(rng, task_names(), task["task_name"])
        request = f"Rename task {task_id} to '{value}'."
    plan.act("project_management_update_task", task_id=task_id, field=field, new_value=value)
    return request


@template("project_management", "easy")
def create_task_explicit(rng: random.Random, world: World, plan: Plan) -> str:
    name, who = rng.choice(task_names()), rng.choice(world.builders)
    board, listed, due = who[2], rng.choice(LIST_NAMES), f"{december_weekday(rng):%Y-%m-%d}"
    plan.act(
        "project_management_create_task",
        task_name=name,
        assigned_to_email=who[1],
        list_name=listed,
        due_date=due,
        board=board,
    )
    return f"Create a task '{name}' assigned to {who[1]} in '{listed}' on the '{board}' board, due {due}."


@template("project_management", "medium")
def create_task_by_first_name(rng: random.Random, world: World, plan: Plan) -> str:
    name, (first, _, board) = rng.choice(task_names()), rng.choice(world.builders)
    listed, day = rng.choice(LIST_NAMES), december_weekday(rng)
    plan.act(
        "project_management_create_task",
        task_name=name,
        assigned_to_email=plan.lookup(first),
        list_name=listed,
        due_date=f"{day:%Y-%m-%d}",
        board=board,
    )
    return f"Create a '{board}' task '{name}' for {first.capitalize()} in '{listed}', due {spoken_date(day)}."


@template("project_management", "medium")
def move_named_task(rng: random.Random, world: World, plan: Plan) -> str:
    task = rng.choice(world.tasks)
    first = first_of(task["assigned_to_email"])
    found = plan.read(
        "project_management_search_tasks", task_name=task["task_name"], assigned_to_email=plan.lookup(first)
    )
    if len(found) != 1:
        raise Skip("not a single match")
    target = other(rng, LIST_NAMES, task["list_name"])
    plan.act("project_management_update_task", task_id=task["task_id"], field="list_name", new_value=target)
    return f"Move {first}'s task '{task['task_name']}' to '{target}'."


@template("project_management", "medium")
def push_due_date(rng: random.Random, world: World, plan: Plan) -> str:
    task_id, days = rng.choice(world.tasks)["task_id"], rng.choice((1, 2, 3, 7, 14))
    due = plan.read("project_management_get_task_information_by_id", task_id=task_id, field="due_date")
    plan.act(
        "project_management_update_task",
        task_id=task_id,
        field="due_date",
        new_value=shifted(due["due_date"], days),
    )
    return f"Push the due date of task {task_id} back by {days} day{'s' if days > 1 else ''}."


@template("project_management", "hard")
def reassign_tasks(rng: random.Random, world: World, plan: Plan) -> str:
    task = rng.choice(world.tasks)
    giver = first_of(task["assigned_to_email"])
    taker = other(rng, [p[0] for p in world.builders], giver.lower()).capitalize()
    giver_address, taker_address = plan.lookup(giver), plan.lookup(taker)
    found = plan.read(
        "project_management_search_tasks",
        assigned_to_email=giver_address,
        list_name=task["list_name"],
        board=task["board"],
    )
    for match in between(found, 1, 5):
        plan.act(
            "project_management_update_task",
            task_id=match["task_id"],
            field="assigned_to_email",
            new_value=taker_address,
        )
    return f"Reassign all of {giver}'s '{task['list_name']}' tasks on the '{task['board']}' board to {taker}."


@template("project_management", "hard")
def move_list_of_person(rng: random.Random, world: World, plan: Plan) -> str:
    task = rng.choice(world.tasks)
    first, source = first_of(task["assigned_to_email"]), task["list_name"]
    target = other(rng, LIST_NAMES, source)
    found = plan.read(
        "project_management_search_tasks", assigned_to_email=plan.lookup(first), list_name=source
    )
    for match in between(found, 1, 5):
        plan.act(
            "project_management_update_task", task_id=match["task_id"], field="list_name", new_value=target
        )
    return f"Move all of {first}'s tasks in '{source}' to '{target}'."


@template("project_management", "hard")
def start_backlog_or_create(rng: random.Random, world: World, plan: Plan) -> str:
    first, _, board = rng.choice(world.builders)
    day = rng.choice(world.tasks)["due_date"]
    who = plan.lookup(first)
    found = plan.read(
        "project_management_search_tasks", assigned_to_email=who, list_name="Backlog", due_date=day
    )
    name = rng.choice(task_names())
    if found:
        for match in between(found, 1, 5):
            plan.act(
                "project_management_update_task",
                task_id=match["task_id"],
                field="list_name",
                new_value="In Progress",
            )
    else:
        plan.act(
            "project_management_create_task",
            task_name=name,
            assigned_to_email=who,
            list_name="Backlog",
            due_date=day,
            board=board,
        )
    first = first.capitalize()
    return (
        f"If {first} has any Backlog tasks due on {day}, move them to 'In Progress'; otherwise create a "
        f"'{board}' task '{name}' for {first} in 'Backlog' due that day."
    )


@template("project_management", "hard")
def finish_reviewed(rng: random.Random, world: World, plan: Plan) -> str:
    first, _, board = rng.choice(world.builders)
    found = plan.read(
        "project_management_search_tasks",
        assigned_to_email=plan.lookup(first),
        list_name="In Review",
        board=board,
    )
    for match in between(found, 0, 5):
        plan.act(
            "project_management_update_task",
            task_id=match["task_id"],
            field="list_name",
            new_value="Completed",
        )
    return (
        f"If {first.capitalize()} has any tasks in 'In Review' on the '{board}' board, move them to "
        f"'Completed'."
    )


# --- customer relationship manager --------------------------------------------------------------------------


@template("customer_relationship_manager", "easy")
def update_customer_by_id(rng: random.Random, world: World, plan: Plan) -> str:
    customer = rng.choice(world.customers)
    customer_id = customer["customer_id"]
    field = rng.choice(
        ("status", "status", "product_interest", "follow_up_by", "customer_phone", "assigned_to_email")
    )
    if field == "status":
        value = other(rng, STATUSES, customer["status"])
        request = f"Change the status of customer {customer_id} to {value}."
    elif field == "product_interest":
        value = other(rng, PRODUCTS, customer["product_interest"])
        request = f"Set the product interest of customer {customer_id} to {value}."
    elif field == "follow_up_by":
        value = f"{december_weekday(rng):%Y-%m-%d}"
        if customer["follow_up_by"].startswith(value):
            raise Skip("unchanged")
        request = f"Set the follow-up date of customer {customer_id} to {value}."
    elif field == "customer_phone":
        value = f"{rng.randrange(200, 1000)}-555-{rng.randrange(10000):04d}"
        request = f"Update the phone number of customer {customer_id} to {value}."
    else:
        value = other(rng, [p[1] for p in world.sales], customer["assigned_to_email"])
        request = f"Assign customer {customer_id} to {value}."
    plan.act(
        "customer_relationship_manager_update_customer", customer_id=customer_id, field=field, new_value=value
    )
    return request


@template("customer_relationship_manager", "easy")
def delete_customer_by_id(rng: random.Random, world: World, plan: Plan) -> str:
    customer_id = rng.choice(world.customers)["customer_id"]
    plan.act("customer_relationship_manager_delete_customer", customer_id=customer_id)
    return rng.choice((f"Delete customer {customer_id} from the CRM.", f"Remove customer {customer_id}."))


@template("customer_relationship_manager", "easy")
def add_customer_explicit(rng: random.Random, world: World, plan: Plan) -> str:
    name, status, owner = rng.choice(NEW_CUSTOMERS), rng.choice(STATUSES), rng.choice(world.sales)[1]
    if rng.random() < 0.5:
        product = rng.choice(PRODUCTS)
        plan.act(
            "customer_relationship_manager_add_customer",
            customer_name=name,
            assigned_to_email=owner,
            status=status,
            product_interest=product,
        )
        return f"Add {name} to the CRM with status {status}, assigned to {owner}, interested in {product}."
    plan.act(
        "customer_relationship_manager_add_customer",
        customer_name=name,
        assigned_to_email=owner,
        status=status,
    )
    return f"Add {name} to the CRM with status {status}, assigned to {owner}."


@template("customer_relationship_manager", "medium")
def add_customer_by_first_name(rng: random.Random, world: World, plan: Plan) -> str:
    name, status, product = rng.choice(NEW_CUSTOMERS), rng.choice(STATUSES), rng.choice(PRODUCTS)
    first = rng.choice(world.sales)[0]
    plan.act(
        "customer_relationship_manager_add_customer",
        customer_name=name,
        assigned_to_email=plan.lookup(first),
        status=status,
        product_interest=product,
    )
    return (
        f"Add a new customer {name} with status {status}, interested in {product}, assigned to "
        f"{first.capitalize()}."
    )


def _find_customer(rng: random.Random, world: World, plan: Plan) -> Row:
    name = rng.choice(world.customers)["customer_name"]
    found = plan.read("customer_relationship_manager_search_customers", customer_name=name)["results"]
    if len(found) != 1:
        raise Skip("not a single match")
    return found[0]


@template("customer_relationship_manager", "medium")
def set_status_by_name(rng: random.Random, world: World, plan: Plan) -> str:
    customer = _find_customer(rng, world, plan)
    status = other(rng, STATUSES, customer["status"])
    plan.act(
        "customer_relationship_manager_update_customer",
        customer_id=customer["customer_id"],
        field="status",
        new_value=status,
    )
    return f"Mark {customer['customer_name']} as {status} in the CRM."


@template("customer_relationship_manager", "medium")
def reassign_by_name(rng: random.Random, world: World, plan: Plan) -> str:
    customer = _find_customer(rng, world, plan)
    first = first_of(other(rng, [p[1] for p in world.sales], customer["assigned_to_email"]))
    plan.act(
        "customer_relationship_manager_update_customer",
        customer_id=customer["customer_id"],
        field="assigned_to_email",
        new_value=plan.lookup(first),
    )
    return f"Reassign {customer['customer_name']} to {first} in the CRM."


def _portfolio(rng: random.Random, world: World, plan: Plan) -> tuple[str, Row, list[Row]]:
    """A sales rep's customers of one status and product, found by look-up and search."""
    sample = rng.choice(world.customers)
    first = first_of(sample["assigned_to_email"])
    found = plan.read(
        "customer_relationship_manager_search_customers",
        assigned_to_email=plan.lookup(first),
        status=sample["status"],
        product_interest=sample["product_interest"],
    )["results"]
    return first, sample, between(found, 1, 5)


@template("customer_relationship_manager", "hard")
def hand_over_customers(rng: random.Random, world: World, plan: Plan) -> str:
    giver, sample, found = _portfolio(rng, world, plan)
    taker = first_of(other(rng, [p[1] for p in world.sales], sample["assigned_to_email"]))
    taker_address = plan.lookup(taker)
    for match in found:
        plan.act(
            "customer_relationship_manager_update_customer",
            customer_id=match["customer_id"],
            field="assigned_to_email",
            new_value=taker_address,
        )
    return (
        f"{taker} is taking over all of {giver}'s {sample['status']} customers interested in "
        f"{sample['product_interest']}. Reassign them in the CRM."
    )


@template("customer_relationship_manager", "hard")
def delete_portfolio(rng: random.Random, world: World, plan: Plan) -> str:
    first, sample, found = _portfolio(rng, world, plan)
    for match in found:
        plan.act("customer_relationship_manager_delete_customer", customer_id=match["customer_id"])
    return (
        f"Delete all of {first}'s {sample['status']} customers interested in {sample['product_interest']} "
        f"from the CRM."
    )


@template("customer_relationship_manager", "hard")
def lose_stale(rng: random.Random, world: World, plan: Plan) -> str:
    sample = rng.choice(world.customers)
    if sample["status"] == "Lost":
        raise Skip("already lost")
    cutoff = shifted(sample["last_contact_date"], rng.randrange(0, 15))
    found = plan.read(
        "customer_relationship_manager_search_customers",
        status=sample["status"],
        product_interest=sample["product_interest"],
        last_contact_date_max=cutoff,
    )["results"]
    for match in between(found, 1, 5):
        plan.act(
            "customer_relationship_manager_update_customer",
            customer_id=match["customer_id"],
            field="status",
            new_value="Lost",
        )
    return (
        f"Move every {sample['status']} customer interested in {sample['product_interest']} who was last "
        f"contacted on or before {cutoff} to Lost."
    )


# --- multi-domain -------------------------------------------------------------------------------------------


@template("multi_domain", "medium")
def meet_account_owner(rng: random.Random, world: World, plan: Plan) -> str:
    customer = _find_customer(rng, world, plan)
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


@template("multi_domain", "medium")
def email_task_assignee(rng: random.Random, world: World, plan: Plan) -> str:
    task_id = rng.choice(world.tasks)["task_id"]
    who = plan.read(
        "project_management_get_task_information_by_id", task_id=task_id, field="assigned_to_email"
    )
    subject, body = rng.choice(SUBJECTS), rng.choice(BODIES)
    plan.act("email_send_email", recipient=who["assigned_to_email"], subject=subject, body=body)
    return f"Email whoever is assigned to task {task_id} with subject '{subject}' and body '{body}'."


@template("multi_domain", "medium")
def email_event_participant(rng: random.Random, world: World, plan: Plan) -> str:
    event_id = rng.choice(world.events)["event_id"]
    who = plan.read("calendar_get_event_information_by_id", event_id=event_id, field="participant_email")
    subject, body = rng.choice(SUBJECTS), rng.choice(BODIES)
    plan.act("email_send_email", recipient=who["participant_email"], subject=subject, body=body)
    return f"Send the participant of event {event_id} an email with subject '{subject}' and body '{body}'."


@template("multi_domain", "medium")
def task_for_sender(rng: random.Random, world: World, plan: Plan) -> str:
    email_id = rng.choice(world.emails)["email_id"]
    sender = plan.read("email_get_email_information_by_id", email_id=email_id, field="sender/recipient")
    name, board, day = rng.choice(task_names()), rng.choice(BOARDS), december_weekday(rng)
    plan.act(
        "project_management_create_task",
        task_name=name,
        assigned_to_email=sender["sender/recipient"],
        list_name="Backlog",
        due_date=f"{day:%Y-%m-%d}",
        board=board,
    )
    return (
        f"Create a '{board}' task '{name}' in 'Backlog', due {day:%Y-%m-%d}, for the person who sent "
        f"email {email_id}."
    )


@template("multi_domain", "hard")
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


@template("multi_domain", "hard")
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


@template("multi_domain", "hard")
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
