"""Calendar templates: create, cancel, rename and move meetings named by title, participant or day."""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta

from kit.envs.workplace.state import Row
from kit.envs.workplace.templates.helpers import (
    between,
    december_weekday,
    first_of,
    meeting_slot,
    only,
    other,
    shifted,
    spoken_date,
    spoken_time,
    stamp,
)
from kit.envs.workplace.templates.registry import Plan, Skip, World, template

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


@template("calendar", "easy", "single_step")
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


def _named_meeting(rng: random.Random, world: World, plan: Plan) -> tuple[Row, str]:
    """A random meeting and how a request names it ("my 'Design sync' with Dana on December 4"), found by
    searching its name on its day."""
    event = rng.choice(world.events)
    day = event["event_start"][:10]
    found = only(_events_on(plan, day, event["event_name"]), "participant_email", event["participant_email"])
    if len(found) != 1:
        raise Skip("not a single match")
    who, when = first_of(event["participant_email"]), spoken_date(date.fromisoformat(day))
    named = f"my '{event['event_name']}' with {who} on {when}"
    return event, named


@template("calendar", "easy", "calendar_search_delete_batch")
def cancel_named_meeting(rng: random.Random, world: World, plan: Plan) -> str:
    event, named = _named_meeting(rng, world, plan)
    plan.act("calendar_delete_event", event_id=event["event_id"])
    return rng.choice((f"Cancel {named}.", f"Delete {named} from my calendar."))


@template("calendar", "easy", "calendar_get_info_update")
def change_named_meeting(rng: random.Random, world: World, plan: Plan) -> str:
    event, named = _named_meeting(rng, world, plan)
    field = rng.choice(("event_name", "participant_email", "duration"))
    if field == "event_name":
        value = other(rng, MEETINGS, event["event_name"])
        request = f"Rename {named} to '{value}'."
    elif field == "participant_email":
        value = other(rng, [p[1] for p in world.people], event["participant_email"])
        request = f"Change the participant of {named} to {value}."
    else:
        value = str(other(rng, (30, 45, 60, 90, 120), int(event["duration"])))
        request = f"Change the duration of {named} to {value} minutes."
    plan.act("calendar_update_event", event_id=event["event_id"], field=field, new_value=value)
    return request


@template("calendar", "medium", "calendar_lookup_create")
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


@template("calendar", "medium", "calendar_get_info_update")
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


@template("calendar", "medium", "calendar_search_update_batch")
def reschedule_named(rng: random.Random, world: World, plan: Plan) -> str:
    event, named = _named_meeting(rng, world, plan)
    day = date.fromisoformat(event["event_start"][:10])
    hour, minute = meeting_slot(rng, int(event["duration"]))
    new_start = stamp(day, hour, minute)
    if new_start == event["event_start"]:
        raise Skip("same time")
    plan.act("calendar_update_event", event_id=event["event_id"], field="event_start", new_value=new_start)
    return f"Move {named} to {spoken_time(hour, minute)} the same day."


@template("calendar", "hard", "calendar_search_delete_batch")
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


@template("calendar", "hard", "calendar_search_update_batch")
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


@template("calendar", "hard", "calendar_search_delete_batch")
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
