"""What templates of several toolkits share: dates and times as a request words them, meeting slots, and
checks that a search found what the request can single out."""

from __future__ import annotations

import random
from datetime import date, timedelta
from typing import Any

from kit.envs.workplace.state import Row
from kit.envs.workplace.templates.registry import Skip

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


def spoken_date(day: date) -> str:
    """A date as a request says it: "December 4"."""
    return f"{_MONTHS[day.month - 1]} {day.day}"


def spoken_time(hour: int, minute: int) -> str:
    """A time as a request says it: "10am", "2:30pm"."""
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
    """A timestamp in the tools' format, YYYY-MM-DD HH:MM:00."""
    return f"{day:%Y-%m-%d} {hour:02d}:{minute:02d}:00"


def shifted(day_text: str, days: int) -> str:
    """The date of a date or timestamp moved by ``days``, as YYYY-MM-DD."""
    return f"{date.fromisoformat(day_text[:10]) + timedelta(days=days):%Y-%m-%d}"


def first_of(person_address: str) -> str:
    """The capitalised first name of a colleague's ``first.last@`` address."""
    return person_address.split(".")[0].capitalize()


def other(rng: random.Random, options: tuple[str, ...] | list[Any], current: Any) -> Any:
    """A random option that differs from ``current``."""
    return rng.choice([o for o in options if o != current])


def between(results: list[Row], low: int, high: int) -> list[Row]:
    """The results, provided there are ``low`` to ``high`` of them."""
    if not low <= len(results) <= high:
        raise Skip("wrong number of matches")
    return results


def only(results: list[Row], column: str, value: str) -> list[Row]:
    """The results, provided every one has ``value`` in ``column`` (else the request would be ambiguous)."""
    if any(row[column] != value for row in results):
        raise Skip(f"search also matches rows with another {column}")
    return results
