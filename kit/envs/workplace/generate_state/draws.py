"""Random draws the table generators share: days in a date range and shuffled record ids."""

from __future__ import annotations

import random
from datetime import date, timedelta


def random_day(start: date, end: date, rng: random.Random, weekdays_only: bool = False) -> date:
    """A day drawn uniformly from ``start`` to ``end`` inclusive, redrawn until a weekday if asked."""
    while True:
        day = start + timedelta(days=rng.randrange((end - start).days + 1))
        if not weekdays_only or day.weekday() < 5:
            return day


def shuffled_ids(count: int, rng: random.Random) -> list[str]:
    """The 8-digit ids ``00000000`` to ``count - 1`` in a random order."""
    ids = [str(i).zfill(8) for i in range(count)]
    rng.shuffle(ids)
    return ids
